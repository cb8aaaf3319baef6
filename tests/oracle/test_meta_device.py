"""The meta device against torch: metadata of factories and op results, the errors of reading
data, modules built on meta and materialized with to_empty, and a 10-billion-parameter
Transformer built under ``with device("meta")`` without memory."""

from __future__ import annotations

import resource
import tracemalloc

import pytest

import ember
from tests.oracle.helper import torch


def _meta(t):
    return (tuple(t.shape), str(t.dtype).split(".")[-1], t.device.type, t.requires_grad)


CASES = {
    "empty": lambda L: L.empty(2, 3, device="meta"),
    "empty_tuple": lambda L: L.empty((2, 3), dtype=L.float64, device="meta"),
    "zeros_grad": lambda L: L.zeros(4, device="meta", requires_grad=True),
    "ones_int": lambda L: L.ones(2, dtype=L.int32, device="meta"),
    "full": lambda L: L.full((2, 2), 7, device="meta"),
    "full_float": lambda L: L.full((3,), 1.5, device="meta"),
    "randn": lambda L: L.randn(3, 4, device="meta"),
    "randint": lambda L: L.randint(0, 5, (2, 3), device="meta"),
    "arange": lambda L: L.arange(10, device="meta"),
    "eye": lambda L: L.eye(3, device="meta"),
    "tensor": lambda L: L.tensor([1, 2, 3], device="meta"),
    "empty_like": lambda L: L.empty_like(L.ones(2, 5), device="meta"),
    "zeros_like_meta": lambda L: L.zeros_like(L.empty(3, device="meta")),
    "like_to_cpu": lambda L: L.empty_like(L.empty(3, 2, device="meta"), device="cpu"),
    "new_empty": lambda L: L.empty(2, device="meta").new_empty((4, 1)),
    "new_full": lambda L: L.empty(2, device="meta", dtype=L.float64).new_full((3,), 2.0),
    "to_meta": lambda L: L.ones(2, 3).to("meta"),
    "to_meta_dtype": lambda L: L.ones(2, 3).to("meta", L.float16),
    "add": lambda L: L.empty(2, 3, device="meta") + 1,
    "add_0d_cpu": lambda L: L.empty(2, 3, device="meta") + L.tensor(1.0),
    "matmul": lambda L: L.empty(2, 3, device="meta") @ L.empty(3, 4, device="meta"),
    "sum": lambda L: L.empty(2, 3, device="meta").sum(1),
    "mean_grad": lambda L: L.empty(2, 3, device="meta", requires_grad=True).mean(),
    "index": lambda L: L.empty(4, 5, device="meta")[1:3, 2],
    "view": lambda L: L.empty(4, 5, device="meta").view(2, 10),
    "cat": lambda L: L.cat([L.empty(2, device="meta"), L.empty(3, device="meta")]),
    "softmax": lambda L: L.empty(2, 5, device="meta").softmax(-1),
    "conv2d": lambda L: L.nn.functional.conv2d(
        L.empty(1, 3, 8, 8, device="meta"), L.empty(4, 3, 3, 3, device="meta"), padding=1
    ),
    "argmax": lambda L: L.empty(3, 4, device="meta").argmax(1),
    "compare": lambda L: L.empty(3, device="meta") > 0,
    "uniform_": lambda L: L.empty(3, 3, device="meta").uniform_(),
    "copy_in": lambda L: L.empty(3, device="meta").copy_(L.ones(3)),
    "clone": lambda L: L.empty(2, 2, device="meta", requires_grad=True).clone(),
    "linear_layer": lambda L: L.nn.Linear(3, 2, device="meta").weight,
    "module_to_meta": lambda L: L.nn.Linear(3, 2).to("meta").bias,
    "default_device": lambda L: (lambda: (L.set_default_device("meta"), L.ones(2))[1])(),
}


def _run(lib, name):
    try:
        return ("value", _meta(CASES[name](lib)))
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return ("raised", type(e).__name__, str(e).split("\n")[0])
    finally:
        lib.set_default_device(None)  # None: torch drops its device mode ("cpu" keeps one)


@pytest.mark.parametrize("name", sorted(CASES))
def test_meta_metadata_as_torch(name):
    assert _run(ember, name) == _run(torch, name)


def test_meta_strides_and_printing():
    for lib in (torch, ember):
        m = lib.empty(2, 3, device="meta")
        assert m.stride() == (3, 1) and m.is_contiguous() and m.storage_offset() == 0
        assert m.is_meta and not m.is_cpu and m.data_ptr() == 0
    assert repr(ember.empty(2, 3, device="meta")) == repr(torch.empty(2, 3, device="meta"))
    for make in (
        lambda L: L.empty((), device="meta", dtype=L.int64),
        lambda L: L.empty(3, device="meta", requires_grad=True),
        lambda L: L.empty(3, device="meta", requires_grad=True) * 2,
        lambda L: L.nn.Parameter(L.empty(4, device="meta")),
    ):
        assert repr(make(ember)) == repr(make(torch))


READS = {
    "item": lambda m: m[0].item(),
    "item_many": lambda m: m.item(),
    "float": lambda m: float(m[0]),
    "bool": lambda m: bool(m[0]),
    "numpy": lambda m: m.numpy(),
    "tolist": lambda m: m.tolist(),
    "cpu": lambda m: m.cpu(),
    "to_cpu": lambda m: m.to("cpu"),
    "sum_item": lambda m: m.sum().item(),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_meta_reads_raise_as_torch(name):
    def run(lib):
        try:
            r = READS[name](lib.empty(3, device="meta"))
            return ("value", _meta(r))
        except Exception as e:  # noqa: BLE001
            return ("raised", type(e).__name__, str(e).split("\n")[0])

    assert run(ember) == run(torch)


def test_cpu_copy_from_meta_raises_as_torch():
    for lib in (torch, ember):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
            lib.ones(3).copy_(lib.empty(3, device="meta"))


def test_module_meta_round_trip():
    for lib in (torch, ember):
        with lib.device("meta"):
            m = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3), lib.nn.ReLU())
        assert all(p.is_meta for p in m.parameters()) and m[1].running_mean.is_meta
        assert m[1].num_batches_tracked.dtype == lib.int64
        with pytest.raises(NotImplementedError, match="Module.to_empty"):
            m.to("cpu")
        c = m.to_empty(device="cpu")
        assert c is m and all(p.device.type == "cpu" for p in m.parameters())
        assert all(isinstance(p, lib.nn.Parameter) for p in m.parameters())
        y = m(lib.randn(2, 4))
        assert tuple(y.shape) == (2, 3)
        out = lib.nn.Linear(4, 2).to("meta")(lib.empty(5, 4, device="meta"))
        assert out.is_meta and out.requires_grad and tuple(out.shape) == (5, 2)


def test_meta_backward_gives_meta_grads():
    for lib in (torch, ember):
        with lib.device("meta"):
            lin = lib.nn.Linear(4, 2)
        lin(lib.empty(3, 4, device="meta")).sum().backward()
        assert lin.weight.grad.is_meta and tuple(lin.weight.grad.shape) == (2, 4)


def test_ten_billion_parameter_transformer_on_meta_costs_no_memory():
    tracemalloc.start()
    try:
        with ember.device("meta"):
            layer = ember.nn.TransformerEncoderLayer(8192, 64, 32768, batch_first=True)
            model = ember.nn.TransformerEncoder(layer, 13, enable_nested_tensor=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    n = sum(p.numel() for p in model.parameters())
    assert n > 10_000_000_000
    assert peak < 100e6, peak  # bytes Python and NumPy allocated while building it
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 4e6  # KiB: never 40 GB
    assert all(p.is_meta for p in model.parameters())


def test_meta_transformer_forward_shapes():
    for lib in (torch, ember):
        with lib.device("meta"):
            layer = lib.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
            model = lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        y = model(lib.empty(2, 3, 64, device="meta"))
        assert y.is_meta and tuple(y.shape) == (2, 3, 64) and y.requires_grad


def test_model_ensembling_with_a_meta_base():
    def run(lib):
        models = [lib.nn.Linear(3, 2) for _ in range(4)]
        params, buffers = lib.func.stack_module_state(models)
        base = lib.nn.Linear(3, 2).to("meta")

        def f(p, b, x):
            return lib.func.functional_call(base, (p, b), (x,))

        x = lib.ones(5, 3)
        y = lib.func.vmap(f, in_dims=(0, 0, None))(params, buffers, x)
        want = lib.stack([m(x) for m in models])
        mp, _ = lib.func.stack_module_state([lib.nn.Linear(3, 2, device="meta")] * 2)
        return (
            tuple(y.shape),
            y.device.type,
            bool(lib.allclose(y, want)),
            {k: (tuple(v.shape), v.device.type) for k, v in mp.items()},
        )

    assert run(ember) == run(torch)
