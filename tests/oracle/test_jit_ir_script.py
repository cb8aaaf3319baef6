"""jit.script compiles Python source to the IR: graphs run (values equal to eager ember and
to torch), control flow stays in the graph, modules call submodules, script-time errors."""

import warnings

import numpy as np
import pytest

import ember
from ember.jit import frontend

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def loop_and_branch(x, n: int):
    y = x
    for i in range(n):  # noqa: B007  (torch names the loop value after it)
        y = y * 2
    if bool(y.sum() > 0):
        z = y + 1
    else:
        z = y - 1
    return z


def while_loop(x, n: int):
    s = x
    i = 0
    while i < n:
        s = s + x
        i += 1
    return s.relu()


def helper(a):
    return a * a


def calls_helper(x, k: float):
    return helper(x) + k


@pytest.mark.parametrize(
    "fn,args",
    [
        (loop_and_branch, (3,)),
        (loop_and_branch, (0,)),
        (while_loop, (2,)),
        (calls_helper, (0.5,)),
    ],
)
def test_scripted_function_runs_its_graph(fn, args):
    se, st = ember.jit.script(fn), torch.jit.script(fn)
    assert se._graph is not None
    se.graph.lint()
    for sign in (1.0, -1.0):
        x = (sign * np.arange(1, 4)).astype(np.float32)
        out = se(ember.tensor(x), *args)
        assert np.array_equal(out.numpy(), fn(ember.tensor(x), *args).numpy())
        np.testing.assert_allclose(out.numpy(), st(torch.tensor(x), *args).numpy())


def test_control_flow_nodes_as_torch():
    g = ember.jit.script(loop_and_branch).graph
    t = torch.jit.script(loop_and_branch).graph
    kinds = lambda graph: [n.kind() for n in graph.nodes() if n.kind() != "prim::Constant"]  # noqa: E731
    assert kinds(g) == kinds(t)
    assert [len(list(n.blocks())) for n in g.nodes() if n.kind() in ("prim::If", "prim::Loop")] == [
        1,
        2,
    ]
    assert [v.debugName() for v in g.outputs()] == [v.debugName() for v in t.outputs()] == ["z"]


class Block(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 4)
        self.layers = ember.nn.ModuleList([ember.nn.Linear(4, 4) for _ in range(2)])

    def forward(self, x):
        h = self.fc(x)
        for layer in self.layers:
            h = ember.relu(layer(h))
        return h


def test_scripted_module_runs_graph_and_trains():
    m = Block()
    s = ember.jit.script(m)
    kinds = [n.kind() for n in s.graph.nodes()]
    assert kinds.count("prim::CallMethod") == 3 and "aten::relu" in kinds
    x = ember.randn(2, 3)
    assert ember.equal(s(x), m(x))
    s(x).sum().backward()
    assert m.fc.weight.grad is not None
    assert list(s.state_dict()) == list(m.state_dict())


def _raises(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            lib.jit.script(fn)
    return info.value


def with_open(x):
    with open("a") as fh:  # noqa: F841
        pass
    return x


def mismatch(x, c: bool):
    if c:
        y = x
    else:
        y = 1
    return y


def varargs(*xs):
    return xs


def test_script_errors_as_torch():
    for fn in (with_open, mismatch):
        e, t = _raises(ember, fn), _raises(torch, fn)
        assert type(e) is type(t) is RuntimeError
        first = lambda err: str(err).strip().splitlines()[0]  # noqa: E731
        assert first(e) == first(t)
        assert "<--- HERE" in str(e)
    # the quoted line and caret, as torch's
    e, t = str(_raises(ember, mismatch)), str(_raises(torch, mismatch))
    assert (
        "        y = 1\n        ~~~~~ <--- HERE" in e
        and "        y = 1\n        ~~~~~ <--- HERE" in t
    )
    e, t = _raises(ember, varargs), _raises(torch, varargs)
    assert type(e).__name__ == type(t).__name__ == "NotSupportedError"
    assert isinstance(e, frontend.NotSupportedError)
    assert str(e).splitlines()[0] == str(t).splitlines()[0]


def test_inlined_graph_of_scripted_module():
    class Outer(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) * 2

    s = ember.jit.script(Outer())
    assert s.graph.findNode("prim::CallMethod") is not None
    g = s.inlined_graph
    assert g.findNode("prim::CallMethod") is None and g.findNode("aten::tanh") is not None
    g.lint()
    x = ember.randn(3)
    assert ember.equal(s(x), ember.tanh(x) * 2)


class Inner(ember.nn.Module):
    def forward(self, x):
        return ember.tanh(x)


def early_return(x, n: int):
    if n > 2:
        return x * 2
    y = x + 1
    if n == 0:
        return y
    else:
        y = y * 3
    return y - n


def test_early_return_as_torch():
    se, st = ember.jit.script(early_return), torch.jit.script(early_return)
    assert se._graph is not None and se.graph.findNode("prim::If") is not None
    se.graph.lint()
    x = np.arange(3, dtype=np.float32)
    for n in (0, 1, 5):
        out = se(ember.tensor(x), n)
        assert np.array_equal(out.numpy(), early_return(ember.tensor(x), n).numpy())
        np.testing.assert_allclose(out.numpy(), st(torch.tensor(x), n).numpy())


def test_return_inside_loop_compiles_as_torch():
    def f(x, n: int):
        for i in range(n):
            if i == 1:
                return x * i
        return x

    s, t = ember.jit.script(f), torch.jit.script(f)
    assert s._graph is not None and s.graph.findNode("prim::Loop") is not None
    s.graph.lint()
    for n in (0, 1, 3):
        assert s(ember.ones(2), n).tolist() == t(torch.ones(2), n).tolist()
