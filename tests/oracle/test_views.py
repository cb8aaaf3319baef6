"""Oracle tests: view ops, reshape/flatten, cat/stack, and how views alias their base.

Every view op is checked for values, strides (all dims, size-1 ones included),
storage offset, ``_is_view``, ``_base`` identity, storage sharing, the shared version counter,
grad_fn names and gradients under a random upstream gradient; then a write through the view must
show in the base and a write to the base in the view.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.oracle.helper import _flat, _to_lib, assert_same, check, check_raises, rand, torch

pytestmark = pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")

# ------------------------------------------------------------------------------ the view checker


def _tensors(out):
    return [o for o in _flat(out) if isinstance(o, (torch.Tensor, ember.Tensor))]


def check_aliasing(fn, a, *, write=True):
    """Check what makes ``fn(lib, x)`` a view of ``x`` (or not) exactly as in torch.

    Compares every stride (size-1 dims too; not of empty tensors), ``_is_view``, ``_base``
    identity, storage sharing and offset, the shared version counter; then (under ``no_grad``)
    changes each output in place and checks the base, and changes the base and checks each
    output.
    """
    tx, ex = _to_lib(torch, a, False), _to_lib(ember, a, False)
    touts, eouts = _tensors(fn(torch, tx)), _tensors(fn(ember, ex))
    assert len(touts) == len(eouts)
    for i, (t, e) in enumerate(zip(touts, eouts)):
        what = f"output {i}"
        assert tuple(e.shape) == tuple(t.shape), what
        if t.numel() and t._is_view():  # empties: ember reports NumPy's stride-0 empties
            assert e.stride() == t.stride(), f"{what}: strides {e.stride()} != {t.stride()}"
        elif t.numel():  # a copy's layout matters only where a dim has more than one element
            es, ts = e.stride(), t.stride()
            assert all(a == b for a, b, n in zip(es, ts, t.shape) if n > 1), f"{what}: strides"
        assert e.is_contiguous() == t.is_contiguous(), f"{what}: contiguity"
        assert e._is_view() == t._is_view(), f"{what}: _is_view {e._is_view()}"
        assert (e._base is ex) == (t._base is tx), f"{what}: _base identity"
        assert (e is ex) == (t is tx), f"{what}: identity with the input"
        shares_t = t.untyped_storage().data_ptr() == tx.untyped_storage().data_ptr()
        shares_e = e.untyped_storage().data_ptr() == ex.untyped_storage().data_ptr()
        assert shares_e == shares_t, f"{what}: storage sharing {shares_e} != {shares_t}"
        if shares_t:
            assert e.storage_offset() == t.storage_offset(), f"{what}: storage_offset"
        assert e._version == t._version, f"{what}: _version"
    if not write:
        return
    for t, e in zip(touts, eouts):
        if _self_overlaps(t):
            continue  # torch refuses, or adds once per alias: not a contract
        for lib, o in ((torch, t), (ember, e)):
            with lib.no_grad():
                _bump(lib, o)
        assert_same(ex, tx, what="base after writing through the view")
        for i, (t2, e2) in enumerate(zip(touts, eouts)):
            assert_same(e2, t2, what=f"output {i} after writing through a view")
            assert e2._version == t2._version, "version after writing through the view"
    for lib, x in ((torch, tx), (ember, ex)):
        with lib.no_grad():
            _bump(lib, x)
    for i, (t, e) in enumerate(zip(touts, eouts)):
        assert_same(e, t, what=f"output {i} after writing the base")
        assert e._version == t._version, f"output {i}: _version after writing the base"


def _self_overlaps(t) -> bool:
    """Return True if two elements of torch tensor ``t`` share memory."""
    if t.numel() <= 1:
        return False
    pos = np.zeros((), dtype=np.int64)
    for n, s in zip(t.shape, t.stride()):
        pos = pos[..., None] + np.arange(n) * s
    return np.unique(pos).size < t.numel()


def _bump(lib, t):
    """Change every element of ``t`` in place (any dtype)."""
    if t.dtype == lib.bool:
        t.copy_(~t)
    else:
        t.mul_(2).add_(1)


def check_view(fn, shape, *, dtype="float64", write=True, grad=True):
    """``check`` (values, grad_fn, gradients) plus ``check_aliasing`` for ``fn(lib, x)``."""
    a = rand(*shape, dtype=dtype)
    n_out = len(_tensors(fn(torch, _to_lib(torch, a, False))))
    check(fn, [a], view=n_out > 0, grad=grad)
    check_aliasing(fn, a, write=write)


# ------------------------------------------------------------------------------ the view ops

S3 = [(2, 3, 4), (2, 1, 4), (0, 3, 4), (2, 0, 4), (1, 1, 1)]
S2 = [(3, 4), (1, 4), (4, 1), (0, 3), (3, 0), (1, 1)]
S1 = [(5,), (1,), (0,)]
S0 = [()]

VIEWS = {
    # view / reshape / flatten
    "view": (lambda lib, x: x.view(x.shape[0], int(np.prod(x.shape[1:]))), S3 + S2),
    "view_infer": (lambda lib, x: x.view(-1, x.shape[-1]), [(2, 3, 4), (0, 3, 4), (2, 0, 4)]),
    "view_flat": (lambda lib, x: x.view(-1), S3 + S2 + S1 + S0),
    "view_tuple": (lambda lib, x: x.view((1,) + tuple(x.shape) + (1,)), S3 + S2 + S1 + S0),
    "view_size": (lambda lib, x: x.view(x.size()), S3 + S0),
    "view_0d": (lambda lib, x: x.view(()), [(1,), (1, 1)] + S0),
    "view_t": (lambda lib, x: x.t().view(x.shape[1], 1, x.shape[0]), S2),
    "view_as": (lambda lib, x: x.view_as(lib.zeros(x.numel())), S3 + S0),
    "reshape": (lambda lib, x: x.reshape(-1, x.shape[-1]), [(2, 3, 4), (2, 1, 4), (3, 4)]),
    "reshape_copy": (lambda lib, x: x.transpose(0, -1).reshape(-1), S3 + S2),
    "reshape_0d": (lambda lib, x: x.reshape(()), [(1,), (1, 1)] + S0),
    "reshape_fn": (lambda lib, x: lib.reshape(x, (-1,)), S3 + S0),
    "reshape_as": (lambda lib, x: x.reshape_as(lib.zeros(x.numel(), 1)), S3 + S0),
    "flatten": (lambda lib, x: x.flatten(), S3 + S2 + S1 + S0),
    "flatten1": (lambda lib, x: lib.flatten(x, 1), S3 + S2),
    "flatten_neg": (lambda lib, x: x.flatten(-2, -1), S3 + S2),
    "flatten_same": (lambda lib, x: x.flatten(1, 1), S3 + S2),
    "flatten_t": (lambda lib, x: x.transpose(0, 1).flatten(), S3 + S2),
    "flatten_0d": (lambda lib, x: x.flatten(0, -1), S0),
    "unflatten": (lambda lib, x: x.unflatten(-1, (2, -1)), [(2, 3, 4), (3, 4), (4,), (0, 4)]),
    "unflatten_fn": (lambda lib, x: lib.unflatten(x, 0, (1, x.shape[0], 1)), S3 + S2 + S1),
    # permutations
    "permute": (lambda lib, x: x.permute(2, 0, 1), S3),
    "permute_neg": (lambda lib, x: lib.permute(x, (-1, -3, -2)), S3),
    "permute_0d": (lambda lib, x: x.permute(()), S0),
    "transpose": (lambda lib, x: x.transpose(0, -1), S3 + S2 + S1 + S0),
    "transpose_fn": (lambda lib, x: lib.transpose(x, 1, 2), S3),
    "swapaxes": (lambda lib, x: x.swapaxes(0, 1), S3 + S2),
    "swapdims": (lambda lib, x: lib.swapdims(x, -1, -2), S3 + S2),
    "t": (lambda lib, x: x.t(), S2 + S1 + S0),
    "t_fn": (lambda lib, x: lib.t(x), S2),
    "T": (lambda lib, x: x.T, S2 + S1),
    "mT": (lambda lib, x: x.mT, S3 + S2),
    "movedim": (lambda lib, x: x.movedim(0, -1), S3 + S2),
    "movedim_multi": (lambda lib, x: lib.movedim(x, (0, 1), (2, 0)), S3),
    "moveaxis": (lambda lib, x: lib.moveaxis(x, -1, 0), S3),
    # expand, squeeze, unsqueeze
    "expand": (lambda lib, x: x.expand(3, *x.shape), S3 + S2 + S1 + S0),
    "expand_one": (lambda lib, x: x.expand(1, *x.shape), S2 + S0),
    "expand_same": (lambda lib, x: x.expand(*x.shape), S2),
    "expand_minus1": (lambda lib, x: x.expand(2, -1, 5), [(3, 1), (1, 1), (0, 1)]),
    "expand_list": (lambda lib, x: x.expand([4, 5]), [(1, 5), (4, 1), (5,), (1,)] + S0),
    "expand_as": (lambda lib, x: x.expand_as(lib.zeros(2, 3, 4)), [(3, 1), (1, 4), (4,)] + S0),
    "squeeze": (lambda lib, x: x.squeeze(), S3 + S2 + S1 + S0),
    "squeeze_dim": (lambda lib, x: x.squeeze(1), S3 + S2),
    "squeeze_neg": (lambda lib, x: lib.squeeze(x, -1), S3 + S2 + S1),
    "squeeze_0d": (lambda lib, x: x.squeeze(0), S0),
    "squeeze_0d_neg": (lambda lib, x: x.squeeze(-1), S0),
    "squeeze_dims": (lambda lib, x: x.squeeze((0, -1)), S3 + S2),
    "squeeze_dims_0d": (lambda lib, x: x.squeeze((0,)), S0),
    "squeeze_dims_empty": (lambda lib, x: x.squeeze(()), S2),
    "unsqueeze": (lambda lib, x: x.unsqueeze(0), S3 + S2 + S1 + S0),
    "unsqueeze1": (lambda lib, x: x.unsqueeze(1), S3 + S2 + S1),
    "unsqueeze_last": (lambda lib, x: lib.unsqueeze(x, -1), S3 + S2 + S1 + S0),
    "unsqueeze_t": (lambda lib, x: x.transpose(0, -1).unsqueeze(1), S3 + S2),
    "unsqueeze_slice": (lambda lib, x: x[:, ::2].unsqueeze(-1), S3 + S2),
    # select, narrow, slicing
    "select": (lambda lib, x: x.select(1, -1), [(2, 3, 4), (2, 1, 4), (0, 3, 4), (3, 4)]),
    "select_fn": (lambda lib, x: lib.select(x, 0, 1), [(2, 3, 4), (3, 4), (5,)]),
    "narrow": (lambda lib, x: x.narrow(-1, 1, 2), [(2, 3, 4), (3, 4), (5,)]),
    "narrow_neg": (lambda lib, x: lib.narrow(x, 0, -2, 2), [(2, 3, 4), (3, 4), (5,)]),
    "narrow_empty": (lambda lib, x: x.narrow(0, 1, 0), [(2, 3, 4), (5,)]),
    "narrow_end": (lambda lib, x: x.narrow(0, x.shape[0], 0), [(2, 3, 4), (5,), (0,)]),
    "narrow_tensor": (lambda lib, x: x.narrow(0, lib.tensor(1), 1), [(2, 3, 4), (5,)]),
    # diagonal, unfold, as_strided
    "diagonal": (lambda lib, x: x.diagonal(), S3 + S2),
    "diagonal_off": (lambda lib, x: lib.diagonal(x, 1), S3 + S2),
    "diagonal_neg": (lambda lib, x: x.diagonal(-1), S3 + S2),
    "diagonal_far": (lambda lib, x: x.diagonal(5), S3 + S2),
    "diagonal_far_neg": (lambda lib, x: x.diagonal(-7), S2),
    "diagonal_dims": (lambda lib, x: x.diagonal(1, 2, 0), S3),
    "diagonal_negdims": (lambda lib, x: x.diagonal(-1, -1, -2), S3 + S2),
    "diagonal_kw": (lambda lib, x: lib.diagonal(x, offset=0, dim1=-1, dim2=1), S3),
    "unfold": (lambda lib, x: x.unfold(-1, 2, 1), [(2, 3, 4), (3, 4), (5,), (0, 4)]),
    "unfold_step": (lambda lib, x: x.unfold(0, 2, 3), [(8, 3), (7,), (2,)]),
    "unfold_size1": (lambda lib, x: x.unfold(1, 1, 2), [(2, 3, 4), (2, 1, 4), (3, 4), (4, 1)]),
    "unfold_0d": (lambda lib, x: x.unfold(0, 1, 1), S0),
    "unfold_0d_size0": (lambda lib, x: x.unfold(0, 0, 1), S0),
    "unfold_size0": (lambda lib, x: x.unfold(0, 0, 2), [(4, 3), (3,)]),
    "as_strided": (lambda lib, x: x.as_strided((2, 2), (1, 2), 1), [(2, 3), (6,)]),
    "as_strided_fn": (lambda lib, x: lib.as_strided(x, (3,), (2,)), [(2, 3), (6,)]),
    "as_strided_overlap": (lambda lib, x: x.as_strided((3, 2), (1, 1)), [(2, 3), (4,)]),
    "as_strided_view": (lambda lib, x: x[1:].as_strided((2,), (2,)), [(4,), (3, 2)]),
    "as_strided_view_off": (lambda lib, x: x[1:].as_strided((2,), (1,), 0), [(4,), (3, 2)]),
    "as_strided_0d": (lambda lib, x: x.as_strided((), (), 2), [(4,)]),
    "as_strided_empty": (lambda lib, x: x.as_strided((0, 3), (3, 1)), [(4,)]),
    # aliases
    "detach": (lambda lib, x: x.detach(), S3 + S0),
    "contiguous": (lambda lib, x: x.contiguous(), S3 + S0),
    "contiguous_t": (lambda lib, x: x.transpose(0, 1).contiguous(), S3 + S2),
    "contiguous_sl": (lambda lib, x: x[:, 1:].contiguous(), S3 + S2),
    # multi-output views
    "unbind": (lambda lib, x: x.unbind(), S3 + S2 + S1),
    "unbind_dim": (lambda lib, x: lib.unbind(x, -1), S3 + S2),
    "split": (lambda lib, x: x.split(2), [(5, 3), (4,), (1, 2), (0, 3)]),
    "split_dim": (lambda lib, x: lib.split(x, 3, -1), [(2, 3, 4), (3, 7), (0, 5)]),
    "split_big": (lambda lib, x: x.split(10), [(5, 3), (0,)]),
    "split_list": (lambda lib, x: x.split([1, 0, 2], 1), [(2, 3, 4), (4, 3)]),
    "split_list_fn": (lambda lib, x: lib.split(x, [2, 3]), [(5, 3), (5,)]),
    "split_with_sizes": (lambda lib, x: x.split_with_sizes([3, 2]), [(5, 3), (5,)]),
    "chunk": (lambda lib, x: x.chunk(3), [(5, 3), (6,), (2, 3), (1,), (0, 3)]),
    "chunk_dim": (lambda lib, x: lib.chunk(x, 2, -1), [(2, 3, 4), (3, 5), (3, 0)]),
    "chunk_many": (lambda lib, x: x.chunk(4, 0), [(6,), (5,), (11, 2)]),
    "tensor_split": (lambda lib, x: x.tensor_split(3), [(7,), (2, 3)]),
    "hsplit": (lambda lib, x: lib.hsplit(x, 2), [(4,), (3, 4)]),
    "vsplit": (lambda lib, x: lib.vsplit(x, [1, 3]), [(4, 3)]),
}

_VIEW_CASES = [(n, s) for n, (_, shapes) in VIEWS.items() for s in shapes]
_OPTIONAL = {"tensor_split", "hsplit", "vsplit", "split_with_sizes"}


@pytest.mark.parametrize("name,shape", _VIEW_CASES, ids=[f"{n}-{s}" for n, s in _VIEW_CASES])
def test_view_op(name, shape):
    if name in _OPTIONAL and not hasattr(ember.Tensor, name.split("_")[0]):
        pytest.skip(f"{name} not implemented")
    fn = VIEWS[name][0]
    check_view(fn, shape)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16", "bfloat16"])
def test_views_other_dtypes(dtype):
    for name in ("view", "permute", "expand", "diagonal", "unfold", "split", "select"):
        check_view(VIEWS[name][0], (2, 3, 4), dtype=dtype, grad=dtype.startswith(("float", "bf")))


def test_T_warns_like_torch():
    with pytest.warns(UserWarning, match="The use of `x.T` on tensors of dimension other than 2"):
        assert ember.zeros(2, 3, 4).T.shape == (4, 3, 2)
    with pytest.warns(UserWarning, match="Tensor.T is deprecated on 0-D tensors"):
        assert ember.zeros(()).T.shape == ()


def test_view_chains():
    check_view(lambda lib, x: x.t()[1:].unsqueeze(0).expand(2, -1, -1).select(2, 0), (3, 4))
    check_view(lambda lib, x: x.permute(1, 0, 2).diagonal(0, 0, 2).narrow(0, 1, 1), (2, 3, 4))
    check_view(lambda lib, x: x.view(4, 6).unfold(1, 2, 2).transpose(0, 2)[1], (2, 3, 4))
    check_view(lambda lib, x: x[1].split(2, 1)[1].unflatten(0, (1, 3)).squeeze(0), (2, 3, 4))
    check_view(lambda lib, x: x.as_strided((2, 2), (4, 1), 1)[:, 1:].view(2), (3, 4))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on reinterpreted garbage
def test_view_dtype():
    check_view(lambda lib, x: x.view(lib.float64), (2, 3), dtype="int64", grad=False)
    check_view(lambda lib, x: x.view(lib.float32), (4,), dtype="int32", grad=False)
    check_view(lambda lib, x: x.view(lib.int64), (2, 3), grad=False)
    check_view(lambda lib, x: x.view(lib.bfloat16), (2, 3), dtype="float16", grad=False)
    # a view of another itemsize rescales the last dim
    check_view(lambda lib, x: x.view(lib.int32), (2, 3), grad=False)
    check_view(lambda lib, x: x.view(lib.uint8), (2, 3), dtype="float32", grad=False)
    check_view(lambda lib, x: x.view(lib.float64), (3, 4), dtype="int32", grad=False)
    check_view(lambda lib, x: x[:, :2].view(lib.float64), (3, 4), dtype="int32", grad=False)
    check_raises(
        lambda lib, x: x.as_strided((2, 2), (3, 1)).view(lib.float32), [rand(3, 5, dtype="int16")]
    )
    check_view(lambda lib, x: x.view(lib.int16)[:, 1:].view(lib.float16), (2, 3), grad=False)
    check_raises(lambda lib, x: x.t().view(lib.int32), [rand(3, 3, dtype="float64")])
    check_raises(lambda lib, x: x.view(lib.int32), [rand(dtype="float64")])
    check_raises(lambda lib, x: x.view(lib.float64), [rand(3, dtype="int32")])
    check_raises(lambda lib, x: x[1:].view(lib.float64), [rand(4, dtype="int32")])


def test_view_dtype_messages():
    for fn, a in [
        (lambda lib, x: x.t().view(lib.int32), rand(3, 3, dtype="float64")),
        (lambda lib, x: x.view(lib.int32), rand(dtype="float64")),
        (lambda lib, x: x.view(lib.float64), rand(3, dtype="int32")),
        (lambda lib, x: x[1:].view(lib.float64), rand(4, dtype="int32")),
    ]:
        check_raises(fn, [a], match_message=True)


def test_view_dtype_not_differentiable():
    check(lambda lib, x: x.view(lib.float64), [rand(2, 3, dtype="float64")], view=True)
    check(lambda lib, x: x.view(lib.int64), [rand(2, 3, dtype="float64")], view=True)


# ------------------------------------------------------------------------------ errors

ERRORS = {
    "view_incompatible": (lambda lib, x: x.t().view(-1), (3, 4)),
    "view_incompatible_slice": (lambda lib, x: x[:, :2].view(-1), (3, 4)),
    "view_numel": (lambda lib, x: x.view(5), (2, 3)),
    "view_two_infer": (lambda lib, x: x.view(-1, -1), (2, 3)),
    "view_bad_infer": (lambda lib, x: x.view(-1, 4), (2, 3)),
    "view_neg": (lambda lib, x: x.view(-2, 3), (2, 3)),
    "view_infer_empty": (lambda lib, x: x.view(0, -1), (0, 3)),
    "view_float": (lambda lib, x: x.view(2.0, 3), (2, 3)),
    "reshape_numel": (lambda lib, x: x.reshape(4, 2), (2, 3)),
    "flatten_order": (lambda lib, x: x.flatten(1, 0), (2, 3)),
    "flatten_dim": (lambda lib, x: x.flatten(0, 3), (2, 3)),
    "unflatten_bad": (lambda lib, x: x.unflatten(1, (2, 2)), (2, 3)),
    "unflatten_empty": (lambda lib, x: x.unflatten(1, ()), (2, 3)),
    "unflatten_0d": (lambda lib, x: x.unflatten(0, (1,)), ()),
    "permute_len": (lambda lib, x: x.permute(0, 1), (2, 3, 4)),
    "permute_dup": (lambda lib, x: x.permute(0, 0, 1), (2, 3, 4)),
    "permute_range": (lambda lib, x: x.permute(0, 1, 3), (2, 3, 4)),
    "transpose_range": (lambda lib, x: x.transpose(0, 2), (2, 3)),
    "t_3d": (lambda lib, x: x.t(), (2, 3, 4)),
    "mT_1d": (lambda lib, x: x.mT, (3,)),
    "movedim_len": (lambda lib, x: x.movedim((0, 1), (1,)), (2, 3)),
    "movedim_dup": (lambda lib, x: x.movedim((0, 0), (1, 0)), (2, 3)),
    "movedim_dup_dst": (lambda lib, x: x.movedim((0, 1), (1, 1)), (2, 3)),
    "expand_shrink": (lambda lib, x: x.expand(2), (2, 3)),
    "expand_mismatch": (lambda lib, x: x.expand(2, 4), (2, 3)),
    "expand_lead_neg": (lambda lib, x: x.expand(-1, 2, 3), (2, 3)),
    "squeeze_range": (lambda lib, x: x.squeeze(2), (2, 3)),
    "squeeze_dims_dup": (lambda lib, x: x.squeeze((0, 0)), (1, 3)),
    "unsqueeze_range": (lambda lib, x: x.unsqueeze(3), (2, 3)),
    "unsqueeze_range_neg": (lambda lib, x: x.unsqueeze(-4), (2, 3)),
    "select_range": (lambda lib, x: x.select(1, 3), (2, 3)),
    "select_range_neg": (lambda lib, x: x.select(1, -4), (2, 3)),
    "select_0d": (lambda lib, x: x.select(0, 0), ()),
    "select_dim": (lambda lib, x: x.select(2, 0), (2, 3)),
    "narrow_len": (lambda lib, x: x.narrow(1, 1, 3), (2, 3)),
    "narrow_start": (lambda lib, x: x.narrow(1, 4, 0), (2, 3)),
    "narrow_neg_len": (lambda lib, x: x.narrow(1, 0, -1), (2, 3)),
    "narrow_0d": (lambda lib, x: x.narrow(0, 0, 1), ()),
    "diagonal_same": (lambda lib, x: x.diagonal(0, 1, 1), (2, 3)),
    "diagonal_same_neg": (lambda lib, x: x.diagonal(0, 1, -1), (2, 3)),
    "diagonal_1d": (lambda lib, x: x.diagonal(), (3,)),
    "unfold_big": (lambda lib, x: x.unfold(1, 4, 1), (2, 3)),
    "unfold_step0": (lambda lib, x: x.unfold(1, 2, 0), (2, 3)),
    "unfold_neg_size": (lambda lib, x: x.unfold(1, -1, 1), (2, 3)),
    "unfold_0d_big": (lambda lib, x: x.unfold(0, 2, 1), ()),
    "as_strided_oob": (lambda lib, x: x.as_strided((3, 3), (3, 1)), (2, 3)),
    "as_strided_offset_oob": (lambda lib, x: x.as_strided((2,), (1,), 5), (2, 3)),
    "as_strided_neg_stride": (lambda lib, x: x.as_strided((2,), (-1,), 2), (2, 3)),
    "as_strided_len": (lambda lib, x: x.as_strided((2, 2), (1,)), (2, 3)),
    "unbind_0d": (lambda lib, x: x.unbind(), ()),
    "unbind_range": (lambda lib, x: x.unbind(2), (2, 3)),
    "split_0d": (lambda lib, x: x.split(1), ()),
    "split_zero": (lambda lib, x: x.split(0), (2, 3)),
    "split_neg": (lambda lib, x: x.split(-1), (2, 3)),
    "split_sum": (lambda lib, x: x.split([1, 2]), (2, 3)),
    "split_list_neg": (lambda lib, x: x.split([3, -1]), (2, 3)),
    "chunk_0d": (lambda lib, x: x.chunk(1), ()),
    "chunk_zero": (lambda lib, x: x.chunk(0), (2, 3)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_view_errors(name):
    fn, shape = ERRORS[name]
    e, t = check_raises(fn, [rand(*shape)])
    if isinstance(t, (RuntimeError, IndexError)):
        assert _first_line(e) == _first_line(t), f"{e} != {t}"


def _first_line(exc):
    # torch appends C++ context to some messages
    return str(exc).split("\nException raised from")[0].strip()


def test_view_error_message():
    e, t = check_raises(lambda lib, x: x.t().view(12), [rand(3, 4)], match_message=True)
    assert "Use .reshape(...) instead." in str(e)


# ------------------------------------------------------------------------------ grad_fn names


def test_reshape_view_or_copy():
    # a view when strides allow it (ViewBackward0), else clone + _unsafe_view
    for fn, shape in [
        (lambda lib, x: x.reshape(6), (2, 3)),
        (lambda lib, x: x.t().reshape(6), (2, 3)),
        (lambda lib, x: x[:, ::2].reshape(-1), (2, 4)),
        (lambda lib, x: x.t().flatten(), (2, 3)),
        (lambda lib, x: x.t().reshape(3, 1, 2), (2, 3)),
        (lambda lib, x: x.expand(2, 3).reshape(6), (3,)),
        (lambda lib, x: x.expand(2, 3).reshape(2, 1, 3), (3,)),
    ]:
        eo, to = check(fn, [rand(*shape, dtype="float64")], view=True)
        check_aliasing(fn, rand(*shape, dtype="float64"))
        assert eo.grad_fn.name() == to.grad_fn.name()
        nxt_e = eo.grad_fn.next_functions[0][0]
        nxt_t = to.grad_fn.next_functions[0][0]
        assert nxt_e.name() == nxt_t.name()


def test_flatten_same_dim_is_self():
    for lib in (torch, ember):
        x = lib.zeros(2, 3)
        assert x.flatten(1, 1) is x
        assert x.flatten(-1) is x.flatten(-1) or x.flatten(-1)._is_view()


# ------------------------------------------------------------------------------ cat, stack

CATS = {
    "cat0": (lambda lib, *xs: lib.cat(xs), [(2, 3), (1, 3), (0, 3)]),
    "cat1": (lambda lib, *xs: lib.cat(xs, 1), [(2, 3), (2, 1)]),
    "cat_neg": (lambda lib, *xs: lib.cat(xs, dim=-1), [(2, 3, 1), (2, 3, 2)]),
    "cat_list": (lambda lib, *xs: lib.cat(list(xs)), [(2,), (3,)]),
    "cat_single": (lambda lib, *xs: lib.cat(xs), [(2, 3)]),
    "cat_legacy_empty": (lambda lib, *xs: lib.cat(xs), [(2, 3), (0,)]),
    "concat": (lambda lib, *xs: lib.concat(xs, 1), [(2, 3), (2, 1)]),
    "concatenate": (lambda lib, *xs: lib.concatenate(xs, 0), [(2, 3), (1, 3)]),
    "stack": (lambda lib, *xs: lib.stack(xs), [(2, 3), (2, 3), (2, 3)]),
    "stack1": (lambda lib, *xs: lib.stack(xs, 1), [(2, 3), (2, 3)]),
    "stack_last": (lambda lib, *xs: lib.stack(xs, -1), [(2, 3), (2, 3)]),
    "stack_0d": (lambda lib, *xs: lib.stack(xs), [(), ()]),
    "stack_empty": (lambda lib, *xs: lib.stack(xs, 1), [(0, 3), (0, 3)]),
    "cat_views": (lambda lib, *xs: lib.cat([xs[0].t(), xs[1][:, ::2]]), [(2, 3), (3, 4)]),
}


@pytest.mark.parametrize("name", list(CATS))
def test_cat_stack(name):
    fn, shapes = CATS[name]
    check(fn, [rand(*s, dtype="float64") for s in shapes])


def test_cat_mixed_dtypes_and_grad():
    check(lambda lib, x, y: lib.cat([x, y]), [rand(2, 3), rand(1, 3, dtype="float64")])
    check(lambda lib, x, y: lib.cat([x, y]), [rand(2, 3, dtype="int64"), rand(1, 3)])
    check(lambda lib, x, y: lib.stack([x, y]), [rand(3, dtype="int32"), rand(3, dtype="bool")])
    check(lambda lib, x, y: lib.cat([x, y.detach()]), [rand(2, 3), rand(1, 3)])
    check(lambda lib, x, y: lib.stack([x.detach(), y], 1), [rand(2, 3), rand(2, 3)])


def test_cat_stack_errors():
    for fn, shapes in [
        (lambda lib, *xs: lib.cat(xs), [(2, 3), (2, 4)]),
        (lambda lib, *xs: lib.cat(xs), [(2, 3), (3,)]),
        (lambda lib, *xs: lib.cat(xs), [(), ()]),
        (lambda lib, *xs: lib.cat(xs, 2), [(2, 3), (2, 3)]),
        (lambda lib, *xs: lib.cat([]), []),
        (lambda lib, *xs: lib.stack(xs), [(2, 3), (3, 2)]),
        (lambda lib, *xs: lib.stack(xs, 3), [(2, 3), (2, 3)]),
        (lambda lib, *xs: lib.stack([]), []),
    ]:
        e, t = check_raises(fn, [rand(*s) for s in shapes])
        if isinstance(t, (RuntimeError, IndexError)):
            assert _first_line(e) == _first_line(t), f"{e} != {t}"


def test_cat_out_of_views_is_a_copy():
    check_aliasing(lambda lib, x: lib.cat([x, x]), rand(2, 3))
    check_aliasing(lambda lib, x: lib.stack([x[0], x[1]]), rand(2, 3))


# ------------------------------------------------------------------------------ multi-output views


def test_multi_output_views_refuse_inplace():
    for op in ("unbind", "split", "chunk"):
        args = {"unbind": (), "split": (1,), "chunk": (2,)}[op]

        def fn(lib, x, op=op, args=args):
            parts = getattr(x * 1, op)(*args)
            return parts[0].mul_(2)

        check_raises(fn, [rand(2, 3)], grad=True)


def test_multi_output_views_refuse_inplace_message():
    check_raises(
        lambda lib, x: (x * 1).unbind()[1].mul_(2), [rand(2, 3)], grad=True, match_message=True
    )


@pytest.mark.parametrize("op", ["split_slice", "unbind_view", "chunk_t"])
def test_views_of_multi_output_views_refuse_inplace(op):
    fn = {
        "split_slice": lambda lib, x: (x * 1).split(2)[0][1:].mul_(2),
        "unbind_view": lambda lib, x: (x * 1).unbind()[0].view(1, 3).mul_(2),
        "chunk_t": lambda lib, x: (x * 1).chunk(2)[1].t().mul_(2),
    }[op]
    e, t = check_raises(fn, [rand(2, 3)], grad=True)
    assert "function that returns multiple views" in str(e)


def test_inplace_on_views_of_multi_output_views_no_grad():
    def fn(lib, x):
        y = x.clone()
        with lib.no_grad():
            y.split(1)[0][0, 1:].mul_(2)
            y.unbind(1)[2].add_(1)
        return y

    check(fn, [rand(2, 3, dtype="float64")])


def test_multi_output_views_grad_of_one():
    check(lambda lib, x: x.unbind(1)[1], [rand(2, 3, dtype="float64")])
    check(lambda lib, x: x.split(2)[-1], [rand(5, 3, dtype="float64")])
    check(lambda lib, x: x.chunk(2, 1)[0] * 2, [rand(5, 3, dtype="float64")])
    check(lambda lib, x: x.split([1, 2], 1)[1].sum(), [rand(5, 3, dtype="float64")])


# ------------------------------------------------------------------------------ in-place on views


INPLACE_VIEWS = {
    "select_mul": lambda lib, x: (lambda y: (y[:, 0].mul_(2), y)[1])(x.clone()),
    "t_add": lambda lib, x: (lambda y: (y.t().add_(1), y)[1])(x.clone()),
    "diag_mul": lambda lib, x: (lambda y: (y.diagonal().mul_(y[0, 1].clone()), y)[1])(x * 1),
    "view_chain": lambda lib, x: (lambda y: (y.view(-1)[1:3].mul_(3), y)[1])(x.clone()),
    "expand_read": lambda lib, x: (lambda y: (y.mul_(y[0:1].expand(4, 4).clone()), y)[1])(x * 1),
    "unfold_sel": lambda lib, x: (lambda y: (y.unfold(1, 2, 2)[:, 0].exp_(), y)[1])(x * 1),
    "unsqueeze_permute": lambda lib, x: (
        lambda y: (y.unsqueeze(0).permute(2, 0, 1).sigmoid_(), y)[1]
    )(x * 1),
    "narrow_zero": lambda lib, x: (lambda y: (y.narrow(0, 1, 2).zero_(), y)[1])(x * 1),
    "as_strided_mul": lambda lib, x: (lambda y: (y.as_strided((2, 2), (4, 1), 1).mul_(2), y)[1])(
        x * 1
    ),
    "view_of_view_out": lambda lib, x: (lambda y: (y[1].mul_(2), y[1:])[1])(x.clone()),
    "squeeze_fill": lambda lib, x: (lambda y: (y[:1].squeeze(0).fill_(1.5), y)[1])(x * 1),
    "as_strided_view_out": lambda lib, x: (
        lambda y: (lambda v: (v.mul_(2), v * 3)[1])(y.as_strided((2, 2), (1, 4), 2))
    )(x * 1),
    "movedim_copy": lambda lib, x: (
        lambda y: (y.movedim(0, 1)[0].copy_(y[1].detach() * 0 + 5), y)[1]
    )(x * 1),
}


@pytest.mark.parametrize("name", list(INPLACE_VIEWS))
def test_inplace_on_views(name):
    check(INPLACE_VIEWS[name], [rand(4, 4, dtype="float64")])


def test_inplace_on_view_grad_fn_and_versions():
    def fn(lib, x):
        y = x * 1
        v = y[1:]
        v.mul_(2)
        assert v._version == y._version == 1
        return y, v

    eo, to = check(fn, [rand(3, 2, dtype="float64")])
    assert eo[0].grad_fn.name() == to[0].grad_fn.name() == "torch::autograd::CopySlices"
    assert eo[1].grad_fn.name() == to[1].grad_fn.name()


def test_inplace_on_view_of_leaf_raises():
    for fn in [
        lambda lib, x: x[0].mul_(2),
        lambda lib, x: x.t().add_(1),
        lambda lib, x: x.view(-1).zero_(),
        lambda lib, x: x.diagonal().fill_(0),
    ]:
        check_raises(fn, [rand(2, 2)], grad=True, match_message=True)


def test_inplace_on_view_of_leaf_no_grad_ok():
    def fn(lib, x):
        with lib.no_grad():
            x[0].mul_(2)
            x.t()[1].add_(1)
        return x * 1

    check(fn, [rand(2, 2, dtype="float64")], version=True)


def test_inplace_on_expanded_raises():
    check_raises(lambda lib, x: x.expand(3, 2).add_(1), [rand(2)])
    check_raises(lambda lib, x: x.expand(3, 2).mul_(2), [rand(1, 2)])


def test_inplace_on_expanded_row_writes_base():
    # a row of an expanded tensor does not overlap itself: torch writes it through
    check_aliasing(lambda lib, x: x.expand(3, 2)[1], rand(2))


def test_inplace_detach_shares_version():
    check_aliasing(lambda lib, x: x.detach(), rand(3, 2))
    check_aliasing(lambda lib, x: x.detach()[1:], rand(3, 2))
    check_aliasing(lambda lib, x: x.data, rand(3, 2))


def test_saved_view_modified_raises():
    def fn(lib, x):
        y = x * 1
        v = y[0]
        z = (v * v).sum()
        y.mul_(2)  # bumps v's version: the saved v is stale
        return z

    def run(lib, x):
        z = fn(lib, x)
        z.backward()

    check_raises(run, [rand(2, 3)], grad=True)


# ------------------------------------------------------------------------------ hypothesis

_small_shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


@settings(max_examples=60, deadline=None)
@given(shape=_small_shapes, data=st.data())
def test_permute_transpose_hypothesis(shape, data):
    nd = len(shape)
    perm = data.draw(st.permutations(range(nd)))
    perm = [p - nd if data.draw(st.booleans()) else p for p in perm]
    check_view(lambda lib, x: x.permute(tuple(perm)), shape, write=False)
    if nd:
        d0, d1 = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
        check_view(lambda lib, x: x.transpose(d0, d1), shape, write=False)


@settings(max_examples=60, deadline=None)
@given(shape=_small_shapes, data=st.data())
def test_unsqueeze_squeeze_expand_hypothesis(shape, data):
    nd = len(shape)
    d = data.draw(st.integers(-nd - 1, nd))
    check_view(lambda lib, x: x.unsqueeze(d), shape)
    if nd:
        s = data.draw(st.integers(-nd, nd - 1))
        check_view(lambda lib, x: x.squeeze(s), shape)
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(
        data.draw(st.sampled_from([-1, 3])) if n == 1 else data.draw(st.sampled_from([-1, n]))
        for n in shape
    )
    check_view(lambda lib, x: x.expand(target), shape)


@settings(max_examples=60, deadline=None)
@given(shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4), data=st.data())
def test_diagonal_hypothesis(shape, data):
    nd = len(shape)
    d1 = data.draw(st.integers(-nd, nd - 1))
    d2 = data.draw(st.integers(-nd, nd - 1).filter(lambda d: d % nd != d1 % nd))
    off = data.draw(st.integers(-5, 5))
    check_view(lambda lib, x: x.diagonal(off, d1, d2), shape)


@settings(max_examples=60, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6), data=st.data())
def test_unfold_split_narrow_hypothesis(shape, data):
    nd = len(shape)
    d = data.draw(st.integers(-nd, nd - 1))
    n = shape[d]
    size = data.draw(st.integers(0, n))
    step = data.draw(st.integers(1, 4))
    check_view(lambda lib, x: x.unfold(d, size, step), shape)
    sz = data.draw(st.integers(1, max(n, 1) + 1))
    check_view(lambda lib, x: x.split(sz, d), shape)
    start = data.draw(st.integers(-n, n))
    length = data.draw(st.integers(0, n - (start % n if n and start < n else n)))
    check_view(lambda lib, x: x.narrow(d, start, length), shape)


@settings(max_examples=60, deadline=None)
@given(shape=_small_shapes, data=st.data())
def test_view_reshape_hypothesis(shape, data):
    numel = int(np.prod(shape))
    # a random factorisation of numel, possibly with a -1
    dims = []
    rest = numel
    for _ in range(data.draw(st.integers(0, 3))):
        f = data.draw(st.sampled_from([d for d in range(1, 5) if rest % d == 0] or [1]))
        dims.append(f)
        rest //= f if f else 1
    new = tuple(dims) + ((rest,) if numel else (0,))
    if data.draw(st.booleans()) and numel:
        k = data.draw(st.integers(0, len(new) - 1))
        new = new[:k] + (-1,) + new[k + 1 :]
    transposed = data.draw(st.booleans()) and len(shape) >= 2

    def fn(lib, x, new=new):
        return (x.transpose(0, 1) if transposed else x).reshape(new)

    check_view(fn, shape)
    if not transposed:
        check_view(lambda lib, x: x.view(new), shape)
