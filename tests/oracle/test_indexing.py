"""Oracle tests: ``__getitem__`` / ``__setitem__`` / ``index_put_`` against torch.

Basic indices (ints, slices, None, Ellipsis) give views; tensors, lists and masks give copies
(IndexBackward0) laid out as torch lays them out; assignment writes through views (CopySlices)
or through ``index_put_`` (IndexPutBackward0).
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.oracle.helper import _to_lib, assert_same, check, check_raises, rand, torch
from tests.oracle.test_views import _first_line, check_aliasing, check_view

pytestmark = pytest.mark.filterwarnings("ignore:Using a non-tuple sequence:UserWarning")


def _idx(lib, a):
    """An index tensor for ``lib`` from a NumPy array."""
    return _to_lib(lib, np.asarray(a), False)


# ------------------------------------------------------------------------------ basic indexing

BASIC = {
    "int": lambda lib, x: x[1],
    "neg_int": lambda lib, x: x[-1],
    "int_int": lambda lib, x: x[1, -2],
    "int_all": lambda lib, x: x[0, 0, 0],
    "chained": lambda lib, x: x[0][1][2],
    "slice": lambda lib, x: x[1:],
    "slice_full": lambda lib, x: x[:],
    "slice_full_tuple": lambda lib, x: x[:, :],
    "slice_whole_range": lambda lib, x: x[:, 0:4],
    "slice_past_end": lambda lib, x: x[:, :100],
    "slice_neg_start": lambda lib, x: x[:, -4:],
    "slice_step": lambda lib, x: x[::2],
    "slice_step_start": lambda lib, x: x[:, 1::2, ::3],
    "slice_neg": lambda lib, x: x[-2:-1],
    "slice_empty": lambda lib, x: x[2:1],
    "slice_far": lambda lib, x: x[5:],
    "slice_far_neg": lambda lib, x: x[-10:2],
    "slice_int": lambda lib, x: x[1:2, 3],
    "int_slice": lambda lib, x: x[1, ::2],
    "none": lambda lib, x: x[None],
    "none_mid": lambda lib, x: x[:, None],
    "none_many": lambda lib, x: x[None, 0, None, ..., None, 1],
    "ellipsis": lambda lib, x: x[...],
    "ellipsis_int": lambda lib, x: x[..., 1],
    "int_ellipsis_int": lambda lib, x: x[1, ..., 2],
    "ellipsis_none": lambda lib, x: x[..., None],
    "ellipsis_slice": lambda lib, x: x[..., 1:3],
    "tuple_one": lambda lib, x: x[(1,)],
    "tuple_empty": lambda lib, x: x[()],
    "np_int": lambda lib, x: x[np.int64(1)],
    "np_int_tuple": lambda lib, x: x[np.int32(1), np.int64(-1)],
    "tensor_int": lambda lib, x: x[lib.tensor(1)],
    "tensor_int32": lambda lib, x: x[lib.tensor(1, dtype=lib.int32)],
    "tensor_int_pair": lambda lib, x: x[1, lib.tensor(2)],
    "tensor_slice_bounds": lambda lib, x: x[lib.tensor(1) : lib.tensor(3)],
    "list_as_tuple": lambda lib, x: x[[slice(None), 1]],
    "list_none": lambda lib, x: x[[None, 0]],
}


@pytest.mark.parametrize("name", list(BASIC))
def test_basic_index(name):
    check_view(BASIC[name], (3, 4, 5))


@pytest.mark.parametrize("shape", [(3, 4, 5), (3, 1, 5), (0, 4, 5)])
def test_basic_index_shapes(shape):
    for name in ("slice", "slice_step_start", "none_mid", "ellipsis_slice", "slice_empty"):
        check_view(BASIC[name], shape)


def test_basic_index_0d():
    for fn in [
        lambda lib, x: x[None],
        lambda lib, x: x[...],
        lambda lib, x: x[None, ..., None],
        lambda lib, x: x[()],
    ]:
        check_view(fn, ())


def test_list_of_slices_warns_like_torch():
    x = ember.zeros(3, 4)
    with pytest.warns(UserWarning, match="Using a non-tuple sequence for multidimensional"):
        y = x[[slice(None), 1]]
    assert y.shape == (3,)


def test_basic_index_of_views():
    check_view(lambda lib, x: x.t()[1:, 0], (3, 4))
    check_view(lambda lib, x: x.permute(2, 0, 1)[..., ::2][1], (3, 4, 5))
    check_view(lambda lib, x: x[:, 1:].unsqueeze(0)[0, :, None, ::2], (3, 4, 5))
    check_view(lambda lib, x: x.expand(2, 3, 4)[1, :, 2:], (3, 4))
    check_view(lambda lib, x: x.diagonal()[1:], (4, 4))


BASIC_ERRORS = {
    "int_oob": (lambda lib, x: x[3], (3, 4)),
    "int_oob_neg": (lambda lib, x: x[-4], (3, 4)),
    "int_oob_dim1": (lambda lib, x: x[0, 4], (3, 4)),
    "int_oob_ellipsis": (lambda lib, x: x[..., 5], (3, 4, 5)),
    "int_oob_ellipsis2": (lambda lib, x: x[1, ..., 7], (3, 4, 5)),
    "too_many": (lambda lib, x: x[0, 0, 0], (3, 4)),
    "too_many_slices": (lambda lib, x: x[:, :, :], (3, 4)),
    "neg_step": (lambda lib, x: x[::-1], (3, 4)),
    "zero_step": (lambda lib, x: x[::0], (3, 4)),
    "neg_step_tuple": (lambda lib, x: x[:, ::-2], (3, 4)),
    "float": (lambda lib, x: x[1.5], (3, 4)),
    "float_tuple": (lambda lib, x: x[0, 1.5], (3, 4)),
    "np_bool": (lambda lib, x: x[np.True_], (3, 4)),
    "str": (lambda lib, x: x["a"], (3, 4)),
    "0d_int": (lambda lib, x: x[0], ()),
    "0d_int1": (lambda lib, x: x[1], ()),
    "0d_int_neg": (lambda lib, x: x[-1], ()),
    "0d_tuple": (lambda lib, x: x[0,], ()),
    "0d_slice": (lambda lib, x: x[:], ()),
    "0d_slice_tuple": (lambda lib, x: x[0:1, ...], ()),
    "0d_tensor": (lambda lib, x: x[lib.tensor(0)], ()),
    "tensor_int_oob": (lambda lib, x: x[lib.tensor(5)], (3, 4)),
}


@pytest.mark.parametrize("name", list(BASIC_ERRORS))
def test_basic_index_errors(name):
    fn, shape = BASIC_ERRORS[name]
    e, t = check_raises(fn, [rand(*shape)])
    assert _first_line(e) == _first_line(t), f"{e} != {t}"


# ------------------------------------------------------------------------------ advanced indexing

ADVANCED = {
    "list": lambda lib, x: x[[1, 2]],
    "list_one": lambda lib, x: x[[1]],
    "list_repeat": lambda lib, x: x[[0, 2, 0, 0]],
    "list_neg": lambda lib, x: x[[0, -1, -3]],
    "list_nested": lambda lib, x: x[[[0, 1], [2, 0]]],
    "list_empty": lambda lib, x: x[[]],
    "list_floats": lambda lib, x: x[[1.7, 0.2]],
    "list_bools": lambda lib, x: x[[True, False, True]],
    "tensor": lambda lib, x: x[_idx(lib, [2, 0])],
    "tensor_2d": lambda lib, x: x[_idx(lib, [[0, 1], [1, 2]])],
    "tensor_int32": lambda lib, x: x[:, _idx(lib, np.array([3, 0], dtype=np.int32))],
    "tensor_empty": lambda lib, x: x[_idx(lib, np.zeros(0, dtype=np.int64))],
    "tensor_0d_int_with_list": lambda lib, x: x[lib.tensor(1), _idx(lib, [0, 1])],
    "ndarray": lambda lib, x: x[np.array([1, 2])],
    "ellipsis_list": lambda lib, x: x[..., [0, 1]],
    "slice_list": lambda lib, x: x[:, [0, 3]],
    "slice_slice_list": lambda lib, x: x[:, :, [0, 4, 1]],
    "two_lists": lambda lib, x: x[[0, 1], [1, 2]],
    "two_lists_adjacent_late": lambda lib, x: x[:, [0, 1], [1, 2]],
    "separated": lambda lib, x: x[[0, 1], :, [1, 2]],
    "separated_broadcast": lambda lib, x: x[[0, 1], :, [[1], [2]]],
    "separated_by_slice": lambda lib, x: x[[0, 1], 1:3, [1, 2]],
    "separated_by_none": lambda lib, x: x[None, [0, 1], None, [1, 2]],
    "separated_ellipsis": lambda lib, x: x[[0, 1], ..., [0, 1]],
    "int_then_list": lambda lib, x: x[1, :, [1, 2]],
    "list_then_int": lambda lib, x: x[[1, 2], 1],
    "int_list_int": lambda lib, x: x[[0, 2], 1, [3, 4]],
    "broadcast": lambda lib, x: x[[[0], [1]], [1, 2]],
    "broadcast_tensors": lambda lib, x: x[_idx(lib, [[0, 1]]), _idx(lib, [[0], [1]])],
    "list_slice_step": lambda lib, x: x[[2, 0], ::2],
    "list_none": lambda lib, x: x[[0, 1], None],
    "mask": lambda lib, x: x[x > 0],
    "mask_2d": lambda lib, x: x[x[:, :, 0] > 0],
    "mask_1d_dim1": lambda lib, x: x[:, x[0, :, 0] > 0],
    "mask_slice": lambda lib, x: x[x[:, :, 0] > 0, 1:3],
    "mask_int": lambda lib, x: x[x[:, :, 0] > 0, 1],
    "mask_ellipsis_int": lambda lib, x: x[x[:, :, 0] > 0, ..., 1],
    "mask_none": lambda lib, x: x[x[:, 0, 0] > -10, None],
    "mask_all_false": lambda lib, x: x[x > 100],
    "mask_numpy": lambda lib, x: x[np.array([True, False, True])],
    "mask_uint8_0d": lambda lib, x: x[lib.tensor(1, dtype=lib.uint8)],
    "bool_true": lambda lib, x: x[True],
    "bool_false": lambda lib, x: x[False],
    "bool_true_int": lambda lib, x: x[True, 1],
    "int_bool_true": lambda lib, x: x[1, True],
    "bool_false_int": lambda lib, x: x[False, 1],
    "tensor_bool_0d": lambda lib, x: x[lib.tensor(True)],
    "tensor_bool_0d_false": lambda lib, x: x[lib.tensor(False)],
    "list_and_bool_list": lambda lib, x: x[[0, 1], [True, False, True, False]],
    "index_of_view": lambda lib, x: x.transpose(0, 1)[[0, 1]],
    "index_of_permuted": lambda lib, x: x.permute(2, 0, 1)[:, [0, 1]],
    "index_of_permuted_last": lambda lib, x: x.permute(2, 0, 1)[:, :, [0, 1]],
    "index_of_permuted_first": lambda lib, x: x.permute(2, 0, 1)[[0, 1]],
    "index_of_sliced": lambda lib, x: x[:, ::2][[2, 0], :, [1, 3]],
    "index_of_expanded": lambda lib, x: x[:1].expand(3, 4, 5)[:, [0, 2]],
    "transposed_index": lambda lib, x: x[:, _idx(lib, [[0, 1, 2], [1, 2, 3]]).t()],
}


@pytest.mark.parametrize("name", list(ADVANCED))
def test_advanced_index(name):
    eo, to = check(ADVANCED[name], [rand(3, 4, 5, dtype="float64")], view=True)
    check_aliasing(ADVANCED[name], rand(3, 4, 5, dtype="float64"))


@pytest.mark.parametrize("shape", [(3, 0, 5), (0, 4, 5), (1, 4, 1)])
def test_advanced_index_empty_and_ones(shape):
    for fn in [
        lambda lib, x: x[[0]] if x.shape[0] else x[[]],
        lambda lib, x: x[:, :, [0, 0]],
        lambda lib, x: x[x > 0],
        lambda lib, x: x[..., [0]],
    ]:
        check(fn, [rand(*shape, dtype="float64")], view=True)


@pytest.mark.parametrize("dtype", ["int64", "bool", "float16", "bfloat16", "complex64"])
def test_advanced_index_dtypes(dtype):
    x = rand(3, 4, dtype=dtype, low=-3, high=3)
    check(lambda lib, x: x[[2, 0]], [x])
    check(lambda lib, x: x[:, [1, 1, 3]], [x])
    check(lambda lib, x: x[x != 0] if x.dtype != lib.bool else x[x], [x])


def test_advanced_index_0d():
    for fn in [
        lambda lib, x: x[True],
        lambda lib, x: x[False],
        lambda lib, x: x[x > 0],
        lambda lib, x: x[lib.tensor(True)],
    ]:
        check(fn, [rand(dtype="float64")], view=True)


def test_repeated_indices_accumulate_grad():
    check(lambda lib, x: x[[0, 0, 1, 0]], [rand(3, 2, dtype="float64")])
    check(lambda lib, x: x[[[0, 0], [2, 0]], [1, 1]], [rand(3, 2, dtype="float64")])
    check(lambda lib, x: x[:, [1, 1, 1]] * x[:, [1]], [rand(3, 2, dtype="float64")])


def test_index_is_a_copy():
    def fn(lib, x):
        y = x[[0, 1]]
        with lib.no_grad():
            y.add_(1)  # does not reach x
        return x * 1, y

    check(fn, [rand(3, 2, dtype="float64")])


def test_index_double_backward():
    def fn(lib, x):
        y = (x[[0, 0, 2]] ** 2).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        return g

    check(fn, [rand(3, 2, dtype="float64")], grad_fn=False)


ADVANCED_ERRORS = {
    "list_oob": (lambda lib, x: x[[5, 6, 0]], (3, 4, 5)),
    "list_oob_neg": (lambda lib, x: x[:, [-5]], (3, 4, 5)),
    "list_oob_dim1": (lambda lib, x: x[:, [0, 5]], (3, 4, 5)),
    "list_oob_second": (lambda lib, x: x[[0, 1], :, [0, 7]], (3, 4, 5)),
    "tensor_oob": (lambda lib, x: x[_idx(lib, [3])], (3, 4, 5)),
    "broadcast_mismatch": (lambda lib, x: x[[0, 1], [0, 1, 2]], (3, 4, 5)),
    "mask_broadcast_mismatch": (lambda lib, x: x[x[:, :, 0] > 0, [0, 1, 2, 3, 0, 1, 2]], (3, 4, 5)),
    "mask_shape": (lambda lib, x: x[_idx(lib, [True, False])], (3, 4, 5)),
    "mask_shape_2d": (lambda lib, x: x[_idx(lib, np.ones((3, 3), bool))], (3, 4, 5)),
    "mask_too_many_dims": (lambda lib, x: x[_idx(lib, np.ones((3, 4, 5, 1), bool))], (3, 4, 5)),
    "float_tensor": (lambda lib, x: x[_idx(lib, [1.0])], (3, 4, 5)),
    "int16_tensor": (lambda lib, x: x[_idx(lib, np.array([0], np.int16))], (3, 4, 5)),
    "float_0d_tensor": (lambda lib, x: x[lib.tensor(1.0)], (3, 4, 5)),
    "empty_dim": (lambda lib, x: x[:, [0]], (3, 0, 5)),
    "too_many_lists": (lambda lib, x: x[[0], [0], [0], [0]], (3, 4, 5)),
    "0d_list": (lambda lib, x: x[[0]], ()),
}


@pytest.mark.parametrize("name", list(ADVANCED_ERRORS))
def test_advanced_index_errors(name):
    fn, shape = ADVANCED_ERRORS[name]
    e, t = check_raises(fn, [rand(*shape)])
    assert _first_line(e) == _first_line(t), f"{e} != {t}"


# ------------------------------------------------------------------------------ __setitem__


def _assign(index, value=None):
    """``y = x * 1; y[index] = value (or v); return y`` for ``check`` with inputs (x[, v])."""

    def fn(lib, x, v=None):
        y = x * 1
        y[index(lib, y) if callable(index) else index] = v if value is None else value
        return y

    return fn


SETITEM = {
    # (index, value or None for the second input, shape of the second input)
    "int_scalar": (0, 1.5, None),
    "int_tensor": (1, None, (4, 5)),
    "int_broadcast": (1, None, (5,)),
    "int_broadcast_ones": (1, None, (1, 1, 4, 5)),
    "int_0d_tensor": (-1, None, ()),
    "slice_scalar": (slice(1, None), -2.0, None),
    "slice_tensor": (slice(None, None, 2), None, (2, 4, 5)),
    "none_scalar": (None, 1.0, None),
    "true_scalar": (True, 1.0, None),
    "false_scalar": (False, 1.0, None),
    "tuple": ((0, slice(1, 3), 2), None, (2,)),
    "tuple_ellipsis": ((Ellipsis, 1), None, (3, 4)),
    "all_ints": ((0, 0, 0), 7.0, None),
    "int_value": (0, 2, None),
    "bool_value": (0, True, None),
    "list": ([0, 2], None, (2, 4, 5)),
    "list_scalar": ([0, 2], 0.5, None),
    "list_broadcast": ([0, 2], None, (4, 1)),
    "list_broadcast_ones": ([0, 2], None, (1, 1, 2, 4, 5)),
    "list_0d": ([1], None, ()),
    "two_lists": (([0, 2], [1, 3]), None, (2, 5)),
    "separated": (([0, 2], slice(None), [1, 3]), None, (2, 4)),
    "int_list": ((1, slice(None), [0, 4]), None, (4, 2)),
    "mask_scalar": (lambda lib, y: y > 0, 0.0, None),
    "mask_0d_tensor": (lambda lib, y: y > 0, None, ()),
    "mask_row": (lambda lib, y: y[:, 0, 0] > 0, None, (4, 5)),
    "mask_and_slice": (lambda lib, y: (y[:, :, 0] > 0, slice(1, 3)), None, (2,)),
    "tensor_index": (lambda lib, y: _idx(lib, [2, 0]), None, (5,)),
    "tensor_index_2d": (lambda lib, y: (slice(None), _idx(lib, [[0], [3]])), None, (3, 2, 1, 5)),
}


@pytest.mark.parametrize("name", list(SETITEM))
def test_setitem(name):
    index, value, vshape = SETITEM[name]
    inputs = [rand(3, 4, 5, dtype="float64")]
    if vshape is not None:
        inputs.append(rand(*vshape, dtype="float64"))
    check(_assign(index, value), inputs)


def test_setitem_repeated_indices():
    # duplicates write one of the values; torch's gradient gives every value its slot's grad
    check(_assign([0, 0]), [rand(3, 2, dtype="float64"), rand(1, 2, dtype="float64")])


def test_setitem_accumulate_index_put():
    def fn(lib, x, v):
        y = x * 1
        y.index_put_((_idx(lib, [0, 2, 0]),), v, accumulate=True)
        return y

    check(fn, [rand(3, 2, dtype="float64"), rand(3, 2, dtype="float64")])

    def fn2(lib, x, v):
        return lib.index_put(x, (_idx(lib, [0, 2]), _idx(lib, [1, 1])), v)

    check(fn2, [rand(3, 2, dtype="float64"), rand(2, dtype="float64")])
    check(fn2, [rand(3, 2, dtype="float64"), rand(dtype="float64")])


def test_index_put_api():
    def masked(lib, x, v):
        y = x * 1
        return y.index_put_((_idx(lib, [True, False, True]),), v)

    check(masked, [rand(3, 2, dtype="float64"), rand(2, dtype="float64")])

    def two(lib, x, v):
        return lib.index_put(x, (_idx(lib, [2, 2]), _idx(lib, [1, 0])), v, accumulate=True)

    check(two, [rand(3, 2, dtype="float64"), rand(2, dtype="float64")])
    for fn in [
        lambda lib, x: x.index_put_((_idx(lib, [0]),), lib.ones(1, dtype=lib.float64)),
        lambda lib, x: x.index_put_((None, _idx(lib, [0])), lib.ones(1)),
        lambda lib, x: x.index_put((None,), lib.ones(1)),
        lambda lib, x: lib.index_put(x, ([0],), lib.ones(1)),
        lambda lib, x: x.index_put_(_idx(lib, [0]), lib.ones(1)),
        lambda lib, x: x.index_put_((_idx(lib, [0]),) * 3, lib.ones(1)),
    ]:
        e, t = check_raises(fn, [rand(3, 2)])
        assert str(e) == str(t)


def test_setitem_overlapping_value_raises():
    check_raises(lambda lib, x: x.__setitem__(slice(1, None), x[:-1]), [rand(5)])


def test_setitem_other_dtypes():
    def fn(lib, x, v):
        y = x * 1
        y[0] = v  # copy_ casts
        y[1:, 1] = v[0].to(lib.int64)
        return y

    check(fn, [rand(3, 4, dtype="float32"), rand(4, dtype="float64")])

    def ints(lib, x):
        x = x.clone()
        x[0] = 2.7  # truncated
        x[1, [0, 1]] = 5
        x[x > 3] = -1
        x[2] = True
        return x

    check(ints, [rand(3, 4, dtype="int64", low=0, high=6)])

    def bools(lib, x):
        x = x.clone()
        x[0] = 5
        x[1, [0, 2]] = False
        return x

    check(bools, [rand(3, 4, dtype="bool")])

    def u8(lib, x):
        x = x.clone()
        x[0] = -1  # wraps, as torch allows
        return x

    check(u8, [rand(3, dtype="uint8", low=0, high=9)])


def test_setitem_through_views():
    def fn(lib, x, v):
        base = x * 1
        w = base[1:]  # a view
        w[0] = v  # writes into base
        w.t()[1] = 0.0
        w[:, [0, 2]] = 2.0  # index_put_ on a view
        return base

    check(fn, [rand(3, 4, dtype="float64"), rand(4, dtype="float64")])

    def no_grad(lib, x):
        base = x.clone()
        with lib.no_grad():
            v = base.view(2, 6)[:, 1:]
            v[0] = 9.0
            v[[1]] = 8.0
            base.t()[2, :] = 7.0
        return base

    check(no_grad, [rand(3, 4, dtype="float64")], grad=False)


def test_setitem_view_grad_fn_after_write():
    def fn(lib, x, v):
        base = x * 1
        w = base[1:]
        w[0] = v
        return base, w

    check(fn, [rand(3, 4, dtype="float64"), rand(4, dtype="float64")])


def test_setitem_grad_fn_and_version():
    def fn(lib, x, v):
        y = x.clone()
        y[0] = v
        assert y._version == 1
        y[[1, 2]] = v
        assert y._version == 2
        return y

    eo, to = check(fn, [rand(3, 4, dtype="float64"), rand(4, dtype="float64")])
    assert type(to.grad_fn).__name__ == "IndexPutBackward0" == eo.grad_fn.name()

    def fn2(lib, x, v):
        y = x.clone()
        y[0] = v
        return y

    eo, to = check(fn2, [rand(3, 4, dtype="float64"), rand(4, dtype="float64")])
    assert to.grad_fn.name() == "torch::autograd::CopySlices" == eo.grad_fn.name()


@pytest.mark.parametrize("index", [Ellipsis, slice(None)])
def test_setitem_whole_tensor_scalar(index):
    # no view: torch fills the tensor itself
    check(_assign(index, 3.0), [rand(3, 4, dtype="float64")])


@pytest.mark.parametrize(
    "index,vshape", [(Ellipsis, (4, 5)), (Ellipsis, (3, 4, 5)), (slice(None), (3, 4, 5))]
)
def test_setitem_whole_tensor_value(index, vshape):
    check(_assign(index), [rand(3, 4, 5, dtype="float64"), rand(*vshape, dtype="float64")])


def test_setitem_value_requiring_grad_into_plain_tensor():
    def fn(lib, v):
        y = lib.zeros(3, 4, dtype=lib.float64)
        y[1] = v
        y[[0, 2], 1:3] = v[:2] * 2
        return y

    check(fn, [rand(4, dtype="float64")])


def test_setitem_0d_value_requiring_grad():
    def fn(lib, x, v):
        y = x * 1
        y[1:] = v  # fill_ with a 0-d tensor: v's gradient is the sum over the slice
        return y

    check(fn, [rand(3, 4, dtype="float64"), rand(dtype="float64")])


def test_setitem_then_backward_through_views():
    def fn(lib, x):
        y = x * 2
        y[:, 0].mul_(2)
        y.t().add_(1)
        y.diagonal().mul_(y[0, 1].clone())
        return y

    check(fn, [rand(3, 3, dtype="float64")])

    def stale(lib, x):
        y = x * 2
        z = y[1] * y[1]  # saves the view y[1]...
        y[1:, 1:][0] = 3.0  # ...which this overwrites
        z.sum().backward()

    check_raises(stale, [rand(3, 3, dtype="float64")], grad=True)


def test_setitem_value_computed_from_same_tensor():
    def fn(lib, x):
        y = x * 2
        y[1] = y[2] * 3
        return y

    check(fn, [rand(3, 3, dtype="float64")])


SETITEM_ERRORS = {
    "list_value": (lambda lib, x: x.__setitem__(0, [1.0, 2.0]), "float32"),
    "ndarray_value": (lambda lib, x: x.__setitem__(0, np.ones(4)), "float32"),
    "np_float32_value": (lambda lib, x: x.__setitem__(0, np.float32(1)), "float32"),
    "none_value": (lambda lib, x: x.__setitem__(0, None), "float32"),
    "str_value": (lambda lib, x: x.__setitem__(0, "a"), "float32"),
    "complex_into_float": (lambda lib, x: x.__setitem__(0, 1 + 2j), "float32"),
    "overflow_float32": (lambda lib, x: x.__setitem__(0, 1e300), "float32"),
    "overflow_int8": (lambda lib, x: x.__setitem__(0, 300), "int8"),
    "overflow_uint8": (lambda lib, x: x.__setitem__(0, -300), "uint8"),
    "nan_into_int": (lambda lib, x: x.__setitem__(0, float("nan")), "int32"),
    "index_put_dtype": (
        lambda lib, x: x.__setitem__([0, 1], lib.ones(4, dtype=lib.float64)),
        "float32",
    ),
    "index_put_int_value": (
        lambda lib, x: x.__setitem__([0], lib.ones(1, 4, dtype=lib.int64)),
        "float32",
    ),
    "index_put_shape": (lambda lib, x: x.__setitem__([0, 1], lib.ones(3)), "float32"),
    "index_put_too_big": (lambda lib, x: x.__setitem__([0, 1], lib.ones(2, 4, 1)), "float32"),
    "copy_shape": (lambda lib, x: x.__setitem__(0, lib.ones(2, 4)), "float32"),
    "copy_broadcast": (lambda lib, x: x.__setitem__(slice(None), lib.ones(4, 1)), "float32"),
    "oob": (lambda lib, x: x.__setitem__(5, 1.0), "float32"),
    "oob_list": (lambda lib, x: x.__setitem__([5], 1.0), "float32"),
}


@pytest.mark.parametrize("name", list(SETITEM_ERRORS))
def test_setitem_errors(name):
    fn, dtype = SETITEM_ERRORS[name]
    e, t = check_raises(fn, [rand(3, 4, dtype=dtype, low=0, high=3)])
    assert _first_line(e) == _first_line(t), f"{e} != {t}"


def test_setitem_on_leaf_requiring_grad_raises():
    for fn in [
        lambda lib, x: x.__setitem__(0, 1.0),
        lambda lib, x: x.__setitem__([0], 1.0),
        lambda lib, x: x.__setitem__(Ellipsis, 1.0),
        lambda lib, x: x[1:].__setitem__(0, 1.0),
        lambda lib, x: x.t().__setitem__(0, 1.0),
    ]:
        check_raises(fn, [rand(3, 4)], grad=True, match_message=True)


def test_setitem_on_leaf_no_grad_ok():
    def fn(lib, x):
        with lib.no_grad():
            x[0] = 1.0
            x[[1, 2], 0] = 2.0
        return x * 1

    check(fn, [rand(3, 4, dtype="float64")])


# ------------------------------------------------------------------------------ hypothesis


@st.composite
def _basic_index(draw, shape):
    """A random basic index for ``shape``: ints, slices (positive steps), None, one Ellipsis."""
    items = []
    dims = list(shape)
    used_ellipsis = False
    while dims and (used_ellipsis or draw(st.booleans())):
        # (after an Ellipsis the index must consume the remaining dims exactly)
        kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis"]))
        if kind == "none":
            items.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            items.append(Ellipsis)
            keep = draw(st.integers(0, len(dims)))
            dims = dims[len(dims) - keep :]
        elif kind == "int" and dims[0] > 0:
            items.append(draw(st.integers(-dims[0], dims[0] - 1)))
            dims.pop(0)
        else:
            n = dims.pop(0)
            start = draw(st.none() | st.integers(-n - 2, n + 2))
            stop = draw(st.none() | st.integers(-n - 2, n + 2))
            step = draw(st.none() | st.integers(1, 3))
            items.append(slice(start, stop, step))
    if draw(st.booleans()) and len(items) == 1:
        return items[0]
    return tuple(items)


_shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)


def _past_the_end(t) -> bool:
    # torch lets an empty view start beyond its storage; NumPy cannot point there, so ember
    # clamps such an offset to the end of the storage
    return t.numel() == 0 and t.storage_offset() > t.untyped_storage().nbytes() // t.itemsize


def test_past_the_end_offset_is_clamped():
    x = ember.zeros(1, 1)
    y = x[1:, 1:]
    assert y.shape == (0, 0) and y.storage_offset() == 1  # torch: 2 (storage holds 1)
    assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


@settings(max_examples=80, deadline=None)
@given(shape=_shapes, data=st.data())
def test_basic_index_hypothesis(shape, data):
    index = data.draw(_basic_index(shape))
    assume(not _past_the_end(torch.zeros(shape)[index]))
    check_view(lambda lib, x: x[index], shape)


@settings(max_examples=80, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4), data=st.data())
def test_advanced_index_hypothesis(shape, data):
    nd = len(shape)
    permute = data.draw(st.permutations(range(nd)))
    pshape = tuple(shape[p] for p in permute)  # indices are drawn for the permuted view
    items = []
    d = 0
    n_adv = 0
    while d < nd:
        kind = data.draw(st.sampled_from(["int", "slice", "list", "mask", "none", "stop"]))
        if kind == "stop":
            break
        if kind == "none":
            items.append(None)
            continue
        n = pshape[d]
        if kind == "int":
            items.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            items.append(slice(data.draw(st.integers(0, n)), None, data.draw(st.integers(1, 2))))
        elif kind == "list":
            picks = data.draw(st.lists(st.integers(-n, n - 1), min_size=2, max_size=2))
            items.append(np.array(picks))
            n_adv += 1
        else:
            k = data.draw(st.integers(1, min(2, nd - d)))
            mshape = pshape[d : d + k]
            size = int(np.prod(mshape))
            if size < 2:
                continue
            # every mask selects 2 elements so that all advanced indices broadcast
            flat = np.zeros(size, bool)
            flat[data.draw(st.permutations(range(size)))[:2]] = True
            items.append(flat.reshape(mshape))
            d += k
            n_adv += 1
            continue
        d += 1
    if not n_adv:
        items.append([0] if d < nd else None)
    index = tuple(items)
    assume(not _past_the_end(torch.zeros(shape).permute(permute)[index]))

    def fn(lib, x):
        x = x.permute(permute)
        idx = tuple(_idx(lib, i) if isinstance(i, np.ndarray) else i for i in index)
        return x[idx]

    check(fn, [rand(*shape, dtype="float64")], view=True)


@st.composite
def _value_shape(draw, target):
    """A shape that broadcasts to ``target`` (maybe with extra leading 1s, which torch drops)."""
    k = draw(st.integers(0, len(target)))
    dims = [draw(st.sampled_from([1, n])) for n in target[len(target) - k :]]
    return (1,) * draw(st.integers(0, 1)) + tuple(dims)


@settings(max_examples=60, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), data=st.data())
def test_setitem_basic_hypothesis(shape, data):
    index = data.draw(_basic_index(shape))
    probe = torch.zeros(shape, requires_grad=True) * 1
    vshape = data.draw(_value_shape(tuple(probe[index].shape)))
    probe[index] = torch.zeros(vshape)
    # writes into the whole tensor (no view) hit two known naming/None-gradient gaps (xfailed
    # above); here every write goes through a view
    assume(type(probe.grad_fn).__name__ == "CopySlices")

    def fn(lib, x, v):
        y = x * 1
        y[index] = v
        return y

    check(fn, [rand(*shape, dtype="float64"), rand(*vshape, dtype="float64")])


@settings(max_examples=60, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), data=st.data())
def test_setitem_advanced_hypothesis(shape, data):
    d = data.draw(st.integers(0, len(shape) - 1))
    picks = np.array(
        data.draw(st.lists(st.integers(-shape[d], shape[d] - 1), min_size=1, max_size=3))
    )
    index = (slice(None),) * d + (picks,)
    target = torch.zeros(shape)[
        tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in index)
    ].shape
    vshape = data.draw(_value_shape(tuple(target)))

    def fn(lib, x, v):
        y = x * 1
        y[tuple(_idx(lib, i) if isinstance(i, np.ndarray) else i for i in index)] = v
        return y

    check(fn, [rand(*shape, dtype="float64"), rand(*vshape, dtype="float64")])


def test_assert_same_is_strict_for_index_layout():
    # the layout of an advanced-indexing result follows torch's TensorIterator
    x = rand(3, 4, 5, dtype="float64")
    t = torch.from_numpy(x).permute(2, 0, 1)[:, [0, 1]]
    e = ember.from_numpy(x.copy()).permute(2, 0, 1)[:, [0, 1]]
    assert e.stride() == t.stride()
    assert_same(e, t)


def test_setitem_scalar_into_bfloat16():
    check(lambda lib, x: x.__setitem__(1, 5.0) or x, [rand(3, dtype="bfloat16")], grad=False)
