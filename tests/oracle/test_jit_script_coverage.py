"""``jit.script`` on the Python users write: loops with break/continue/return, indexing and
slicing, list/dict literals and comprehensions, f-strings, refinement of ``Optional`` and
``isinstance``, ``__constants__``/``Final``, ``@jit.export``/``@jit.ignore``; each compiles
to a graph (no eager fallback) and returns torch's values. Script-time errors carry torch's
class and text (the quoted lines, ``~`` marks and ``<--- HERE``)."""

import re
import warnings
from typing import Final

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def lib_of(x):
    return torch if isinstance(x, torch.Tensor) else ember


def f_break(x, n: int):
    for i in range(n):
        if i == 3:
            break
        x = x + i
    return x


def f_continue(x, n: int):
    for i in range(n):
        if i % 2 == 0:
            continue
        x = x * 2
    return x


def f_return_in_loop(x, n: int):
    for i in range(n):
        if i == 2:
            return x * i
        x = x + 1
    return x


def f_while_break(x):
    i = 0
    while i < 10:
        i += 1
        if i > 4:
            break
        x = x - 1
    return x


def f_nested_break(x, n: int):
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            x = x + j
    return x


def f_range_step(x):
    for i in range(1, 10, 3):
        x = x + i
    return x


def f_iterate(x):
    xs = [x, x * 3]
    total = xs[0]
    for i, y in enumerate(xs):
        total = total + y * i
    for a, b in zip(xs, xs):
        total = total + a * b
    for y in xs[1:]:
        total = total - y
    for y in (x, x * 2):
        total = total + y
    return total


def f_slicing(x):
    return x[0] + x[1:3, 0].sum() + x[:, None, 1].sum() + x[..., -1].sum() + x[::2, 1:].sum()


def f_comprehensions(x, n: int):
    xs = [x * i for i in range(n)]
    d = {"a": x, "b": x * 2}
    e = {str(i): x * i for i in range(3)}
    return xs[1] + xs[-1] + d["b"] + e["2"] + len(xs)


def f_ternary(x, n: int):
    y = x * 2 if n > 1 else x - 1
    return y


def f_optional(x, y: torch.Tensor | None = None):
    if y is not None:
        x = x + y
    return x


def f_assert_refines(x, k: int | None):
    assert k is not None
    return x * k


def f_isinstance(x, n: int):
    if isinstance(n, int):
        return x + n
    return x


def f_method_on_expression(x, n: int):
    # methods called on a parenthesised expression, a negation and a conditional
    return (x - n).relu() + (-x).abs() + (x if n > 1 else x * 2).sign().sum(0)


_VALUES = [
    (f_break, (6,)),
    (f_continue, (5,)),
    (f_return_in_loop, (5,)),
    (f_return_in_loop, (1,)),
    (f_while_break, ()),
    (f_nested_break, (4,)),
    (f_range_step, ()),
    (f_iterate, ()),
    (f_slicing, ()),
    (f_comprehensions, (4,)),
    (f_ternary, (2,)),
    (f_ternary, (0,)),
    (f_optional, ()),
    (f_assert_refines, (3,)),
    (f_isinstance, (3,)),
    (f_method_on_expression, (2,)),
]


def _script(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.script(fn)


@pytest.mark.parametrize(
    "fn,extra", _VALUES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(_VALUES)]
)
def test_scripted_function_compiles_and_matches_torch(fn, extra):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    se, st = _script(ember, fn), _script(torch, fn)
    assert se._graph is not None  # compiled: runs its graph, not the Python
    se.graph.lint()
    got = se(ember.tensor(x), *extra)
    np.testing.assert_array_equal(got.numpy(), st(torch.tensor(x), *extra).numpy())
    assert ember.equal(got, fn(ember.tensor(x), *extra))  # same kernels as eager


def test_loop_exits_become_loop_conditions():
    g = _script(ember, f_break).graph
    loop = g.findNode("prim::Loop")
    assert loop is not None and g.findNode("aten::__not__") is not None
    assert loop.inputs()[0].debugName() == "n.1"  # a read input is ``n.1``, as torch's


def test_optional_refinement_and_dead_branches():
    g = _script(ember, f_optional).graph
    assert g.findNode("prim::unchecked_cast") is not None
    x = ember.ones(2)
    assert _script(ember, f_optional)(x, x).tolist() == [2.0, 2.0]
    # isinstance on a known type keeps only the live branch (as torch's metacompile)
    assert _script(ember, f_isinstance).graph.findNode("prim::If") is None


def test_fstring_as_torch():
    def fmt(x, n: int):
        return f"n={n} and {n + 1}"

    se, st = _script(ember, fmt), _script(torch, fmt)
    assert se.graph.findNode("aten::format") is not None
    assert se(ember.ones(1), 3) == st(torch.ones(1), 3) == "n=3 and 4"


def test_tensor_index_and_list_of_tensors():
    def pick(x, i):
        return x[i]

    def prod(xs: list[torch.Tensor]):
        out = xs[0]
        for y in xs[1:]:
            out = out * y
        return out

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([2, 0])
    se, st = _script(ember, pick), _script(torch, pick)
    a = se(ember.tensor(x), ember.tensor(idx))
    np.testing.assert_array_equal(a.numpy(), st(torch.tensor(x), torch.tensor(idx)).numpy())
    se, st = _script(ember, prod), _script(torch, prod)
    a = se([ember.tensor(x), ember.tensor(x + 1)])
    b = st([torch.tensor(x), torch.tensor(x + 1)])
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_assert_failure_raises_jit_error_as_torch():
    se, st = _script(ember, f_assert_refines), _script(torch, f_assert_refines)
    with pytest.raises(Exception) as te:
        st(torch.ones(2), None)
    with pytest.raises(ember.jit.Error) as ee:
        se(ember.ones(2), None)
    assert type(ee.value).__name__ == type(te.value).__name__ == "Error"
    assert str(ee.value).splitlines()[-1] == str(te.value).splitlines()[-1]


def _module(lib):
    nn = lib.nn

    class Net(nn.Module):
        __constants__ = ["scale"]
        shift: Final[int]

        def __init__(self):
            super().__init__()
            self.scale = 3
            self.shift = 2
            self.fc = nn.Linear(2, 2)

        def forward(self, x, h: torch.Tensor | None = None):
            y = self.fc(x) * self.scale + self.shift
            if h is None:
                return y
            return y + h

        @lib.jit.export
        def extra(self, x):
            return x * self.scale + self.helper(x)

        @lib.jit.ignore
        def helper(self, x):
            return x + 100

    return Net()


def test_module_constants_export_and_ignore():
    tm, em = _module(torch), _module(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    se, st = _script(ember, em), _script(torch, tm)
    assert se._graph is not None
    text = str(se.graph)
    assert "prim::Constant[value=3]" in text and 'name="scale"' not in text
    x = np.ones(2, np.float32)
    for args in [(x,), (x, x)]:
        a = se(*[ember.tensor(v) for v in args])
        b = st(*[torch.tensor(v) for v in args])
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    assert type(se.extra).__name__ == type(st.extra).__name__ == "ScriptMethod"
    assert se.extra.graph.findNode("prim::PythonOp") is not None  # the ignored call
    a, b = se.extra(ember.tensor(x)), st.extra(torch.tensor(x))
    np.testing.assert_allclose(a.numpy(), b.numpy())


def _cnn(nn):
    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(36, 3)

        def forward(self, x):
            x = self.pool(self.bn(self.conv(x)).relu())
            return self.fc(x.flatten(1))

    return CNN()


def test_scripted_cnn_freezes_with_conv_bn_folded_as_torch():
    tm, em = _cnn(torch.nn), _cnn(ember.nn)
    with torch.no_grad():
        tm.bn.running_mean.uniform_(-1, 1)
        tm.bn.running_var.uniform_(0.5, 2)
        tm.bn.weight.uniform_(0.5, 2)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    se, st = _script(ember, em.eval()), _script(torch, tm.eval())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fe, ft = ember.jit.freeze(se), torch.jit.freeze(st)
    for text in (str(fe.graph), str(ft.graph)):
        assert "aten::batch_norm" not in text and "prim::GetAttr" not in text
    x = np.random.default_rng(0).normal(size=(2, 1, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(
        fe(ember.tensor(x)).numpy(), ft(torch.tensor(x)).numpy(), rtol=1e-4, atol=1e-5
    )
    # the scripted (unfrozen) module trains through its graph
    se.train()
    se(ember.tensor(x)).sum().backward()
    assert em.conv.weight.grad is not None and int(em.bn.num_batches_tracked) == 1


# --- script-time errors: torch's class and text, the file path aside


def e_undefined(x):
    return x + y_missing  # noqa: F821


def e_comprehension_if(x):
    return [a for a in [x, x] if a is not None]


def e_branch_types(x, n: int):
    if n > 0:
        y = x
    else:
        y = 3
    return y


def e_lambda(x):
    f = lambda a: a  # noqa: E731
    return f(x)


def e_global(x):
    global _G  # noqa: PLW0603
    return x


def e_try(x):
    try:
        return x
    except Exception:
        return x


def e_return_types(x, n: int):
    if n > 0:
        return x
    return 1


_ERRORS = [
    e_undefined,
    e_comprehension_if,
    e_branch_types,
    e_lambda,
    e_global,
    e_try,
    e_return_types,
]


def _error(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            lib.jit.script(fn)
        except Exception as err:  # noqa: BLE001
            return err
    raise AssertionError(f"{fn.__name__} compiled")


@pytest.mark.parametrize("fn", _ERRORS, ids=[f.__name__ for f in _ERRORS])
def test_script_error_text_as_torch(fn):
    e, t = _error(ember, fn), _error(torch, fn)
    assert type(e).__name__ == type(t).__name__
    if type(t).__name__ != "RuntimeError":
        assert isinstance(e, getattr(ember.jit.frontend, type(t).__name__))
    assert re.sub(r'"[^"]+", line', "F, line", str(e)) == re.sub(
        r'"[^"]+", line', "F, line", str(t)
    )


def f_raise(x, n: int):
    if n < 0:
        raise ValueError("n must be >= 0")
    return x * n


def f_raise_fstring(x, n: int):
    if n < 0:
        raise RuntimeError(f"bad n {n}")
    return x


@pytest.mark.parametrize("fn", [f_raise, f_raise_fstring])
def test_raise_as_torch(fn):
    se, st = _script(ember, fn), _script(torch, fn)
    assert se._graph is not None and se.graph.findNode("prim::RaiseException") is not None
    assert se(ember.ones(2), 2).tolist() == st(torch.ones(2), 2).tolist()
    with pytest.raises(Exception) as te:
        st(torch.ones(2), -1)
    with pytest.raises(ember.jit.Error) as ee:
        se(ember.ones(2), -1)
    assert str(ee.value).splitlines()[-1] == str(te.value).splitlines()[-1]


def test_unused_method_raises_when_reached_as_torch():
    def make(lib):
        class M(lib.nn.Module):
            @lib.jit.unused
            def helper(self, x):
                return x + 1

            def forward(self, x, flag: bool):
                if flag:
                    return self.helper(x)
                return x

        return M()

    se, st = _script(ember, make(ember)), _script(torch, make(torch))
    assert se._graph is not None
    assert se(ember.ones(2), False).tolist() == st(torch.ones(2), False).tolist()
    with pytest.raises(Exception) as te:
        st(torch.ones(2), True)
    with pytest.raises(ember.jit.Error) as ee:
        se(ember.ones(2), True)
    assert str(ee.value).splitlines()[-1] == str(te.value).splitlines()[-1]
