"""Oracle tests of the lazy modules (LazyLinear, LazyConv*, LazyBatchNorm*, ...) against torch."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import ember
from tests.oracle.helper import assert_same, torch

# the lazy instance norms without affine warn at the first forward (num_features is 0), in torch
pytestmark = pytest.mark.filterwarnings("ignore:input's size at dim")

_rng = np.random.default_rng(5)

# (factory(lib), input shape)
_CASES = {
    "linear": (lambda nn: nn.LazyLinear(4), (2, 3)),
    "linear_nobias_3d": (lambda nn: nn.LazyLinear(5, bias=False), (2, 3, 6)),
    "conv1d": (lambda nn: nn.LazyConv1d(4, 3, padding=1), (2, 3, 7)),
    "conv1d_unbatched": (lambda nn: nn.LazyConv1d(4, 3), (3, 7)),
    "conv2d_groups": (lambda nn: nn.LazyConv2d(4, 3, stride=2, groups=2), (2, 4, 6, 6)),
    "conv3d": (lambda nn: nn.LazyConv3d(2, 2, bias=False), (1, 2, 4, 4, 4)),
    "convt1d": (lambda nn: nn.LazyConvTranspose1d(3, 3, stride=2, output_padding=1), (2, 2, 5)),
    "convt2d": (lambda nn: nn.LazyConvTranspose2d(4, 3, groups=2), (1, 2, 4, 4)),
    "convt3d": (lambda nn: nn.LazyConvTranspose3d(2, 2), (1, 3, 3, 3, 3)),
    "bn1d": (lambda nn: nn.LazyBatchNorm1d(), (4, 5)),
    "bn1d_3d": (lambda nn: nn.LazyBatchNorm1d(momentum=None), (4, 3, 5)),
    "bn2d": (lambda nn: nn.LazyBatchNorm2d(affine=False), (2, 3, 4, 4)),
    "bn3d": (lambda nn: nn.LazyBatchNorm3d(track_running_stats=False), (2, 3, 2, 2, 2)),
    "in1d": (lambda nn: nn.LazyInstanceNorm1d(), (2, 3, 6)),
    "in2d": (
        lambda nn: nn.LazyInstanceNorm2d(affine=False, track_running_stats=False),
        (2, 3, 4, 4),
    ),
    "in3d": (lambda nn: nn.LazyInstanceNorm3d(), (2, 3, 2, 3, 2)),
}


def _sd_summary(sd):
    return [
        (k, repr(v) if "Uninitialized" in type(v).__name__ else tuple(v.shape))
        for k, v in sd.items()
    ]


@pytest.mark.parametrize("name", list(_CASES))
def test_lazy_module_lifecycle(name):
    make, shape = _CASES[name]
    x = _rng.standard_normal(shape).astype(np.float32)
    tm, em = make(torch.nn), make(ember.nn)
    # before the first forward: repr, class, state dict, uninitialised parameters
    assert repr(em) == repr(tm)
    assert type(em).__name__ == type(tm).__name__
    assert em.has_uninitialized_params() == tm.has_uninitialized_params()
    assert _sd_summary(em.state_dict()) == _sd_summary(tm.state_dict())
    assert [repr(p) for p in em.parameters()] == [repr(p) for p in tm.parameters()]
    # an uninitialised lazy module loads an initialised state dict, then runs as torch's
    src = make(torch.nn)
    src(torch.from_numpy(x))
    tsd = src.state_dict()
    tm.load_state_dict(tsd)
    sd = {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tsd.items()}
    em.load_state_dict(sd)
    assert not em.has_uninitialized_params()
    assert type(em).__name__.startswith("Lazy")  # the class changes at the first forward
    tm.eval()
    em.eval()
    try:
        ty = tm(torch.from_numpy(x))
    except ValueError:  # affine lazy instance norms keep num_features 0 after a load, in torch
        with pytest.raises(ValueError, match="to match num_features"):
            em(ember.from_numpy(x))
        return
    ey = em(ember.from_numpy(x))
    assert type(em) is getattr(ember.nn, type(tm).__name__)
    assert repr(em) == repr(tm)
    assert_same(ey, ty.detach(), atol=1e-5, rtol=1e-4)
    assert not hasattr(em, "_initialize_hook") and not hasattr(em, "_load_hook")
    for (ek, ev), (tk, tv) in zip(em.state_dict().items(), tm.state_dict().items()):
        assert ek == tk and type(ev).__name__ == type(tv).__name__
        assert_same(ev, tv, atol=1e-5, rtol=1e-4)
    assert [type(p).__name__ for p in em.parameters()] == [
        type(p).__name__ for p in tm.parameters()
    ]


@pytest.mark.parametrize("name", list(_CASES))
def test_lazy_first_forward_initialises(name):
    make, shape = _CASES[name]
    x = _rng.standard_normal(shape).astype(np.float32)
    tm, em = make(torch.nn), make(ember.nn)
    ty, ey = tm(torch.from_numpy(x)), em(ember.tensor(x, requires_grad=True))
    assert tuple(ey.shape) == tuple(ty.shape)
    assert type(em).__name__ == type(tm).__name__
    assert repr(em) == repr(tm)
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in tm.state_dict().items()
    ]
    ey.sum().backward()
    assert all(p.grad is not None for p in em.parameters())


def test_lazy_linear_initialisation_distribution():
    # reset_parameters runs after materialising: kaiming-uniform bounds of the inferred fan-in
    m = ember.nn.LazyLinear(200)
    m(ember.randn(1, 50))
    bound = 1 / np.sqrt(50)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound + 1e-7 and np.abs(w).max() > 0.9 * bound


def test_uninitialized_parameter_behaviour():
    for lib in (torch, ember):
        m = lib.nn.LazyLinear(3)
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
            _ = m.weight.shape
        assert repr(m.weight) == "<UninitializedParameter>"
        assert m.weight.requires_grad and m.weight.dtype == lib.float32
        assert tuple(m.weight.size()) == (0,)
        with pytest.raises(RuntimeError, match="Can't share memory"):
            m.weight.share_memory_()
        lib.optim.SGD(m.parameters(), lr=0.1)  # allowed on uninitialised parameters
        m2 = copy.deepcopy(m)
        assert type(m2).__name__ == "LazyLinear"
        assert type(m2.weight).__name__ == "UninitializedParameter"
        m3 = lib.nn.LazyLinear(3).double()
        assert type(m3.weight).__name__ == "UninitializedParameter"
        m3(lib.zeros(2, 4, dtype=lib.float64))
        assert m3.weight.dtype == lib.float64
        buf = lib.nn.parameter.UninitializedBuffer()
        assert repr(buf) == "<UninitializedBuffer>" and not buf.requires_grad
        buf.materialize((2, 3))
        assert type(buf) is lib.Tensor and tuple(buf.shape) == (2, 3)
        p = lib.nn.UninitializedParameter()
        p.materialize((4,), dtype=lib.float64)
        assert type(p) is lib.nn.Parameter and p.dtype == lib.float64


def test_lazy_buffer_dtype_follows_module():
    for lib in (torch, ember):
        m = lib.nn.LazyBatchNorm1d().double()
        assert type(m.running_mean).__name__ == "UninitializedBuffer"
        m(lib.randn(4, 3, dtype=lib.float64))
        assert m.running_mean.dtype == lib.float64


def test_initialize_parameters_directly():
    for lib in (torch, ember):
        m = lib.nn.LazyLinear(3)
        m.initialize_parameters(lib.randn(2, 5))
        assert type(m).__name__ == "LazyLinear" and m.in_features == 5
        assert not m.has_uninitialized_params()
        assert repr(m) == "LazyLinear(in_features=5, out_features=3, bias=True)"
        m(lib.randn(2, 5))
        assert type(m).__name__ == "Linear"


def test_lazy_errors():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.LazyConv2d(4, 3, groups=2)(lib.randn(1, 3, 5, 5))
        with pytest.raises(RuntimeError) as e:
            lib.nn.LazyConv2d(4, 3)(lib.randn(5, 5))
        assert str(e.value).startswith(
            "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d"
        )
        with pytest.raises(RuntimeError, match="Can't access the shape"):
            lib.nn.Linear(3, 4).load_state_dict(lib.nn.LazyLinear(4).state_dict())


def test_lazy_in_sequential_repr_and_no_warning():
    outs = []
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            nn = lib.nn
            net = nn.Sequential(nn.LazyConv2d(4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
        before = repr(net)
        net(lib.randn(2, 3, 6, 6))
        outs.append((before, repr(net), [tuple(p.shape) for p in net.parameters()]))
    assert outs[0] == outs[1]


def test_load_uninitialized_into_uninitialized():
    for lib in (torch, ember):
        m = lib.nn.LazyLinear(3)
        result = m.load_state_dict(lib.nn.LazyLinear(3).state_dict())
        assert not result.missing_keys and not result.unexpected_keys
        assert m.has_uninitialized_params() and type(m.weight).__name__ == "UninitializedParameter"
        b = lib.nn.LazyBatchNorm1d()
        b.load_state_dict(lib.nn.BatchNorm1d(4).state_dict())
        assert not b.has_uninitialized_params() and type(b.running_mean) is lib.Tensor
        assert repr(b).startswith("LazyBatchNorm1d(0,")


def test_deepcopy_of_uninitialized_module_initialises_independently():
    for lib in (torch, ember):
        m = lib.nn.LazyLinear(3)
        m2 = copy.deepcopy(m)
        m2(lib.randn(2, 4))
        m2(lib.randn(2, 4))
        assert type(m2).__name__ == "Linear" and not m2._forward_pre_hooks
        assert type(m).__name__ == "LazyLinear" and len(m._forward_pre_hooks) == 1
        m(lib.randn(2, 5))
        assert type(m).__name__ == "Linear" and m.in_features == 5 and m2.in_features == 4


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.nn.LazyLinear(3, dtype=lib.float64),
        lambda lib: lib.nn.LazyConv1d(2, 3, dtype=lib.float64),
        lambda lib: lib.nn.LazyBatchNorm1d(dtype=lib.float64),
    ],
)
def test_lazy_factory_dtype(make):
    for lib in (torch, ember):
        m = make(lib)
        assert all(p.dtype == lib.float64 for p in m.parameters())
        m(lib.randn(2, 4, 5, dtype=lib.float64))
        assert all(p.dtype == lib.float64 for p in m.parameters())
        assert all(b.dtype in (lib.float64, lib.long) for b in m.buffers())


@pytest.mark.parametrize(
    "make,shape",
    [(lambda nn: nn.LazyLinear(3), (2, 4)), (lambda nn: nn.LazyBatchNorm2d(), (2, 3, 2, 2))],
)
def test_pickle_uninitialized_module(make, shape):
    import pickle

    for lib in (torch, ember):
        m = pickle.loads(pickle.dumps(make(lib.nn)))
        assert m.has_uninitialized_params()
        assert all(type(p).__name__ == "UninitializedParameter" for p in m.parameters())
        m(lib.randn(*shape))
        assert not type(m).__name__.startswith("Lazy") and not m._forward_pre_hooks
        assert not m._load_state_dict_pre_hooks
