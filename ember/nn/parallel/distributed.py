"""``DistributedDataParallel``: data-parallel training over the processes of a group, as
``torch.nn.parallel.DistributedDataParallel`` on CPU.

At construction rank 0's parameters and buffers are broadcast to every rank; before each
forward its buffers are broadcast again (``forward_sync_buffers=True``; the deprecated
``broadcast_buffers=False`` also skips the buffers at construction). Each parameter gets a
post-accumulate-grad hook; when the last expected parameter's gradient has been accumulated
(still inside ``backward``), the gradients are divided by the world size and summed across
ranks with one flat ``all_reduce`` per dtype, then written back into every ``.grad`` in place.
After ``backward`` every rank therefore holds the same averaged gradients, and the same
optimizer step keeps the replicas identical.

With ``find_unused_parameters=True`` the forward walks the autograd graph from the outputs to
find the parameters that will get no gradient, which count as ready at once; a second small
``all_reduce`` of "used" flags leaves a parameter that no rank used untouched (``.grad`` stays
None), as torch's reducer. Without it, a backward that leaves a parameter without gradient
makes the next forward raise torch's "Expected to have finished reduction..." error.
``no_sync()`` skips the reduction: gradients accumulate locally until the next synchronised
backward, which averages the accumulated sums. ``join()`` supports uneven inputs as torch's:
each forward first tells the ranks that ran out of inputs (which wait in ``join``'s exit) to
shadow one more iteration's collectives with zero gradients.
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager

import numpy as np

import ember.distributed as dist
from ember._core.node import AccumulateGrad
from ember._core.tensor import Tensor
from ember.nn.modules.batchnorm import SyncBatchNorm
from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` "
    "function. Please include the loss function and the structure of the return value of "
    "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n"
    "Parameter indices which did not receive grad for rank {rank}: {indices}"
)


def _tensors_in(obj, out: list) -> list:
    """Collect the tensors in a (nested) forward output."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


def _reached_leaves(outputs: list) -> set:
    """Return the ids of the leaf tensors the autograd graph of ``outputs`` leads to."""
    seen, leaves = set(), set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    for t in outputs:
        if t.grad_fn is None and t.requires_grad:
            leaves.add(id(t))
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaves.add(id(node.variable))
            continue
        stack.extend(n for n, _ in node.next_functions)
    return leaves


def _broadcast_flat(tensors: list, group, src: int = 0) -> None:
    """Broadcast ``tensors`` from group rank ``src``, one message per dtype (in place)."""
    dist._broadcast_coalesced(group, tensors, 0, src)


_BROADCAST_BUFFERS = (
    "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: unlike "
    "`broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at init. If you "
    "rely on buffers NOT being synced at init (e.g. rank-local buffers), keep using "
    "`broadcast_buffers=False` until `init_sync_buffers` is available."
)
_BOTH_BUFFER_FLAGS = (
    "Both `broadcast_buffers` and `forward_sync_buffers` were specified. `broadcast_buffers` is "
    "deprecated and its value is ignored when `forward_sync_buffers` is provided."
)


_FIRST_BUCKET_BYTES = 1024**2  # torch's first bucket under the default cap is small
_UNLIMITED = 1 << 62


class _Bucket:
    """Gradients of some parameters of one dtype, reduced as one flat array."""

    def __init__(self, params: list, index: list[int]) -> None:
        import ember

        self.index = index
        self.sizes = [p._data.size for p in params]
        self.offsets = np.cumsum([0] + self.sizes)
        self.flat = np.zeros(int(self.offsets[-1]), params[0]._data.dtype)
        self.tensor = ember.from_numpy(self.flat)
        self.views = False

    def view(self, k: int, shape) -> np.ndarray:
        return self.flat[self.offsets[k] : self.offsets[k + 1]].reshape(shape)

    def fill(self, params: list, divisor: int, expect: set) -> None:
        """Copy the gradients in divided by ``divisor`` (zeros for those without one): one
        pass over each gradient."""
        for k, p in enumerate(params):
            dest = self.view(k, p._data.shape)
            g = p.grad
            if g is None or id(p) not in expect:
                dest[...] = 0
                continue
            source = dest if g._data is dest or np.shares_memory(g._data, dest) else g._data
            if divisor != 1:
                np.divide(source, divisor, out=dest, casting="unsafe")
            elif source is not dest:
                dest[...] = source

    def unpack(self, params: list, index: list[int], used) -> None:
        """Write the reduced gradients back (``gradient_as_bucket_view``: grads are views)."""
        import ember

        for k, (i, p) in enumerate(zip(index, params, strict=True)):
            if used is not None and not used[i]:
                continue
            value = self.view(k, p._data.shape)
            if p.grad is None:
                p.grad = ember.from_numpy(value if self.views else value.copy())
            elif p.grad._data is not value and not np.shares_memory(p.grad._data, value):
                p.grad._data[...] = value


def _assign(params: list, order, limits: list[int]) -> list[list[int]]:
    """Cut the parameters, taken in ``order``, into buckets of one dtype each: a bucket is
    closed as soon as it holds ``limits[k]`` bytes (the k-th bucket of its dtype; the last
    limit repeats). Returns the buckets' parameter indices in the order they were closed,
    the buckets still open last."""
    done: list[list[int]] = []
    open_: dict = {}  # dtype -> (indices, bytes, buckets closed so far)
    for i in order:
        idx, nbytes, closed = open_.get(params[i].dtype, ([], 0, 0))
        idx.append(i)
        nbytes += params[i]._data.nbytes
        if nbytes >= limits[min(closed, len(limits) - 1)]:
            done.append(idx)
            idx, nbytes, closed = [], 0, closed + 1
        open_[params[i].dtype] = (idx, nbytes, closed)
    return done + [idx for idx, _, _ in open_.values() if idx]


def _make_buckets(params: list, groups: list[list[int]]) -> list[_Bucket]:
    return [_Bucket([params[j] for j in idx], idx) for idx in groups]


def _verify_shapes(params: list, group) -> None:
    """Raise torch's error when the ranks' models differ in parameter count or shapes."""
    n = dist.get_world_size(group)
    if n == 1:
        return
    mine = [tuple(p.shape) for p in params]
    everyone: list = [None] * n
    dist.all_gather_object(everyone, mine, group=group)
    me = dist.get_rank(group)
    for r, theirs in enumerate(everyone):
        if len(theirs) != len(mine):
            raise RuntimeError(
                f"DDP expects same model across all ranks, but Rank {me} has {len(mine)} "
                f"params, while rank {r} has inconsistent {len(theirs)} params."
            )
    for r, theirs in enumerate(everyone):  # (torch compares with process 0)
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            if a != b:
                raise RuntimeError(
                    f"[{me}]: params[{i}] in this process with sizes {list(a)} appears not to "
                    f"match sizes of the same param in process {r}."
                )


class DistributedDataParallel(Module):
    """Replicate ``module`` on every rank of ``process_group`` (default: the world) and
    average the gradients of its parameters across ranks during ``backward``."""

    def __init__(
        self,
        module: Module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool | None = None,
        init_sync: bool = True,
        process_group=None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params=None,
        param_to_hook_all_reduce=None,
        mixed_precision=None,
        device_mesh=None,
        skip_all_reduce_unused_params: bool = False,
        bucket_cap_mb_list: list[int] | None = None,
        batched_grad_copy: bool = False,
        forward_sync_buffers: bool | None = None,
        **kwargs,
    ) -> None:
        super().__init__()
        if process_group is not None and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        self.process_group = dist.distributed_c10d._group_or_default(process_group)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any "
                "parameter that requires a gradient."
            )
        if device_ids or output_device:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters "
                "{device(type='cpu')}."
            )
        self.module = module
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        if broadcast_buffers is not None:
            warnings.warn(
                _BOTH_BUFFER_FLAGS if forward_sync_buffers is not None else _BROADCAST_BUFFERS,
                FutureWarning,
                stacklevel=2,
            )
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            init_sync_buffers = True
        else:  # (the deprecated broadcast_buffers=False skips the sync at init too)
            self.forward_sync_buffers = True if broadcast_buffers is None else broadcast_buffers
            init_sync_buffers = self.forward_sync_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024**2)
        # torch: the first bucket takes 1 MiB under the default cap, the cap when one is given
        first = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self._limits = [first, self.bucket_bytes_cap]
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._params = params
        self._index = {id(p): i for i, p in enumerate(params)}
        self._ready: set = set()
        self._expect: set = set()
        self._armed = False
        self._join: _Join | None = None  # the active ``join()`` context
        self._divisor = self.process_group.size()
        self._reductions = 0  # gradient reductions so far (the same count on every rank)
        self._ready_order: list[int] = []  # the first reduced backward's gradient order
        self._static_expect: set | None = None  # static_graph: the first iteration's
        self._static_used = None  # expected parameters and the ranks' union of used ones
        self._init_buckets()
        self._works: list = []
        self._launched_at: list[float] = []
        self._next_bucket = 0
        self._comm_hook = None  # (state, hook) of register_comm_hook
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]
        _verify_shapes(params, self.process_group)
        for layer in module.modules():
            if isinstance(layer, SyncBatchNorm):  # (torch: only on GPU modules)
                raise ValueError("SyncBatchNorm layers only work with GPU modules")
        if init_sync:
            synced = list(module.parameters())
            if init_sync_buffers:
                synced += list(module.buffers())
            _broadcast_flat(synced, self.process_group)
        if gradient_as_bucket_view:
            self._grads_as_views()

    def _init_buckets(self) -> None:
        """Torch's first buckets: all parameters in one bucket (per dtype) when the buckets
        will be rebuilt after the first iteration, in the order its gradients arrived;
        otherwise (``find_unused_parameters`` without ``static_graph``) buckets cut in
        parameter order and reduced last first."""
        n = len(self._params)
        self._rebuilt = not self._will_rebuild()
        if self._rebuilt:
            groups = list(reversed(_assign(self._params, range(n), self._limits)))
        else:
            groups = _assign(self._params, range(n - 1, -1, -1), [_UNLIMITED])
        self._buckets = _make_buckets(self._params, groups)

    def _will_rebuild(self) -> bool:
        return self.static_graph or not self.find_unused_parameters

    def _rebuild_buckets(self) -> None:
        """Re-cut the buckets in the order the gradients became ready during the first
        reduced backward (rank 0's order, or the order of the highest rank that has one),
        so that each bucket fills up early and its all-reduce overlaps the rest of
        ``backward``: what torch's reducer does once, at the forward after that backward."""
        import ember

        self._rebuilt = True
        n = len(self._params)
        order = list(dict.fromkeys(self._ready_order + list(range(n))))  # the unused last
        src = self._common_rank(bool(self._ready_order))
        if src < 0:
            return
        shared = ember.tensor(order if self.process_group.rank() == src else [0] * n)
        dist.broadcast(shared, group=self.process_group, group_src=src)
        self._ready_order = []
        groups = _assign(self._params, shared.tolist(), self._limits)
        self._buckets = _make_buckets(self._params, groups)
        if self.gradient_as_bucket_view:
            self._grads_as_views()

    def _maybe_rebuild(self) -> None:
        if not self._rebuilt and self._reductions > 0:
            self._rebuild_buckets()

    def _grads_as_views(self) -> None:
        import ember

        for bucket in self._buckets:
            bucket.views = True
            for k, i in enumerate(bucket.index):
                p = self._params[i]
                view = bucket.view(k, p._data.shape)
                if p.grad is not None:
                    view[...] = p.grad._data
                p.grad = ember.from_numpy(view)

    @property
    def broadcast_buffers(self) -> bool:
        """Deprecated name of ``forward_sync_buffers``."""
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    # ---------------------------------------------------------------------- forward
    def will_sync_module_buffers(self) -> bool:
        """Return whether each forward broadcasts rank 0's buffers."""
        return (
            self.require_forward_param_sync
            and self.forward_sync_buffers
            and any(True for _ in self.module.buffers())
        )

    def forward(self, *inputs, **kwargs):
        import ember

        if self._armed and self._ready:
            missing = [self._index[id(p)] for p in self._params if id(p) not in self._ready]
            raise RuntimeError(
                _UNFINISHED.format(
                    rank=self.process_group.rank(), indices=" ".join(map(str, missing))
                )
            )
        if self._join is not None:
            self._join.notify()
        if ember.is_grad_enabled():  # (torch: not in a no_grad forward, e.g. evaluation)
            self._maybe_rebuild()
        if self.will_sync_module_buffers():
            src = 0 if self._join is None else self._common_rank(True)
            _broadcast_flat(list(self.module.buffers()), self.process_group, src)
        if self._join is not None:
            self._flag_all_reduce(self.require_backward_grad_sync)
        output = self.module(*inputs, **kwargs)
        self._ready = set()
        self._armed = ember.is_grad_enabled() and self.require_backward_grad_sync
        if self._armed:
            if self._static_expect is not None:  # static_graph: the graph walked once
                self._expect = self._static_expect
            elif self.find_unused_parameters or self.static_graph:
                reached = _reached_leaves(_tensors_in(output, []))
                self._expect = {id(p) for p in self._params if id(p) in reached}
                if self.static_graph:
                    self._static_expect = self._expect
            else:
                self._expect = {id(p) for p in self._params}
            if not self._expect:
                self._armed = False  # no gradient will arrive: only the flags to exchange
                if self._exchanges_flags():
                    self._reduce()
        return output

    # ---------------------------------------------------------------------- backward
    def _grad_ready(self, param) -> None:
        if not self._armed:
            return
        self._ready.add(id(param))
        if not self._rebuilt:
            self._ready_order.append(self._index[id(param)])
        self._launch_ready_buckets()
        if self._expect <= self._ready:
            self._armed = False
            self._ready = set()
            self._reduce()

    def _bucket_ready(self, bucket: _Bucket) -> bool:
        return all(
            id(self._params[i]) in self._ready or id(self._params[i]) not in self._expect
            for i in bucket.index
        )

    def _launch_ready_buckets(self, force: bool = False) -> None:
        """Start the all-reduce of every bucket whose gradients are all ready, in bucket order
        (the same on every rank), without waiting for it: it runs while backward goes on."""
        while self._next_bucket < len(self._buckets):
            bucket = self._buckets[self._next_bucket]
            if not force and not self._bucket_ready(bucket):
                return
            divisor = self._divisor if self._comm_hook is None else 1  # (hooks average)
            bucket.fill([self._params[i] for i in bucket.index], divisor, self._expect)
            self._launched_at.append(time.perf_counter())
            self._works.append(self._start_reduction(self._next_bucket, bucket.tensor))
            self._next_bucket += 1

    def _start_reduction(self, k: int, buffer: Tensor):
        """Start the all-reduce of bucket ``k``'s flat ``buffer`` (or the communication hook
        on it); return its Work or the hook's future."""
        if self._comm_hook is None:
            return dist.all_reduce(buffer, group=self.process_group, async_op=True)
        state, hook = self._comm_hook
        bucket = self._buckets[k]
        params = [self._params[i] for i in bucket.index]
        last = k == len(self._buckets) - 1
        shapes = [tuple(p.shape) for p in params]
        fut = hook(state, dist.GradBucket(k, last, buffer, params, shapes))
        if not callable(getattr(fut, "wait", None)):
            raise RuntimeError(
                "DDP communication hook's callback must return a torch.futures.Future object, "
                f"but got {type(fut).__module__}.{type(fut).__qualname__}"
            )
        return fut

    @staticmethod
    def _finished(work) -> bool:
        return work.is_completed() if isinstance(work, dist.Work) else work.done()

    def _wait_bucket(self, bucket: _Bucket, work) -> None:
        """Wait for a bucket's reduction; a hook's result lands in the bucket's buffer."""
        if isinstance(work, dist.Work):
            work.wait()
            return
        value = work.wait()
        if not isinstance(value, Tensor) or value.numel() != bucket.flat.size:
            raise RuntimeError(
                "DDP communication hook's future must hold a tensor of the bucket's size "
                f"({bucket.flat.size} elements), got {type(value).__name__}"
            )
        if value._data is not bucket.flat and not np.shares_memory(value._data, bucket.flat):
            bucket.flat[...] = value._data.reshape(-1)

    def register_comm_hook(self, state: object, hook) -> None:
        """Reduce each gradient bucket with ``hook(state, bucket)`` instead of DDP's averaging
        all-reduce: the hook gets a :class:`~ember.distributed.GradBucket` and returns a
        future whose value (a tensor of the bucket's size) becomes the bucket's gradients.
        The hook averages by itself (``default_hooks.allreduce_hook`` divides by the group
        size); it can be registered once."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self._comm_hook is not None:
            raise RuntimeError(
                "register_comm_hook or register_builtin_comm_hook can only be called once."
            )
        self._comm_hook = (state, hook)

    def _reduce(self) -> None:
        """Finish the iteration's reduction: start the buckets not started yet, wait for all,
        and write the averaged gradients back (unless they are views of the buckets)."""
        import ember

        # (benchmarks, tests: when this rank's backward was done)
        self._backward_done_at = time.perf_counter()
        self._launch_ready_buckets(force=True)
        used = self._static_used
        if self._exchanges_flags():
            flags = np.array([id(p) in self._expect for p in self._params], np.int32)
            dist.all_reduce(ember.from_numpy(flags), group=self.process_group)
            used = flags > 0
            if self.static_graph:
                self._static_used = used
        works, self._works, self._next_bucket = self._works, [], 0
        launched, self._launched_at = self._launched_at, []
        self._reductions += 1
        # (benchmarks: the bytes whose all-reduce finished during backward, i.e. hidden)
        self._hidden_bytes = sum(
            b.flat.nbytes for b, w in zip(self._buckets, works, strict=True) if self._finished(w)
        )
        for bucket, w in zip(self._buckets, works, strict=True):
            self._wait_bucket(bucket, w)
        # (benchmarks, tests: how long this rank waited after backward; per bucket, when its
        # reduction was launched and, on an MPI lane, when its MPI call ran)
        self._exposed_comm_seconds = time.perf_counter() - self._backward_done_at
        spans = [getattr(w, "_span", None) for w in works]
        self._comm_record = [
            (t, span() if span is not None else None)
            for t, span in zip(launched, spans, strict=True)
        ]
        for bucket in self._buckets:
            bucket.unpack([self._params[i] for i in bucket.index], bucket.index, used)

    def _exchanges_flags(self) -> bool:
        """Whether this reduction all-reduces the "used" flags (``find_unused_parameters``;
        ``static_graph``: only in the first iteration)."""
        if self.static_graph:
            return self._static_used is None
        return self.find_unused_parameters

    # -------------------------------------------------------------------- uneven inputs
    def _flag_all_reduce(self, flag: bool) -> float:
        import ember

        t = ember.ones(1) if flag else ember.zeros(1)
        dist.all_reduce(t, group=self.process_group)
        return t.item()

    def _common_rank(self, candidate: bool) -> int:
        """Return the highest group rank among the candidates (torch's ``_find_common_rank``)."""
        import ember

        t = ember.tensor([self.process_group.rank() if candidate else -1])
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.process_group)
        return int(t.item())

    def _shadow_iteration(self) -> None:
        """Match, on a rank out of inputs, the collectives of one iteration of the others:
        the buffer broadcast, the flag saying whether they synchronise gradients, and the
        gradient reduction itself (with zero gradients)."""
        import ember

        self._maybe_rebuild()
        if self.will_sync_module_buffers():
            _broadcast_flat(
                list(self.module.buffers()), self.process_group, self._common_rank(False)
            )
        should_sync = self._flag_all_reduce(False) != 0
        self.require_forward_param_sync = should_sync
        if not should_sync:
            return
        works = []
        for k, bucket in enumerate(self._buckets):
            zeros = ember.from_numpy(np.zeros_like(bucket.flat))
            works.append(self._start_reduction(k, zeros))
        if self._exchanges_flags():
            flags = ember.zeros(len(self._params), dtype=ember.int32)
            dist.all_reduce(flags, group=self.process_group)
            if self.static_graph:
                self._static_used = flags.numpy() > 0
        self._reductions += 1
        for w in works:
            w.wait()  # (a Work, or a hook's future)

    def _sync_final_model(self, is_last_joiner: bool) -> None:
        src = self._common_rank(is_last_joiner)
        _broadcast_flat(
            list(self.module.parameters()) + list(self.module.buffers()), self.process_group, src
        )

    def join(
        self,
        divide_by_initial_world_size: bool = True,
        enable: bool = True,
        throw_on_early_termination: bool = False,
    ):
        """Return a context manager for training with uneven inputs: a rank that runs out of
        inputs shadows the others' collectives until all have finished, then every rank takes
        the model of the last one to finish. Gradients are divided by the initial world size
        (or, with ``divide_by_initial_world_size=False``, by the number of ranks still
        training); with ``throw_on_early_termination=True`` every rank raises instead once one
        has run out."""
        return _Join(self, divide_by_initial_world_size, enable, throw_on_early_termination)

    @contextmanager
    def no_sync(self):
        """Skip the gradient reduction of the backward passes run inside this context; the
        gradients accumulate locally until the next synchronised backward."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _set_static_graph(self) -> None:
        """Declare the graph static (torch's private switch, before the first iteration)."""
        self.static_graph = True
        if self._reductions == 0:
            self._init_buckets()
            if self.gradient_as_bucket_view:
                self._grads_as_views()

    def _get_ddp_logging_data(self) -> dict:
        """The wrapper's configuration as torch's DDP logger reports it (its string and
        integer fields; ember records no per-iteration timings)."""
        pg = self.process_group
        return {
            "backend_name": dist.get_backend(pg),
            "module_name": type(self.module).__name__,
            "device_ids": "",
            "broadcast_buffers": int(self.forward_sync_buffers),
            "bucket_cap_bytes": self.bucket_bytes_cap,
            "find_unused_parameters": int(self.find_unused_parameters),
            "gradient_as_bucket_view": int(self.gradient_as_bucket_view),
            "has_sync_bn": int(any(isinstance(m, SyncBatchNorm) for m in self.module.modules())),
            "is_multi_device_module": 0,
            "num_parameter_tensors": len(self._params),
            "output_device": -1,
            "rank": pg.rank(),
            "world_size": pg.size(),
            "total_parameter_size_bytes": sum(p.numel() * p.element_size() for p in self._params),
        }

    def __getstate__(self):
        # the group (sockets) and the hooks stay behind; unpickling joins the default group
        state = dict(self.__dict__)
        for name in ("process_group", "_handles", "_index", "_ready", "_expect", "_armed"):
            state.pop(name, None)
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self.process_group = dist.distributed_c10d._default_pg()
        self._index = {id(p): i for i, p in enumerate(self._params)}
        self._ready, self._expect, self._armed = set(), set(), False
        self._join, self._divisor = None, self.process_group.size()
        self._handles = [
            p.register_post_accumulate_grad_hook(self._grad_ready) for p in self._params
        ]


class _Join:
    """The context manager of :meth:`DistributedDataParallel.join` (torch's ``Join`` with one
    joinable)."""

    def __init__(self, ddp, divide_by_initial_world_size, enable, throw_on_early_termination):
        self.ddp = ddp
        self.divide_by_initial_world_size = divide_by_initial_world_size
        self.enable = enable
        self.throw = throw_on_early_termination

    def __enter__(self):
        if self.enable:
            self.ddp._join = self
        return self

    def notify(self) -> None:
        """Tell ranks that ran out of inputs that this one still trains (each forward)."""
        ddp = self.ddp
        active = ddp._flag_all_reduce(True)
        if not self.divide_by_initial_world_size:
            ddp._divisor = int(active)
        if self.throw and ddp._flag_all_reduce(False):
            raise RuntimeError(
                "Detected at least one rank that exhausted inputs. Throwing across all ranks."
            )

    def __exit__(self, exc_type, exc, tb):
        ddp = self.ddp
        if not self.enable:
            return None
        ddp._join = None
        if exc_type is not None:
            return None  # propagate the exception directly
        is_last_joiner = True
        try:
            while True:
                active = ddp._flag_all_reduce(False)
                if active == 0:
                    break
                if self.throw:
                    ddp._flag_all_reduce(True)
                    raise RuntimeError(f"Rank {ddp.process_group.rank()} exhausted all inputs.")
                if not self.divide_by_initial_world_size:
                    ddp._divisor = int(active)
                ddp._shadow_iteration()
                is_last_joiner = False
            ddp._sync_final_model(is_last_joiner)
        finally:
            ddp._divisor = ddp.process_group.size()
            ddp.require_forward_param_sync = True
        return None
