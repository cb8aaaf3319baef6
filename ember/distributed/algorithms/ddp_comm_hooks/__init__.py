"""DDP communication hooks (``DistributedDataParallel.register_comm_hook``):
:mod:`.default_hooks` (``allreduce_hook``, ``fp16_compress_hook``, ``bf16_compress_hook`` and
their ``*_wrapper`` forms), :mod:`.ddp_zero_hook` (``hook_with_zero_step``: ZeRO's step
inside backward) and :mod:`.post_localSGD_hook` (``PostLocalSGDState``, ``post_localSGD_hook``)."""

from ember.distributed.algorithms.ddp_comm_hooks import (
    ddp_zero_hook,
    default_hooks,
    post_localSGD_hook,
)

__all__ = ["default_hooks", "ddp_zero_hook", "post_localSGD_hook"]
