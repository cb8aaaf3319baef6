"""DDP communication hooks (``DistributedDataParallel.register_comm_hook``):
:mod:`.default_hooks` (``allreduce_hook``, ``fp16_compress_hook``, ``bf16_compress_hook`` and
their ``*_wrapper`` forms) and :mod:`.ddp_zero_hook` (``hook_with_zero_step``: ZeRO's step
inside backward)."""

from ember.distributed.algorithms.ddp_comm_hooks import ddp_zero_hook, default_hooks

__all__ = ["default_hooks", "ddp_zero_hook"]
