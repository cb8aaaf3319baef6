"""Scripted graphs print as torch's, value numbers and names included: every emitted value
takes a number (reads of locals too), first definitions are ``x.1``, int/float literals are
one constant each, schema defaults are filled in (``sum``'s ``dtype``, ``add``'s ``alpha``),
dead code goes and the constants are pooled at the top in torch's order. Compared with
``str(torch.jit.script(fn).graph)`` (source ranges included: both name this file)."""

import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
Tensor = torch.Tensor  # (the annotation both compilers read)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def straight(x, y):
    return (y - 1).relu() + (x * 2).sum(0)


def defaults_and_literals(x):
    y = x.sum(0)
    return (x * 3).sum(1, True) + y + 0 + x.add(x) * 1


def reassigned(x):
    x = x + 1
    x = x * 2
    return x


def tensor_branch(x, y):
    if x.sum() > 0:
        z = x * 2
        w = z + y
    else:
        z = x - 1
        w = y
    return z + w


def cast_branch(x):
    b = bool(x.sum() > 0)
    if b:
        x = x * 2
    return x


def int_branch(a: int, b: int) -> int:
    c = a * b + 1
    if c > 3:
        c = c - a
    return c


def one_sided(x, n: int):
    y = x
    if n > 3:
        y = x * 3
        z = x  # noqa: F841  (unused after the if: its output goes)
    return y * 2


def printing(x, n: int):
    if n > 3:
        print(n)
    return x * 2


def dead_code(x):
    b = bool(x.sum() > 0)  # noqa: F841
    return x * 2


def lists(x):
    xs = [x, x * 2]
    xs.append(x + 1)
    return xs[1] + len(xs)


def comprehension(x, y):
    xs = [x, y]
    ys = [t * 2 for t in xs]
    return ys[0] + xs[-1]


def typed_list(xs: list[int]) -> int:
    return xs[0] * 2 + len(xs)


def loop_add_index(x, n: int):
    for i in range(n):
        x = x + i
    return x


def loop_two_carried(x, y, n: int):
    for _ in range(n):
        x = x + 1
        y = y * x
    return x + y


def loop_reads_outer(x, n: int):
    y = x * 3
    for _ in range(n):
        x = x + y
    return x * 2


def refine_not_none(x, y: int | None):
    z = 1
    if y is not None:
        z = y
    return x * z


def refine_tensor(x, b: Tensor | None = None):
    if b is not None:
        x = x + b
    return x


def refine_read_and_set(x, y: int | None):
    z = 0
    if y is not None:
        z = z + y
        y = y + 1
    return x * z


def literal_in_branch(x, n: int):
    z = 1
    if n > 2:
        z = 3
    return x * z


_FUNCS = [straight, defaults_and_literals, reassigned, tensor_branch, cast_branch, int_branch,
          one_sided, printing, dead_code, lists, comprehension, typed_list, loop_add_index,
          loop_two_carried, loop_reads_outer, refine_not_none, refine_tensor,
          refine_read_and_set, literal_in_branch]  # fmt: skip


def _script(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.script(fn)


@pytest.mark.parametrize("fn", _FUNCS, ids=[f.__name__ for f in _FUNCS])
def test_scripted_function_graph_text_is_torchs(fn):
    se, st = _script(ember, fn), _script(torch, fn)
    assert str(se.graph) == str(st.graph)
    se.graph.lint()


def _args(lib, fn):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    t = lib.tensor(x)
    if fn is int_branch:
        return (2, 3)
    if fn is typed_list:
        return ([4, 5],)
    if fn in (one_sided, printing, loop_add_index, loop_reads_outer, refine_not_none,
              refine_read_and_set, literal_in_branch):  # fmt: skip
        return (t, 5)
    if fn in (tensor_branch, comprehension, straight):
        return (t, t * 3)
    if fn is loop_two_carried:
        return (t, t * 3, 3)
    return (t,)


@pytest.mark.parametrize("fn", [straight, defaults_and_literals, tensor_branch, one_sided,
                                comprehension, typed_list, loop_add_index, loop_two_carried,
                                loop_reads_outer, refine_not_none, refine_tensor,
                                refine_read_and_set, literal_in_branch])  # fmt: skip
def test_renumbered_graph_still_runs_as_torch(fn):
    got = _script(ember, fn)(*_args(ember, fn))
    want = _script(torch, fn)(*_args(torch, fn))
    if isinstance(want, int):
        assert got == want
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def _net(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.scale = 2.0

        def helper(self, x):
            return x * self.scale

        def forward(self, x):
            y = self.fc(x)
            if y.sum() > 0:
                y = self.helper(y)
            return y.relu()

    return Net()


def test_scripted_module_graph_text_is_torchs():
    tm = _net(torch.nn)
    em = _net(ember.nn)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    se, st = _script(ember, em), _script(torch, tm)

    def text(g):  # (a class scripted twice in one process gets ``___torch_mangle_N.``)
        return re.sub(r"___torch_mangle_\d+\.", "", str(g))

    assert text(se.graph) == text(st.graph)
    x = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    np.testing.assert_allclose(
        se(ember.tensor(x)).detach().numpy(), st(torch.tensor(x)).detach().numpy(), rtol=1e-6
    )


# tensor methods: the matched overload's parameters, omitted ones as their defaults; ``int[]``
# parameters given an int as a one-element list; ``Tensor[]`` and named-tuple results
def m_softmax_cumsum(x):
    return x.softmax(0) + x.log_softmax(1) + x.cumsum(0) + x.mean(0) + x.prod(0)


def m_std_var(x):
    return x.std() + x.var(0) + x.std(0, True) + x.norm()


def m_shapes(x):
    return x.flatten() + x.contiguous().clone().view(-1) + x.expand(2, 2).flatten()


def m_argmax_clamp(x):
    return x.argmax() + x.argmax(0, True) + x.clamp(0.0) + x.where(x > 0, x)


def m_split_chunk(x):
    a, b = x.chunk(2)
    return a + b + x.split(1)[0] + x.unbind()[1] + x.addmm(x, x)


def m_named_tuples(x):
    v, i = x.max(0)
    s = x.sort(0, True)[0]
    t, _ = x.topk(2)
    return v + i + s + t + x.min(1, True)[1]


def m_returns_named_tuple(x):
    return x.max(0)


_METHODS = [m_softmax_cumsum, m_std_var, m_shapes, m_argmax_clamp, m_split_chunk,
            m_named_tuples, m_returns_named_tuple]  # fmt: skip


@pytest.mark.parametrize("fn", _METHODS, ids=[f.__name__ for f in _METHODS])
def test_method_schema_defaults_as_torchs(fn):
    se, st = _script(ember, fn), _script(torch, fn)
    assert str(se.graph) == str(st.graph)
    se.graph.lint()
    x = np.arange(4, dtype=np.float32).reshape(2, 2) - 1.5
    got, want = se(ember.tensor(x)), st(torch.tensor(x))
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
