"""Deterministic factories and in-place samplers in traces against torch's: the printed graph
(``aten::zeros(%sizes, dtype, layout, Device "cpu", pin_memory)`` with sizes from
``aten::size``, ``aten::arange`` of an ``aten::ScalarImplicit``, the samplers' trailing
constants), and the traced function run at another input shape."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _lib(x):
    return torch if isinstance(x, torch.Tensor) else ember


def f_zeros(x):
    return x + _lib(x).zeros(x.size(0), 3)


def f_ones_shape(x):
    return x + _lib(x).ones(x.shape)


def f_full(x):
    return x + _lib(x).full((x.size(0), x.size(1)), 2.5)


def f_arange(x):
    return x + _lib(x).arange(x.size(1))


def f_arange_start_step(x):
    lib = _lib(x)
    return x * lib.arange(0, x.size(1), 1, dtype=lib.float32)


def f_like(x):
    lib = _lib(x)
    return lib.zeros_like(x) + lib.ones_like(x, dtype=lib.float64) + lib.full_like(x, 3.0)


def f_empty_fill(x):
    return _lib(x).empty(x.size(0), 3).fill_(1.0) + x


def f_constant_sizes(x):
    lib = _lib(x)
    return x + lib.zeros(3) + lib.arange(3.0) + lib.empty_like(x).fill_(2)


def f_new(x):
    return x + x.new_zeros(x.size(0), 3) + x.new_full((x.size(0), 3), 2.0) + x.new_ones(x.shape)


DETERMINISTIC = [f_zeros, f_ones_shape, f_full, f_arange, f_arange_start_step, f_like,
                 f_empty_fill, f_constant_sizes, f_new]  # fmt: skip


def _trace(lib, fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.trace(fn, (x,))


@pytest.mark.parametrize("fn", DETERMINISTIC, ids=lambda f: f.__name__)
def test_factory_graph_and_other_shapes_as_torch(fn):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    ours, theirs = _trace(ember, fn, ember.tensor(x)), _trace(torch, fn, torch.tensor(x))
    assert str(ours.graph) == str(theirs.graph)
    if fn is f_constant_sizes:
        return  # its constant sizes fix the traced shape, in torch too
    y = np.arange(12, dtype=np.float32).reshape(4, 3) / 5
    a, b = ours(ember.tensor(y)), theirs(torch.tensor(y))
    assert tuple(a.shape) == tuple(b.shape) == (4, 3)
    assert str(a.dtype) == str(b.dtype)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def s_bernoulli_p(x):
    return x.bernoulli(0.3) + _lib(x).bernoulli(x)


def s_fillers(x):
    lib = _lib(x)
    return lib.empty(2, 3).uniform_() + lib.empty(2, 3).normal_() + x


def s_fillers_args(x):
    return x.clone().uniform_(-1, 1) + x.clone().normal_(2.0, 0.5) + x.clone().bernoulli_(0.5)


def s_normal(x):
    return _lib(x).normal(x, 1.0)


@pytest.mark.parametrize(
    "fn", [s_bernoulli_p, s_fillers, s_fillers_args, s_normal], ids=lambda f: f.__name__
)
def test_sampler_nodes_print_as_torch(fn):
    x = np.full((2, 3), 0.5, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = ember.jit.trace(fn, (ember.tensor(x),), check_trace=False)
        theirs = torch.jit.trace(fn, (torch.tensor(x),), check_trace=False)
    assert str(ours.graph) == str(theirs.graph)


def test_traced_fillers_draw_torch_numbers():
    x = np.full((2, 3), 0.5, dtype=np.float32)
    out = {}
    for lib in (ember, torch):
        traced = _trace(lib, s_fillers_args, lib.tensor(x))
        lib.manual_seed(5)
        out[lib.__name__] = [traced(lib.tensor(x)).numpy() for _ in range(2)]
    for a, b in zip(out["ember"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert not np.array_equal(out["ember"][0], out["ember"][1])


def test_library_factories_stay_constants():
    # ember's own code making a tensor and writing into it: not a factory node
    x = ember.randn(1, 2, 4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = ember.jit.trace(lambda t: ember.nn.functional.pad(t, (1, 1)), (x,)).graph
    assert not g.findAllNodes("aten::zeros") and not g.findAllNodes("aten::empty")
