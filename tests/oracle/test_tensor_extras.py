"""Oracle tests for the Tensor methods of ``ember/_ops/tensor_extras.py``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.oracle.helper import check, check_double_backward, check_raises, rand

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:index_reduce")


# ------------------------------------------------------------------------------ small queries


@pytest.mark.parametrize(
    "src,dst", [("float32", "int64"), ("int32", "float64"), ("float32", "float32")]
)
def test_type_as(src, dst):
    check(lambda lib, x, y: x.type_as(y), [rand(3, 2, dtype=src), rand(2, dtype=dst)])


def test_type_as_same_dtype_is_self():
    x = ember.ones(2)
    assert x.type_as(ember.zeros(1)) is x


@pytest.mark.parametrize("v", [[0.0], [2.0], [[0]], [True], 3.5])
def test_is_nonzero(v):
    for dt in (np.float32, np.int64):
        a = np.asarray(v, dtype=dt)
        assert ember.from_numpy(a).is_nonzero() == torch.from_numpy(a).is_nonzero()
        assert ember.is_nonzero(ember.from_numpy(a)) == torch.is_nonzero(torch.from_numpy(a))


@pytest.mark.parametrize("shape", [(0,), (2,), (1, 2)])
def test_is_nonzero_raises(shape):
    check_raises(lambda lib, x: x.is_nonzero(), [rand(*shape)], match_message=True)


def test_is_same_size():
    for a, b in [((2, 3), (2, 3)), ((2, 3), (3, 2)), ((), ()), ((1,), ())]:
        ea, eb = ember.zeros(a), ember.zeros(b)
        ta, tb = torch.zeros(a), torch.zeros(b)
        assert ea.is_same_size(eb) == ta.is_same_size(tb)
        assert ember.is_same_size(ea, eb) == torch.is_same_size(ta, tb)


def test_lazy_bits_and_resolve():
    for dt in ("float32", "complex64"):
        a = rand(3, dtype=dt)
        e, t = ember.from_numpy(a), torch.from_numpy(a)
        assert e.is_conj() == t.is_conj() and e.is_neg() == t.is_neg()
        assert ember.is_conj(e) is False and ember.is_neg(e) is False
        assert e.resolve_conj() is e and e.resolve_neg() is e
        assert ember.resolve_conj(e) is e and ember.resolve_neg(e) is e
        assert e.is_inference() == t.is_inference() == ember.is_inference(e)


def test_pin_memory_returns_self():
    x = ember.ones(3)
    assert x.pin_memory() is x


@pytest.mark.parametrize(
    "size,stride",
    [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((3, 4), (1, 5)), ((0, 3), (3, 1)), ((), ())],
)
@pytest.mark.parametrize("dtype", [None, "float64", "int32"])
def test_new_empty_strided(size, stride, dtype):
    e = ember.ones(2).new_empty_strided(size, stride, dtype=getattr(ember, dtype or "float32"))
    t = torch.ones(2).new_empty_strided(size, stride, dtype=getattr(torch, dtype or "float32"))
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    assert str(e.dtype) == str(t.dtype)
    assert e.storage_offset() == 0 and not e.requires_grad
    e.fill_(1)
    assert np.all(e.numpy() == 1)


def test_new_empty_strided_requires_grad():
    assert ember.ones(2).new_empty_strided((2,), (1,), requires_grad=True).requires_grad


# ------------------------------------------------------------------------------ real / imag


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("part", ["real", "imag"])
def test_real_imag_views(dt, part):
    x = rand(3, 4, dtype=dt)
    check(lambda lib, x: getattr(x, part), [x], view=True)
    check(lambda lib, x: getattr(lib, part)(x) * 2, [x])
    check(lambda lib, x: getattr(x.t(), part), [x], view=True)


def test_real_of_real_is_self():
    x = ember.ones(3)
    assert x.real is x and ember.real(x) is x
    check(lambda lib, x: x.real, [rand(3)])


def test_imag_of_real_raises():
    check_raises(lambda lib, x: x.imag, [rand(3)], match_message=True)
    check_raises(lambda lib, x: lib.imag(x), [rand(3)], match_message=True)


def test_real_imag_write_through():
    for lib in (torch, ember):
        x = lib.zeros(3, dtype=lib.complex64)
        x.real.add_(1)
        x.imag = lib.full((3,), 2.0)
        x.real = 5.0
        assert x.numpy().tolist() == [5 + 2j] * 3


# ------------------------------------------------------------------------------ angle, conj


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "complex64", "complex128"])
def test_angle(dt):
    x = rand(2, 5, dtype=dt, low=-3, high=3)
    if dt.startswith("float"):
        x[0, 0] = 0
        x[0, 1] = np.nan
    check(lambda lib, x: lib.angle(x), [x])
    check(lambda lib, x: x.angle(), [x])


def test_angle_double_backward():
    check_double_backward(lambda lib, x: lib.angle(x) * x, [rand(5, dtype="float64")])


@pytest.mark.parametrize("dt", ["float32", "complex64"])
def test_conj_physical(dt):
    check(lambda lib, x: lib.conj_physical(x * 1), [rand(2, 3, dtype=dt)], grad_fn=False)
    x = ember.from_numpy(rand(3, dtype=dt))
    if dt == "float32":
        assert x.conj_physical() is x


@pytest.mark.parametrize("dt", ["float32", "complex64", "int64"])
def test_conj_physical_(dt):
    check(lambda lib, x: x.clone().conj_physical_(), [rand(2, 3, dtype=dt)], grad_fn=False)
    check(lambda lib, x: lib.conj_physical_(x), [rand(2, 3, dtype=dt)], grad=False)


@pytest.mark.parametrize("shape", [(2, 3), (4, 2, 3), (0, 2)])
@pytest.mark.parametrize("dt", ["float32", "complex64"])
def test_adjoint(shape, dt):
    check(
        lambda lib, x: x.adjoint().resolve_conj(),
        [rand(*shape, dtype=dt)],
        view=dt == "float32",
        grad_fn=dt == "float32",
    )
    check(lambda lib, x: lib.adjoint(x) * 1, [rand(*shape, dtype=dt)], grad_fn=False)


def test_adjoint_raises():
    check_raises(lambda lib, x: x.adjoint(), [rand(3)])


# ------------------------------------------------------------------------------ reductions


@pytest.mark.parametrize(
    "shape,size",
    [
        ((2, 3, 4), (3, 1)),
        ((2, 3, 4), (1, 3, 4)),
        ((2, 3, 4), (2, 1, 1)),
        ((2, 3), (1,)),
        ((2, 3), (2, 3)),
        ((4,), ()),
        ((0, 3), (1, 3)),
    ],
)
def test_sum_to_size(shape, size):
    check(lambda lib, x: x.sum_to_size(size) * 1, [rand(*shape)], grad_fn=False)
    check(lambda lib, x: x.sum_to_size(*size), [rand(*shape, dtype="float64")]) if size else None


def test_sum_to_size_noop_is_self():
    x = ember.ones(2, 3)
    assert x.sum_to_size(2, 3) is x


@pytest.mark.parametrize("size", [(5, 4), (2, 2, 3, 4), (4, 3)])
def test_sum_to_size_raises(size):
    check_raises(lambda lib, x: x.sum_to_size(size), [rand(2, 3, 4)], match_message=True)
    check_raises(lambda lib, x: x.sum_to_size(), [rand(2)], match_message=True)


@pytest.mark.parametrize("p", [2, 1, 0, 3.5, float("inf"), -float("inf")])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())])
def test_dist(p, shapes):
    a, b = rand(*shapes[0]), rand(*shapes[1])
    # torch has no gradient for p=0 (an undefined tensor)
    check(lambda lib, x, y: lib.dist(x, y, p), [a, b], grad_fn=False, grad=p != 0)
    check(lambda lib, x, y: x.dist(y, p=p), [a, b], grad_fn=False, grad=p != 0)


def test_dist_double_backward():
    check_double_backward(
        lambda lib, x, y: lib.dist(x, y, 3), [rand(5, dtype="float64"), rand(5, dtype="float64")]
    )


@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 0.5), (3, -1, 2.0), (2, 0, 100.0)])
def test_renorm(p, dim, maxnorm):
    x = rand(3, 4, 2, dtype="float64")
    check(lambda lib, x: lib.renorm(x, p, dim, maxnorm), [x], grad_fn=False)
    check(lambda lib, x: x.renorm(p, dim, maxnorm), [rand(3, 4)], grad_fn=False)
    check(lambda lib, x: (x * 1).renorm_(p, dim, maxnorm), [x], grad_fn=False)


def test_renorm_raises():
    check_raises(lambda lib, x: x.renorm(0, 0, 1.0), [rand(3, 4)], match_message=True)
    check_raises(lambda lib, x: x.renorm(2, 0, -1.0), [rand(3, 4)])


# ------------------------------------------------------------------------------ splitting


@pytest.mark.parametrize("name", ["hsplit", "vsplit", "dsplit"])
@pytest.mark.parametrize("sections", [2, [1, 3], (0, 2, 9)])
def test_hvdsplit(name, sections):
    x = rand(4, 4, 4)
    check(lambda lib, x: getattr(lib, name)(x, sections), [x])
    check(lambda lib, x: getattr(x, name)(sections), [x])


def test_hsplit_1d():
    check(lambda lib, x: lib.hsplit(x, 3), [rand(6)])


@pytest.mark.parametrize(
    "name,shape,sections",
    [
        ("hsplit", (), 2),
        ("hsplit", (5, 5), 2),
        ("vsplit", (4,), 2),
        ("dsplit", (2, 2), 2),
        ("dsplit", (2, 2, 3), 2),
        ("vsplit", (4, 2), 0),
    ],
)
def test_hvdsplit_raises(name, shape, sections):
    check_raises(
        lambda lib, x: getattr(lib, name)(x, sections), [rand(*shape)], match_message=sections != 0
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: lib.unsafe_split(x, 2),
        lambda lib, x: x.unsafe_split(3, 1),
        lambda lib, x: lib.unsafe_chunk(x, 3),
        lambda lib, x: x.unsafe_chunk(2, dim=-1),
        lambda lib, x: lib.unsafe_split_with_sizes(x, [1, 4], 0),
        lambda lib, x: x.unsafe_split_with_sizes([2, 1], 1),
    ],
)
def test_unsafe_split(fn):
    out = check(fn, [rand(5, 3)], view=True)
    # not views: in-place ops on the parts are allowed and recorded
    check(lambda lib, x: [p.mul_(2) for p in fn(lib, x * 1)], [rand(5, 3)])
    assert out is not None


def test_unsafe_split_double_backward():
    check_double_backward(
        lambda lib, x: [p**2 for p in lib.unsafe_split(x, 2)], [rand(5, dtype="float64")]
    )


def test_unsafe_split_raises():
    check_raises(lambda lib, x: lib.unsafe_split(x, 2), [rand()])
    check_raises(lambda lib, x: lib.unsafe_split_with_sizes(x, [1, 1]), [rand(3)])
    check_raises(lambda lib, x: lib.unsafe_chunk(x, 0), [rand(3)])


# ------------------------------------------------------------------------------ gcd / lcm


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(-50, 50), min_size=1, max_size=6),
    st.sampled_from(["int64", "int32", "uint8", "int16"]),
)
def test_gcd_lcm(vals, dt):
    if dt == "uint8":
        vals = [abs(v) for v in vals]
    a = np.asarray(vals, dtype=dt)
    b = np.asarray(vals[::-1], dtype=dt)
    for name in ("gcd", "lcm"):
        check(lambda lib, x, y, n=name: getattr(lib, n)(x, y), [a, b])
        check(lambda lib, x, y, n=name: getattr(x, n)(y), [a, b[:1]])
        check(lambda lib, x, y, n=name: getattr(x, n + "_")(y), [a, b])
        check(lambda lib, x, y, n=name: getattr(lib, n + "_")(x, y), [a, b])


def test_gcd_promotes():
    check(
        lambda lib, x, y: lib.gcd(x, y),
        [rand(4, dtype="int32", low=0, high=30), rand(4, dtype="int64", low=0, high=30)],
    )


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_float_raises(name):
    check_raises(lambda lib, x, y: getattr(lib, name)(x, y), [rand(3), rand(3)], match_message=True)
    check_raises(
        lambda lib, x, y: getattr(lib, name)(x, y),
        [rand(3, dtype="int64"), rand(3)],
        match_message=True,
    )


# ------------------------------------------------------------------------------ nonzero_static


@pytest.mark.parametrize("size", [0, 2, 5, 12])
@pytest.mark.parametrize("fill", [-1, 7])
@pytest.mark.parametrize("shape", [(6,), (3, 4), ()])
def test_nonzero_static(size, fill, shape):
    x = rand(*shape, dtype="int64", low=0, high=2)
    check(lambda lib, x: lib.nonzero_static(x, size=size, fill_value=fill), [x])
    check(lambda lib, x: x.nonzero_static(size=size), [x])


# ------------------------------------------------------------------------------ index_reduce


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_reduce(reduce, include_self, dim):
    x = rand(4, 5, dtype="float64")
    n = x.shape[dim]
    index = np.asarray([0, n - 1, 0, 1, n - 1], dtype=np.int64)
    src_shape = list(x.shape)
    src_shape[dim] = len(index)
    src = rand(*src_shape, dtype="float64")
    check(
        lambda lib, x, i, s: lib.index_reduce(x, dim, i, s, reduce, include_self=include_self),
        [x, index, src],
    )
    check(
        lambda lib, x, i, s: (x * 1).index_reduce_(dim, i, s, reduce, include_self=include_self),
        [x, index, src],
    )


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_int(reduce):
    x = rand(3, 2, dtype="int64", low=-5, high=5)
    src = rand(4, 2, dtype="int64", low=-5, high=5)
    idx = np.asarray([2, 0, 2, 2])
    check(lambda lib, x, i, s: x.index_reduce(0, i, s, reduce), [x, idx, src])


def test_index_reduce_raises():
    x, idx, src = rand(3, 2), np.asarray([0, 1]), rand(2, 2)
    check_raises(lambda lib, x, i, s: x.index_reduce(0, i, s, "sum"), [x, idx, src])
    check_raises(lambda lib, x, i, s: x.index_reduce(0, i, s.double(), "prod"), [x, idx, src])
    check_raises(lambda lib, x, i, s: x.index_reduce(0, i, s, "prod"), [x, idx, rand(3, 2)])


# ------------------------------------------------------------------------------ storage


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
@pytest.mark.parametrize("dt", ["float32", "int64", "bool", "float64"])
def test_storage(dt):
    a = rand(2, 3, dtype=dt)
    e = ember.from_numpy(a.copy())[1]
    t = torch.from_numpy(a.copy())[1]
    es, ts = e.storage(), t.storage()
    assert len(es) == len(ts) == es.size() == ts.size()
    assert es.tolist() == ts.tolist() and es[2] == ts[2] and es[-1] == ts[-1]
    assert es.element_size() == ts.element_size() and es.nbytes() == ts.nbytes()
    assert str(es.dtype) == str(ts.dtype) and str(es.device) == str(ts.device)
    assert es.type() == ts.type() and repr(es) == repr(ts)
    assert es.data_ptr() == e.untyped_storage().data_ptr()
    assert es.untyped().nbytes() == ts.untyped().nbytes()
    assert es.is_shared() == ts.is_shared() and es.is_pinned() == ts.is_pinned()
    es[0] = 1
    ts[0] = 1
    assert e.tolist() == t.tolist() and list(es) == list(ts)


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storage_empty_repr():
    assert repr(ember.zeros(0).storage()) == repr(torch.zeros(0).storage())
    check_raises(lambda lib, x: x.storage()[0:1], [rand(3)], match_message=True)


def test_storage_warns_once():
    import ember._ops.tensor_extras as te

    te._STORAGE_WARNED.clear()
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ember.ones(2).storage()


# ------------------------------------------------------------------------------ cov, corrcoef


@pytest.mark.filterwarnings("ignore:cov", "ignore::RuntimeWarning")
@pytest.mark.parametrize("shape", [(3, 5), (5,), (1, 4), (4, 2)])
@pytest.mark.parametrize("correction", [1, 0, 2])
@pytest.mark.parametrize("weights", [None, "f", "a", "fa"])
def test_cov(shape, correction, weights):
    n = shape[-1]
    fw = rand(n, dtype="int64", low=0, high=4) if "f" in (weights or "") else None
    aw = rand(n, dtype="float32", low=0.1, high=2) if "a" in (weights or "") else None
    x = rand(*shape)
    check(
        lambda lib, x: lib.cov(
            x,
            correction=correction,
            fweights=None if fw is None else lib.from_numpy(fw),
            aweights=None if aw is None else lib.from_numpy(aw),
        ),
        [x],
        grad_fn=False,
    )


def test_cov_method_int_and_complex():
    check(lambda lib, x: x.cov(), [rand(3, 4, dtype="int64")])
    check(lambda lib, x: x.cov(), [rand(2, 4, dtype="complex64")], grad_fn=False)


@pytest.mark.filterwarnings("ignore:cov", "ignore::RuntimeWarning")
def test_cov_degenerate():
    check(lambda lib, x: lib.cov(x), [rand(3, 1)], grad=False)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        ember.cov(ember.ones(2, 1))


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: lib.cov(x.reshape(1, 2, 6)),
        lambda lib, x: lib.cov(x, fweights=lib.ones(6)),
        lambda lib, x: lib.cov(x, fweights=-lib.ones(6, dtype=lib.int64)),
        lambda lib, x: lib.cov(x, aweights=lib.ones(5)),
        lambda lib, x: lib.cov(x, aweights=lib.ones(6, dtype=lib.int64)),
        lambda lib, x: lib.cov(x, aweights=lib.ones(2, 6)),
    ],
)
def test_cov_raises(fn):
    check_raises(fn, [rand(2, 6)], match_message=True)


@pytest.mark.parametrize("shape", [(3, 5), (5,), (4, 2)])
def test_corrcoef(shape):
    check(lambda lib, x: lib.corrcoef(x), [rand(*shape, dtype="float64")], grad_fn=False)
    check(lambda lib, x: x.corrcoef(), [rand(*shape)], grad_fn=False)


def test_corrcoef_complex_and_double_backward():
    check(lambda lib, x: lib.corrcoef(x), [rand(3, 4, dtype="complex128")], grad=False)
    check_double_backward(lambda lib, x: lib.corrcoef(x), [rand(3, 5, dtype="float64")])
    check_double_backward(lambda lib, x: lib.cov(x, correction=0), [rand(2, 4, dtype="float64")])


# ------------------------------------------------------------------------------ legacy methods


def test_to_dense_and_const_data_ptr():
    x = ember.ones(2, 3)
    assert x.to_dense() is x and x.const_data_ptr() == x.data_ptr()
    check(lambda lib, x: x.to_dense(lib.float64), [rand(2, 3)])


def test_device_flags():
    for name in ("is_xla", "is_ipu", "is_maia", "is_mtia"):
        assert getattr(ember.ones(1), name) == getattr(torch.ones(1), name)


def test_is_set_to():
    for lib in (torch, ember):
        x = lib.ones(2, 3)
        got = [
            x.is_set_to(x),
            x.is_set_to(x.view(3, 2)),
            x.is_set_to(x.clone()),
            x.is_set_to(x.detach()),
            x[0].is_set_to(x[1]),
            x.t().is_set_to(x.t()),
        ]
        assert got == [True, False, False, True, False, True], (lib, got)


@pytest.mark.parametrize("dt", ["float32", "int64"])
def test_apply_map_map2(dt):
    check(lambda lib, x: x.apply_(lambda v: v * 2 + 1), [rand(2, 3, dtype=dt)], grad=False)
    check(
        lambda lib, x, y: x.map_(y, lambda a, b: a - b),
        [rand(2, 3, dtype=dt), rand(3, dtype=dt)],
        grad=False,
    )
    check(
        lambda lib, x, y: x.map2_(y, y, lambda a, b, c: a * b + c),
        [rand(2, 3, dtype=dt), rand(2, 1, dtype=dt)],
        grad=False,
    )


def test_apply_requires_grad_raises():
    check_raises(lambda lib, x: x.apply_(abs), [rand(3)], grad=True, match_message=True)


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: x.new(),
        lambda lib, x: x.new(2, 3).fill_(1),
        lambda lib, x: x.new(lib.Size([4])).fill_(2),
        lambda lib, x: x.new([1, 2, 3]),
        lambda lib, x: x.new((2, 3)),
        lambda lib, x: x.new(x * 2),
    ],
)
@pytest.mark.parametrize("dt", ["float64", "int32"])
def test_new(fn, dt):
    check(fn, [rand(2, dtype=dt)], grad=False)


def test_new_raises():
    check_raises(lambda lib, x: x.new(x.double()), [rand(2)])


def test_index_reduce_double_backward():
    idx = np.asarray([0, 2, 0])
    check_double_backward(
        lambda lib, x, s: lib.index_reduce(x, 0, lib.from_numpy(idx), s, "prod"),
        [rand(3, 2, dtype="float64"), rand(3, 2, dtype="float64")],
    )
