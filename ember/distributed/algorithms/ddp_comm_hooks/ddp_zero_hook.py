"""DDP communication hooks that run :class:`~ember.distributed.optim.ZeroRedundancyOptimizer`'s
step inside backward (``overlap_with_ddp=True``), as ``torch.distributed.algorithms.
ddp_comm_hooks.ddp_zero_hook``: bucket ``k`` belongs to rank ``k % N``, which updates the
bucket's parameters once its gradients are reduced; every rank then receives them by one
broadcast from that rank. So each rank keeps the optimizer state of its buckets only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember
import ember.distributed as dist

__all__ = ["hook_with_zero_step", "hook_with_zero_step_interleaved"]


def _warmup(ddp) -> int:
    """Iterations that only reduce: DDP's buckets are final after them (torch: 2, 3 with a
    static graph)."""
    return 3 if ddp.static_graph else 2


def _check(ddp, zero) -> None:
    if not getattr(zero, "_overlap_with_ddp", False):
        raise ValueError(
            "ZeroRedundancyOptimizer must be constructed with `overlap_with_ddp=True` to use "
            "this hook properly"
        )
    if dist.get_backend(ddp.process_group) == dist.Backend.GLOO:
        raise RuntimeError("Gloo backend using Overlapping DDP with ZeRO may meet hangs")


def _step_bucket(ddp, zero, bucket, reduced) -> None:
    """Rank ``k % N`` updates bucket ``k``'s parameters with its reduced gradients; all ranks
    then take them from it (one broadcast of the flat parameters)."""
    k, params = bucket.index(), bucket.parameters()
    owner = k % zero.world_size
    flat = reduced.detach().numpy().reshape(-1)
    if zero.rank == owner:
        start = 0
        for p in params:
            n = p.numel()
            view = flat[start : start + n].reshape(p._data.shape)
            if p.grad is None:
                p.grad = ember.from_numpy(view.copy())
            else:
                p.grad._data[...] = view
            start += n
        optim = zero._bucket_optims.get(k)
        if optim is None:
            optim = zero._bucket_optims[k] = zero._optim_constructor(params, **zero._optim_defaults)
        for g in optim.param_groups:  # (learning-rate schedulers change the outer groups)
            g.update({key: v for key, v in zero.param_groups[0].items() if key != "params"})
        optim.step()
    values = np.concatenate([p._data.reshape(-1) for p in params])
    shared = ember.from_numpy(values)
    dist.broadcast(shared, group=zero.process_group, group_src=owner)
    start = 0
    for p in params:
        n = p.numel()
        p._data[...] = values[start : start + n].reshape(p._data.shape)
        start += n


def hook_with_zero_step(
    hook: Callable[[Any, dist.GradBucket], Any], ddp, zero, shard_buckets: bool = False
) -> Callable[[Any, dist.GradBucket], Any]:
    """Return ``hook`` followed, once each bucket is reduced, by the ZeRO step of its
    parameters (``zero`` made with ``overlap_with_ddp=True``; register the result with
    ``ddp.register_comm_hook``). Raises on the gloo backend, as torch's."""
    _check(ddp, zero)
    if shard_buckets:
        raise NotImplementedError("ember's hook_with_zero_step does not shard buckets")

    def hook_with_step(state, bucket: dist.GradBucket):
        fut = hook(state, bucket)
        if ddp._reductions < _warmup(ddp):
            return fut

        def step(f):
            reduced = f.value()
            _step_bucket(ddp, zero, bucket, reduced)
            return reduced

        return fut.then(step)

    return hook_with_step


def hook_with_zero_step_interleaved(
    hook: Callable[[Any, dist.GradBucket], Any], ddp, zero, shard_buckets: bool = False
) -> Callable[[Any, dist.GradBucket], Any]:
    """The same as :func:`hook_with_zero_step` (ember reduces and steps bucket by bucket in
    either case)."""
    return hook_with_zero_step(hook, ddp, zero, shard_buckets)
