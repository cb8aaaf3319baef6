"""Activation checkpointing (``torch.utils.checkpoint``): trade compute for memory.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` without keeping the tensors its ops
save for backward; backward runs ``fn`` again to get them. Two implementations, as torch:

- non-reentrant (``use_reentrant=False``, recommended): the forward runs under
  ``saved_tensors_hooks`` whose pack hook stores a small placeholder (a ``_Holder``) instead of
  each tensor. The first unpack during backward re-runs ``fn`` under hooks that collect the
  recomputed tensors, in the order they are saved, into the holders; recomputation stops as
  soon as the last one is collected. Works with ``autograd.grad`` and keyword arguments.
- reentrant (``use_reentrant=True``): a custom Function whose forward runs ``fn`` under
  ``no_grad`` and whose backward re-runs it with grad and calls ``backward`` inside backward.

The RNG state is saved before the forward and restored for the recomputation (unless
``preserve_rng_state=False``), so dropout masks are the same.
"""

from __future__ import annotations

import uuid
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import ember
from ember._core.grad_mode import enable_grad, is_grad_enabled, no_grad
from ember._core.node import SavedTensor
from ember._core.tensor import Tensor
from ember.amp.autocast_mode import (
    autocast,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
)
from ember.autograd.engine import _is_checkpoint_valid, current_graph_task_id
from ember.autograd.function import Function
from ember.autograd.graph import saved_tensors_hooks
from ember.random import fork_rng

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointError",
    "CheckpointFunction",
    "check_backward_validity",
    "detach_variable",
    "set_checkpoint_early_stop",
]


class CheckpointError(RuntimeError):
    """The recomputation did not save the same tensors as the original forward."""


_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint‑debug mode globally.
"""


def detach_variable(inputs: tuple) -> tuple:
    """Return the inputs with each tensor detached, keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            "Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}"
        )
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    """Warn when no input tensor requires grad (the checkpoint then produces no gradients)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )


# ---------------------------------------------------------------------------------------------
# reentrant


_SAVED = object()  # marks where a saved tensor goes back among the reentrant inputs


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward without grad, backward recomputes and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = ember.get_rng_state()
        ctx.fwd_autocast = _autocast_state()
        # tensors are saved (so their versions are checked); everything else stays on ctx,
        # with a placeholder where each tensor goes back
        ctx.inputs = [_SAVED if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument."
            )
        saved = iter(ctx.saved_tensors)
        inputs = tuple(next(saved) if a is _SAVED else a for a in ctx.inputs)
        with fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                ember.set_rng_state(ctx.fwd_cpu_state)
            # fresh leaves: the recomputed graph ends at them, and their .grad is the answer
            leaves = detach_variable(inputs)
            with enable_grad(), autocast("cpu", **ctx.fwd_autocast):
                outputs = ctx.run_function(*leaves)
        outputs = (outputs,) if isinstance(outputs, Tensor) else outputs
        pairs = [
            (out, grad)
            for out, grad in zip(outputs, args)
            if isinstance(out, Tensor) and out.requires_grad
        ]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        roots, root_grads = zip(*pairs)
        ember.autograd.backward(list(roots), list(root_grads))
        return (None, None, *(x.grad if isinstance(x, Tensor) else None for x in leaves))


# ---------------------------------------------------------------------------------------------
# non-reentrant


_enable_early_stop = True


class set_checkpoint_early_stop:
    """Context manager: whether non-reentrant recomputation stops once every saved tensor is
    recomputed (default True)."""

    def __init__(self, enable: bool) -> None:
        self.enable = enable

    def __enter__(self) -> None:
        global _enable_early_stop
        self.prev = _enable_early_stop
        _enable_early_stop = self.enable

    def __exit__(self, *args) -> None:
        global _enable_early_stop
        _enable_early_stop = self.prev


class _Handle:
    pass


class _Holder:
    """What the graph stores in place of a saved tensor: per backward pass, a handle to the
    recomputed tensor."""

    def __init__(self) -> None:
        self.handles: dict = {}


class _StopRecomputationError(Exception):
    pass


def _metadata(x: Tensor) -> dict:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


class _CheckpointFrame:
    """The state of one checkpointed call: its inputs, one weak holder per saved tensor, and
    per backward pass (graph task id) the recomputed tensors."""

    def __init__(self, recompute_fn, early_stop: bool, metadata_fn) -> None:
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.saved_args: list = []
        self.weak_holders: list = []
        self.x_metadatas: list = []
        self.recomputed: defaultdict = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter: defaultdict = defaultdict(int)
        self.is_recomputed: defaultdict = defaultdict(bool)
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def register(self, x: Tensor) -> _Holder:
        """Pack ``x``: a new holder (kept weakly here) and the metadata to check it against."""
        holder = _Holder()
        self.weak_holders.append(weakref.ref(holder))
        if self.metadata_fn is not None:
            self.x_metadatas.append(self.metadata_fn(x))
        return holder

    def take(self, holder: _Holder, gid):
        """The tensor recomputed for ``holder`` in backward pass ``gid`` (once only)."""
        handle = holder.handles.get(gid)
        if handle is None:
            raise CheckpointError(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                "already unpacked once. If you are calling ctx.saved_tensors in backward, "
                "make sure to do so only once. Otherwise please open an issue with details "
                "on your use case."
            )
        holder.handles[gid] = None
        return self.recomputed[gid][handle]

    def save_inputs(self, *args) -> None:
        # the inputs are kept (version-checked), but never through the saved-tensor hooks
        self.saved_args = [
            SavedTensor(a, hooks=False) if isinstance(a, Tensor) else a for a in args
        ]

    def get_inputs(self) -> list:
        return [a.unpack(None) if isinstance(a, SavedTensor) else a for a in self.saved_args]

    def check_recomputed_tensors_match(self, gid) -> None:
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                "Number of tensors saved during recomputation: "
                f"{self.recomp_counter[gid]}.\n{_debug_tip_msg}"
            )
        different = []
        for position, (ref, expected) in enumerate(zip(self.weak_holders, self.x_metadatas)):
            holder = ref()  # None: that saved tensor was freed, nothing to compare
            if holder is None:
                continue
            got = self.metadata_fn(self.recomputed[gid][holder.handles[gid]])
            if got != expected:
                different.append((position, expected, got))
        if different:
            mismatched = "".join(
                f"tensor at position {idx}:\nsaved metadata: {saved}\n"
                f"recomputed metadata: {recomputed}\n"
                for idx, saved, recomputed in different
            )
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{mismatched}.\n"
                f"{_debug_tip_msg}"
            )


class _recomputation_hook(saved_tensors_hooks):
    """Collect the tensors saved while recomputing into the frame's holders, in order."""

    def __init__(self, target_frame_ref, gid) -> None:
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            frame = target_frame_ref()
            recomp_idx = frame.recomp_counter[gid]
            frame.recomp_counter[gid] += 1
            if recomp_idx >= len(frame.weak_holders):
                if not frame.forward_completed:
                    frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during recomputation "
                    f"than during the original forward pass.\n{_debug_tip_msg}"
                )
            holder = frame.weak_holders[recomp_idx]()
            if holder is not None:
                holder.handles[gid] = _Handle()
                frame.recomputed[gid][holder.handles[gid]] = x
            if frame.early_stop and frame.recomp_counter[gid] == len(frame.weak_holders):
                raise _StopRecomputationError
            return x

        super().__init__(pack_hook, lambda x: x)


class _checkpoint_hook(saved_tensors_hooks):
    """Store a holder instead of each saved tensor; recompute on the first unpack."""

    def __init__(self, frame) -> None:
        def unpack_hook(holder):
            gid = current_graph_task_id()
            if gid == -1:
                gid = int(uuid.uuid4())  # unpacked outside backward
            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()
                try:
                    with _recomputation_hook(weakref.ref(frame), gid), enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            return frame.take(holder, gid)

        super().__init__(frame.register, unpack_hook)


_DETERMINISM_CHECKS = {"default": _metadata, "none": None}


def _autocast_state() -> dict:
    """The CPU autocast settings in force now, to recompute under the same ones."""
    return {
        "enabled": is_autocast_enabled("cpu"),
        "dtype": get_autocast_dtype("cpu"),
        "cache_enabled": is_autocast_cache_enabled(),
    }


def _checkpoint_without_reentrant(
    fn, preserve_rng_state, context_fn, determinism_check, early_stop, args, kwargs
):
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(
            "determinism_check should be one of "
            f"{list(_DETERMINISM_CHECKS.keys())}, but got {determinism_check}"
        )
    forward_context, recompute_context = context_fn()
    if not is_grad_enabled():
        with forward_context:
            return fn(*args, **kwargs)
    fwd_state = ember.get_rng_state() if preserve_rng_state else None
    fwd_autocast = _autocast_state()

    def recompute_fn(*inputs):
        with fork_rng(enabled=preserve_rng_state):
            if preserve_rng_state:
                ember.set_rng_state(fwd_state)
            with recompute_context, autocast("cpu", **fwd_autocast):
                fn(*inputs, **kwargs)

    frame = _CheckpointFrame(
        recompute_fn, early_stop and _enable_early_stop, _DETERMINISM_CHECKS[determinism_check]
    )
    frame.save_inputs(*args)
    with _checkpoint_hook(frame), forward_context:
        ret = fn(*args, **kwargs)
    frame.forward_completed = True
    return ret


class _NullContext:
    def __enter__(self):
        return None

    def __exit__(self, *args) -> None:
        return None


def noop_context_fn():
    """The default ``context_fn``: no context for the forward nor for the recomputation."""
    return _NullContext(), _NullContext()


# ---------------------------------------------------------------------------------------------
# the public functions


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs: Any,
):
    """Return ``function(*args, **kwargs)`` without keeping its activations for backward:
    backward recomputes them (with the RNG state of the forward unless
    ``preserve_rng_state=False``)."""
    use_reentrant = _reentrant_or_warn(
        use_reentrant,
        "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
        "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
        "exception. use_reentrant=False is recommended, but if you need to preserve the "
        "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
        "details on the differences between the two variants.",
    )
    # the reentrant variant passes no keyword arguments on to ``function``
    preserve = _pop_preserve(kwargs, reject_rest=use_reentrant)
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve, *args)
    if debug:
        raise NotImplementedError("ember's checkpoint has no debug mode")
    return _checkpoint_without_reentrant(
        function, preserve, context_fn, determinism_check, early_stop, args, kwargs
    )


def checkpoint_sequential(functions, segments: int, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a list of callables, or a module with ``children()``) in sequence,
    checkpointing every one of ``segments`` chunks but the last."""
    use_reentrant = _reentrant_or_warn(
        use_reentrant,
        "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
        "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
        "is not passed. use_reentrant=False is recommended, but if you need to preserve the "
        "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
        "details on the differences between the two variants.",
    )
    preserve = _pop_preserve(kwargs, reject_rest=True)
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    size = len(functions) // segments  # (segments=0: ZeroDivisionError, as torch)
    # every segment but the last is checkpointed; the last one's activations are needed right
    # away, so it runs normally (more segments than functions: ValueError from range, as torch)
    checkpointed_starts = range(0, size * (segments - 1), size)
    done = 0
    for start in checkpointed_starts:
        done = start + size
        input = checkpoint(
            _chain(functions, start, done),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return _chain(functions, done, len(functions))(input)


def _chain(functions, start: int, stop: int) -> Callable:
    """``functions[start:stop]`` applied one after the other."""

    def run(value):
        for position in range(start, stop):
            value = functions[position](value)
        return value

    return run


def _reentrant_or_warn(use_reentrant, message: str) -> bool:
    # not given: torch warns and keeps the reentrant variant as its default
    if use_reentrant is None:
        warnings.warn(message, stacklevel=3)
        return True
    return use_reentrant


def _pop_preserve(kwargs: dict, reject_rest: bool) -> bool:
    """Take ``preserve_rng_state`` (default True) out of ``kwargs``; with ``reject_rest``,
    any other keyword is an error."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if reject_rest and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    return preserve
