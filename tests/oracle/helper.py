"""The oracle: run one function through ember and through torch and compare everything.

Write a case once as ``lambda lib, x, y: lib.mul(x, y)`` (or ``x * y``) and call
``check(fn, inputs)``. Inputs are NumPy arrays (or Python scalars passed through unchanged);
float inputs require grad unless ``grad=False``. Compared: value (tolerance by dtype), dtype,
shape, strides of dims of size > 1, contiguity, storage offset and storage sharing for views,
``_version`` of inputs (in-place ops), grad_fn name, and the gradient of every input that
requires grad under a random upstream gradient. ``check_raises`` compares exception classes.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_TOL = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-5, 1e-4),
    "float64": (1e-10, 1e-8),
    "complex64": (1e-5, 1e-4),
    "complex128": (1e-10, 1e-8),
}

_rng = np.random.default_rng(0)


def rand(*shape, dtype="float32", low=-2.0, high=2.0):
    """Return a NumPy array of random values of ``dtype`` (ints in [low, high))."""
    if dtype == "bool":
        return np.asarray(_rng.random(shape) > 0.5)
    if dtype.startswith(("int", "uint")):
        return np.asarray(_rng.integers(int(low), int(high), size=shape), dtype=dtype)
    if dtype.startswith("complex"):
        z = _rng.uniform(low, high, shape) + 1j * _rng.uniform(low, high, shape)
        return np.asarray(z, dtype=dtype)
    if dtype == "bfloat16":
        import ml_dtypes

        return np.asarray(_rng.uniform(low, high, shape), dtype=ml_dtypes.bfloat16)
    return np.asarray(_rng.uniform(low, high, shape), dtype=dtype)


def _to_lib(lib, a, requires_grad):
    if not isinstance(a, np.ndarray):
        return a
    if lib is torch:
        if a.dtype.name == "bfloat16":
            t = torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
        else:
            t = torch.from_numpy(a.copy())
    else:
        t = ember.from_numpy(a.copy())
    if requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex):
        t.requires_grad_(True)
    return t


def _np(t):
    """Return the values of an ember or torch tensor as a NumPy array (bfloat16 as float32)."""
    t = t.detach()
    if isinstance(t, ember.Tensor):
        return t._data.astype(np.float32) if t.dtype is ember.bfloat16 else t._data
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _flat(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(_flat(o))
        return res
    return [out]


def assert_same(e, t, *, atol=None, rtol=None, what="output", strides=True):
    """Assert ember tensor ``e`` equals torch tensor ``t`` in value, dtype, shape (and strides)."""
    if not isinstance(t, torch.Tensor):
        assert not isinstance(e, ember.Tensor), f"{what}: torch gave {type(t)}, ember a Tensor"
        if isinstance(t, float) and np.isnan(t):
            assert np.isnan(e), f"{what}: {e} != nan"
        else:
            assert e == t, f"{what}: {e!r} != {t!r}"
        return
    assert isinstance(e, ember.Tensor), f"{what}: ember gave {type(e).__name__}"
    tname = str(t.dtype).replace("torch.", "")
    assert e.dtype.name == tname, f"{what}: dtype {e.dtype.name} != {tname}"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} != {tuple(t.shape)}"
    if strides and t.numel() > 0:
        es, ts = e.stride(), t.stride()
        for d, n in enumerate(t.shape):
            if n > 1:
                assert es[d] == ts[d], f"{what}: strides {es} != {ts} (shape {tuple(t.shape)})"
        assert e.is_contiguous() == t.is_contiguous(), f"{what}: contiguity differs"
    rt, at = _TOL.get(tname, (0, 0))
    rt, at = rtol if rtol is not None else rt, atol if atol is not None else at
    ev, tv = _np(e), _np(t)
    if rt == 0 and at == 0:
        np.testing.assert_array_equal(ev, tv, err_msg=what)
    else:
        np.testing.assert_allclose(ev, tv, rtol=rt, atol=at, equal_nan=True, err_msg=what)


def check(
    fn,
    inputs,
    *,
    grad=True,
    atol=None,
    rtol=None,
    grad_atol=None,
    grad_rtol=None,
    strides=True,
    view=False,
    grad_fn=True,
    version=True,
    seed=1,
):
    """Run ``fn(lib, *inputs)`` with ember and torch and compare outputs and gradients.

    ``view=True``: output 0 should be a view of input 0: check view-ness, storage offset and
    storage sharing.
    Returns the (ember, torch) outputs.
    """
    inputs = list(inputs)
    ein = [_to_lib(ember, a, grad) for a in inputs]
    tin = [_to_lib(torch, a, grad) for a in inputs]
    tout = fn(torch, *tin)
    eout = fn(ember, *ein)
    eflat, tflat = _flat(eout), _flat(tout)
    assert len(eflat) == len(tflat), "number of outputs differs"
    for i, (e, t) in enumerate(zip(eflat, tflat)):
        assert_same(e, t, atol=atol, rtol=rtol, what=f"output {i}", strides=strides)
        if isinstance(t, torch.Tensor) and grad_fn:
            tn = type(t.grad_fn).__name__ if t.grad_fn is not None else None
            en = type(e.grad_fn).__name__ if e.grad_fn is not None else None
            assert en == tn, f"output {i}: grad_fn {en} != {tn}"
            assert e.requires_grad == t.requires_grad, f"output {i}: requires_grad differs"
    if version:
        for i, (e, t) in enumerate(zip(ein, tin)):
            if isinstance(t, torch.Tensor):
                assert e._version == t._version, f"input {i}: _version {e._version} != {t._version}"
    if view:
        e, t = eflat[0], tflat[0]
        assert e._is_view() == t._is_view(), "view-ness differs"
        if t._is_view():
            assert e.storage_offset() == t.storage_offset(), "storage_offset differs"
            assert e.untyped_storage().data_ptr() == ein[0].untyped_storage().data_ptr()
    if grad:
        _check_grads(eflat, tflat, ein, tin, grad_atol, grad_rtol, seed)
    return eout, tout


def _check_grads(eflat, tflat, ein, tin, atol, rtol, seed):
    rng = np.random.default_rng(seed)
    pairs = [
        (e, t)
        for e, t in zip(eflat, tflat)
        if isinstance(t, torch.Tensor) and t.requires_grad and t.dtype.is_floating_point
    ]
    if not pairs:
        return
    tgrads, egrads = [], []
    for e, t in pairs:
        g = rng.standard_normal(tuple(t.shape)).astype(np.float64)
        tgrads.append(torch.from_numpy(g).to(t.dtype))
        egrads.append(ember.from_numpy(g).to(e.dtype))
    want = [i for i, t in enumerate(tin) if isinstance(t, torch.Tensor) and t.requires_grad]
    tg = torch.autograd.grad(
        [t for _, t in pairs], [tin[i] for i in want], tgrads, allow_unused=True
    )
    eg = ember.autograd.grad(
        [e for e, _ in pairs], [ein[i] for i in want], egrads, allow_unused=True
    )
    for i, a, b in zip(want, eg, tg):
        if b is None:
            assert a is None or not np.any(_np(a)), f"grad of input {i}: torch None"
            continue
        assert a is not None, f"grad of input {i}: ember None, torch not"
        assert_same(a, b, atol=atol, rtol=rtol, what=f"grad of input {i}", strides=False)


def check_raises(fn, inputs, *, grad=False, match_message=False):
    """Assert ember raises the same exception class as torch for ``fn(lib, *inputs)``."""
    tin = [_to_lib(torch, a, grad) for a in inputs]
    ein = [_to_lib(ember, a, grad) for a in inputs]
    with pytest.raises(Exception) as texc:
        fn(torch, *tin)
    with pytest.raises(Exception) as eexc:
        fn(ember, *ein)
    tcls, ecls = type(texc.value), type(eexc.value)
    assert issubclass(ecls, tcls) or ecls is tcls, (
        f"ember raised {ecls.__name__}({eexc.value}), torch {tcls.__name__}({texc.value})"
    )
    if match_message:
        assert str(eexc.value) == str(texc.value)
    return eexc.value, texc.value


def check_double_backward(fn, inputs, *, atol=None, rtol=None, seed=2):
    """Compare second derivatives of ``fn(lib, *inputs)`` between ember and torch.

    Float inputs require grad. First-order gradients are taken with ``create_graph=True`` under
    a random upstream gradient; then the gradient of ``sum(grad_i * w_i)`` (random ``w_i``) with
    respect to every input is compared (a Hessian-vector product). A first-order gradient that
    only one library records as differentiable (torch's relu, ember's floor...) must have zero
    second derivatives there.
    """
    results = {}
    for lib in (torch, ember):
        rng = np.random.default_rng(seed)
        ins = [_to_lib(lib, a, True) for a in inputs]
        wrt = [t for t in ins if isinstance(t, (torch.Tensor, ember.Tensor)) and t.requires_grad]
        outs = [o for o in _flat(fn(lib, *ins)) if o.requires_grad]
        vs = [lib.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in outs]
        g1 = lib.autograd.grad(outs, wrt, vs, create_graph=True, allow_unused=True)
        ws = [lib.from_numpy(rng.standard_normal(tuple(t.shape))).to(t.dtype) for t in wrt]
        results[lib] = (g1, ws, wrt)
    tg1, tws, twrt = results[torch]
    eg1, ews, ewrt = results[ember]
    tg1 = [_dense(b) for b in tg1]
    for i, (a, b) in enumerate(zip(eg1, tg1)):
        if b is None:
            assert a is None or not np.any(_np(a)), f"first-order grad {i}: torch None"
            continue
        assert a is not None, f"first-order grad {i}: ember None, torch not"
        assert_same(a, b, atol=atol, rtol=rtol, what=f"first-order grad {i}", strides=False)
    # a gradient one library keeps differentiable and the other does not contributes zero
    tkeep = [i for i, b in enumerate(tg1) if b is not None and b.requires_grad]
    ekeep = [i for i, a in enumerate(eg1) if a is not None and a.requires_grad]
    if not tkeep and not ekeep:
        return
    ts = sum((tg1[i] * tws[i]).sum() for i in tkeep) if tkeep else None
    es = sum((eg1[i] * ews[i]).sum() for i in ekeep) if ekeep else None
    if ts is None or es is None:
        s, lib, wrt = (ts, torch, twrt) if es is None else (es, ember, ewrt)
        for g in lib.autograd.grad(s, wrt, allow_unused=True):
            assert g is None or not np.any(_np(_dense(g))), "second-order grad not zero"
        return
    tg2 = [_dense(b) for b in torch.autograd.grad(ts, twrt, allow_unused=True)]
    eg2 = ember.autograd.grad(es, ewrt, allow_unused=True)
    for i, (a, b) in enumerate(zip(eg2, tg2)):
        if b is None or a is None:
            zero = lambda r: r is None or not np.any(_np(r))  # noqa: E731
            assert zero(a) and zero(b), f"second-order grad {i}: {a} vs {b}"
            continue
        assert_same(a, b, atol=atol, rtol=rtol, what=f"second-order grad {i}", strides=False)


def _dense(t):
    # torch returns some constant gradients as ZeroTensors, which cannot be read as arrays
    if isinstance(t, torch.Tensor) and t._is_zerotensor():
        return torch.zeros(t.shape, dtype=t.dtype, requires_grad=t.requires_grad)
    return t
