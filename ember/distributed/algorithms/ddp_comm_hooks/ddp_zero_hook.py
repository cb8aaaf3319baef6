"""DDP communication hooks that run :class:`~ember.distributed.optim.ZeroRedundancyOptimizer`'s
step inside backward (``overlap_with_ddp=True``), as ``torch.distributed.algorithms.
ddp_comm_hooks.ddp_zero_hook``: bucket ``k`` belongs to rank ``k % N`` (``shard_buckets``:
its parameters are cut into one contiguous run per rank), which updates the bucket's
parameters once its gradients are reduced; every rank then receives them by a broadcast from
their owner. So each rank keeps the optimizer state of its share only."""

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


def _owners(zero, bucket, shard: bool) -> list[int]:
    """The rank that updates each parameter of ``bucket``: all of bucket ``k`` on rank
    ``k % N``; ``shard``: the bucket's parameters cut into contiguous runs of about equal
    size, one per rank (a parameter goes to the rank whose share its first element is in)."""
    n, params = zero.world_size, bucket.parameters()
    if not shard:
        return [bucket.index() % n] * len(params)
    total = sum(p.numel() for p in params)
    owners, start = [], 0
    for p in params:
        owners.append(min(n - 1, start * n // max(total, 1)))
        start += p.numel()
    return owners


def _step_bucket(ddp, zero, bucket, reduced, shard: bool) -> None:
    """Each parameter's owner (:func:`_owners`) updates it with its reduced gradient; every
    rank then takes each owner's run of the bucket's parameters from it (one broadcast per
    owner, of a contiguous slice of the flat parameters)."""
    k, params = bucket.index(), bucket.parameters()
    owners = _owners(zero, bucket, shard)
    flat = reduced.detach().numpy().reshape(-1)
    offsets = np.cumsum([0] + [p.numel() for p in params])
    mine = [i for i, r in enumerate(owners) if r == zero.rank]
    if mine:
        for i in mine:
            p = params[i]
            view = flat[offsets[i] : offsets[i + 1]].reshape(p._data.shape)
            if p.grad is None:
                p.grad = ember.from_numpy(view.copy())
            else:
                p.grad._data[...] = view
        optim = zero._bucket_optims.get(k)
        if optim is None:
            own = [params[i] for i in mine]
            optim = zero._bucket_optims[k] = zero._optim_constructor(own, **zero._optim_defaults)
        for g in optim.param_groups:  # (learning-rate schedulers change the outer groups)
            g.update({key: v for key, v in zero.param_groups[0].items() if key != "params"})
        optim.step()
    values = np.concatenate([p._data.reshape(-1) for p in params])
    for r in sorted(set(owners)):
        lo = offsets[owners.index(r)]
        hi = offsets[len(owners) - owners[::-1].index(r)]
        dist.broadcast(ember.from_numpy(values[lo:hi]), group=zero.process_group, group_src=r)
    for i, p in enumerate(params):
        p._data[...] = values[offsets[i] : offsets[i + 1]].reshape(p._data.shape)


def hook_with_zero_step(
    hook: Callable[[Any, dist.GradBucket], Any], ddp, zero, shard_buckets: bool = False
) -> Callable[[Any, dist.GradBucket], Any]:
    """Return ``hook`` followed, once each bucket is reduced, by the ZeRO step of its
    parameters (``zero`` made with ``overlap_with_ddp=True``; register the result with
    ``ddp.register_comm_hook``): the whole bucket on one rank, or, with ``shard_buckets``,
    its parameters partitioned across the ranks to approximate uniformity. Raises on the
    gloo backend, as torch's."""
    _check(ddp, zero)

    def hook_with_step(state, bucket: dist.GradBucket):
        fut = hook(state, bucket)
        if ddp._reductions < _warmup(ddp):
            return fut

        def step(f):
            reduced = f.value()
            _step_bucket(ddp, zero, bucket, reduced, shard_buckets)
            return reduced

        return fut.then(step)

    return hook_with_step


def hook_with_zero_step_interleaved(
    hook: Callable[[Any, dist.GradBucket], Any], ddp, zero, shard_buckets: bool = False
) -> Callable[[Any, dist.GradBucket], Any]:
    """The same as :func:`hook_with_zero_step` (ember reduces and steps bucket by bucket in
    either case)."""
    return hook_with_zero_step(hook, ddp, zero, shard_buckets)
