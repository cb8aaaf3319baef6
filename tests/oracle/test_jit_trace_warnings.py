"""TracerWarnings where a traced value becomes a Python value, against torch's: the class,
the message and the line it points at, for each way user code leaks one (and none where a
size stays in the graph)."""

import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


def _lib(x):
    return torch if isinstance(x, torch.Tensor) else ember


def w_int_size(x):
    return x * int(x.size(0))


def w_size_arith(x):  # stays a graph value: no warning
    return x * (x.shape[0] + 1) + x[: x.size(0) // 2].sum()


def w_item(x):
    return x * x.sum().item()


def w_bool(x):
    return x * 2 if bool(x.sum() > 0) else x


def w_len(x):
    return x * len(x)


def w_iter(x):
    return sum(r for r in x)


def w_tolist(x):
    return _lib(x).tensor(x.tolist())


def w_float_size(x):
    return x * float(x.size(0))


def w_int_float_tensor(x):
    return x * int(x.sum()) * float(x.sum())


def w_implicit_bool(x):
    return x if x.sum() > 0 else -x


def w_view_int(x):
    n = x.size(0)
    return x.view(int(n) * 3)


def w_tensor_constant(x):
    return x + _lib(x).tensor([1.0, 2.0, 3.0])


CASES = [w_int_size, w_size_arith, w_item, w_bool, w_len, w_iter, w_tolist, w_float_size,
         w_int_float_tensor, w_implicit_bool, w_view_int, w_tensor_constant]  # fmt: skip


def _warnings(lib, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.jit.trace(fn, (lib.ones(2, 3),), check_trace=False)
    return [
        (w.category.__name__, w.filename, w.lineno, str(w.message))
        for w in caught
        if w.category.__name__ == "TracerWarning"
    ]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_tracer_warnings_as_torch(fn):
    ours, theirs = _warnings(ember, fn), _warnings(torch, fn)
    assert ours == theirs
    assert (fn is w_size_arith) == (not ours)
    assert all(issubclass(ember.jit.TracerWarning, Warning) for _ in ours)
