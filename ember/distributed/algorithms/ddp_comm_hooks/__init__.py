"""DDP communication hooks (``DistributedDataParallel.register_comm_hook``):
:mod:`.default_hooks` (``allreduce_hook``, ``fp16_compress_hook``, ``bf16_compress_hook`` and
their ``*_wrapper`` forms)."""

from ember.distributed.algorithms.ddp_comm_hooks import default_hooks

__all__ = ["default_hooks"]
