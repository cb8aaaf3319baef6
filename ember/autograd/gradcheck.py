"""``gradcheck`` and ``gradgradcheck``: analytical gradients against finite differences.

As torch's ``torch/autograd/gradcheck.py`` for real (non-complex) dense tensors:

- slow mode builds, for every output ``o`` and differentiable input ``x``, the numerical Jacobian
  (central differences, perturbing one element of ``x`` in place at a time) and the analytical
  one (one ``autograd.grad`` per element of ``o``, run twice to check that backward is
  deterministic), and compares them with ``allclose(analytical, numerical, rtol, atol)``;
- fast mode compares the scalars ``v^T J u`` for random unit vectors ``u``, ``v``;
- then backward must be linear in the output gradient (zero in, zero out) and cope with
  undefined output gradients.

Jacobians are laid out as torch's: shape ``(x.numel(), o.numel())``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ember._core.node import Node, edge_of
from ember._core.tensor import Tensor, _wrap

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when a check fails."""


def _workaround_note(setting: str, how_end: str, opinfo_end: str) -> str:
    # torch appends the same advice to two of its failures, differing only in the keyword to
    # set and two punctuation marks; both rendered texts are part of the messages we match
    return "\n".join(
        [
            "If you are adding a new operator, please file an issue and then use one of the",
            "workarounds. The workaround depends on how your test invokes "
            f"gradcheck/gradgradcheck{how_end}",
            "If the test",
            "- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck",
            f"  with `{setting}` as a keyword argument.",
            "- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for "
            "the test",
            f"  to have `gradcheck_{setting}`{opinfo_end}",
            "- is a Module test (e.g., in common_nn.py), then modify the corresponding",
            f"  module_test entry to have `gradcheck_{setting}`",
        ]
    )


FAILED_NONDET_MSG = (
    "\n\nNOTE: If your op relies on non-deterministic operations i.e., it is listed here:\n"
    "https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html\n"
    "this failure might be expected.\n\n" + _workaround_note("nondet_tol=<tol>", ".", ".") + "\n"
)

FAST_FAIL_SLOW_OK_MSG = (
    "Fast gradcheck failed but element-wise differences are small. This means that the\n"
    "test might've passed in slow_mode!\n\n" + _workaround_note("fast_mode=False", ":\n", "")
)


# ---------------------------------------------------------------------------------------------
# small helpers


def _as_tuple(x) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_float_tensor(x) -> bool:
    return isinstance(x, Tensor) and (x.dtype.is_floating_point or x.dtype.is_complex)


def _outputs_needing_grad(result) -> tuple:
    return _outputs(result, requiring_grad=True)


def _outputs(result, *, floating: bool = False, requiring_grad: bool = False) -> tuple:
    """The tensors ``func`` returned (a bare value counts as a 1-tuple), filtered."""
    kept = []
    for value in _as_tuple(result):
        if floating and not _is_float_tensor(value):
            continue
        if requiring_grad and not value.requires_grad:
            continue
        kept.append(value)
    return tuple(kept)


def _diff_inputs(inputs) -> list:
    return [(i, t) for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _tensor(a: np.ndarray) -> Tensor:
    return _wrap(np.array(a, order="C"))


def _check_inputs(inputs) -> None:
    any_requires_grad = False
    for idx, inp in enumerate(inputs):
        if isinstance(inp, Tensor) and inp.requires_grad:
            if inp.dtype.name not in ("float64", "complex128"):
                warnings.warn(
                    f"Input #{idx} requires gradient and is not a double precision floating "
                    "point or complex. This check will likely fail if all the inputs are not of "
                    "double precision floating point or complex. ",
                    UserWarning,
                    stacklevel=4,
                )
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                raise RuntimeError(
                    f"The {idx}th input has a dimension with stride 0. gradcheck only supports "
                    "inputs that are non-overlapping to be able to compute the numerical "
                    "gradients correctly. You should call .contiguous on the input before "
                    "passing it to gradcheck."
                )
            if inp.dtype.is_complex:
                raise NotImplementedError(
                    "ember's gradcheck does not support complex inputs yet (input #"
                    f"{idx} is {inp.dtype})"
                )
            any_requires_grad = True
    if not any_requires_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of "
            "them have requires_grad=True."
        )


def _notallclose_msg(analytical, numerical, output_idx: int, input_idx: int) -> str:
    return (
        f"Jacobian mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
        f"numerical:{_tensor(numerical)}\nanalytical:{_tensor(analytical)}\n"
    )


def _allclose(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    dt = np.result_type(a, b)
    return bool(np.allclose(a.astype(dt), b.astype(dt), rtol=rtol, atol=atol))


# ---------------------------------------------------------------------------------------------
# numerical derivatives


def _eval_float_outputs(func, inputs) -> list:
    """Run ``func``; return copies of the arrays of its float outputs (they may alias inputs)."""
    return [np.array(o._data, copy=True) for o in _outputs(func(*inputs), floating=True)]


def _check_same_meta(a: np.ndarray, b: np.ndarray, perturbation: str) -> None:
    # ``perturbation`` completes "when inputs are perturbed ...": "by eps" or "on index i by eps"
    for what, left, right in (
        ("shape", _shape(a), _shape(b)),
        ("dtype", _dtype_name(a), _dtype_name(b)),
    ):
        if left != right:
            raise AssertionError(
                f"Expected `func` to return outputs with the same {what} when inputs are "
                f"perturbed {perturbation}, but got: {what}s {left} and {right}."
            )


def _dtype_name(a: np.ndarray) -> str:
    # the outputs compared here are floating or complex: NumPy's names are torch's
    return f"torch.{a.dtype.name}"


def _shape(a) -> str:
    return f"torch.Size({list(a.shape)})"


def _numerical_jacobians(func, inputs, input_idx: int, eps: float, outs) -> list:
    """Return, per float output (``outs``: the unperturbed outputs), the numerical Jacobian
    w.r.t. input ``input_idx``."""
    data = inputs[input_idx]._data
    cols = []
    for k in range(data.size):
        idx = np.unravel_index(k, data.shape)
        orig = data[idx].copy()
        data[idx] = orig - eps
        outa = _eval_float_outputs(func, inputs)
        data[idx] = orig + eps
        outb = _eval_float_outputs(func, inputs)
        data[idx] = orig
        col = []
        for a, b in zip(outa, outb):
            _check_same_meta(a, b, f"on index {tuple(int(i) for i in idx)} by {eps}")
            col.append(((b - a) / (2 * eps)).reshape(-1))
        cols.append(col)
    outs = _outputs(outs, floating=True)
    jacobians = []
    for j, o in enumerate(outs):
        jac = np.zeros((data.size, o._data.size), dtype=o._data.dtype)
        for k, col in enumerate(cols):
            jac[k] = col[j]
        jacobians.append(jac)
    return jacobians


def _numerical_jvps(func, inputs, input_idx: int, u: np.ndarray, eps: float) -> list:
    """Return, per float output, the finite-difference ``J u`` (flattened)."""
    data = inputs[input_idx]._data
    orig = data.copy()
    delta = (u * eps).reshape(data.shape)
    data[...] = orig - delta
    outa = _eval_float_outputs(func, inputs)
    data[...] = orig + delta
    outb = _eval_float_outputs(func, inputs)
    data[...] = orig
    res = []
    for a, b in zip(outa, outb):
        _check_same_meta(a, b, f"by {eps}")
        res.append(((b - a) / (2 * eps)).reshape(-1))
    return res


# ---------------------------------------------------------------------------------------------
# analytical derivatives


def _vjps(output: Tensor, diff_inputs: list, grad_output: np.ndarray) -> tuple:
    from ember.autograd.engine import grad

    g = _wrap(grad_output.reshape(output._data.shape).astype(output._data.dtype))
    return grad(output, diff_inputs, g, retain_graph=True, allow_unused=True)


def _analytical_jacobians(inputs, output, nondet_tol, check_grad_dtypes, v=None) -> list:
    """Return per differentiable input its analytical Jacobian w.r.t. ``output`` (shape
    ``(x.numel(), o.numel())``; with ``v``, the single column ``v^T J``). Checks sizes, dtypes
    and reentrancy as torch."""
    diff = [t for _, t in _diff_inputs(inputs)]

    def rows():
        if v is not None:
            return [[r] for r in _vjps(output, diff, v)]
        n = output._data.size
        result = [[] for _ in diff]
        for j in range(n):
            e = np.zeros(n, dtype=output._data.dtype)
            e[j] = 1.0
            for i, r in enumerate(_vjps(output, diff, e)):
                result[i].append(None if r is None else np.array(r._data, copy=True))
        return result

    def stack(per_input):
        jacs, sizes_ok, types_ok = [], True, True
        for inp, cols in zip(diff, per_input):
            jac = np.zeros((inp._data.size, len(cols)), dtype=inp._data.dtype)
            for j, c in enumerate(cols):
                if c is None:
                    continue
                c = c._data if isinstance(c, Tensor) else c
                if c.shape != inp._data.shape:
                    sizes_ok = False
                    continue
                if c.dtype != inp._data.dtype:
                    types_ok = False
                jac[:, j] = c.reshape(-1)
            jacs.append(jac)
        return jacs, sizes_ok, types_ok

    jac1, sizes_ok, types_ok = stack(rows())
    jac2, _, _ = stack(rows())
    # written as torch's (a NaN difference does not count as nondeterminism)
    reentrant = not any(
        a.size != 0 and np.abs(a - b).max() > nondet_tol for a, b in zip(jac1, jac2)
    )
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches "
            f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}."
            + FAILED_NONDET_MSG
        )
    return jac1


# ---------------------------------------------------------------------------------------------
# the modes


def _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet):
    func_out = _as_tuple(func_out)
    diff = _diff_inputs(inputs)
    if not outputs:
        for idx, _ in diff:
            for jac in _numerical_jacobians(func, inputs, idx, eps, func_out):
                if np.any(jac != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    # numerical[j][i]: input j, float output i; keep the outputs that require grad
    float_outs = _outputs(func_out, floating=True)
    numerical = [_numerical_jacobians(func, inputs, idx, eps, func_out) for idx, _ in diff]
    keep = [i for i, o in enumerate(float_outs) if o.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobians(inputs, o, nondet, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][keep[i]]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, i, j))
    return True


def _unit_vector(rng, n: int, dtype) -> np.ndarray:
    v = rng.random(n).astype(dtype)
    norm = np.sqrt((v * v).sum())
    return v / norm if norm else v


def _fast_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet):
    diff = _diff_inputs(inputs)
    rng = np.random.default_rng(0)  # its own generator: the user's RNG state is untouched
    all_u = [_unit_vector(rng, t._data.size, t._data.dtype) for _, t in diff]
    all_v = [_unit_vector(rng, o._data.size, o._data.dtype) for o in outputs]
    float_outs = _outputs(func_out, floating=True)
    if not outputs:
        for (idx, _), u in zip(diff, all_u):
            for jvp in _numerical_jvps(func, inputs, idx, u, eps):
                if jvp.size and np.abs(jvp).max() > nondet:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    keep = [i for i, o in enumerate(float_outs) if o.requires_grad]
    # numerical[j][i] = v_i . (J_ij u_j), analytical[i][j] = (v_i^T J_ij) . u_j
    numerical = []
    for (idx, _), u in zip(diff, all_u):
        jvps = _numerical_jvps(func, inputs, idx, u, eps)
        numerical.append([np.dot(v, jvps[k]) for v, k in zip(all_v, keep)])
    analytical = []
    for o, v in zip(outputs, all_v):
        vj = _analytical_jacobians(inputs, o, nondet, check_grad_dtypes, v=v)
        analytical.append([np.dot(col[:, 0], u) for col, u in zip(vj, all_u)])
    for j, u in enumerate(all_u):
        for i, v in enumerate(all_v):
            a, n = np.asarray(analytical[i][j]), np.asarray(numerical[j][i])
            tol = atol * float(u.sum()) * float(v.sum())
            if not _allclose(a, n, rtol, tol):
                msg = _slow_mode_error(func, inputs, outputs, j, i, rtol, atol, eps)
                raise GradcheckError(_notallclose_msg(a, n, i, j) + msg)
    return True


def _slow_mode_error(func, inputs, outputs, input_idx, output_idx, rtol, atol, eps) -> str:
    diff = _diff_inputs(inputs)
    func_out = func(*inputs)
    float_outs = _outputs(func_out, floating=True)
    keep = [i for i, o in enumerate(float_outs) if o.requires_grad]
    jacobians = _numerical_jacobians(func, inputs, diff[input_idx][0], eps, func_out)
    numerical = jacobians[keep[output_idx]]
    analytical = _analytical_jacobians(inputs, outputs[output_idx], float("inf"), False)[input_idx]
    max_diff = np.abs(numerical - analytical).max() if numerical.size else 0.0
    msg = (
        "\nThe above quantities relating the numerical and analytical jacobians are computed \n"
        "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more "
        "background \nabout fast mode. Below, we recompute numerical and analytical jacobians "
        "in slow mode:\n\n"
        f"Numerical:\n {_tensor(numerical)}\n"
        f"Analytical:\n{_tensor(analytical)}\n\n"
        f"The max per-element difference (slow mode) is: {_tensor(np.asarray(max_diff))}.\n"
    )
    if _allclose(analytical, numerical, rtol, atol):
        msg += FAST_FAIL_SLOW_OK_MSG
    return msg


# ---------------------------------------------------------------------------------------------
# linearity and undefined gradients


def _check_backward_is_linear(outputs, inputs) -> bool:
    from ember.autograd.engine import grad

    diff = [t for _, t in _diff_inputs(inputs)]
    if not diff:
        raise GradcheckError("no Tensors requiring grad found in input")
    zeros = [_wrap(np.zeros(o._data.shape, dtype=o._data.dtype)) for o in outputs]
    grads = grad(outputs, diff, zeros, allow_unused=True)
    for gi, di in zip(grads, diff):
        if gi is None:
            continue
        if np.any(gi._data != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype is not di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi._data.shape != di._data.shape:
            raise GradcheckError("grad is incorrect size")
    return True


class UndefinedGradBackward(Node):
    """Passes no gradient to its input: makes an output's gradient undefined for backward."""

    __slots__ = ()

    def apply(self, grads) -> tuple:
        return (None,)


def _undefined_grad(t: Tensor) -> Tensor:
    node = UndefinedGradBackward()
    node.next_functions = (edge_of(t),)
    node._input_meta = ((t._data.shape, t.dtype),)
    out = t.detach()
    out.grad_fn = node
    out._requires_grad = True
    return out


def _check_undefined_output_grads(func, outputs, inputs) -> bool:
    from ember.autograd.engine import grad

    diff = [t for _, t in _diff_inputs(inputs)]
    if not diff:
        raise GradcheckError("no Tensors requiring grad found in input")

    def warn_bc_breaking():
        warnings.warn(
            "Backwards compatibility: New undefined gradient support checking feature is "
            "enabled by default, but it may break existing callers of this function. If this is "
            'true for you, you can call this function with "check_undefined_grad=False" to '
            "disable the feature",
            UserWarning,
            stacklevel=4,
        )

    def check(outs):
        zeros = [_wrap(np.zeros(o._data.shape, dtype=o._data.dtype)) for o in outs]
        try:
            grads = grad(outs, diff, zeros, allow_unused=True)
        except RuntimeError as e:
            warn_bc_breaking()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. Please look at "
                '"Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'
            ) from e
        for gi in grads:
            if gi is not None and np.any(gi._data != 0):
                warn_bc_breaking()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are "
                    'undefined or zero. Please look at "Notes about undefined output gradients" '
                    'in "tools/autograd/derivatives.yaml"'
                )
        return True

    to_check = [[_undefined_grad(o) for o in _outputs_needing_grad(func(*inputs))]]
    if len(to_check[0]) > 1:
        for undef in range(len(outputs)):
            outs = _outputs_needing_grad(func(*inputs))
            to_check.append([_undefined_grad(o) if k == undef else o for k, o in enumerate(outs)])
    return all(check(outs) for outs in to_check)


# ---------------------------------------------------------------------------------------------
# the public functions


def _check_options(first: tuple, second: tuple, *needs: tuple) -> None:
    """``first``/``second``: the two modes as (name, value), one must be on; each of ``needs``
    is (option, value, mode): the option is only allowed with that mode on."""
    if not (first[1] or second[1]):
        raise AssertionError(f"Expected at least one of {first[0]} or {second[0]} to be True")
    modes = dict((first, second))
    for option, value, mode in needs:
        if value and not modes[mode]:
            raise AssertionError(f"Setting {option}=True requires {mode} to be True")


def gradcheck(
    func: Callable,
    inputs: Tensor | Sequence,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Return True if the gradients of ``func`` at ``inputs`` (w.r.t. the float inputs that
    require grad) match finite differences; else raise ``GradcheckError`` showing the
    numerical and analytical Jacobians (or return False with ``raise_exception=False``)."""
    _check_options(
        ("check_forward_ad", check_forward_ad),
        ("check_backward_ad", check_backward_ad),
        ("check_batched_grad", check_batched_grad, "check_backward_ad"),
        ("check_batched_forward_grad", check_batched_forward_grad, "check_forward_ad"),
    )
    if check_batched_grad or check_batched_forward_grad:
        raise NotImplementedError(
            "ember has no batched (vmap) gradients: check_batched_grad and "
            "check_batched_forward_grad must be False"
        )
    try:
        if check_forward_ad:
            _forward_ad_gradcheck(func, _as_tuple(inputs), eps, rtol, atol)
        if not check_backward_ad:
            return True
        return _gradcheck_helper(
            func,
            inputs,
            eps,
            atol,
            rtol,
            nondet_tol,
            check_undefined_grad,
            check_grad_dtypes,
            fast_mode,
        )
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _forward_ad_gradcheck(func, inputs, eps, rtol, atol) -> None:
    """torch's ``check_forward_ad``: the Jacobian from forward-mode AD (a one-hot tangent per
    input element, through dual tensors) must match finite differences."""
    from ember.autograd import forward_ad as fwAD

    _check_inputs(inputs)
    func_out = func(*inputs)
    float_outs = _outputs(func_out, floating=True)
    for j, (idx, t) in enumerate(_diff_inputs(inputs)):
        if not _is_float_tensor(t):
            continue
        numerical = _numerical_jacobians(func, inputs, idx, eps, func_out)
        forward = [np.zeros((t._data.size, o._data.size), o._data.dtype) for o in float_outs]
        for k in range(t._data.size):
            tangent = np.zeros(t._data.shape, t._data.dtype)
            tangent.flat[k] = 1
            args = list(inputs)
            with fwAD.dual_level():
                args[idx] = fwAD.make_dual(t.detach(), _wrap(tangent))
                outs = _outputs(func(*args), floating=True)
                for i, o in enumerate(outs):
                    tan = fwAD.unpack_dual(o).tangent
                    if tan is not None:
                        forward[i][k] = tan.detach()._data.reshape(-1)
        for i, (a, n) in enumerate(zip(forward, numerical)):
            if not _allclose(a, n, rtol, atol):
                msg = _notallclose_msg(a, n, i, j).replace("Jacobian ", "", 1)
                raise GradcheckError("Jacobian computed with forward mode " + msg)


def _gradcheck_helper(
    func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes, fast
):
    tupled_inputs = _as_tuple(inputs)
    _check_inputs(tupled_inputs)
    func_out = func(*tupled_inputs)
    outputs = _outputs_needing_grad(func_out)
    if any(o.dtype.is_complex for o in outputs):
        raise NotImplementedError("ember's gradcheck does not support complex outputs yet")
    mode = _fast_gradcheck if fast else _slow_gradcheck
    mode(func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol)
    _check_backward_is_linear(outputs, tupled_inputs)
    if check_undefined_grad:
        _check_undefined_output_grads(func, outputs, tupled_inputs)
    return True


def gradgradcheck(
    func: Callable,
    inputs: Tensor | Sequence,
    grad_outputs: Tensor | Sequence | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Return True if the second derivatives of ``func`` (the gradients of its gradients
    w.r.t. ``inputs`` and ``grad_outputs``) match finite differences (see ``gradcheck``)."""
    from ember.autograd.engine import grad

    _check_options(
        ("check_fwd_over_rev", check_fwd_over_rev),
        ("check_rev_over_rev", check_rev_over_rev),
        ("check_undefined_grad", check_undefined_grad, "check_rev_over_rev"),
        ("check_batched_grad", check_batched_grad, "check_rev_over_rev"),
    )
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        seeds = tuple(
            _random_grad_output(o, gen_non_contig_grad_outputs)
            for o in _outputs_needing_grad(func(*inputs))
        )
    else:
        seeds = _as_tuple(grad_outputs)
    # gradgradcheck is gradcheck of the first derivative, seen as a function of the inputs
    # and the output gradients together
    split = len(inputs)
    wrt = [i for i, _ in _diff_inputs(inputs)]
    differentiable_seeds = [i for i, t in enumerate(seeds) if t.requires_grad]

    def first_derivative(*args):
        xs, us = list(args[:split]), list(args[split:])
        for i in wrt:  # gradcheck's forward-AD path hands in detached duals
            xs[i] = xs[i].requires_grad_()
        for i in differentiable_seeds:
            us[i] = us[i].requires_grad_()
        outs = _outputs_needing_grad(func(*xs))
        grads = grad(outs, [xs[i] for i in wrt], us, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivative,
        inputs + seeds,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )


def _random_grad_output(out: Tensor, noncontiguous: bool) -> Tensor:
    # torch draws them with make_tensor from the global generator: the same seed, the same
    # grad_outputs, and the same random state afterwards
    from ember._core.dtype import float64
    from ember.testing import make_tensor

    dtype = out.dtype if _is_float_tensor(out) else float64
    return make_tensor(
        out.shape,
        dtype=dtype,
        device=out.device,
        low=-1,
        high=1,
        requires_grad=True,
        noncontiguous=noncontiguous,
    )
