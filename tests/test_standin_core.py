"""Core behaviours that third-party libraries rely on, found running them under the stand-in
(tests/ecosystem/). Each asserts torch's behaviour, checked against torch 2.13."""

import numpy as np
import pytest

import ember


def test_builtin_node_has_no_saved_tensors():
    # torchviz's make_dot asks hasattr(fn, "saved_tensors"): False on torch's built-in nodes,
    # which show what they saved only as _saved_<arg>
    x = ember.randn(3, requires_grad=True)
    y = (x * x).mean()
    assert not hasattr(y.grad_fn, "saved_tensors")
    mul = y.grad_fn.next_functions[0][0]
    assert not hasattr(mul, "saved_tensors")
    assert ember.equal(mul._saved_self, x)
    y.backward()  # ember's own backward still reads them
    assert ember.allclose(x.grad, 2 * x / 3)


def test_storage_sizeof_counts_its_bytes():
    import sys

    small = sys.getsizeof(ember.empty(0).untyped_storage())
    big = sys.getsizeof(ember.randn(1, 1, 28, 28).untyped_storage())
    assert big - small == 28 * 28 * 4


def test_layers_call_nn_functional_as_looked_up_when_they_run(monkeypatch):
    # FLOP counters (ptflops, thop) patch torch.nn.functional.<fn> and count the calls;
    # torch's layers look F.<fn> up when they run, and F.linear does not call torch.addmm
    F = ember.nn.functional
    seen = []
    for name in ("linear", "conv2d", "max_pool2d", "adaptive_avg_pool2d"):
        original = getattr(F, name)

        def spy(*args, _name=name, _original=original, **kwargs):
            seen.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(F, name, spy)
    monkeypatch.setattr(ember, "addmm", lambda *a, **k: seen.append("addmm"))
    nn = ember.nn
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2, 3)
    )
    assert model(ember.randn(1, 1, 8, 8)).shape == (1, 3)
    assert seen == ["conv2d", "max_pool2d", "adaptive_avg_pool2d", "linear"]


def test_torch_ops_aten_packets_call_embers_functions():
    aten = ember.ops.aten
    assert aten.mm is aten.mm and aten.mm.default.overloadpacket is aten.mm
    assert str(aten.mm) == "aten.mm" and aten.mm.default.name() == "aten::mm"
    a = ember.ones(2, 2)
    assert ember.equal(aten.mm(a, a), a @ a) and ember.equal(aten.mm.default(a, a), a @ a)
    w = ember.ones(1, 1, 1, 1)
    out = aten._convolution(
        a[None, None], w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, False, False, True, True
    )
    assert ember.equal(out, a[None, None])
    assert not hasattr(aten, "no_such_op")


def test_dispatch_mode_imports_and_says_it_is_absent():
    from ember.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        pass

    with pytest.raises(NotImplementedError, match="no dispatcher below its ops"):
        with Counter():
            pass


def test_pytree_flatten_unflatten_map():
    import collections

    from ember.utils import _pytree as pytree

    P = collections.namedtuple("P", "x y")
    tree = [1, (2, 3), {"b": 4, "a": 5}, None, P(6, [7])]
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5, None, 6, 7]  # dicts in insertion order; None a leaf
    assert spec.num_leaves == 8 and pytree.tree_unflatten(leaves, spec) == tree
    assert pytree.tree_map(lambda v: v * 10, {"a": [1, 2], "b": (3,)}) == {
        "a": [10, 20],
        "b": (30,),
    }
    assert pytree.tree_map_only(int, str, [1, "x", 2.5]) == ["1", "x", 2.5]
    assert type(pytree.tree_unflatten(range(8), spec)[4]) is P
    with pytest.raises(ValueError, match="`leaves` has length 1 but the spec refers to a pytree"):
        pytree.tree_unflatten([1], spec)


def test_torch_functions_take_numpy_axis_for_dim():
    # torch's argument parser accepts axis= wherever a function takes dim= (skorch: cat)
    x = ember.arange(6.0).reshape(2, 3)
    assert ember.cat([x, x], axis=1).shape == (2, 6)
    assert ember.sum(x, axis=0).tolist() == [3.0, 5.0, 7.0]
    assert ember.argmax(x, axis=1).tolist() == [2, 2]
    assert ember.stack([x, x], axis=0).shape == (2, 2, 3)


def test_sparse_coo_tensor_of_a_size_alone():
    # torch's (size, *, dtype...) overload: an empty sparse tensor (skorch's to_tensor tests)
    t = ember.sparse_coo_tensor(size=(5, 3))
    assert t.shape == (5, 3) and t.dtype == ember.float32 and t._nnz() == 0
    assert t.sparse_dim() == 2 and t._indices().dtype == ember.int64
    assert ember.sparse_coo_tensor((2, 2), dtype=ember.float64).to_dense().tolist() == [[0, 0]] * 2
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.sparse_coo_tensor()


def test_einsum_over_an_expanded_operand_sums_as_accurately_as_torch():
    # einops' repeat gives a zero-stride view; a long float32 contraction over it (68,880 terms)
    # must not lose more than torch's BLAS sum (einops' compile test compares at 1e-5)
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(0)
    a = g.random((40, 41, 42), dtype=np.float32)
    exact = np.einsum("abc,abcd->d", a.astype(np.float64), np.repeat(a[..., None], 4, 3))
    x = ember.tensor(a)
    got = ember.einsum("abc,abcd->d", x, x[..., None].expand(40, 41, 42, 4)).numpy()
    t = torch.from_numpy(a)
    want = torch.einsum("abc,abcd->d", t, t[..., None].expand(40, 41, 42, 4)).numpy()
    err, torch_err = np.abs(got / exact - 1).max(), np.abs(want / exact - 1).max()
    assert err <= max(2 * torch_err, 2e-6), (err, torch_err)


def test_own_packages_keep_their_module_names_under_the_stand_in():
    # torch has no torch.serve / torch.contrib: their classes keep ember's names (a TorchServe
    # handler module's classes are found by cls.__module__ == module.__name__)
    from ember._standin import _torch_spelling

    assert _torch_spelling("ember.nn.init") == "torch.nn.init"
    assert _torch_spelling("ember") == "torch"
    assert _torch_spelling("ember.serve") is None
    assert _torch_spelling("ember.serve.ts.torch_handler.base_handler") is None
    assert _torch_spelling("ember.contrib.bitsandbytes.optim") is None
    assert _torch_spelling("ember.serves") == "torch.serves"
    assert _torch_spelling("numpy") is None


def _jit_container_protocol(lib):
    """What bool/len/iter/[]/in do on scripted modules (torchinfo's summary of a scripted
    model asks ``any(module.children())``, i.e. ``bool`` of each scripted child)."""
    import operator
    import warnings

    def outcome(f, m):
        try:
            r = f(m)
        except Exception as e:  # noqa: BLE001 - the class is the observation
            return type(e).__name__
        return r if isinstance(r, (bool, int)) else "an object"

    probes = (bool, len, lambda m: len(list(iter(m))), operator.itemgetter(0), lambda m: "a" in m)
    nn = lib.nn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mods = [lib.jit.script(nn.Linear(2, 2)), lib.jit.script(nn.Sequential())]
        mods.append(lib.jit.script(nn.Sequential(nn.ReLU())))
        # containers without a forward script too; calling one raises AttributeError
        mods.append(lib.jit.script(nn.ModuleList()))
        mods.append(lib.jit.script(nn.ModuleDict({"a": nn.ReLU()})))
    probes += (lambda m: m(lib.ones(1)),)
    return [tuple(outcome(f, m) for f in probes) for m in mods]


def test_scripted_module_truth_and_container_protocol():
    nie = "NotImplementedError"
    assert _jit_container_protocol(ember) == [
        (True, nie, nie, nie, nie, "RuntimeError"),  # Linear(2, 2) on 1 feature
        (True, 0, 0, "IndexError", nie, "an object"),
        (True, 1, 1, "an object", nie, "an object"),
        (True, 0, 0, "IndexError", nie, "AttributeError"),
        (True, 1, 1, "KeyError", True, "AttributeError"),
    ]
    torch = pytest.importorskip("torch")
    assert _jit_container_protocol(ember) == _jit_container_protocol(torch)
