"""The Tensor API: conversions, metadata, Size, storage, device, .to/.type/casts, the legacy
constructor, copy/pickle, printing. Behaviour checks run without torch; the ``oracle`` checks
compare with torch when it is installed."""

import copy
import operator
import pickle
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch (the oracle) is not installed")


def _summary(r):
    """A comparable summary of a result of either library."""
    if torch is not None and isinstance(r, torch.Tensor) or isinstance(r, ember.Tensor):
        vals = r.detach()
        if str(vals.dtype).endswith("bfloat16"):
            vals = vals.float()
        return ("tensor", str(r.dtype), tuple(r.shape), vals.tolist(), r.requires_grad, r.stride())
    if type(r).__name__ in ("Size", "device", "dtype"):
        return (type(r).__name__, repr(r), str(r))
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, [_summary(x) for x in r])
    return (type(r).__name__, r)


def oracle(fn):
    """Assert ``fn(ember)`` and ``fn(torch)`` agree in result or in exception class."""
    if torch is None:
        pytest.skip("torch (the oracle) is not installed")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _summary(fn(torch))
    except Exception as texc:  # noqa: BLE001 - compared by class
        with pytest.raises(Exception) as eexc:
            fn(ember)
        if "not compiled with CUDA" in str(texc):
            assert isinstance(eexc.value, RuntimeError) and "CUDA" in str(eexc.value)
        else:
            assert isinstance(eexc.value, type(texc)), (
                f"ember {type(eexc.value).__name__}({eexc.value}) vs torch "
                f"{type(texc).__name__}({texc})"
            )
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _summary(fn(ember))
    assert got == want


def X(lib):
    return lib.arange(6.0).reshape(2, 3)


# ------------------------------------------------------------------------------ Python scalars

SCALARS = {
    "item": lambda lib: lib.tensor(2.5).item(),
    "item_1el": lambda lib: lib.tensor([3]).item(),
    "item_bool": lambda lib: lib.tensor(True).item(),
    "item_complex": lambda lib: lib.tensor(1 + 2j).item(),
    "item_bf16": lambda lib: lib.tensor(1.5, dtype=lib.bfloat16).item(),
    "item_half": lambda lib: lib.tensor(1.5, dtype=lib.half).item(),
    "item_uint8": lambda lib: lib.tensor(200, dtype=lib.uint8).item(),
    "item_float32": lambda lib: lib.tensor(0.1).item(),
    "item_many": lambda lib: lib.ones(2).item(),
    "item_empty": lambda lib: lib.ones(0).item(),
    "bool_1": lambda lib: bool(lib.tensor([1.0])),
    "bool_0": lambda lib: bool(lib.tensor(0.0)),
    "bool_many": lambda lib: bool(lib.ones(2)),
    "bool_empty": lambda lib: bool(lib.ones(0)),
    "float": lambda lib: float(lib.tensor([2.5])),
    "float_int": lambda lib: float(lib.tensor(3)),
    "float_complex": lambda lib: float(lib.tensor(1j)),
    "float_complex_real": lambda lib: float(lib.tensor(2 + 0j)),
    "float_bf16": lambda lib: float(lib.tensor(1.5, dtype=lib.bfloat16)),
    "float_many": lambda lib: float(lib.ones(2)),
    "float_empty": lambda lib: float(lib.ones(0)),
    "int": lambda lib: int(lib.tensor(2.7)),
    "int_negative": lambda lib: int(lib.tensor(-2.7)),
    "int_bool": lambda lib: int(lib.tensor(True)),
    "int_grad": lambda lib: int(lib.tensor(2.0, requires_grad=True)),
    "int_nan": lambda lib: int(lib.tensor(float("nan"))),
    "int_complex": lambda lib: int(lib.tensor(1j)),
    "int_many": lambda lib: int(lib.ones(2)),
    "int_empty": lambda lib: int(lib.ones(0)),
    "complex": lambda lib: complex(lib.tensor(2.5)),
    "complex_c": lambda lib: complex(lib.tensor(1 + 2j)),
    "complex_many": lambda lib: complex(lib.ones(2)),
    "complex_empty": lambda lib: complex(lib.ones(0)),
    "index": lambda lib: [0, 1, 2][lib.tensor(1)],
    "index_1el": lambda lib: [0, 1, 2][lib.tensor([1])],
    "index_uint8": lambda lib: [0, 1, 2][lib.tensor(2, dtype=lib.uint8)],
    "index_bool": lambda lib: [0, 1, 2][lib.tensor(True)],
    "index_float": lambda lib: [0, 1, 2][lib.tensor(1.0)],
    "index_many": lambda lib: [0, 1, 2][lib.tensor([1, 1])],
    "index_empty": lambda lib: [0][lib.ones(0, dtype=lib.int64)],
    "operator_index": lambda lib: operator.index(lib.tensor(5)),
    "format": lambda lib: f"{lib.tensor(2.5):.2f}",
    "format_int": lambda lib: f"{lib.tensor(3):d}",
    "format_1d": lambda lib: f"{lib.tensor([2.5])}",
    "round": lambda lib: round(lib.tensor(2.567).item(), 2),
}


@pytest.mark.parametrize("name", list(SCALARS))
def test_python_scalars(name):
    oracle(SCALARS[name])


def test_scalar_exception_classes():
    for fn in (float, int, complex):
        with pytest.raises(ValueError, match="only one element tensors"):
            fn(ember.ones(2))
        with pytest.raises(ValueError):
            fn(ember.ones(0))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(ember.ones(2))
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        bool(ember.ones(0))
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        operator.index(ember.tensor(1.0))
    with pytest.raises(RuntimeError, match="elements cannot be converted to Scalar"):
        ember.ones(3).item()


# ------------------------------------------------------------------------------ lists, NumPy


def test_tolist():
    for fn in [
        lambda lib: X(lib).tolist(),
        lambda lib: lib.tensor(3).tolist(),
        lambda lib: lib.tensor([True]).tolist(),
        lambda lib: lib.tensor([0.1], dtype=lib.bfloat16).tolist(),
        lambda lib: lib.tensor([1j]).tolist(),
        lambda lib: lib.tensor([0.1]).tolist(),
        lambda lib: lib.ones(2, 0).tolist(),
        lambda lib: type(lib.tensor([1.5]).tolist()[0]).__name__,
        lambda lib: type(lib.tensor([1]).tolist()[0]).__name__,
    ]:
        oracle(fn)


def test_numpy_shares_memory():
    t = ember.arange(6.0).reshape(2, 3)
    a = t.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    t.mul_(2)
    assert a[0, 0] == 84
    b = np.asarray(t)
    assert b.__array_interface__["data"][0] == t.data_ptr()
    b[1, 1] = -1
    assert t[1, 1].item() == -1
    assert np.asarray(t, dtype=np.int64).dtype == np.int64
    assert np.array(t).__array_interface__["data"][0] != t.data_ptr()  # np.array copies
    v = t.t()
    assert v.numpy().strides == (4, 12)


def test_numpy_requires_grad():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\)"):
        x.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(x)
    a = x.numpy(force=True)
    assert a.tolist() == [1.0, 1.0]
    assert x.detach().numpy().__array_interface__["data"][0] == x.data_ptr()
    oracle(lambda lib: lib.ones(2, requires_grad=True).numpy())
    oracle(lambda lib: lib.ones(2, requires_grad=True).numpy(force=True).tolist())
    oracle(lambda lib: np.asarray(lib.ones(2, requires_grad=True)).tolist())


def test_len_iter():
    for fn in [
        lambda lib: len(X(lib)),
        lambda lib: len(lib.tensor(1.0)),
        lambda lib: len(lib.ones(0, 3)),
        lambda lib: [t.tolist() for t in X(lib)],
        lambda lib: list(lib.tensor(1.0)),
        lambda lib: [t.dim() for t in lib.ones(2)],
        lambda lib: [t.requires_grad for t in lib.ones(2, requires_grad=True)],
        lambda lib: 2.0 in X(lib),
        lambda lib: 7.0 in X(lib),
        lambda lib: lib.tensor([1.0, 2.0]) in lib.tensor([[1.0, 2.0], [3.0, 4.0]]),
        lambda lib: "a" in lib.ones(3),
    ]:
        oracle(fn)
    rows = list(ember.arange(6.0).reshape(3, 2))
    rows[1].zero_()  # rows are views
    assert ember.is_tensor(rows[0])


# ------------------------------------------------------------------------------ Size, metadata


SIZE = {
    "size": lambda lib: X(lib).size(),
    "size_dim": lambda lib: X(lib).size(1),
    "size_negative": lambda lib: X(lib).size(-1),
    "size_kw": lambda lib: X(lib).size(dim=0),
    "size_bad": lambda lib: X(lib).size(2),
    "shape": lambda lib: X(lib).shape,
    "shape_0d": lambda lib: lib.tensor(1.0).shape,
    "slice": lambda lib: X(lib).shape[1:],
    "slice_step": lambda lib: lib.Size([1, 2, 3, 4])[::2],
    "index": lambda lib: X(lib).shape[0],
    "index_negative": lambda lib: X(lib).shape[-1],
    "numel": lambda lib: X(lib).shape.numel(),
    "numel_empty": lambda lib: lib.Size([]).numel(),
    "eq_tuple": lambda lib: X(lib).shape == (2, 3),
    "eq_list": lambda lib: X(lib).shape == [2, 3],
    "add": lambda lib: X(lib).shape + (4,),
    "radd": lambda lib: (4,) + X(lib).shape,
    "add_size": lambda lib: lib.Size([1]) + lib.Size([2]),
    "add_list": lambda lib: lib.Size([1]) + [2],
    "mul": lambda lib: X(lib).shape * 2,
    "rmul": lambda lib: 2 * lib.Size([1]),
    "hash": lambda lib: hash(X(lib).shape) == hash((2, 3)),
    "str": lambda lib: str(X(lib).shape),
    "repr_nested": lambda lib: repr((lib.Size([1]),)),
    "ctor": lambda lib: lib.Size([2, 3]),
    "ctor_empty": lambda lib: lib.Size(),
    "ctor_float": lambda lib: lib.Size([2.5]),
    "ctor_tensor": lambda lib: lib.Size([lib.tensor(2)]),
    "ctor_bool": lambda lib: lib.Size([True]),
    "ctor_numpy": lambda lib: lib.Size([np.int64(3)]),
    "isinstance_tuple": lambda lib: isinstance(lib.Size([1]), tuple),
    "count": lambda lib: lib.Size([2, 2]).count(2),
    "index_of": lambda lib: lib.Size([2, 3]).index(3),
    "pickle": lambda lib: pickle.loads(pickle.dumps(lib.Size([2, 3]))),
    "unpack": lambda lib: (lambda a, b: a * 10 + b)(*X(lib).shape),
}


@pytest.mark.parametrize("name", list(SIZE))
def test_size(name):
    oracle(SIZE[name])


def test_size_is_size():
    t = ember.ones(2, 3)
    assert type(t.shape) is ember.Size and type(t.size()) is ember.Size
    assert repr(t.shape) == "torch.Size([2, 3])"
    assert type(t.shape[1:]) is ember.Size and type(t.shape + (1,)) is ember.Size
    assert t.shape == (2, 3) and list(t.shape) == [2, 3]
    assert ember.Size([2, 3]).numel() == 6 == t.numel()


META = {
    "dim": lambda lib: X(lib).dim(),
    "ndim": lambda lib: X(lib).ndim,
    "ndimension": lambda lib: X(lib).ndimension(),
    "numel": lambda lib: X(lib).numel(),
    "nelement": lambda lib: X(lib).nelement(),
    "torch_numel": lambda lib: lib.numel(X(lib)),
    "torch_numel_bad": lambda lib: lib.numel([1, 2]),
    "element_size": lambda lib: lib.ones(2, dtype=lib.int16).element_size(),
    "itemsize": lambda lib: lib.ones(2, dtype=lib.complex128).itemsize,
    "nbytes": lambda lib: X(lib).nbytes,
    "nbytes_view": lambda lib: X(lib)[:, :1].nbytes,
    "nbytes_expand": lambda lib: lib.ones(3, 1).expand(3, 4).nbytes,
    "stride": lambda lib: X(lib).stride(),
    "stride_dim": lambda lib: X(lib).stride(0),
    "stride_negative": lambda lib: X(lib).stride(-1),
    "stride_kw": lambda lib: X(lib).stride(dim=1),
    "stride_bad": lambda lib: X(lib).stride(2),
    "stride_T": lambda lib: X(lib).t().stride(),
    "stride_0d": lambda lib: lib.tensor(1.0).stride(),
    "stride_empty": lambda lib: lib.ones(0, 3).stride(),
    "stride_empty_new": lambda lib: lib.empty(2, 0, 3).stride(),
    "storage_offset": lambda lib: X(lib)[1].storage_offset(),
    "storage_offset_2": lambda lib: X(lib)[1, 1:].storage_offset(),
    "storage_offset_0": lambda lib: X(lib).storage_offset(),
    "is_contiguous": lambda lib: X(lib).is_contiguous(),
    "is_contiguous_T": lambda lib: X(lib).t().is_contiguous(),
    "is_contiguous_empty": lambda lib: lib.ones(0, 3).t().is_contiguous(),
    "channels_last_no": lambda lib: lib.ones(2, 3, 4, 5).is_contiguous(
        memory_format=lib.channels_last
    ),
    "channels_last_yes": lambda lib: (
        lib.ones(2, 4, 5, 3).permute(0, 3, 1, 2).is_contiguous(memory_format=lib.channels_last)
    ),
    "channels_last_3d": lambda lib: lib.ones(2, 3, 4).is_contiguous(
        memory_format=lib.channels_last
    ),
    "contiguous_T": lambda lib: X(lib).t().contiguous(),
    "contiguous_same": lambda lib: (lambda x: x.contiguous() is x)(X(lib)),
    "data_ptr_offset": lambda lib: (lambda x: x[1].data_ptr() - x.data_ptr())(X(lib)),
    "storage_nbytes_view": lambda lib: X(lib)[1].untyped_storage().nbytes(),
    "storage_shared": lambda lib: (
        lambda x: x[1].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    )(X(lib)),
    "storage_len": lambda lib: len(X(lib).untyped_storage()),
    "storage_size": lambda lib: X(lib).untyped_storage().size(),
    "storage_expand": lambda lib: lib.ones(3, 1).expand(3, 4).untyped_storage().nbytes(),
    "base_none": lambda lib: X(lib)._base is None,
    "base_view": lambda lib: (lambda x: x[0]._base is x)(lib.ones(2, 3)),
    "base_chain": lambda lib: (lambda x: x[0][1:]._base is x)(lib.ones(2, 3)),
    "is_view": lambda lib: lib.ones(2)[0]._is_view(),
    "get_device": lambda lib: X(lib).get_device(),
    "is_cuda": lambda lib: X(lib).is_cuda,
    "is_cpu": lambda lib: X(lib).is_cpu,
    "is_leaf": lambda lib: X(lib).is_leaf,
    "is_sparse": lambda lib: X(lib).is_sparse,
    "is_quantized": lambda lib: X(lib).is_quantized,
    "is_meta": lambda lib: X(lib).is_meta,
    "is_mkldnn": lambda lib: X(lib).is_mkldnn,
    "layout": lambda lib: str(X(lib).layout),
    "output_nr": lambda lib: X(lib).output_nr,
    "version": lambda lib: X(lib)._version,
    "requires_grad_int": lambda lib: lib.ones(2, dtype=lib.int64).requires_grad_(),
    "requires_grad_nonleaf_off": lambda lib: (lib.ones(2, requires_grad=True) * 2).requires_grad_(
        False
    ),
    "hash_is_id": lambda lib: (lambda x: hash(x) == id(x))(X(lib)),
    "hash_dict": lambda lib: (lambda x: {x: 1}[x])(X(lib)),
    "hash_set": lambda lib: len({X(lib), X(lib)}),
    "is_tensor": lambda lib: lib.is_tensor(X(lib)),
    "is_tensor_no": lambda lib: lib.is_tensor([1]),
    "eq": lambda lib: X(lib) == X(lib),
    "eq_scalar": lambda lib: X(lib) == 1.0,
    "ne": lambda lib: X(lib) != 2.0,
}


@pytest.mark.parametrize("name", list(META))
def test_metadata(name):
    oracle(META[name])


@pytest.mark.parametrize("other", [None, "a", [0, 1, 2]], ids=["None", "str", "list"])
def test_eq_non_tensor(other):
    oracle(lambda lib: X(lib) == other)
    oracle(lambda lib: X(lib) != other)


def test_storage_and_views():
    base = ember.tensor(np.arange(12.0).reshape(3, 4), dtype=ember.float32)
    v = base[1:, 2:]
    assert v._base is base and v.storage_offset() == 6 and v.stride() == (4, 1)
    assert v.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert v.untyped_storage().nbytes() == 48
    assert v.data_ptr() == base.data_ptr() + 6 * 4
    v.zero_()
    assert base[2, 3].item() == 0
    assert base.contiguous() is base
    c = base.t().contiguous()
    assert c.is_contiguous() and c.data_ptr() != base.data_ptr()
    e = ember.from_numpy(np.arange(10.0)[3:8])
    assert e.storage_offset() == 3 and e.untyped_storage().nbytes() == 80


# ------------------------------------------------------------------------------ device, cuda

DEVICE = {
    "device": lambda lib: X(lib).device,
    "device_str": lambda lib: str(X(lib).device),
    "device_type": lambda lib: X(lib).device.type,
    "device_index": lambda lib: X(lib).device.index,
    "eq_str": lambda lib: X(lib).device == "cpu",
    "ne_str": lambda lib: X(lib).device != "cpu",
    "eq_device": lambda lib: X(lib).device == lib.device("cpu"),
    "eq_indexed": lambda lib: lib.device("cpu") == lib.device("cpu:0"),
    "eq_other": lambda lib: lib.device("cpu") == 3,
    "hash": lambda lib: hash(lib.device("cpu")) == hash(lib.device("cpu")),
    "ctor": lambda lib: lib.device("cpu"),
    "ctor_index": lambda lib: lib.device("cpu:0"),
    "ctor_index_arg": lambda lib: lib.device("cpu", 0),
    "ctor_cuda": lambda lib: lib.device("cuda"),
    "ctor_cuda_1": lambda lib: lib.device("cuda:1"),
    "ctor_cuda_args": lambda lib: lib.device("cuda", 1),
    "ctor_meta": lambda lib: lib.device("meta"),
    "ctor_copy": lambda lib: lib.device(lib.device("cpu")),
    "ctor_int": lambda lib: lib.device(0),
    "ctor_bad": lambda lib: lib.device("gpu"),
    "ctor_bad_index": lambda lib: lib.device("cpu:x"),
    "ctor_negative_index": lambda lib: lib.device("cuda:-1"),
    "ctor_both": lambda lib: lib.device("cpu:0", 0),
    "pickle": lambda lib: pickle.loads(pickle.dumps(lib.device("cpu:0"))),
    # entered and left again: a device left entered stays on torch's mode stack for later tests
    "context": lambda lib: (lambda d: (d.__enter__() is d, d.__exit__(None, None, None))[0])(
        lib.device("cpu")
    ),
}


@pytest.mark.parametrize("name", list(DEVICE))
def test_device(name):
    oracle(DEVICE[name])


def test_device_context_manager():
    with ember.device("cpu"):
        assert ember.ones(1).device == ember.device("cpu")
    with ember.device("cuda"):  # entered, as in torch built without CUDA; factories raise
        with pytest.raises(RuntimeError, match="CUDA"):
            ember.ones(1)


def test_no_cuda():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    assert ember.cuda.is_initialized() is False and ember.cuda.memory_allocated() == 0
    ember.cuda.manual_seed(0)
    ember.cuda.manual_seed_all(0)
    ember.cuda.empty_cache()
    for fn in (
        ember.cuda.synchronize,
        ember.cuda.current_device,
        ember.cuda.get_device_name,
        ember.cuda.init,
    ):
        with pytest.raises(RuntimeError, match="no CUDA backend"):
            fn()
    calls = [
        lambda: ember.ones(2).cuda(),
        lambda: ember.ones(2).to("cuda"),
        lambda: ember.ones(2).to("cuda:0"),
        lambda: ember.ones(2).to(ember.device("cuda")),
        lambda: ember.zeros(2, device="cuda"),
        lambda: ember.tensor([1.0], device="cuda"),
        lambda: ember.rand(2, device="cuda:0"),
        lambda: ember.arange(3, device="cuda"),
        lambda: ember.ones(2).type("torch.cuda.FloatTensor"),
        lambda: ember.Tensor(2, device="cuda"),
        lambda: ember.zeros_like(ember.ones(1), device="cuda"),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="no CUDA backend"):
            call()
    if torch is not None:
        assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0


# ------------------------------------------------------------------------------ to, type, casts

TO = {
    "dtype": lambda lib: X(lib).to(lib.int32),
    "kw_dtype": lambda lib: X(lib).to(dtype=lib.float64),
    "kw_both": lambda lib: X(lib).to(device="cpu", dtype=lib.int8),
    "device_dtype": lambda lib: X(lib).to("cpu", lib.int8),
    "tensor": lambda lib: X(lib).to(lib.ones(1, dtype=lib.float64)),
    "tensor_flags": lambda lib: X(lib).to(lib.ones(1, dtype=lib.int8), True, True),
    "non_blocking": lambda lib: X(lib).to(lib.int8, non_blocking=True),
    "non_blocking_positional": lambda lib: X(lib).to(lib.int8, True),
    "py_float": lambda lib: X(lib).to(float),
    "py_int": lambda lib: X(lib).to(int),
    "str_dtype": lambda lib: X(lib).to("float32"),
    "grad": lambda lib: lib.ones(2, requires_grad=True).to(lib.float64),
    "strides_kept": lambda lib: X(lib).t().to(lib.float64),
    "contiguous_format": lambda lib: (
        X(lib).t().to(lib.float64, memory_format=lib.contiguous_format)
    ),
    "cuda": lambda lib: X(lib).to("cuda"),
    "same_is_self": lambda lib: (lambda x: x.to(lib.float32) is x)(X(lib)),
    "device_is_self": lambda lib: (lambda x: x.to("cpu") is x)(X(lib)),
    "device_obj_is_self": lambda lib: (lambda x: x.to(lib.device("cpu")) is x)(X(lib)),
    "tensor_is_self": lambda lib: (lambda x: x.to(x) is x)(X(lib)),
    "nothing_is_self": lambda lib: (lambda x: x.to() is x)(X(lib)),
    "memory_format_only_is_self": lambda lib: (
        lambda x: x.to(memory_format=lib.contiguous_format) is x
    )(X(lib).t()),
    "copy_not_self": lambda lib: (lambda x: x.to(lib.float32, copy=True) is x)(X(lib)),
    "copy_shares": lambda lib: (lambda x: x.to(copy=True).data_ptr() == x.data_ptr())(X(lib)),
    "cpu_is_self": lambda lib: (lambda x: x.cpu() is x)(X(lib)),
    "cuda_method": lambda lib: X(lib).cuda(),
    "type": lambda lib: X(lib).type(),
    "type_long": lambda lib: lib.ones(1, dtype=lib.int64).type(),
    "type_bf16": lambda lib: lib.ones(1, dtype=lib.bfloat16).type(),
    "type_complex": lambda lib: lib.ones(1, dtype=lib.cfloat).type(),
    "type_bool": lambda lib: lib.ones(1, dtype=lib.bool).type(),
    "type_cast_str": lambda lib: X(lib).type("torch.IntTensor"),
    "type_cast_dtype": lambda lib: X(lib).type(lib.float64),
    "type_same_is_self": lambda lib: (lambda x: x.type(lib.float32) is x)(X(lib)),
    "type_bad": lambda lib: X(lib).type("foo"),
    "type_cuda": lambda lib: X(lib).type("torch.cuda.FloatTensor"),
}
for _m in [
    "float",
    "double",
    "half",
    "bfloat16",
    "long",
    "int",
    "short",
    "bool",
    "byte",
    "char",
    "cfloat",
    "cdouble",
]:
    TO[f"method_{_m}"] = lambda lib, m=_m: getattr(lib.tensor([-1.7, 0.0, 2.5, 300.0]), m)()
TO["float_is_self"] = lambda lib: (lambda x: x.float() is x)(X(lib))
TO["double_grad"] = lambda lib: lib.ones(2, requires_grad=True).double()
TO["long_truncates"] = lambda lib: lib.tensor([-1.7, 2.7]).long()


@pytest.mark.parametrize("name", list(TO))
def test_to(name):
    oracle(TO[name])


def test_to_grad_fn_names():
    if torch is None:
        pytest.skip("torch (the oracle) is not installed")
    for fn in [
        lambda lib, y: y.to(lib.float64),
        lambda lib, y: y.to(lib.float32, copy=True),
        lambda lib, y: y.to(copy=True),
        lambda lib, y: y.double(),
        lambda lib, y: y.type(lib.float64),
        lambda lib, y: y.type("torch.DoubleTensor"),
        lambda lib, y: lib.Tensor(y),
    ]:
        t = fn(torch, torch.ones(2, requires_grad=True))
        e = fn(ember, ember.ones(2, requires_grad=True))
        assert e.grad_fn.name() == t.grad_fn.name()


# ------------------------------------------------------------------------------ legacy Tensor()

LEGACY = {
    "data": lambda lib: lib.Tensor([1, 2]),
    "nested": lambda lib: lib.Tensor([[1, 2], [3, 4]]),
    "tuple_is_data": lambda lib: lib.Tensor((2, 3)),
    "bools": lambda lib: lib.Tensor([True, False]),
    "range": lambda lib: lib.Tensor(range(3)),
    "numpy": lambda lib: lib.Tensor(np.array([1, 2])),
    "empty": lambda lib: lib.Tensor(),
    "empty_list": lambda lib: lib.Tensor([]),
    "size": lambda lib: lib.Tensor(2, 3).shape,
    "size_one": lambda lib: lib.Tensor(2).shape,
    "size_obj": lambda lib: lib.Tensor(lib.Size([2, 3])).shape,
    "size_numpy_int": lambda lib: lib.Tensor(np.int64(3)).shape,
    "size_device": lambda lib: lib.Tensor(2, device="cpu").shape,
    "tensor_int": lambda lib: lib.Tensor(lib.ones(2, dtype=lib.int64)),
    "tensor_0d": lambda lib: lib.Tensor(lib.tensor(3)),
    "tensor_is_new": lambda lib: (lambda x: lib.Tensor(x) is x)(lib.ones(2)),
    "tensor_shares": lambda lib: (lambda x: lib.Tensor(x).data_ptr() == x.data_ptr())(lib.ones(2)),
    "float_arg": lambda lib: lib.Tensor(2.5),
    "negative": lambda lib: lib.Tensor(-1),
    "float_in_size": lambda lib: lib.Tensor(2, 3.0),
    "ragged": lambda lib: lib.Tensor([[1, 2], [3]]),
    "str": lambda lib: lib.Tensor("ab"),
    "complex": lambda lib: lib.Tensor([1j]),
    "cuda": lambda lib: lib.Tensor(2, device="cuda"),
    "dtype_kw": lambda lib: lib.Tensor([1], dtype=lib.int64),
    "requires_grad_kw": lambda lib: lib.Tensor([1.0], requires_grad=True),
    "isinstance": lambda lib: isinstance(lib.ones(1), lib.Tensor),
}


@pytest.mark.parametrize("name", list(LEGACY))
def test_legacy_constructor(name):
    oracle(LEGACY[name])


def test_legacy_constructor_sharing():
    a = np.ones(2, np.float32)
    t = ember.Tensor(a)
    a[0] = 5
    assert t.tolist() == [5.0, 1.0]  # default-dtype arrays are shared, as torch
    d = np.ones(2)
    t = ember.Tensor(d)
    d[0] = 5
    assert t.dtype is ember.float32 and t.tolist() == [1.0, 1.0]
    x = ember.ones(2)
    y = ember.Tensor(x)
    y.add_(1)
    assert x.tolist() == [2.0, 2.0] and x._version == y._version == 1
    g = ember.ones(2, requires_grad=True)
    assert ember.Tensor(g).grad_fn.name() == "AliasBackward0"

    class MyTensor(ember.Tensor):
        pass

    m = MyTensor([1, 2])
    assert type(m) is MyTensor and m.dtype is ember.float32


# ------------------------------------------------------------------------------ copy, pickle


def test_deepcopy_leaf():
    x = ember.ones(3, requires_grad=True)
    x.grad = ember.full((3,), 2.0)
    x.note = {"a": [1]}
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.is_leaf and y.grad_fn is None
    assert y.data_ptr() != x.data_ptr() and y.tolist() == x.tolist()
    assert y.grad is not x.grad and y.grad.tolist() == [2.0] * 3
    assert y.note == x.note and y.note is not x.note
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)
    with ember.no_grad():
        z = x * 2
    assert copy.deepcopy(z).requires_grad is False
    a = ember.arange(6.0)
    a2, v2 = copy.deepcopy([a, a[2:4]])
    v2[0] = 100  # views copied together still share their (new) storage
    assert a2[2].item() == 100 and a[2].item() == 2 and v2.storage_offset() == 2
    p = copy.deepcopy({"w": x, "w_again": x})
    assert p["w"] is p["w_again"]
    b = ember.ones(2, dtype=ember.bfloat16)
    assert copy.deepcopy(b).dtype is ember.bfloat16


def test_copy_copy_shares():
    x = ember.ones(3, requires_grad=True)
    c = copy.copy(x)
    assert c is not x and c.data_ptr() == x.data_ptr() and c.requires_grad


def test_pickle_round_trip():
    for t in [
        ember.arange(6.0).reshape(2, 3),
        ember.ones(2, dtype=ember.bfloat16),
        ember.tensor([1 + 2j]),
        ember.tensor(True),
        ember.ones(0, 3),
        ember.arange(12).reshape(3, 4).t()[1:],
    ]:
        r = pickle.loads(pickle.dumps(t))
        assert r.dtype is t.dtype and r.shape == t.shape and r.stride() == t.stride()
        assert r.tolist() == t.tolist() and r.data_ptr() != t.data_ptr()
        assert r.storage_offset() == t.storage_offset()
    x = ember.ones(3, requires_grad=True)
    x.grad = ember.ones(3)
    x.tag = "w"
    r = pickle.loads(pickle.dumps(x))
    assert r.requires_grad and r.is_leaf and r.grad is None and r.tag == "w"
    r = pickle.loads(pickle.dumps(x * 2))  # torch pickles a non-leaf's value, not its graph
    assert r.grad_fn is None and r.tolist() == [2.0] * 3
    v = ember.arange(6.0)[2:4]
    r = pickle.loads(pickle.dumps(v))
    assert r.storage_offset() == 2 and r.untyped_storage().nbytes() == 24


# ------------------------------------------------------------------------------ printing

REPRS = {
    "requires_grad": lambda lib: lib.ones(2, requires_grad=True),
    "grad_fn": lambda lib: lib.ones(2, requires_grad=True) * 2,
    "grad_fn_f64": lambda lib: lib.ones(2, dtype=lib.float64, requires_grad=True).sum(),
    "f64_requires_grad": lambda lib: lib.ones(2, dtype=lib.float64, requires_grad=True),
    "to_copy": lambda lib: lib.ones(2, requires_grad=True).to(lib.float64),
    "view": lambda lib: lib.ones(2, requires_grad=True)[0],
    "empty": lambda lib: lib.ones(0),
    "empty_int": lambda lib: lib.ones(0, dtype=lib.int64),
    "empty_2d_f64": lambda lib: lib.ones(2, 0, dtype=lib.float64),
    "empty_requires_grad": lambda lib: lib.empty(0, requires_grad=True),
    "0d": lambda lib: lib.tensor(3.5),
    "0d_int": lambda lib: lib.tensor(3),
    "0d_bool": lambda lib: lib.tensor(True),
    "0d_complex": lambda lib: lib.tensor(1 + 2j),
    "large": lambda lib: lib.arange(2000.0),
    "large_int": lambda lib: lib.arange(2000),
    "large_2d": lambda lib: lib.arange(2000.0).reshape(40, 50),
    "large_grad": lambda lib: lib.arange(2000.0).requires_grad_(),
    "huge": lambda lib: lib.arange(1e6),
    "bf16": lambda lib: lib.ones(3, dtype=lib.bfloat16),
    "half_grad": lambda lib: lib.ones(3, dtype=lib.half, requires_grad=True),
    "uint8": lambda lib: lib.ones(2, 2, dtype=lib.uint8),
    "int8_3d": lambda lib: lib.zeros(1, 2, 3, dtype=lib.int8),
    "sci": lambda lib: lib.tensor([1e-8, 1e8]),
    "nonfinite": lambda lib: lib.tensor([float("nan"), float("inf"), -float("inf")]),
    "complex128": lambda lib: lib.ones(3, dtype=lib.complex128),
    "data": lambda lib: lib.ones(2, requires_grad=True).data,
    "detach": lambda lib: lib.ones(2, requires_grad=True).detach(),
}


@needs_torch
@pytest.mark.parametrize("name", list(REPRS))
def test_repr_matches_torch(name):
    t, e = REPRS[name](torch), REPRS[name](ember)
    assert repr(e) == repr(t)
    assert str(e) == str(t)


@needs_torch
def test_repr_default_dtype_and_printoptions():
    try:
        torch.set_default_dtype(torch.float64)
        ember.set_default_dtype(ember.float64)
        for fn in [
            lambda lib: lib.ones(2),
            lambda lib: lib.ones(2, dtype=lib.float32),
            lambda lib: lib.ones(0, dtype=lib.float32),
            lambda lib: lib.ones(0),
        ]:
            assert repr(fn(ember)) == repr(fn(torch))
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)
    options = [
        dict(precision=2),
        dict(threshold=5),
        dict(edgeitems=1, threshold=5),
        dict(linewidth=20),
        dict(sci_mode=True),
        dict(profile="full"),
        dict(profile="short"),
    ]
    try:
        for opts in options:
            torch.set_printoptions(**opts)
            ember.set_printoptions(**opts)
            for fn in [
                lambda lib: lib.arange(12.0) / 7,
                lambda lib: lib.arange(30.0).reshape(5, 6),
            ]:
                assert repr(fn(ember)) == repr(fn(torch))
            torch.set_printoptions(profile="default")
            ember.set_printoptions(profile="default")
    finally:
        torch.set_printoptions(profile="default")
        ember.set_printoptions(profile="default")


@needs_torch
def test_other_reprs():
    for fn in [
        lambda lib: repr(lib.Size([2, 3])),
        lambda lib: str(lib.Size([])),
        lambda lib: repr(lib.device("cpu")),
        lambda lib: str(lib.device("cuda", 1)),
        lambda lib: repr(lib.float32),
        lambda lib: repr(lib.finfo(lib.float16)),
        lambda lib: repr(lib.iinfo(lib.int16)),
        lambda lib: repr([lib.tensor(1.0)]),
        lambda lib: repr(lib.contiguous_format),
        lambda lib: repr(lib.channels_last),
        lambda lib: repr(lib.ones(1, requires_grad=True).grad_fn)[:30],
    ]:
        assert fn(ember) == fn(torch)


def test_core_classes_print_as_torchs():
    # <class 'torch.Tensor'> in torch, <class 'ember.Tensor'> here (not ember._core....)
    x = ember.ones(2)
    shown = [str(type(v)) for v in (x, x.shape, x.dtype, x.device)]
    assert shown == [f"<class 'ember.{n}'>" for n in ("Tensor", "Size", "dtype", "device")]
    assert str(ember.finfo) == "<class 'ember.finfo'>"
