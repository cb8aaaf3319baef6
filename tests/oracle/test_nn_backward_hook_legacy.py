"""Oracle tests of the legacy (non-full) ``Module.register_backward_hook`` against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.nn.modules import _hooks
from tests.oracle.helper import torch

_rng = np.random.default_rng(3)


def _shapes(gs):
    return [None if g is None else tuple(g.shape) for g in gs]


def _run(lib, make, x, *, requires_grad=True, replace=None, params=None):
    """Return (hook calls, warnings at the call, grads of input and parameters, parameters)."""
    m = make(lib)
    if params is not None:
        with lib.no_grad():
            for p, v in zip(m.parameters(), params):
                p.copy_(lib.tensor(v))
    calls = []

    def hook(mod, gi, go):
        assert mod is m
        calls.append((_shapes(gi), _shapes(go), [None if g is None else g.numpy() for g in gi]))
        if replace is not None:
            return tuple(None if g is None else g * replace for g in gi)
        return None

    m.register_backward_hook(hook)
    xt = lib.tensor(x, requires_grad=requires_grad)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = m(xt)
    seen = [(c.category, str(c.message)) for c in w]
    if isinstance(y, dict):
        y = y["out"]
    y = y if isinstance(y, lib.Tensor) else y[0]
    g = _rng.standard_normal(tuple(y.shape)).astype(np.float32)
    if y.requires_grad:  # a parameter-free module on an input without grad: no graph
        y.backward(lib.tensor(g))
    grads = [xt.grad] + [p.grad for p in m.parameters()]
    values = [p.detach().numpy() for p in m.parameters()]
    return calls, seen, [None if g is None else g.numpy() for g in grads], values


def _multi(lib):
    """A module whose forward is several ops: the hook sees only the last one."""

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 4)

        def forward(self, x):
            return self.lin(x).tanh() * 2.0

    return M()


def _two_outputs(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            return x * 2.0, x.exp()

    return M()


def _dict_output(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            return {"out": x.sin() * 3.0}

    return M()


def _extra_arg(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)

        def forward(self, x, scale=2.0):
            return self.lin(x) * scale

    class Outer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = M()
            self.inner.register_forward_pre_hook(lambda mod, args: (args[0], 0.5))

        def forward(self, x):
            return self.inner(x)

    outer = Outer()
    return outer.inner


def _nested_output(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            y = x * 2.0
            return (y.exp(), y.exp())

    return M()


_MODULES = {
    "linear": (lambda lib: lib.nn.Linear(3, 4), (2, 3)),
    "linear_nobias": (lambda lib: lib.nn.Linear(3, 4, bias=False), (2, 3)),
    "linear_3d": (lambda lib: lib.nn.Linear(3, 4), (2, 2, 3)),
    "relu": (lambda lib: lib.nn.ReLU(), (2, 3)),
    "sequential": (lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh()), (2, 3)),
    "multi_op": (_multi, (2, 3)),
    "two_outputs": (_two_outputs, (2, 3)),
    "dict_output": (_dict_output, (2, 3)),
    "non_tensor_input": (_extra_arg, (2, 3)),
    "nested_output": (_nested_output, (2, 3)),
}


@pytest.mark.parametrize("name", list(_MODULES))
@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("replace", [None, 3.0])
def test_legacy_backward_hook(name, requires_grad, replace):
    make, shape = _MODULES[name]
    x = _rng.standard_normal(shape).astype(np.float32)
    state = _rng.bit_generator.state
    tcalls, twarn, tgrads, values = _run(
        torch, make, x, requires_grad=requires_grad, replace=replace
    )
    _rng.bit_generator.state = state
    ecalls, ewarn, egrads, _ = _run(
        ember, make, x, requires_grad=requires_grad, replace=replace, params=values
    )
    assert [c[:2] for c in ecalls] == [c[:2] for c in tcalls]
    for (_, _, ev), (_, _, tv) in zip(ecalls, tcalls):
        for a, b in zip(ev, tv):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert [(c, m) for c, m in ewarn] == [(c, m) for c, m in twarn]
    for a, b in zip(egrads, tgrads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_mixing_full_and_legacy_raises():
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 2)
        m.register_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
            m.register_full_backward_hook(lambda *a: None)
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
            m.register_backward_hook(lambda *a: None)


def test_legacy_hook_handle_remove():
    calls = []
    m = ember.nn.Linear(2, 2)
    h = m.register_backward_hook(lambda *a: calls.append(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m(ember.randn(3, 2)).sum().backward()
        h.remove()
        m(ember.randn(3, 2)).sum().backward()
    assert calls == [1]


def test_legacy_hook_no_grad_output_graph():
    # under no_grad the output has no grad_fn: nothing is registered, no warning
    m = ember.nn.Linear(2, 2)
    m.register_backward_hook(lambda *a: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.no_grad():
            m(ember.randn(3, 2))


def _set_global_kind(lib, value):
    """Set the 'global backward hooks are full' flag (other tests may have set it)."""
    if lib is ember:
        old = _hooks._global_is_full_backward_hook["value"]
        _hooks._global_is_full_backward_hook["value"] = value
    else:
        old = torch.nn.modules.module._global_is_full_backward_hook
        torch.nn.modules.module._global_is_full_backward_hook = value
    return old


def test_global_legacy_hook():
    res = {}
    for lib, mod in ((torch, torch.nn.modules.module), (ember, ember.nn.modules.module)):
        saved = _set_global_kind(lib, None)
        calls: list = []
        try:
            h = mod.register_module_backward_hook(lambda m, gi, go, c=calls: c.append(_shapes(gi)))
            with pytest.raises(RuntimeError, match="as a global Module hook"):
                mod.register_module_full_backward_hook(lambda *a: None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = lib.nn.Linear(3, 2)  # kept alive: a hook of a dead module raises
                m(lib.randn(4, 3, requires_grad=True)).sum().backward()
            h.remove()
        finally:
            _set_global_kind(lib, saved)
        res[lib] = calls
    assert res[ember] == res[torch]


def test_global_full_hook_blocks_legacy():
    for lib, mod in ((torch, torch.nn.modules.module), (ember, ember.nn.modules.module)):
        saved = _set_global_kind(lib, None)
        try:
            h = mod.register_module_full_backward_hook(lambda *a: None)
            with pytest.raises(RuntimeError, match="as a global Module hook"):
                mod.register_module_backward_hook(lambda *a: None)
            h.remove()
        finally:
            _set_global_kind(lib, saved)
