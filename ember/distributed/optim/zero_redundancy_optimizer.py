"""``ZeroRedundancyOptimizer``: the optimizer state sharded across the ranks of a group (ZeRO
stage 1), as ``torch.distributed.optim.ZeroRedundancyOptimizer``.

The parameters are split between the ranks (largest first, each to the rank holding the fewest
elements so far, as torch's partition); each rank builds ``optimizer_class`` over its own
share only, so it keeps about ``1/N`` of the state (Adam's moments, ...). ``step`` updates the
local share and then broadcasts every parameter from the rank that owns it, so all replicas
stay identical (``parameters_as_bucket_view=True``: the parameters of each rank are views of
one flat tensor per dtype, broadcast as one message). ``consolidate_state_dict(to)`` gathers
the shards' states on rank ``to``, whose ``state_dict()`` then is the unsharded optimizer's;
``load_state_dict`` takes such a whole state dict on every rank and keeps each rank's share.
With ``overlap_with_ddp=True`` the optimizer steps inside DDP's backward instead: a hook made
by ``ddp_comm_hooks.ddp_zero_hook.hook_with_zero_step`` gives each gradient bucket to one rank
(bucket ``k`` to rank ``k % N``), which updates the bucket's parameters as soon as its
all-reduce is done and broadcasts them; ``step()`` then does nothing. As torch's, the first two
iterations (three with ``static_graph``) update nothing: DDP's buckets are not final before.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import ember.distributed as dist
from ember.optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap ``optimizer_class`` so that each rank of ``process_group`` holds the state of its
    share of ``params`` only."""

    def __init__(
        self,
        params,
        optimizer_class: type[Optimizer],
        process_group=None,
        parameters_as_bucket_view: bool = False,
        overlap_with_ddp: bool = False,
        **defaults: Any,
    ) -> None:
        super().__init__(params, defaults)
        self._overlap_with_ddp = overlap_with_ddp
        self._bucket_optims: dict = {}  # overlap_with_ddp: DDP bucket index -> its optimizer
        self.process_group = dist.distributed_c10d._group_or_default(process_group)
        self.world_size = self.process_group.size()
        self.rank = self.process_group.rank()
        self.global_rank = dist.get_global_rank(self.process_group, self.rank)
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._all_params = [p for g in self.param_groups for p in g["params"]]
        self._owner = self._partition()
        local_groups = []
        for g in self.param_groups:
            mine = [p for p in g["params"] if self._owner[id(p)] == self.rank]
            if mine:
                local_groups.append(
                    {**{k: v for k, v in g.items() if k != "params"}, "params": mine}
                )
        self.optim = optimizer_class(local_groups, **defaults) if local_groups else None
        self._consolidated: dict | None = None
        self._buckets = self._bucket_views() if parameters_as_bucket_view else []

    def _bucket_views(self) -> list:
        """Make each rank's parameters (per dtype) views of one flat tensor, so that ``step``
        broadcasts one message per rank and dtype instead of one per parameter."""
        import numpy as np

        import ember

        buckets = []
        for r in range(self.world_size):
            by_dtype: dict = {}
            for p in self._all_params:
                if self._owner[id(p)] == r:
                    by_dtype.setdefault(p.dtype, []).append(p)
            for params in by_dtype.values():
                flat = np.concatenate([p._data.reshape(-1) for p in params])
                offset = 0
                for p in params:
                    n = p._data.size
                    p.data = ember.from_numpy(flat[offset : offset + n].reshape(p._data.shape))
                    offset += n
                buckets.append((r, ember.from_numpy(flat)))
        return buckets

    def _partition(self) -> dict:
        sizes = [0] * self.world_size
        owner = {}
        for p in sorted(self._all_params, key=lambda t: -t.numel()):
            r = min(range(self.world_size), key=lambda k: sizes[k])
            owner[id(p)] = r
            sizes[r] += p.numel()
        return owner

    def step(self, closure=None):
        """Update this rank's share of the parameters, then broadcast every parameter from
        its owner (``overlap_with_ddp``: nothing, DDP's backward stepped already)."""
        if self._overlap_with_ddp:
            return closure() if closure is not None else None
        loss = None
        if self.optim is not None:
            for g, lg in zip(self._groups_with_local(), self.optim.param_groups, strict=True):
                for k, v in g.items():
                    if k != "params":
                        lg[k] = v  # (learning-rate schedulers change the outer groups)
            loss = self.optim.step(closure)
        elif closure is not None:
            loss = closure()
        if self._buckets:
            for r, flat in self._buckets:
                dist.broadcast(flat, group=self.process_group, group_src=r)
        else:
            for p in self._all_params:
                owner = self._owner[id(p)]
                dist.broadcast(p.detach(), group=self.process_group, group_src=owner)
        return loss

    def _groups_with_local(self) -> list:
        return [
            g
            for g in self.param_groups
            if any(self._owner[id(p)] == self.rank for p in g["params"])
        ]

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather the state of every shard on (global) rank ``to``; every rank must call it."""
        local = {}
        if self.optim is not None:
            index = {id(p): i for i, p in enumerate(self._all_params)}
            for p, st in self.optim.state.items():
                local[index[id(p)]] = {
                    k: (v.detach().clone() if hasattr(v, "detach") else v) for k, v in st.items()
                }
        gathered = [None] * self.world_size if self.global_rank == to else None
        dist.gather_object(local, gathered, dst=to, group=self.process_group)
        self._consolidated = None
        if self.global_rank == to:
            merged: dict = {}
            for part in gathered:
                merged.update(part)
            self._consolidated = merged

    def state_dict(self) -> dict[str, Any]:
        """Return the whole optimizer's state (after :meth:`consolidate_state_dict` on this
        rank)."""
        if self._consolidated is None:
            raise RuntimeError(
                "Optimizer state has not been consolidated on this rank. Please call "
                "`consolidate_state_dict(to=0)` on all ranks beforehand if you meant to save "
                "the global state."
            )
        packed = super().state_dict()
        packed["state"] = dict(sorted(self._consolidated.items()))
        return packed

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a whole optimizer's state dict (as :meth:`state_dict` returns after
        :meth:`consolidate_state_dict`): each rank keeps the state of its own share only."""
        super().load_state_dict(state_dict)
        whole, self.state = self.state, defaultdict(dict)
        if self.optim is not None:
            for p, st in whole.items():
                if self._owner.get(id(p)) == self.rank:
                    self.optim.state[p] = st
            for g, lg in zip(self._groups_with_local(), self.optim.param_groups, strict=True):
                for k, v in g.items():
                    if k != "params":
                        lg[k] = v
