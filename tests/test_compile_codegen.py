"""ember.compile's code generator: pointwise fusion, the buffer plan, double backward.

Compiled equals eager bit for bit (the same NumPy kernels in the same order); the printed
source shows the fused kernels and the reused buffers."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember


def _x(*shape, dtype=np.float32, seed=0, grad=False):
    t = ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))
    return t.requires_grad_() if grad else t


def _bit_equal(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.detach().numpy(), b.detach().numpy(), equal_nan=True)


PROGRAMS = [
    lambda x, y: ((x * y + 1.0).sin() * x - y) / 2,
    lambda x, y: (x - y).exp().log1p().neg().abs() * 3,
    lambda x, y: (x * 1.01 + 0.1).cos().tanh() * (y.abs().sqrt() + 2),
    lambda x, y: (x[0] * y + x).sigmoid() - x.reciprocal(),  # a broadcast operand
    lambda x, y: (x * 2).relu() + (y * 3).relu(),  # two runs meeting
    lambda x, y: x.t() * y.t() + 1,  # views in, a view's buffer never reused
    lambda x, y: (x + y).mul_(2).add_(1).sin(),  # in-place ops inside the chain
    lambda x, y: (x.to(ember.float64) * y + 1).sin(),  # a promotion, then float64 pointwise
    lambda x, y: ((x > 0) * y + 2) * 0.5,  # bool times float
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", range(len(PROGRAMS)))
def test_fused_programs_bit_equal_values_and_grads(k, dtype):
    fn = PROGRAMS[k]
    g = ember.compile(fn)
    for seed in range(2):
        x, y = _x(4, 4, dtype=dtype, seed=seed), _x(4, 4, dtype=dtype, seed=seed + 9)
        with ember.no_grad():
            _bit_equal(g(x, y), fn(x, y))
        x1, y1 = x.clone().requires_grad_(), y.clone().requires_grad_()
        x2, y2 = x.clone().requires_grad_(), y.clone().requires_grad_()
        got, want = g(x1, y1), fn(x2, y2)
        _bit_equal(got, want)
        got.sum().backward()
        want.sum().backward()
        for a, b in ((x1, x2), (y1, y2)):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                _bit_equal(a.grad, b.grad)
    for e in g._ember_compiled.entries:
        assert e.failure is None


def test_a_chain_is_one_fused_kernel_in_one_buffer():
    def f(x):
        for _ in range(5):
            x = (x * 1.01 + 0.1).sin() - 0.05
        return x.sum()

    g = ember.compile(f)
    x = _x(8, 8)
    with ember.no_grad():
        _bit_equal(g(x), f(x))
    src = g._ember_compiled.entries[0].source
    kernels = re.findall(r"^def (fused_\w+)\(", src, re.M)
    assert kernels == ["fused_mul_add_sin_sub_0"]
    body = src.split("\ndef forward")[0]
    assert body.count("np_multiply(") == 5 and body.count("np_sin(") == 5
    assert set(re.findall(r"_b\d+", src)) == {"_b0"}  # 20 results, one buffer, in place
    assert "np_add(v1, _z1, _b0)" in src  # the dying input's buffer takes the result
    fwd = src.split("\ndef forward")[1]
    assert fwd.count("fused_") == 1 and "sum" in fwd


def test_buffers_of_different_shapes_and_live_values_are_not_shared():
    def f(x, w):
        a = x * 2  # (4, 3), live until the end
        b = (w + 1) * 3  # (3,)
        c = (a - b).sin()
        return (c * a).sum()

    g = ember.compile(f)
    x, w = _x(4, 3), _x(3, seed=1)
    with ember.no_grad():
        _bit_equal(g(x, w), f(x, w))
    src = g._ember_compiled.entries[0].source
    assert len(set(re.findall(r"_b\d+", src))) == 3


@pytest.mark.filterwarnings("ignore:overflow encountered")  # (the shadow check's inputs)
def test_half_precision_keeps_its_float32_kernel():
    # float16 * a Python number computes in float32 in the op's kernel: 0 * 2**31 is 0
    def f(x):
        return (x * 2**31) * 0.5

    g = ember.compile(f)
    x = ember.zeros(3, dtype=ember.float16)
    with ember.no_grad():
        got = g(x)
    _bit_equal(got, f(x))
    assert not got.isnan().any() and g._ember_compiled.entries[0].failure is None


def test_no_re_promotion_of_known_dtypes():
    def f(x, y, i):
        # float64 + float32: NumPy's promotion is the op's, the ufunc converts y itself; an
        # int64 beside float32 is float32 in torch, float64 in NumPy: that cast stays
        return (x.double() + y) * 2, y + i

    g = ember.compile(f)
    x, y, i = _x(3), _x(3, seed=2), ember.arange(3)
    for a, b in zip(g(x, y, i), f(x, y, i)):
        _bit_equal(a, b)
    src = g._ember_compiled.entries[0].source
    assert src.count(".astype(") == 1 and "astype(_dt_float32)" in src


def test_steady_state_memory_is_flat():
    import tracemalloc

    g = ember.compile(lambda x: ((x * 2 + 1).sin() * x).sum())
    x = _x(64, 64, grad=True)
    for _ in range(5):
        g(x).backward()
    tracemalloc.start()
    try:
        first = None
        for i in range(100):
            x.grad = None
            g(x).backward()
            if i == 9:
                first = tracemalloc.get_traced_memory()[0]
        grown = tracemalloc.get_traced_memory()[0] - first
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, grown


# torch.compile's (AOT-autograd) graphs: create_graph=True gives first-order gradients with a
# ``CompiledFunctionBackwardBackward`` grad_fn, which refuses to run (torch 2.13, observed)
_DOUBLE = "torch.compile with aot_autograd does not currently support double backward"


def _double_backward(lib, compile_fn, x):
    def f(x):
        return (x.sin() * x).sum()

    g = compile_fn(f)
    g(x)  # (ember's first call is the capture: its graph is eager's)
    (gx,) = lib.autograd.grad(g(x), x, create_graph=True)
    with pytest.raises(RuntimeError) as info:
        lib.autograd.grad(gx.sum(), x)
    return gx, str(info.value)


def test_create_graph_through_compiled_backward():
    x = _x(5, dtype=np.float64, grad=True)
    gx, msg = _double_backward(ember, ember.compile, x)
    assert msg == _DOUBLE
    assert gx.requires_grad and gx.grad_fn.name() == "CompiledFunctionBackwardBackward"
    (want,) = ember.autograd.grad((x.sin() * x).sum(), x)
    _bit_equal(gx, want)
    # backward(create_graph=True) accumulates a differentiable .grad; running it refuses
    g = ember.compile(lambda x: (x * x).exp().sum())
    g(x)
    with warnings.catch_warnings():  # (the reference-cycle warning, once per process)
        warnings.simplefilter("ignore")
        g(x).backward(create_graph=True)
    assert x.grad.requires_grad
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        x.grad.sum().backward()
    x.grad = None
    # the eager backend differentiates twice, as torch's does
    h = ember.compile(lambda x: (x.sin() * x).sum(), backend="eager")
    h(x)
    (gx,) = ember.autograd.grad(h(x), x, create_graph=True)
    (gxx,) = ember.autograd.grad(gx.sum(), x)
    (ex,) = ember.autograd.grad((x.sin() * x).sum(), x, create_graph=True)
    _bit_equal(gxx, ember.autograd.grad(ex.sum(), x)[0])


@pytest.mark.slow
def test_create_graph_matches_torch_compile():
    torch = pytest.importorskip("torch")
    x = _x(5, dtype=np.float64, grad=True)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    gx, msg = _double_backward(ember, ember.compile, x)
    tgx, tmsg = _double_backward(torch, lambda f: torch.compile(f, backend="aot_eager"), tx)
    assert msg == tmsg and gx.grad_fn.name() == tgx.grad_fn.name()
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=1e-12)


def _lenetish(pad, stride, bias, pool_pad, ceil):
    ember.manual_seed(0)
    nn = ember.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=pad, stride=stride, bias=bias),  # per-sample GEMM
        nn.ReLU(),
        nn.MaxPool2d(2, padding=pool_pad, ceil_mode=ceil),
        nn.Conv2d(6, 8, 3, bias=bias),  # one GEMM over the folded batch
        nn.ReLU(),
        nn.MaxPool2d(3, stride=2),  # overlapping windows
        nn.Flatten(),
    )


@pytest.mark.parametrize(
    "pad, stride, bias, pool_pad, ceil",
    [(2, 1, True, 0, False), (0, 2, False, 1, False), (1, 1, True, 0, True)],
)
def test_conv_and_pool_kernels_bit_equal(pad, stride, bias, pool_pad, ceil):
    m = _lenetish(pad, stride, bias, pool_pad, ceil)
    c = ember.compile(m)
    for seed, n in ((0, 1), (1, 1), (2, 3)):
        x = _x(n, 1, 28, 28, seed=seed)
        with ember.no_grad():
            _bit_equal(c(x), m(x))
        # training: the indices are saved for the backward, the gradients equal eager's
        m.zero_grad()
        c(x).square().sum().backward()
        got = [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        m(x).square().sum().backward()
        for a, p in zip(got, m.parameters()):
            _bit_equal(a, p.grad)
    entries = c.forward.entries
    assert all(e.failure is None for e in entries)
    inference = [e.source for e in entries if "def backward" not in (e.backward_source or "")]
    src = inference[0]
    assert "np.copyto(_cpad0" in src and "np.copyto(_ccol1, _cwin1)" in src
    # values without indices, except where the pool pads (the indices kernel pads with -inf)
    assert src.count("(values)") == (1 if pool_pad else 2)
    assert "max_indices" in [e.source for e in entries if e.backward_source][0]


class _InPlaceParam(ember.nn.Module):
    # a parameter meets an in-place op inside the compiled graph (einops' EinMix adds its
    # bias with ``result += self.bias``)
    def __init__(self, mode):
        super().__init__()
        g = ember.Generator().manual_seed(0)
        self.mode = mode
        self.w = ember.nn.Parameter(ember.randn(4, 3, generator=g))
        self.b = ember.nn.Parameter(ember.randn(3, generator=g))

    def forward(self, x):
        y = x @ self.w
        if self.mode == "iadd":
            y += self.b
        elif self.mode in ("add_", "mul_", "sub_", "div_"):
            getattr(y, self.mode)(self.b)
        else:  # the parameter's side is written: its old value feeds the backward
            z = (self.b * 2).expand(y.shape).clone()
            getattr(z, self.mode[5:])(y)
            y = z
        return (y * y).sum()


@pytest.mark.parametrize("mode", ["iadd", "add_", "mul_", "sub_", "div_", "left_add_", "left_mul_"])
def test_in_place_op_with_a_parameter_trains_as_eager(mode):
    # every call's values and gradients equal eager's bit for bit, the parameters changing in
    # between: the backward reads this call's arrays, never the capture's
    me, mc = _InPlaceParam(mode), _InPlaceParam(mode)
    cm = ember.compile(mc, fullgraph=True)
    for i in range(3):
        x = ember.randn(5, 4, generator=ember.Generator().manual_seed(10 + i))
        le, lc = me(x), cm(x)
        le.backward()
        lc.backward()
        _bit_equal(le, lc)
        for pe, pc in zip(me.parameters(), mc.parameters()):
            _bit_equal(pe.grad, pc.grad)
        with ember.no_grad():
            for m in (me, mc):
                for p in m.parameters():
                    p -= 0.01 * p.grad
                    p.grad = None
