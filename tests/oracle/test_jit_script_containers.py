"""``jit.script`` of the container and string code users write in forwards: ``in`` /
``not in``, ``list.append``/``extend``/``pop``/``insert`` on typed lists, ``dict``'s
``keys``/``values``/``items``/``get``, ``len``, item assignment, string methods. Each
compiles to a graph (no eager fallback) with torch's node kinds and returns torch's values."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def f_not_in(x, n: int):
    seen: list[int] = [1, 3]
    if n not in seen:
        x = x + 1
    if 3 in seen:
        x = x * 2
    return x


def f_list_methods(x, n: int):
    xs: list[int] = []
    for i in range(n):
        xs.append(i * 2)
    xs.extend([7, 8])
    xs.insert(0, 5)
    last = xs.pop()
    xs[1] = 11
    return x * float(len(xs) + last + xs[1])


def f_tensor_list(x):
    parts: list[torch.Tensor] = []
    parts.append(x)
    parts.append(x * 2)
    parts.insert(0, x - 1)
    return parts[0] * 3.0 + parts[1] - parts[2] * len(parts)


def f_dict_methods(x):
    d: dict[str, int] = {"a": 1, "b": 2}
    d["c"] = 3
    total = 0
    for k in d.keys():
        if k != "b":
            total += d[k]
    for v in d.values():
        total += v
    for k, v in d.items():
        total += len(k) * v
    total += d.get("z", 10)
    if "a" in d:
        total += 100
    return x + float(total)


def f_dict_get_optional(x):
    d: dict[str, int] = {"a": 1}
    v = d.get("q")
    if v is None:
        return x
    return x + float(v)


def f_strings(x, s: str):
    t = s.lower().strip()
    parts = t.split(",")
    n = len(parts)
    if t.startswith("a"):
        n += 10
    if s.upper() == "A,B":
        n += 100
    n += t.find("b")
    return x * float(n)


def f_raise_in_loop(x, n: int):
    total = 0
    for i in list(range(n)):
        if i > 10:
            raise ValueError(f"too many: {i}")
        else:
            step = i * 2
        total += step
    ok = isinstance(total, int) and total >= 0
    ys = sorted([3, 1, 2])[::-1]
    return x * float(total + ys[0]) if ok else x


def f_inplace_add_aliases(x):
    y = x.clone()
    z = y
    z += 1
    return y  # ``z += 1`` wrote into y too, as in Python


_CASES = [
    (f_raise_in_loop, (4,)),
    (f_inplace_add_aliases, ()),
    (f_not_in, (2,)),
    (f_not_in, (3,)),
    (f_list_methods, (4,)),
    (f_tensor_list, ()),
    (f_dict_methods, ()),
    (f_dict_get_optional, ()),
    (f_strings, ("A,b ",)),
]


def _script(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.script(fn)


def _kinds(g) -> set:
    out = set()
    for n in g.nodes():
        out.add(n.kind())
        for b in n.blocks():
            out |= _kinds(b)
    return out


@pytest.mark.parametrize(
    "fn,extra", _CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(_CASES)]
)
def test_container_code_compiles_and_matches_torch(fn, extra):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    se, st = _script(ember, fn), _script(torch, fn)
    assert se._graph is not None  # compiled: runs its graph
    se.graph.lint()
    got = se(ember.tensor(x), *extra)
    np.testing.assert_array_equal(got.numpy(), st(torch.tensor(x), *extra).numpy())
    # the container builtins are torch's node kinds
    ours = {k for k in _kinds(se.graph) if k.startswith("aten::")}
    theirs = {k for k in _kinds(st.graph) if k.startswith("aten::")}
    builtins = {
        "aten::__contains__", "aten::append", "aten::extend", "aten::insert", "aten::pop",
        "aten::_set_item", "aten::keys", "aten::values", "aten::items", "aten::get",
        "aten::len", "aten::lower", "aten::strip", "aten::split", "aten::startswith",
        "aten::upper", "aten::find",
    }  # fmt: skip
    assert ours & builtins == theirs & builtins


def bad_append(x):
    xs: list[int] = [1]
    xs.append(x)
    return x


def test_raise_inside_a_loop_reaches_the_caller_as_torch():
    se, st = _script(ember, f_raise_in_loop), _script(torch, f_raise_in_loop)
    with pytest.raises(Exception, match="ValueError: too many: 11") as ours:
        se(ember.ones(2), 13)
    with pytest.raises(Exception, match="ValueError: too many: 11") as theirs:
        st(torch.ones(2), 13)
    assert type(ours.value).__name__ == type(theirs.value).__name__


def test_append_of_a_wrong_type_is_refused_at_script_time():
    bad = bad_append
    with pytest.raises(RuntimeError) as ours:
        _script(ember, bad)
    with pytest.raises(RuntimeError) as theirs:
        _script(torch, bad)
    assert str(ours.value) == str(theirs.value)
    assert "previously matched to type int is matched to type Tensor (inferred)" in str(ours.value)
