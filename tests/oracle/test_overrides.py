"""The ``__torch_function__`` protocol against torch: Tensor subclasses keep their class through
ops, overrides see torch's ``func`` objects, tensor-likes and ``handle_torch_function``."""

from __future__ import annotations

import copy
import io
import subprocess
import sys

import pytest

import ember
from tests.oracle.helper import torch


class TorchT(torch.Tensor):
    pass


class EmberT(ember.Tensor):
    pass


def _subclass(lib):
    return TorchT if lib is torch else EmberT


SUBCLASS_OPS = {
    "add": lambda L, m: m + 1,
    "radd": lambda L, m: 1 + m,
    "torch.add": lambda L, m: L.add(m, m),
    "sum": lambda L, m: m.sum(),
    "data": lambda L, m: m.data,
    "T": lambda L, m: m.T,
    "getitem": lambda L, m: m[0],
    "cat": lambda L, m: L.cat([m, L.ones(2, 2)]),
    "detach": lambda L, m: m.detach(),
    "clone": lambda L, m: m.clone(),
    "to": lambda L, m: m.to(L.float64),
    "relu": lambda L, m: L.nn.functional.relu(m),
    "linear": lambda L, m: L.nn.Linear(2, 2)(m),
    "plain + sub": lambda L, m: L.ones(2, 2) + m,
    "unbind": lambda L, m: m.unbind(0)[1],
    "max values": lambda L, m: m.max(0).values,
    "eq": lambda L, m: m == 1,
    "new_ones": lambda L, m: m.new_ones(2),
    "zeros_like": lambda L, m: L.zeros_like(m),
    "where": lambda L, m: L.where(m > 0, m, 0),
    "view": lambda L, m: m.view(4),
    "iter": lambda L, m: next(iter(m)),
    "add_": lambda L, m: m.detach().add_(1),
    "grad": lambda L, m: (m.sum().backward(), m.grad)[1],
    "parameter op": lambda L, m: L.nn.Parameter(L.ones(2)) * 2,
}


@pytest.mark.parametrize("name", list(SUBCLASS_OPS))
def test_ops_keep_the_subclass(name):
    got = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = lib.ones(2, 2).as_subclass(_subclass(lib)).requires_grad_()
        out = SUBCLASS_OPS[name](lib, m)
        kind = type(out).__name__.replace("TorchT", "Sub").replace("EmberT", "Sub")
        got.append((kind, out.tolist()))
    assert got[0] == got[1]


def test_subclass_repr_save_and_make_subclass():
    out = []
    for lib in (torch, ember):
        MyT = _subclass(lib)
        m = lib.ones(2).as_subclass(MyT)
        buf = io.BytesIO()
        lib.save(m, buf)
        buf.seek(0)
        loaded = lib.load(buf, weights_only=False)

        class Wrap(lib.Tensor):
            @staticmethod
            def __new__(cls, data, requires_grad=False, base=lib.Tensor):
                return base._make_subclass(cls, data, requires_grad)

        w = Wrap(lib.ones(3), True)
        kind = type(loaded).__name__.replace("TorchT", "Sub").replace("EmberT", "Sub")
        shown = repr(m).replace("TorchT", "Sub").replace("EmberT", "Sub")  # Sub([1., 1.])
        out.append((shown, kind, type(w).__name__, w.requires_grad, type(w * 2).__name__))
    assert out[0] == out[1]


def _logging(lib, log):
    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            # the public names ``func`` is the object of
            names = {n for n in dir(lib.Tensor) if getattr(lib.Tensor, n, None) is func}
            for prefix, ns in (("torch.", lib), ("F.", lib.nn.functional), ("la.", lib.linalg)):
                names |= {prefix + n for n in dir(ns) if getattr(ns, n, None) is func}
            log.append(names)
            return super().__torch_function__(func, types, args, kwargs)

    return Logged


LOGGED = [
    lambda L, x: x + 1,
    lambda L, x: 1 + x,
    lambda L, x: x - 1,
    lambda L, x: 1 - x,
    lambda L, x: x * 2,
    lambda L, x: 2 * x,
    lambda L, x: x / 2,
    lambda L, x: 2 / x,
    lambda L, x: x // 2,
    lambda L, x: x**2,
    lambda L, x: -x,
    lambda L, x: abs(x),
    lambda L, x: x == 1,
    lambda L, x: x != 1,
    lambda L, x: x < 1,
    lambda L, x: x >= 1,
    lambda L, x: x[0],
    lambda L, x: x @ x,
    lambda L, x: x % 2,
    lambda L, x: +x,
    lambda L, x: L.mul(x, 2),
    lambda L, x: L.nn.functional.gelu(x),
    lambda L, x: x.exp(),
    lambda L, x: x.neg(),
    lambda L, x: L.negative(x),
    lambda L, x: x.multiply(2),
    lambda L, x: L.linalg.norm(x),
]


@pytest.mark.parametrize("case", range(len(LOGGED)))
def test_overrides_see_torchs_func(case):
    # each override call gets the public object torch passes (torch.add, Tensor.add, F.gelu,
    # Tensor.__rsub__, ...); torch makes some aliases one object (Tensor.__neg__ is
    # Tensor.neg), ember keeps them apart: ember's names must be among torch's
    logs, kinds = [], []
    for lib in (torch, ember):
        log: list = []
        x = lib.ones(2, 2).as_subclass(_logging(lib, log))
        kinds.append(type(LOGGED[case](lib, x)).__name__)
        logs.append(log)
    assert kinds[0] == kinds[1]
    assert len(logs[0]) == len(logs[1])
    for t, e in zip(*logs):
        assert e and e <= t, (t, e)


def test_inplace_operators_report_the_inplace_method():
    logs = []
    for lib in (torch, ember):
        log: list = []
        x = lib.ones(2).as_subclass(_logging(lib, log))
        x += 1
        x *= 2
        x /= 2
        x[0] = 3
        logs.append(log)
    assert len(logs[0]) == len(logs[1])
    for t, e in zip(*logs):
        assert e and e <= t, (t, e)


def _scalar_tensor(lib):
    """The tensor-like of torch's "Extending torch" docs (not a Tensor subclass)."""
    handled = {}

    class ScalarTensor:
        def __init__(self, n, value):
            self._n, self._value = n, value

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func not in handled:
                return NotImplemented
            return handled[func](*args, **(kwargs or {}))

    handled[lib.mean] = lambda s: float(s._value) / s._n
    return ScalarTensor


def test_tensor_like_and_not_implemented():
    # (ember recognises a tensor-like that is not a Tensor subclass once the protocol is on:
    # here has_torch_function turns it on, as would any Tensor subclass of the program)
    out = []
    for lib in (torch, ember):
        S = _scalar_tensor(lib)
        s = S(5, 2)
        row = [lib.overrides.has_torch_function((s,)), lib.mean(s), lib.overrides.is_tensor_like(s)]
        with pytest.raises(TypeError) as info:
            lib.add(s, 1)
        row.append(str(info.value).replace("ember", "torch").replace("Tensor.add", "add"))
        with pytest.raises(TypeError) as info:
            lib.nn.functional.relu(s)
        row.append(str(info.value).replace("ember", "torch"))
        with pytest.raises(TypeError) as info:
            lib.ones(2) + s
        row.append(str(info.value))
        out.append(row)
    assert out[0] == out[1]


def test_handle_torch_function_for_a_user_function():
    out = []
    for lib in (torch, ember):

        def my_sum(x, ov=lib.overrides):
            if ov.has_torch_function_unary(x):
                return ov.handle_torch_function(my_sum, (x,), x)
            return x.sum()

        class Marked(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func is my_sum:
                    return "marked"
                return super().__torch_function__(func, types, args, kwargs)

        out.append((my_sum(lib.ones(2)).item(), my_sum(lib.ones(2).as_subclass(Marked))))
    assert out[0] == out[1]


def test_disable_and_parameter_opt_out():
    for lib in (torch, ember):
        MyT = _subclass(lib)
        m = lib.ones(2).as_subclass(MyT)
        with lib._C.DisableTorchFunctionSubclass():
            assert type(m + 1) is lib.Tensor
        assert type(m + 1) is MyT
        assert lib.nn.Parameter.__torch_function__ is lib._C._disabled_torch_function_impl
        assert type(copy.deepcopy(lib.nn.Parameter(lib.ones(2))) * 1) is lib.Tensor


def test_ember_alone_never_installs_the_protocol():
    # the wrappers cost every call: importing ember and training without a Tensor subclass
    # must leave the public functions unwrapped
    code = (
        "import ember, ember.overrides as o\n"
        "m = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.ReLU())\n"
        "opt = ember.optim.SGD(m.parameters(), lr=0.1)\n"
        "m(ember.ones(4, 3)).sum().backward(); opt.step()\n"
        "assert not o._STATE['installed'] and not hasattr(ember.Tensor.add, '_torch_name')\n"
        "class Sub(ember.Tensor): pass\n"
        "assert o._STATE['installed'] and hasattr(ember.Tensor.add, '_torch_name')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
