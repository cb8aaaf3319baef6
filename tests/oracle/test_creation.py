"""Oracle tests: tensor creation from data, filled, *_like, new_*, ranges, random."""

import warnings

import numpy as np
import pytest

import ember
from tests.oracle.helper import assert_same, torch


def _run(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(lib)


def same(fn, *, values=True, strides=True, atol=None, rtol=None):
    """Run ``fn(lib)`` with both libraries: same result (or the same exception class)."""
    try:
        t = _run(torch, fn)
    except Exception as texc:  # noqa: BLE001 - compared by class
        with pytest.raises(Exception) as eexc:
            _run(ember, fn)
        if "not compiled with CUDA" in str(texc):  # ember: a RuntimeError naming the fix
            assert isinstance(eexc.value, RuntimeError) and "CUDA" in str(eexc.value)
            return None, texc
        assert isinstance(eexc.value, type(texc)), (
            f"ember raised {type(eexc.value).__name__}({eexc.value}), "
            f"torch {type(texc).__name__}({texc})"
        )
        return None, texc
    e = _run(ember, fn)
    if not isinstance(t, torch.Tensor):
        assert e == t
        return e, t
    if values:
        assert_same(e, t, strides=strides, atol=atol, rtol=rtol)
    else:
        assert e.dtype.name == str(t.dtype).replace("torch.", "")
        assert tuple(e.shape) == tuple(t.shape)
        if strides and t.numel():
            assert e.stride() == t.stride()
    assert e.requires_grad == t.requires_grad
    assert (e.grad_fn is None) == (t.grad_fn is None)
    if t.grad_fn is not None:
        assert e.grad_fn.name() == t.grad_fn.name()
    return e, t


NAMES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]

# ------------------------------------------------------------------------------ tensor()

DATA = {
    "int": lambda lib: lib.tensor(3),
    "float": lambda lib: lib.tensor(3.5),
    "bool": lambda lib: lib.tensor(True),
    "complex": lambda lib: lib.tensor(1 + 2j),
    "mixed": lambda lib: lib.tensor([1, 2.5, True]),
    "mixed_complex": lambda lib: lib.tensor([1, 2j]),
    "bool_int": lambda lib: lib.tensor([True, 2]),
    "bool_float": lambda lib: lib.tensor([True, 1.5]),
    "nested": lambda lib: lib.tensor([[1, 2], [3, 4]]),
    "deep": lambda lib: lib.tensor([[[[1.5]]]]),
    "tuple": lambda lib: lib.tensor(((1, 2), (3, 4.0))),
    "empty": lambda lib: lib.tensor([]),
    "empty2": lambda lib: lib.tensor([[]]),
    "empty3": lambda lib: lib.tensor([[], []]),
    "empty_ragged": lambda lib: lib.tensor([[], [1]]),
    "empty_int": lambda lib: lib.tensor([[]], dtype=lib.int32),
    "range": lambda lib: lib.tensor(range(4)),
    "bytearray": lambda lib: lib.tensor(bytearray(b"abc")),
    "Size": lambda lib: lib.tensor(lib.Size([2, 3])),
    "inf": lambda lib: lib.tensor([float("inf"), float("-inf"), float("nan")]),
    "big_float32": lambda lib: lib.tensor([1e40], dtype=lib.float32),
    "big_int_to_float": lambda lib: lib.tensor([2**64], dtype=lib.float64),
    "int64_max": lambda lib: lib.tensor([2**63 - 1, -(2**63)]),
    "int64_and_float": lambda lib: lib.tensor([2**63 - 1, 1.5]),
    "np_f32": lambda lib: lib.tensor(np.ones(3, np.float32)),
    "np_i16": lambda lib: lib.tensor(np.arange(3, dtype=np.int16)),
    "np_bool": lambda lib: lib.tensor(np.array([True, False])),
    "np_c64": lambda lib: lib.tensor(np.array([1j], np.complex64)),
    "np_0d": lambda lib: lib.tensor(np.array(5)),
    "np_noncontig": lambda lib: lib.tensor(np.arange(6).reshape(2, 3).T),
    "np_dtype_cast": lambda lib: lib.tensor(np.array([1.7, -2.7]), dtype=lib.int32),
    "np_wraps": lambda lib: lib.tensor(np.array([300, -1]), dtype=lib.uint8),
    "np_scalar_f32": lambda lib: lib.tensor(np.float32(1.5)),
    "np_scalar_f64": lambda lib: lib.tensor(np.float64(1.5)),
    "np_scalar_i8": lambda lib: lib.tensor(np.int8(3)),
    "np_scalar_bool": lambda lib: lib.tensor(np.bool_(True)),
    "np_scalar_c64": lambda lib: lib.tensor(np.complex64(1j)),
    "list_np_scalars": lambda lib: lib.tensor([np.float32(1), np.float32(2)]),
    "list_np_mixed": lambda lib: lib.tensor([np.int8(1), 2.5]),
    "list_np_f16_int": lambda lib: lib.tensor([1, np.float16(2)]),
    "list_np_i8_f16": lambda lib: lib.tensor([np.int8(3), np.float16(2)]),
    "list_np_arrays": lambda lib: lib.tensor([np.ones(2, np.int32), np.zeros(2, np.int32)]),
    "list_np_and_list": lambda lib: lib.tensor([np.ones(2), [1, 2]]),
    "list_0d": lambda lib: lib.tensor([lib.tensor(1), lib.tensor(2)]),
    "list_0d_float": lambda lib: lib.tensor([lib.tensor(1.5), lib.tensor(2)]),
    "list_0d_f64": lambda lib: lib.tensor([lib.tensor(1.5, dtype=lib.float64), 2]),
    "list_0d_i8": lambda lib: lib.tensor(
        [lib.tensor(1, dtype=lib.int8), lib.tensor(2, dtype=lib.int8)]
    ),
    "list_0d_i8_py": lambda lib: lib.tensor([lib.tensor(1, dtype=lib.int8), 300]),
    "list_1el": lambda lib: lib.tensor([lib.ones(1), lib.ones(1, 1)]),
    "list_0d_grad": lambda lib: lib.tensor([lib.tensor(1.5, requires_grad=True), 2]),
    "nested_tensor": lambda lib: lib.tensor([[lib.tensor(1.0), 2], [3, 4]]),
    "from_tensor": lambda lib: lib.tensor(lib.ones(2, dtype=lib.int32)),
    "from_tensor_grad": lambda lib: lib.tensor(lib.ones(2, requires_grad=True)),
    "from_tensor_dtype": lambda lib: lib.tensor(lib.ones(2, dtype=lib.int32), dtype=lib.float64),
    "dtype_trunc": lambda lib: lib.tensor([1.7, -2.7], dtype=lib.int32),
    "dtype_bool": lambda lib: lib.tensor([0, 2, float("nan")], dtype=lib.bool),
    "dtype_complex": lambda lib: lib.tensor([1, 2], dtype=lib.complex64),
    "dtype_bf16": lambda lib: lib.tensor([1.5, 2.5], dtype=lib.bfloat16),
    "dtype_half": lambda lib: lib.tensor([1.5, 70000.0], dtype=lib.half),
    "dtype_uint8_wrap": lambda lib: lib.tensor([-1, -255, 255], dtype=lib.uint8),
    "dtype_uint8_float": lambda lib: lib.tensor([255.5], dtype=lib.uint8),
    "dtype_py_float": lambda lib: lib.tensor([1], dtype=float),
    "dtype_py_int": lambda lib: lib.tensor([1.5], dtype=int),
    "dtype_py_bool": lambda lib: lib.tensor([1.5], dtype=bool),
    "dtype_py_complex": lambda lib: lib.tensor([1.5], dtype=complex),
    "requires_grad": lambda lib: lib.tensor([1.0, 2.0], requires_grad=True),
    "requires_grad_int_dtype_float": lambda lib: lib.tensor(
        [1, 2], dtype=lib.float64, requires_grad=True
    ),
    "device_cpu": lambda lib: lib.tensor([1, 2], device="cpu"),
    "device_cpu0": lambda lib: lib.tensor([1, 2], device="cpu:0"),
    "device_obj": lambda lib: lib.tensor([1, 2], device=lib.device("cpu")),
}

DATA_ERRORS = {
    "ragged": lambda lib: lib.tensor([[1, 2], [3]]),
    "ragged_dtype": lambda lib: lib.tensor([[1, 2], [3]], dtype=lib.float32),
    "ragged_scalar": lambda lib: lib.tensor([[1, 2], 3]),
    "ragged_scalar_first": lambda lib: lib.tensor([1, [2, 3]]),
    "ragged_short": lambda lib: lib.tensor([[1], [2, 3]]),
    "ragged_deep": lambda lib: lib.tensor([[[1]], [2]]),
    "ragged_np": lambda lib: lib.tensor([np.ones(2), np.ones(3)]),
    "ragged_empty": lambda lib: lib.tensor([[1], []]),
    "str": lambda lib: lib.tensor("abc"),
    "str_dtype": lambda lib: lib.tensor("abc", dtype=lib.float32),
    "str_list": lambda lib: lib.tensor(["a"]),
    "bytes": lambda lib: lib.tensor(b"abc"),
    "none": lambda lib: lib.tensor(None),
    "none_list": lambda lib: lib.tensor([None]),
    "dict": lambda lib: lib.tensor({1: 2}),
    "object": lambda lib: lib.tensor(object()),
    "generator": lambda lib: lib.tensor(x for x in range(3)),
    "list_1d_tensors": lambda lib: lib.tensor([lib.ones(2), lib.zeros(2)]),
    "list_2d_tensors": lambda lib: lib.tensor([lib.ones(2, 2), lib.ones(2, 2)]),
    "list_empty_tensors": lambda lib: lib.tensor([lib.ones(0), lib.ones(0)]),
    "complex_to_float": lambda lib: lib.tensor([1j], dtype=lib.float32),
    "complex_to_int": lambda lib: lib.tensor([1j], dtype=lib.int64),
    "big_int": lambda lib: lib.tensor(2**63),
    "big_int_list": lambda lib: lib.tensor([2**64]),
    "overflow_uint8": lambda lib: lib.tensor(300, dtype=lib.uint8),
    "overflow_uint8_neg": lambda lib: lib.tensor([-256], dtype=lib.uint8),
    "overflow_uint8_float": lambda lib: lib.tensor([-0.5], dtype=lib.uint8),
    "overflow_int8": lambda lib: lib.tensor([200], dtype=lib.int8),
    "overflow_int8_float": lambda lib: lib.tensor([127.9, -128.9], dtype=lib.int8),
    "overflow_int32": lambda lib: lib.tensor([2**40], dtype=lib.int32),
    "nan_to_int": lambda lib: lib.tensor(float("nan"), dtype=lib.int64),
    "inf_to_int": lambda lib: lib.tensor(float("inf"), dtype=lib.int32),
    "np_negative_strides": lambda lib: lib.tensor(np.arange(6)[::-1]),
    "np_big_endian": lambda lib: lib.tensor(np.arange(3, dtype=">i4")),
    "np_object": lambda lib: lib.tensor(np.array([1, 2], dtype=object)),
    "np_str": lambda lib: lib.tensor(np.array(["a"])),
    "dtype_str": lambda lib: lib.tensor([1], dtype="float32"),
    "dtype_np": lambda lib: lib.tensor([1], dtype=np.float32),
    "requires_grad_int": lambda lib: lib.tensor([1, 2], requires_grad=True),
    "requires_grad_bool": lambda lib: lib.tensor([True], requires_grad=True),
    "device_foo": lambda lib: lib.tensor([1, 2], device="foo"),
}


@pytest.mark.parametrize("name", list(DATA))
def test_tensor_from_data(name):
    same(DATA[name])


@pytest.mark.parametrize("name", list(DATA_ERRORS))
def test_tensor_from_data_errors(name):
    same(DATA_ERRORS[name])


@pytest.mark.parametrize("default", ["float64", "float16", "bfloat16"])
def test_tensor_default_dtype(default):
    torch.set_default_dtype(getattr(torch, default))
    ember.set_default_dtype(getattr(ember, default))
    try:
        for fn in [
            lambda lib: lib.tensor([1.5, 2]),
            lambda lib: lib.tensor(1.0),
            lambda lib: lib.tensor([[1, 2.5]]),
            lambda lib: lib.tensor([np.float32(1), 2.5]),
            lambda lib: lib.tensor([]),
            lambda lib: lib.tensor([1j]),
        ]:
            if default == "float16" and _run(torch, fn).dtype == torch.complex32:
                continue  # ember has no complex32
            same(fn)
    except RuntimeError as exc:  # torch: complex with a bfloat16 default
        assert "complex" in str(exc)
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)


def test_tensor_copies_and_warns():
    src = ember.ones(3, requires_grad=True)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        t = ember.tensor(src)
    assert not t.requires_grad and t.grad_fn is None
    assert t.data_ptr() != src.data_ptr()
    a = np.arange(3.0)
    t = ember.tensor(a)
    a[0] = 10
    assert t[0].item() == 0.0
    lst = [1.0, 2.0]
    t = ember.tensor(lst)
    lst[0] = 5
    assert t.tolist() == [1.0, 2.0]


def test_tensor_large_list_is_fast_path():
    data = [float(i) for i in range(20000)]
    same(lambda lib: lib.tensor(data))
    same(lambda lib: lib.tensor([data[:100]] * 50))


# ------------------------------------------------------------------------------ sharing


def _shares(t, a: np.ndarray) -> bool:
    return t.data_ptr() == a.__array_interface__["data"][0]


def test_from_numpy_shares_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    t = ember.from_numpy(a)
    assert t.dtype is ember.float64 and _shares(t, a)
    a[0, 0] = 100
    assert t[0, 0].item() == 100
    t[1, 2] = -7  # writes through the tensor show in the array
    assert a[1, 2] == -7
    t.add_(1)
    assert a[0, 1] == 2
    b = np.arange(12, dtype=np.float32).reshape(3, 4).T
    tb = ember.from_numpy(b)
    assert tb.stride() == (1, 4) and not tb.is_contiguous() and _shares(tb, b)
    c = np.arange(10, dtype=np.int16)[2::3]
    tc = ember.from_numpy(c)
    assert tc.stride() == (3,) and tc.tolist() == [2, 5, 8]


@pytest.mark.parametrize(
    "arr",
    [
        np.arange(4)[::-1],
        np.ones((2, 3))[:, ::-1],
        np.ones(2, ">f4"),
        np.array([1], dtype=object),
        np.array(["a"]),
        np.ones(2, np.uint16),
        np.ones(2, np.float128) if hasattr(np, "float128") else np.ones(2, np.uint32),
        [1, 2],
        np.float32(1),
    ],
)
def test_from_numpy_errors(arr):
    # (torch 2.13 reads uint16/32/64 arrays, as ember does now)
    same(lambda lib: lib.from_numpy(arr))


@pytest.mark.parametrize("name", NAMES)
def test_from_numpy_dtypes(name):
    t = ember.tensor([1, 0, 1], dtype=getattr(ember, name))
    a = t.numpy()
    assert ember.from_numpy(a).dtype is t.dtype


def test_from_numpy_readonly_warns():
    from ember._ops import creation

    a = np.ones(3)
    a.flags.writeable = False
    creation._warned_not_writable[0] = False
    with pytest.warns(UserWarning, match="not writable"):
        t = ember.from_numpy(a)
    assert _shares(t, a)


def test_as_tensor_sharing():
    a = np.arange(6.0).reshape(2, 3)
    assert _shares(ember.as_tensor(a), a)
    assert _shares(ember.as_tensor(a.T), a)
    t = ember.as_tensor(a, dtype=ember.float32)
    assert not _shares(t, a) and t.dtype is ember.float32
    x = ember.ones(2, requires_grad=True)
    assert ember.as_tensor(x) is x
    assert ember.as_tensor(x, dtype=ember.float32) is x
    assert ember.as_tensor(x, device="cpu") is x
    y = ember.as_tensor(x, dtype=ember.float64)
    assert y.grad_fn.name() == "ToCopyBackward0"
    for fn in [
        lambda lib: lib.as_tensor([1, 2]),
        lambda lib: lib.as_tensor(3.5),
        lambda lib: lib.as_tensor(np.float32(2)),
        lambda lib: lib.as_tensor(np.int8(2)),
        lambda lib: lib.as_tensor(np.arange(3)[::-1]),
        lambda lib: lib.as_tensor(np.ones(2, ">f4")),
        lambda lib: lib.as_tensor([1.5], dtype=lib.float64),
        lambda lib: lib.as_tensor([[1, 2], [3]]),
    ]:
        same(fn)


def test_asarray_sharing():
    a = np.arange(6.0).reshape(2, 3)
    assert _shares(ember.asarray(a), a)
    assert not _shares(ember.asarray(a, copy=True), a)
    assert ember.asarray(a, dtype=ember.float32).dtype is ember.float32
    with pytest.raises(ValueError, match="can't alias"):
        ember.asarray(a, dtype=ember.float32, copy=False)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence"):
        ember.asarray([1, 2], copy=False)
    x = ember.ones(2, requires_grad=True)
    assert ember.asarray(x) is x
    c = ember.asarray(x, copy=True)
    assert c is not x and c.grad_fn.name() == "CloneBackward0"
    assert ember.asarray(x, dtype=ember.float64).grad_fn.name() == "ToCopyBackward0"
    with pytest.raises(ValueError):
        ember.asarray(x, dtype=ember.float64, copy=False)
    y = ember.ones(2)
    z = ember.asarray(y, requires_grad=True)
    assert z is y and y.requires_grad  # torch flags the very tensor
    tt = torch.arange(6.0).reshape(2, 3).t()
    d = ember.asarray(tt)  # DLPack: zero-copy from a torch CPU tensor
    assert d.data_ptr() == tt.data_ptr() and d.stride() == (1, 3) and d.dtype is ember.float32
    m = memoryview(np.ones(2, np.float32))
    assert ember.asarray(m).tolist() == [1.0, 1.0]
    for fn in [
        lambda lib: lib.asarray([1, 2]),
        lambda lib: lib.asarray(3),
        lambda lib: lib.asarray(3.5),
        lambda lib: lib.asarray(np.float32(3)),
        lambda lib: lib.asarray(np.float64(3)),
        lambda lib: lib.asarray(np.arange(3)[::-1]),
        lambda lib: lib.asarray([lib.tensor(1.0), lib.tensor(2.0)]),
        lambda lib: lib.asarray(bytearray(b"ab")),
    ]:
        same(fn)


# ------------------------------------------------------------------------------ filled

SIZES = [
    (2, 3),
    ((2, 3),),
    ([2, 3],),
    (torch.Size([2, 3]),),
    ((),),
    (0,),
    ((0, 3),),
    (4,),
    (np.int64(3),),
    ((np.int32(3), 2),),
]
SIZE_ERRORS = [
    (),
    (2, -1),
    ((-2,),),
    (2.0,),
    ((2.5, 1),),
    ("a",),
    (None,),
    (True,),
    ((True, 2),),
    (2, (3,)),
    (np.array([2, 3]),),
]


def _size_arg(lib, s):
    return tuple(lib.Size(x) if isinstance(x, torch.Size) else x for x in s)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("size", SIZES + SIZE_ERRORS, ids=str)
def test_size_arguments(fn, size):
    values = fn in ("zeros", "ones")
    same(lambda lib: getattr(lib, fn)(*_size_arg(lib, size)), values=values)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_filled_keywords(fn):
    for kw in [
        dict(dtype="int8"),
        dict(dtype=int),
        dict(dtype=float),
        dict(requires_grad=True),
        dict(dtype="int64", requires_grad=True),
        dict(device="cpu"),
        dict(size=(2, 3)),
        dict(dtype="bool"),
        dict(dtype="complex64"),
        dict(dtype="str"),
    ]:

        def call(lib, kw=kw):
            kw = dict(kw)
            if isinstance(kw.get("dtype"), str):
                kw["dtype"] = getattr(lib, kw["dtype"]) if kw["dtype"] != "str" else "float32"
            if "size" in kw:
                return getattr(lib, fn)(**kw)
            return getattr(lib, fn)(2, 3, **kw)

        same(call, values=fn != "empty")
    same(lambda lib: getattr(lib, fn)(2, size=(2,)))
    for fmt in ("channels_last", "contiguous_format", "channels_last_3d"):
        same(
            lambda lib, f=fmt: getattr(lib, fn)(2, 3, 4, 5, memory_format=getattr(lib, f)),
            values=fn != "empty",
        )


FULL = {
    "float": lambda lib: lib.full((2,), 1.5),
    "int": lambda lib: lib.full((2,), 3),
    "bool": lambda lib: lib.full((2,), True),
    "complex": lambda lib: lib.full((2,), 1j),
    "list_size": lambda lib: lib.full([2, 3], 7),
    "int_size": lambda lib: lib.full(2, 7),
    "dtype": lambda lib: lib.full((2,), 1.7, dtype=lib.int32),
    "tensor0d": lambda lib: lib.full((2,), lib.tensor(2.5)),
    "tensor0d_int": lambda lib: lib.full((2,), lib.tensor(2)),
    "tensor0d_f64": lambda lib: lib.full((2,), lib.tensor(2.5, dtype=lib.float64)),
    "tensor1d": lambda lib: lib.full((2,), lib.tensor([2.5])),
    "np_f32": lambda lib: lib.full((2,), np.float32(2.5)),
    "np_int8": lambda lib: lib.full((2,), np.int8(2)),
    "np_bool": lambda lib: lib.full((2,), np.bool_(True)),
    "negative": lambda lib: lib.full((-1,), 2),
    "inf_int": lambda lib: lib.full((2,), float("inf"), dtype=lib.int32),
    "nan_bool": lambda lib: lib.full((2,), float("nan"), dtype=lib.bool),
    "overflow_uint8": lambda lib: lib.full((2,), 300, dtype=lib.uint8),
    "wrap_uint8": lambda lib: lib.full((2,), -1, dtype=lib.uint8),
    "float_uint8": lambda lib: lib.full((2,), -1.5, dtype=lib.uint8),
    "overflow_int8": lambda lib: lib.full((2,), 200, dtype=lib.int8),
    "overflow_half": lambda lib: lib.full((2,), 1e6, dtype=lib.float16),
    "inf_half": lambda lib: lib.full((2,), float("inf"), dtype=lib.float16),
    "overflow_float": lambda lib: lib.full((2,), 1e39, dtype=lib.float32),
    "overflow_bf16": lambda lib: lib.full((2,), 1e39, dtype=lib.bfloat16),
    "big_bf16": lambda lib: lib.full((2,), 1e30, dtype=lib.bfloat16),
    "complex_to_float": lambda lib: lib.full((2,), 1j, dtype=lib.float32),
    "complex_real_to_float": lambda lib: lib.full((2,), 1 + 0j, dtype=lib.float32),
    "int64_overflow": lambda lib: lib.full((2,), 2**63),
    "int_too_big": lambda lib: lib.full((2,), 2**70),
    "big_int_float": lambda lib: lib.full((2,), 2**63, dtype=lib.float32),
    "str": lambda lib: lib.full((2,), "a"),
    "none": lambda lib: lib.full((2,), None),
    "requires_grad": lambda lib: lib.full((2,), 1.0, requires_grad=True),
    "keywords": lambda lib: lib.full(size=(2,), fill_value=3),
}


@pytest.mark.parametrize("name", list(FULL))
def test_full(name):
    same(FULL[name])


@pytest.mark.parametrize("default", ["float64", "bfloat16"])
def test_full_default_dtype(default):
    torch.set_default_dtype(getattr(torch, default))
    ember.set_default_dtype(getattr(ember, default))
    try:
        same(lambda lib: lib.full((2,), 1.5))
        same(lambda lib: lib.full((2,), 2))
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)


def _inputs(lib):
    base = lib.arange(24.0).reshape(2, 3, 4)
    return {
        "contig": lib.ones(2, 3, dtype=lib.int32),
        "0d": lib.tensor(2.5),
        "empty": lib.ones(0, 3),
        "T": lib.ones(2, 3).t(),
        "permuted": base.permute(2, 0, 1),
        "sliced": lib.ones(4, 6)[::2, 1::2],
        "sliced_T": lib.ones(4, 6).t()[::2],
        "expanded": lib.ones(3, 1).expand(3, 4),
        "nchw_as_nhwc": base.reshape(1, 2, 3, 4).permute(0, 3, 1, 2),
        "grad": lib.ones(2, requires_grad=True),
    }


@pytest.mark.parametrize(
    "which",
    [
        "contig",
        "0d",
        "empty",
        "T",
        "permuted",
        "sliced",
        "sliced_T",
        "expanded",
        "nchw_as_nhwc",
        "grad",
    ],
)
@pytest.mark.parametrize(
    "fn",
    [
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
    ],
)
def test_like(fn, which):
    def call(lib, **kw):
        x = _inputs(lib)[which]
        if fn == "full_like":
            return lib.full_like(x, 2.7, **kw)
        if fn == "randint_like":
            return lib.randint_like(x, 5, **kw)
        if fn in ("rand_like", "randn_like") and not x.dtype.is_floating_point:
            kw.setdefault("dtype", lib.float32)
        return getattr(lib, fn)(x, **kw)

    values = fn in ("zeros_like", "ones_like", "full_like")
    same(call, values=values)
    same(lambda lib: call(lib, dtype=lib.float64), values=values)
    same(lambda lib: call(lib, requires_grad=True), values=values)
    same(lambda lib: call(lib, memory_format=lib.contiguous_format), values=values)
    same(lambda lib: call(lib, memory_format=lib.channels_last), values=values)


def test_like_errors():
    same(lambda lib: lib.zeros_like([1, 2]))
    same(lambda lib: lib.ones_like(lib.ones(2), dtype=lib.int64, requires_grad=True))
    same(lambda lib: lib.full_like(lib.ones(2, dtype=lib.uint8), 300))
    same(lambda lib: lib.full_like(lib.ones(2), 1j))
    same(lambda lib: lib.zeros_like(lib.ones(2), device="cuda"))


NEW = {
    "new_tensor": lambda lib, x: x.new_tensor([1.5, 2]),
    "new_tensor_dtype": lambda lib, x: x.new_tensor([1, 2], dtype=lib.int8),
    "new_tensor_tensor": lambda lib, x: x.new_tensor(lib.tensor([1, 2])),
    "new_tensor_np": lambda lib, x: x.new_tensor(np.array([1, 2], dtype=np.int8)),
    "new_tensor_rg": lambda lib, x: x.new_tensor([1.0, 2], requires_grad=True),
    "new_zeros": lambda lib, x: x.new_zeros(2, 3),
    "new_zeros_tuple": lambda lib, x: x.new_zeros((2, 3)),
    "new_zeros_0d": lambda lib, x: x.new_zeros(()),
    "new_zeros_size_kw": lambda lib, x: x.new_zeros(size=(2,)),
    "new_zeros_none": lambda lib, x: x.new_zeros(),
    "new_zeros_negative": lambda lib, x: x.new_zeros(-2),
    "new_ones": lambda lib, x: x.new_ones([2]),
    "new_ones_dtype": lambda lib, x: x.new_ones(2, dtype=lib.bool),
    "new_full": lambda lib, x: x.new_full((2,), 2.5),
    "new_full_int": lambda lib, x: x.new_full((2,), 2),
    "new_full_list": lambda lib, x: x.new_full([3], 1),
    "new_full_negative": lambda lib, x: x.new_full((-2,), 1),
    "new_full_bool": lambda lib, x: x.new_full((2,), True),
    "new_empty": lambda lib, x: x.new_empty(3).shape,
    "new_empty_dtype": lambda lib, x: str(x.new_empty((3,), dtype=lib.float32).dtype),
    "new_zeros_rg": lambda lib, x: x.new_zeros(2, dtype=lib.float32, requires_grad=True),
}


@pytest.mark.parametrize("dtype", ["int32", "float64", "uint8"])
@pytest.mark.parametrize("name", list(NEW))
def test_new(name, dtype):
    if name == "new_tensor_rg" and dtype != "float64":
        return
    same(lambda lib: NEW[name](lib, lib.ones(2, dtype=getattr(lib, dtype))))
    same(lambda lib: NEW[name](lib, lib.ones(2, 2, dtype=getattr(lib, dtype)).t()))


def test_new_keeps_grad_off():
    same(lambda lib: lib.ones(2, requires_grad=True).new_ones(2))
    same(lambda lib: lib.ones(2, requires_grad=True).new_tensor([1.0, 2]))


EYE = [(3,), (2, 3), (3, 2), (0,), (2, 0), (1,), (-1,), (2, -1), (2.0,), (2, None)]


@pytest.mark.parametrize("args", EYE, ids=str)
@pytest.mark.parametrize("dtype", [None, "int64", "bool", "complex64", "float16"])
def test_eye(args, dtype):
    same(lambda lib: lib.eye(*args, **({} if dtype is None else {"dtype": getattr(lib, dtype)})))


def test_eye_keywords():
    same(lambda lib: lib.eye(2, requires_grad=True))
    same(lambda lib: lib.eye(n=2, m=3))


# ------------------------------------------------------------------------------ out=


def test_out_argument():
    for fn in [
        lambda lib, o: lib.zeros(2, 3, out=o),
        lambda lib, o: lib.arange(5, out=o),
        lambda lib, o: lib.linspace(0, 1, 4, out=o),
        lambda lib, o: lib.eye(2, out=o),
        lambda lib, o: lib.full((2,), 3, out=o),
        lambda lib, o: lib.ones(0, out=o),
    ]:
        for dtype in ("float32", "int64"):

            def call(lib, fn=fn, dtype=dtype):
                o = lib.empty(0, dtype=getattr(lib, dtype))
                r = fn(lib, o)
                assert r is o
                return o

            same(call)
    same(lambda lib: lib.zeros(2, out=lib.empty(2), dtype=lib.int64))
    e = ember.empty(6)
    ptr = e.data_ptr()
    r = ember.ones(2, 3, out=e.view(2, 3))
    assert r.data_ptr() == ptr


# ------------------------------------------------------------------------------ ranges

ARANGE = [
    (5,),
    (1, 4),
    (0, 1, 0.1),
    (1, 0, -0.1),
    (0, 1.0, 0.3),
    (-1, 1, 0.25),
    (0, 10, 3),
    (10, 0, -3),
    (0.5, 5),
    (0, 5, 1.5),
    (1, 2.5, 0.5),
    (0, 1, 1 / 3),
    (0, 3.3),
    (2.5,),
    (0,),
    (0, 0),
    (5, 5, 1),
    (0, 100, 0.7),
    (1e6, 1e6 + 10, 0.1),
    (-5, 5, 0.01),
    (-3.7, 2.2, 0.3),
    (0, 1e20, 1e18),
    (True, 5),
    (0, 10, True),
    (3, -100, -0.77),
    (0.1, 7.3, 0.013),
    (0, 2**40, 2**37),
    (-(2**62), 2**62, 2**60),
]
ARANGE_ERRORS = [
    (0, -1),
    (0, 1, 0),
    (0, 5, -1),
    (3, 0),
    (float("inf"),),
    (0, float("nan")),
    (1j,),
    ("a",),
    (0.0, 1e30, 1e-10),
]
RANGE_DTYPES = [
    None,
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
]


def _dt(lib, dtype):
    return {} if dtype is None else {"dtype": getattr(lib, dtype)}


@pytest.mark.parametrize("dtype", RANGE_DTYPES)
@pytest.mark.parametrize("args", ARANGE + ARANGE_ERRORS, ids=str)
def test_arange_exact(args, dtype):
    # exact: torch's kernel computes start + i * step (fused), in vector lanes base + j * step
    same(lambda lib: lib.arange(*args, **_dt(lib, dtype)), atol=0, rtol=0)


def test_arange_long_exact(monkeypatch):
    # past 32768 elements torch splits the range over its threads; ember follows torch's count
    from ember._ops import ranges

    monkeypatch.setattr(ranges, "_threads", [torch.get_num_threads()])
    for args in [(0, 30000, 0.37), (0, 1e5, 1.1), (0, 1, 1e-5), (-7.5, 3e4, 0.33)]:
        for dtype in ("float64", "float32", "bfloat16"):
            same(lambda lib, a=args, d=dtype: lib.arange(*a, dtype=getattr(lib, d)), atol=0, rtol=0)


def test_arange_arguments():
    for fn in [
        lambda lib: lib.arange(lib.tensor(3)),
        lambda lib: lib.arange(lib.tensor(3.5)),
        lambda lib: lib.arange(lib.tensor(1), lib.tensor(5), lib.tensor(2)),
        lambda lib: lib.arange(np.int64(4)),
        lambda lib: lib.arange(np.float32(4)),
        lambda lib: lib.arange(start=1, end=4),
        lambda lib: lib.arange(end=4),
        lambda lib: lib.arange(4.0, requires_grad=True),
        lambda lib: lib.arange(4, requires_grad=True),
        lambda lib: lib.arange(2, dtype=lib.bool),
        lambda lib: lib.arange(3, dtype=lib.complex64),
        lambda lib: lib.arange(0, 1e20, 1e19, dtype=lib.int64),
        lambda lib: lib.arange(0, 300, 50, dtype=lib.uint8),
        lambda lib: lib.arange(70000, 70010, dtype=lib.float16),
        lambda lib: lib.arange(3, device="cuda"),
    ]:
        same(fn, atol=0, rtol=0)


@pytest.mark.parametrize("default", ["float64", "float16"])
def test_arange_default_dtype(default):
    torch.set_default_dtype(getattr(torch, default))
    ember.set_default_dtype(getattr(ember, default))
    try:
        same(lambda lib: lib.arange(0, 1, 0.1), atol=0, rtol=0)
        same(lambda lib: lib.arange(5), atol=0, rtol=0)
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)


SPACE = [
    (0, 1, 5),
    (0, 1, 1),
    (0, 1, 0),
    (1, 0, 7),
    (-3.3, 7.1, 11),
    (0, 10, 100),
    (0, 1, 1000),
    (5, 5, 3),
    (0, 10, 4),
    (0, 10, 7),
    (-10, 10, 6),
    (0, 1e6, 33),
    (0.1, 0.7, 99),
    (-1e-3, 5.5, 1001),
    (3, -2.2, 77),
    (2, 3, -1),
    (0, 1, 2.0),
    (0, 1, 2),
    (0, 1, 100000),
]
SPACE_DTYPES = [
    None,
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int8",
    "uint8",
    "complex64",
    "complex128",
    "bool",
]


@pytest.mark.parametrize("dtype", SPACE_DTYPES)
@pytest.mark.parametrize("args", SPACE, ids=str)
def test_linspace_exact(args, dtype):
    same(lambda lib: lib.linspace(*args, **_dt(lib, dtype)), atol=0, rtol=0)


@pytest.mark.parametrize("dtype", SPACE_DTYPES)
@pytest.mark.parametrize("args", SPACE, ids=str)
def test_logspace(args, dtype):
    exact = dtype in (None, "float32", "float64", "float16", "bfloat16", "complex64", "complex128")
    tol = {} if exact else {"atol": 0, "rtol": 0}
    same(lambda lib: lib.logspace(*args, **_dt(lib, dtype)), **tol)
    same(lambda lib: lib.logspace(*args, base=2, **_dt(lib, dtype)), **tol)


def test_space_arguments():
    for fn in [
        lambda lib: lib.linspace(lib.tensor(0.0), lib.tensor(1.0), 5),
        lambda lib: lib.linspace(lib.tensor([0.0]), 1, 5),
        lambda lib: lib.linspace(0, lib.tensor([1.0]), 5),
        lambda lib: lib.linspace(0, 1j, 5),
        lambda lib: lib.linspace(1 + 1j, 2 - 1j, 4),
        lambda lib: lib.linspace(0, 1, 2.5),
        lambda lib: lib.linspace(0, 1, None),
        lambda lib: lib.linspace(start=0, end=1, steps=3),
        lambda lib: lib.linspace(0, 1, lib.tensor(3)),
        lambda lib: lib.linspace(0, 1, 3, requires_grad=True),
        lambda lib: lib.linspace(-3.7, 300.2, 7, dtype=lib.int8),
        lambda lib: lib.linspace(1e40, 1, 3),
        lambda lib: lib.linspace(0, 5, 1, dtype=lib.int8),
        lambda lib: lib.linspace(0, 1, 1, dtype=lib.bool),
        lambda lib: lib.logspace(0, 3, 4, base=-2),
        lambda lib: lib.logspace(0, 40, 5),
        lambda lib: lib.logspace(0, 40, 5, dtype=lib.int64),
        lambda lib: lib.logspace(0, 3, 4, dtype=lib.int8),
        lambda lib: lib.logspace(0, 10, 4, dtype=lib.int32),
        lambda lib: lib.logspace(-2, 2, 5, base=0.5),
        lambda lib: lib.logspace(0, 1j, 3),
        lambda lib: lib.logspace(lib.tensor(0.0), lib.tensor(2.0), 3),
        lambda lib: lib.logspace(0, 1, 3, base=lib.tensor(2.0)),
        lambda lib: lib.logspace(0, 40, 1, dtype=lib.int32),
    ]:
        same(fn)


# ------------------------------------------------------------------------------ random


def _g(lib):
    return lib.Generator().manual_seed(3)


RANDOM = {
    "rand": lambda lib: lib.rand(2, 3),
    "rand_dtype": lambda lib: lib.rand(2, dtype=lib.float64),
    "rand_half": lambda lib: lib.rand(2, dtype=lib.half),
    "rand_bf16": lambda lib: lib.rand(2, dtype=lib.bfloat16),
    "rand_complex": lambda lib: lib.rand(2, dtype=lib.complex64),
    "rand_int": lambda lib: lib.rand(2, dtype=lib.int64),
    "rand_bool": lambda lib: lib.rand(2, dtype=lib.bool),
    "rand_rg": lambda lib: lib.rand(2, requires_grad=True),
    "rand_gen": lambda lib: lib.rand(2, generator=_g(lib)),
    "rand_gen_bad": lambda lib: lib.rand(2, generator=3),
    "rand_size_kw": lambda lib: lib.rand(size=(2,)),
    "rand_cuda": lambda lib: lib.rand(2, device="cuda"),
    "randn_complex": lambda lib: lib.randn(2, dtype=lib.complex128),
    "randn_int": lambda lib: lib.randn(2, dtype=lib.int32),
    "randn_rg_int": lambda lib: lib.randn(2, dtype=lib.int64, requires_grad=True),
    "randint_high": lambda lib: lib.randint(5, (3,)),
    "randint_low_high": lambda lib: lib.randint(2, 5, (3,)),
    "randint_kw": lambda lib: lib.randint(low=2, high=5, size=(3,)),
    "randint_kw_high": lambda lib: lib.randint(high=5, size=(3,)),
    "randint_size_kw": lambda lib: lib.randint(5, size=(2, 2)),
    "randint_list": lambda lib: lib.randint(5, [2, 3]),
    "randint_0d": lambda lib: lib.randint(5, ()),
    "randint_dtype": lambda lib: lib.randint(5, (3,), dtype=lib.float32),
    "randint_bool": lambda lib: lib.randint(2, (3,), dtype=lib.bool),
    "randint_tensor": lambda lib: lib.randint(lib.tensor(5), (3,)),
    "randint_gen": lambda lib: lib.randint(5, (3,), generator=_g(lib)),
    "randint_int_size": lambda lib: lib.randint(5, 3),
    "randint_size_int_kw": lambda lib: lib.randint(5, size=3),
    "randint_no_size": lambda lib: lib.randint(5),
    "randint_low_ge_high": lambda lib: lib.randint(5, 2, (3,)),
    "randint_empty_range": lambda lib: lib.randint(5, 5, (3,)),
    "randint_rg": lambda lib: lib.randint(5, (3,), requires_grad=True),
    "randint_float_bounds": lambda lib: lib.randint(0.5, 5.5, (3,)),
    "randint_out_of_dtype": lambda lib: lib.randint(-1, 5, (3,), dtype=lib.uint8),
    "randint_complex": lambda lib: lib.randint(5, (3,), dtype=lib.complex64),
    "randint_negative_size": lambda lib: lib.randint(5, (-1,)),
    "randperm": lambda lib: lib.randperm(5),
    "randperm_0": lambda lib: lib.randperm(0),
    "randperm_dtype": lambda lib: lib.randperm(5, dtype=lib.float32),
    "randperm_negative": lambda lib: lib.randperm(-1),
    "randperm_bool": lambda lib: lib.randperm(3, dtype=lib.bool),
    "randperm_float": lambda lib: lib.randperm(5.0),
    "randperm_tensor": lambda lib: lib.randperm(lib.tensor(4)),
    "randperm_int8_too_big": lambda lib: lib.randperm(300, dtype=lib.int8),
    "randperm_rg": lambda lib: lib.randperm(5, dtype=lib.float32, requires_grad=True),
    "normal_numbers": lambda lib: lib.normal(0.0, 1.0, (2, 3)),
    "normal_numbers_no_size": lambda lib: lib.normal(0.0, 1.0),
    "normal_size_int": lambda lib: lib.normal(0.0, 1.0, 3),
    "normal_size_list": lambda lib: lib.normal(0, 1, [2, 3]),
    "normal_int_args": lambda lib: lib.normal(2, 3, size=(2,)),
    "normal_dtype": lambda lib: lib.normal(0.0, 1.0, (2,), dtype=lib.float64),
    "normal_rg": lambda lib: lib.normal(0.0, 1.0, (2,), requires_grad=True),
    "normal_gen": lambda lib: lib.normal(0.0, 1.0, (2,), generator=_g(lib)),
    "normal_negative_std": lambda lib: lib.normal(0.0, -1.0, (2,)),
    "normal_tt": lambda lib: lib.normal(lib.zeros(2, 3), lib.ones(2, 3)),
    "normal_tf": lambda lib: lib.normal(lib.zeros(2, 3), 2.0),
    "normal_ft": lambda lib: lib.normal(1.0, lib.ones(3)),
    "normal_broadcast": lambda lib: lib.normal(lib.zeros(2, 1), lib.ones(3)),
    "normal_mismatch": lambda lib: lib.normal(lib.zeros(2), lib.ones(3)),
    "normal_same_numel": lambda lib: lib.normal(lib.zeros(2, 3), lib.ones(6)),
    "normal_f64_mean": lambda lib: lib.normal(lib.zeros(2, dtype=lib.float64), lib.ones(2)),
    "normal_f64_std": lambda lib: lib.normal(lib.zeros(2), lib.ones(2, dtype=lib.float64)),
    "normal_int_mean": lambda lib: lib.normal(lib.zeros(2, dtype=lib.int64), 1.0),
    "normal_negative_std_t": lambda lib: lib.normal(lib.zeros(2), -lib.ones(2)),
    "normal_tensor_and_size": lambda lib: lib.normal(lib.zeros(2), 1.0, (3,)),
    "normal_0d": lambda lib: lib.normal(lib.tensor(0.0), lib.tensor(1.0)),
    "normal_empty": lambda lib: lib.normal(lib.zeros(0), 1.0),
    "normal_T": lambda lib: lib.normal(lib.zeros(2, 3).t(), 1.0),
    "normal_grad_mean": lambda lib: lib.normal(lib.zeros(2, requires_grad=True), 1.0),
    "normal_grad_std": lambda lib: lib.normal(0.0, lib.ones(2, requires_grad=True)),
    "normal_grad_both": lambda lib: lib.normal(
        lib.zeros(2, requires_grad=True), lib.ones(2, requires_grad=True)
    ),
    "bernoulli": lambda lib: lib.bernoulli(lib.full((3,), 0.5)),
    "bernoulli_p": lambda lib: lib.bernoulli(lib.zeros(3), 0.5),
    "bernoulli_f64": lambda lib: lib.bernoulli(lib.full((3,), 0.5, dtype=lib.float64)),
    "bernoulli_half": lambda lib: lib.bernoulli(lib.full((3,), 0.5, dtype=lib.half)),
    "bernoulli_T": lambda lib: lib.bernoulli(lib.full((2, 3), 0.5).t()),
    "bernoulli_gen": lambda lib: lib.bernoulli(lib.full((3,), 0.5), generator=_g(lib)),
    "bernoulli_method": lambda lib: lib.full((3,), 0.5).bernoulli(),
    "bernoulli_method_p": lambda lib: lib.full((3,), 0.5).bernoulli(0.3),
    "bernoulli_int": lambda lib: lib.bernoulli(lib.zeros(3, dtype=lib.int64)),
    "bernoulli_bool": lambda lib: lib.bernoulli(lib.ones(3, dtype=lib.bool)),
    "bernoulli_out_of_range": lambda lib: lib.bernoulli(lib.full((3,), 1.5)),
    "bernoulli_grad": lambda lib: lib.bernoulli(lib.full((3,), 0.5, requires_grad=True)),
    "multinomial": lambda lib: lib.multinomial(lib.ones(4), 2),
    "multinomial_2d": lambda lib: lib.multinomial(lib.ones(3, 4), 2),
    "multinomial_replacement": lambda lib: lib.multinomial(lib.ones(4), 10, True),
    "multinomial_kw": lambda lib: lib.multinomial(lib.ones(4), num_samples=2, replacement=True),
    "multinomial_too_many": lambda lib: lib.multinomial(lib.ones(4), 10),
    "multinomial_0": lambda lib: lib.multinomial(lib.ones(4), 0),
    "multinomial_3d": lambda lib: lib.multinomial(lib.ones(2, 3, 4), 2),
    "multinomial_0d": lambda lib: lib.multinomial(lib.tensor(1.0), 1),
    "multinomial_int": lambda lib: lib.multinomial(lib.ones(4, dtype=lib.int64), 2),
    "multinomial_negative": lambda lib: lib.multinomial(-lib.ones(4), 2),
    "multinomial_zero_sum": lambda lib: lib.multinomial(lib.zeros(4), 1),
    "multinomial_method": lambda lib: lib.ones(4).multinomial(2),
    "multinomial_gen": lambda lib: lib.multinomial(lib.ones(4), 2, generator=_g(lib)),
    "multinomial_T": lambda lib: lib.multinomial(lib.ones(4, 3).t(), 2),
    "randint_like_kw": lambda lib: lib.randint_like(lib.ones(2), high=5),
    "randint_like_low_high": lambda lib: lib.randint_like(lib.ones(2), 1, 5),
    "randint_like_no_high": lambda lib: lib.randint_like(lib.ones(2)),
    "randint_like_bad": lambda lib: lib.randint_like(lib.ones(2), 5, 2),
    "randint_like_gen": lambda lib: lib.randint_like(lib.ones(2), 5, generator=_g(lib)),
    "rand_like_gen": lambda lib: lib.rand_like(lib.ones(2), generator=_g(lib)),
    "randn_like_int": lambda lib: lib.randn_like(lib.ones(2, dtype=lib.int32)),
}


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_creation(name):
    same(RANDOM[name], values=False)


INPLACE = {
    "uniform_": lambda lib, x: x.uniform_(),
    "uniform_bounds": lambda lib, x: x.uniform_(2, 3),
    "uniform_from_to": lambda lib, x: x.uniform_(**{"from": 2, "to": 3}),
    "uniform_bad_kw": lambda lib, x: x.uniform_(a=2, b=3),
    "uniform_reversed": lambda lib, x: x.uniform_(3, 2),
    "uniform_gen": lambda lib, x: x.uniform_(generator=_g(lib)),
    "uniform_gen_bad": lambda lib, x: x.uniform_(generator=3),
    "normal_": lambda lib, x: x.normal_(),
    "normal_mean_std": lambda lib, x: x.normal_(2, 3),
    "normal_kw": lambda lib, x: x.normal_(mean=1, std=2),
    "normal_negative_std": lambda lib, x: x.normal_(0, -1),
    "random_": lambda lib, x: x.random_(),
    "random_to": lambda lib, x: x.random_(10),
    "random_from_to": lambda lib, x: x.random_(2, 10),
    "random_to_kw": lambda lib, x: x.random_(to=5),
    "random_from_to_kw": lambda lib, x: x.random_(**{"from": 2, "to": 5}),
    "random_from_only_kw": lambda lib, x: x.random_(**{"from": 2}),
    "random_reversed": lambda lib, x: x.random_(10, 2),
    "random_gen": lambda lib, x: x.random_(generator=_g(lib)),
    "bernoulli_": lambda lib, x: x.bernoulli_(),
    "bernoulli_p": lambda lib, x: x.bernoulli_(0.3),
    "bernoulli_tensor_p": lambda lib, x: x.bernoulli_(lib.full((3,), 0.3)),
    "bernoulli_bad_p": lambda lib, x: x.bernoulli_(1.5),
    "bernoulli_bad_shape": lambda lib, x: x.bernoulli_(lib.full((2, 3), 0.3)),
    "exponential_": lambda lib, x: x.exponential_(),
    "geometric_": lambda lib, x: x.geometric_(0.5),
    "cauchy_": lambda lib, x: x.cauchy_(),
    "log_normal_": lambda lib, x: x.log_normal_(),
}
FILL = {
    "fill_": lambda lib, x: x.fill_(2),
    "fill_tensor": lambda lib, x: x.fill_(lib.tensor(2.0)),
    "fill_tensor_1d": lambda lib, x: x.fill_(lib.tensor([2.0])),
    "zero_": lambda lib, x: x.zero_(),
}


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "int64", "int8", "bool", "complex64"]
)
@pytest.mark.parametrize("name", list(INPLACE) + list(FILL))
def test_inplace_fillers(name, dtype):
    fn = {**INPLACE, **FILL}[name]

    def call(lib):
        x = lib.ones(3, dtype=getattr(lib, dtype))
        r = fn(lib, x)
        assert r is x and x._version == 1
        return r

    same(call, values=name in FILL)


@pytest.mark.parametrize("name", list(INPLACE) + list(FILL))
def test_inplace_fillers_autograd(name):
    fn = {**INPLACE, **FILL}[name]
    if name in (
        "uniform_bad_kw",
        "uniform_reversed",
        "normal_negative_std",
        "random_reversed",
        "bernoulli_bad_p",
        "bernoulli_bad_shape",
        "uniform_gen_bad",
        "random_from_only_kw",
    ):
        return
    # a leaf that requires grad refuses; under no_grad it is allowed
    same(lambda lib: fn(lib, lib.ones(3, requires_grad=True)))

    def no_grad(lib):
        x = lib.ones(3, requires_grad=True)
        with lib.no_grad():
            fn(lib, x)
        return x

    same(no_grad, values=name in FILL)

    # on a tensor with history, the filler cuts it: the gradient through it is zero
    def history(lib):
        m = lib.ones(3, requires_grad=True)
        y = m * 2
        fn(lib, y)
        (y * 3).sum().backward()
        return y, m.grad

    if name in FILL:
        return  # grad_fn names of fill_/zero_: see test_fill_grad_fn_names
    e, t = same(lambda lib: history(lib)[0], values=False)
    assert ember.is_tensor(e)
    eg, tg = history(ember)[1], history(torch)[1]
    assert_same(eg, tg)

    def view_of_history(lib):
        m = lib.ones(4, requires_grad=True)
        y = m * 2
        fn(lib, y[1:]) if name != "bernoulli_tensor_p" else y[1:].bernoulli_(0.3)
        return y

    same(view_of_history, values=False)


def test_fill_grad_fn_names():
    for fn in FILL.values():
        same(lambda lib, fn=fn: fn(lib, lib.ones(3, requires_grad=True) * 2))


@pytest.mark.parametrize("case", ["uint8_300", "float_complex", "int8_200"])
def test_fill_overflow_checks(case):
    dtype, value = {
        "uint8_300": ("uint8", 300),
        "float_complex": ("float32", 1j),
        "int8_200": ("int8", 200),
    }[case]
    same(lambda lib: lib.ones(3, dtype=getattr(lib, dtype)).fill_(value))


def test_random_ranges():
    ember.manual_seed(0)
    r = ember.rand(10000).numpy()
    assert r.min() >= 0 and r.max() < 1
    r = ember.randint(3, 7, (10000,)).numpy()
    assert r.min() == 3 and r.max() == 6
    assert sorted(ember.randperm(50).tolist()) == list(range(50))
    x = ember.empty(10000).uniform_(-2, -1).numpy()
    assert -2 <= x.min() and x.max() < -1
    for dt, top in [("float16", 2048), ("bfloat16", 256), ("int8", 127), ("bool", 1)]:
        v = np.array(ember.empty(5000, dtype=getattr(ember, dt)).random_().tolist())
        assert 0 <= v.min() and v.max() <= top and v.max() > top // 2
    v = ember.empty(5000, dtype=ember.uint8).random_(250, 256).numpy()
    assert v.min() >= 250
    b = ember.bernoulli(ember.tensor([0.0, 1.0] * 100))
    assert b.tolist() == [0.0, 1.0] * 100
    n = ember.normal(ember.full((20000,), 5.0), 0.1).numpy()
    assert abs(n.mean() - 5) < 0.01
    m = ember.multinomial(ember.tensor([0.0, 1.0, 0.0, 1.0]), 2)
    assert sorted(m.tolist()) == [1, 3]
    u = ember.empty(1000, dtype=ember.complex64).uniform_().numpy()
    assert u.real.min() >= 0 and u.imag.max() < 1


def test_random_determinism():
    fns = [
        lambda: ember.rand(5),
        lambda: ember.randn(2, 3),
        lambda: ember.randint(0, 100, (5,)),
        lambda: ember.randperm(10),
        lambda: ember.normal(0.0, 1.0, (4,)),
        lambda: ember.bernoulli(ember.full((8,), 0.5)),
        lambda: ember.ones(5).uniform_(),
        lambda: ember.multinomial(ember.ones(6), 3),
        lambda: ember.rand_like(ember.ones(3)),
        lambda: ember.ones(4).random_(0, 1000),
        lambda: ember.ones(3).exponential_(),
    ]
    for fn in fns:
        ember.manual_seed(1234)
        a = fn().tolist()
        ember.manual_seed(1234)
        assert fn().tolist() == a
        g1 = ember.Generator().manual_seed(7)
    g1 = ember.Generator().manual_seed(7)
    g2 = ember.Generator().manual_seed(7)
    ember.manual_seed(99)
    a = ember.rand(4, generator=g1).tolist()
    ember.rand(100)  # the default generator does not disturb g2
    assert ember.rand(4, generator=g2).tolist() == a
    assert (
        ember.randint(0, 9, (6,), generator=g1).tolist()
        == ember.randint(0, 9, (6,), generator=g2).tolist()
    )
    assert (
        ember.ones(3).normal_(generator=g1).tolist() == ember.ones(3).normal_(generator=g2).tolist()
    )


def test_random_gradients_are_zero():
    for fn in [
        lambda lib, m: lib.normal(m, 1.0),
        lambda lib, m: lib.normal(1.0, m.exp()),
        lambda lib, m: lib.normal(m, m.exp()),
        lambda lib, m: lib.bernoulli(m.sigmoid()),
    ]:

        def call(lib, fn=fn):
            m = lib.zeros(3, requires_grad=True)
            out = fn(lib, m)
            out.sum().backward()
            return m.grad

        same(call)
    same(lambda lib: lib.bernoulli(lib.zeros(3, requires_grad=True), 0.5).sum().backward())
