"""``torch.distributed.utils``' helper that wrappers of DDP's kind call:
``_sync_module_states`` (make every rank's parameters and buffers rank ``src``'s)."""

from __future__ import annotations

from ember.distributed._collectives import _broadcast_coalesced

__all__: list[str] = []


def _sync_module_states(
    module,
    process_group,
    broadcast_bucket_size: int,
    src: int,
    params_and_buffers_to_ignore,
    broadcast_buffers: bool = True,
) -> None:
    """Broadcast ``module``'s parameters (and buffers, with ``broadcast_buffers``) from rank
    ``src`` of ``process_group`` in place, except those named in
    ``params_and_buffers_to_ignore``."""
    tensors = [
        p.detach()
        for name, p in module.named_parameters()
        if name not in params_and_buffers_to_ignore
    ]
    if broadcast_buffers:
        tensors += [
            b.detach()
            for name, b in module.named_buffers()
            if name not in params_and_buffers_to_ignore
        ]
    if tensors:
        _broadcast_coalesced(process_group, tensors, broadcast_bucket_size, src)
