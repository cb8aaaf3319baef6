# ruff: noqa: E501  (user code quoted verbatim)
"""User code found broken by probing with whole programs in the shape of pytorch.org's tutorials
and recipes (round 3), each fixed in ember: op-level cases compare with torch through the oracle
helper, snippets compare what a program prints under torch and ember."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.oracle._user_code import check_snippet, run_as_module
from tests.oracle.helper import check, rand, torch
from tests.printed import assert_same_printed

# ------------------------------------------------------------- spatial transformer networks

# the grid at the identity maps onto pixel centres: one ulp off an integer moves grid_sample's
# floor, so the grid's gradient (and an STN's training) follows torch only if the base grid is
# rounded as torch rounds it (linspace in theta's dtype, times (n - 1) / n)
_AFFINE = """
theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]).repeat(2, 1, 1)
scaled = torch.tensor([[[0.5, 0.0, 0.0], [0.0, 2.0, 0.0]], [[1.0, 0.0, 0.5], [0.0, -1.0, 0.0]]])
for t in (theta, scaled):
    for ac in (False, True):
        for size in ((2, 1, 28, 28), (2, 3, 5, 7), (2, 1, 1, 4)):
            print(F.affine_grid(t, size, align_corners=ac).tolist())
        print(F.affine_grid(t.double(), (2, 1, 6, 9), align_corners=ac).tolist())
"""


def test_affine_grid_rounds_as_torch():
    check_snippet(_AFFINE)


# grid points exactly on the border (-1 and 1 with align_corners=True): torch's
# clip_coordinates gives them no gradient, where clamp would pass it
_EDGE_GRID = np.array(
    [[[[-1.0, -1.0], [1.0, 0.25], [0.5, 1.0]], [[1.0, 1.0], [-0.3, -1.0], [1.2, -1.5]]]],
    dtype=np.float32,
)


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
def test_grid_sample_no_gradient_on_the_clip_bounds(padding_mode, align_corners):
    grid = _EDGE_GRID if align_corners else _EDGE_GRID * np.float32(4 / 3)
    check(
        lambda lib, x, g: lib.nn.functional.grid_sample(
            x, g, mode="bilinear", padding_mode=padding_mode, align_corners=align_corners
        ),
        [rand(1, 2, 4, 5), grid],
    )


# ----------------------------------------------------------------- double backward tutorial

_GRADGRADCHECK_RNG = """
torch.manual_seed(0)
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2
    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x
x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
print(torch.autograd.gradgradcheck(Square.apply, x))
print(torch.autograd.gradgradcheck(lambda a: (a.sin(), a.float().cos()), x))
print(torch.randn(3))
"""


def test_gradgradcheck_draws_grad_outputs_from_the_global_generator():
    # torch draws the random grad_outputs with make_tensor: later draws depend on it
    check_snippet(_GRADGRADCHECK_RNG)


# ------------------------------------------------------------------------ TorchScript intro

_JIT_INTRO = """
import os, tempfile
class MyDecisionGate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x
class MyCell(torch.nn.Module):
    def __init__(self, dg):
        super(MyCell, self).__init__()
        self.dg = dg
        self.linear = torch.nn.Linear(4, 4)
    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h
torch.manual_seed(0)
x, h = torch.rand(3, 4), torch.rand(3, 4)
traced_cell = torch.jit.trace(MyCell(MyDecisionGate()), (x, h))
print("aten::tanh" in str(traced_cell.graph), "tanh" in traced_cell.code)
print(traced_cell)
print(type(traced_cell).__name__, type(traced_cell.dg).__name__, type(traced_cell.linear).__name__)
print([n for n, _ in traced_cell.named_modules()], list(traced_cell.state_dict()))
print(traced_cell.eval().linear.training, traced_cell.train().dg.training)
scripted_gate = torch.jit.script(MyDecisionGate())
code = scripted_gate.code
print(type(code).__name__, "if" in code, "return" in code)
scripted_cell = torch.jit.script(MyCell(scripted_gate))
print(type(scripted_cell.code).__name__)
print(scripted_cell)
print(type(scripted_cell.dg).__name__, type(scripted_cell.linear).__name__)
@torch.jit.script
def foo(x, y):
    if x.max() > y.max():
        r = x
    else:
        r = y
    return r
print("if" in foo.code)
class MyRNNLoop(torch.nn.Module):
    def __init__(self):
        super(MyRNNLoop, self).__init__()
        self.cell = torch.jit.trace(MyCell(scripted_gate), (x, h))
    def forward(self, xs):
        h, y = torch.zeros(3, 4), torch.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h
class WrapRNN(torch.nn.Module):
    def __init__(self):
        super(WrapRNN, self).__init__()
        self.loop = torch.jit.script(MyRNNLoop())
    def forward(self, xs):
        y, h = self.loop(xs)
        return torch.relu(y)
traced = torch.jit.trace(WrapRNN(), (torch.rand(10, 3, 4)))
out = traced(torch.ones(10, 3, 4))
path = os.path.join(tempfile.mkdtemp(), "wrapped_rnn.pt")
traced.save(path)
loaded = torch.jit.load(path)
print(torch.equal(loaded(torch.ones(10, 3, 4)), out))
"""


def test_torchscript_intro(tmp_path):
    # scripted .code printed (ember shows the Python it runs), graph node kinds aten::,
    # and saving a module that holds a traced submodule. Run as a module file: scripting
    # needs the source of the classes
    outs = [run_as_module(lib, _JIT_INTRO, tmp_path) for lib in (torch, ember)]
    assert_same_printed(outs[1], outs[0])


# ------------------------------------------------------------------ forward-mode AD tutorial

_CUSTOM_JVP = """
import torch.autograd.forward_ad as fwAD
class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        ctx.result = result
        return result
    @staticmethod
    def jvp(ctx, gI):
        gO = gI * ctx.result
        del ctx.result
        return gO
fn = Fn.apply
torch.manual_seed(0)
primal = torch.randn(10, 10, dtype=torch.double, requires_grad=True)
tangent = torch.randn(10, 10)
with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn(dual_input)
    jvp = fwAD.unpack_dual(dual_output).tangent
    later = fwAD.unpack_dual(dual_output.sin() * 2).tangent
print(torch.allclose(jvp, tangent * primal.exp()), jvp.sum())
print(torch.allclose(later, 2 * dual_output.detach().cos() * jvp.detach()))
print(torch.autograd.gradcheck(Fn.apply, (primal,), check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False, check_batched_grad=False))
print(torch.autograd.gradcheck(lambda x: (x.sin() * x, x.exp()), (primal[:2, :3],), check_forward_ad=True))
class Wrong(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3
    @staticmethod
    def jvp(ctx, gI):
        return gI * 2
print(torch.autograd.gradcheck(Wrong.apply, (primal[:1, :2],), check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False, raise_exception=False))
class MyMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_forward(x, y)
        return x * y, x + y
    @staticmethod
    def jvp(ctx, xt, yt):
        x, y = ctx.saved_tensors
        return xt * y + x * yt, xt + yt
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(x, k):
        return x * k
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.k = inputs[1]
    @staticmethod
    def jvp(ctx, xt, _):
        return xt * ctx.k
x, y, t = torch.randn(3), torch.randn(3), torch.randn(3)
with fwAD.dual_level():
    dx = fwAD.make_dual(x, t)
    a, b = MyMul.apply(dx, y)
    print(fwAD.unpack_dual(a).tangent, fwAD.unpack_dual(b).tangent)
    c = Scale.apply(dx, 3.0)
    print(fwAD.unpack_dual(c).tangent, fwAD.unpack_dual(c * c).tangent)
"""


def test_custom_function_jvp_and_forward_ad_gradcheck():
    check_snippet(_CUSTOM_JVP)


_LINEARIZE = """
from torch.func import linearize, jvp
torch.manual_seed(0)
x, y = torch.randn(5), torch.randn(5)
f = lambda a, b: (a.sin() * b, a + b)
out, jvp_fn = linearize(f, x, y)
print(out)
t1, t2 = torch.randn(5), torch.randn(5)
print(jvp_fn(t1, t2))
print(all(torch.allclose(a, b) for a, b in zip(jvp_fn(t1, t2), jvp(f, (x, y), (t1, t2))[1])))
try:
    jvp_fn(torch.ones(4), t2)
except RuntimeError as e:
    print("RuntimeError", e)
"""


def test_func_linearize():
    check_snippet(_LINEARIZE)


# -------------------------------------------------- Jacobians, Hessians, hvp, vhp tutorial

_FORWARD_STRATEGY = """
from torch.autograd.functional import jacobian, hessian
torch.manual_seed(0)
x, y = torch.rand(2), torch.rand(2)
exp_adder = lambda x, y: 2 * x.exp() + 3 * y
print(jacobian(exp_adder, (x, y), vectorize=True, strategy="forward-mode"))
print(jacobian(lambda x: x.exp(), x, vectorize=True, strategy="forward-mode"))
print(jacobian(lambda x: (x.exp(), x * 2), x, vectorize=True, strategy="forward-mode"))
print(jacobian(lambda x, y: (x * y, x + y), (x, y), vectorize=True, strategy="forward-mode"))
print(hessian(lambda x: x.pow(3).sum(), x, vectorize=True, outer_jacobian_strategy="forward-mode").detach())
for bad in (dict(), dict(create_graph=True, vectorize=True)):
    try:
        jacobian(exp_adder, (x, y), strategy="forward-mode", **bad)
    except NotImplementedError as e:
        print("NotImplementedError", e)
"""


def test_autograd_functional_forward_mode_strategy():
    check_snippet(_FORWARD_STRATEGY)


# ------------------------------------------------------------ channels last memory format

_TO_MEMORY_FORMAT = """
x = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
print(x.stride(), x.is_contiguous(memory_format=torch.channels_last))
y = x.to(memory_format=torch.contiguous_format)
print(y.stride(), y is x, y.is_contiguous())
cases = [x, torch.randn(3, 4).t(), torch.randn(2, 3, 4, 5), torch.empty(2, 3, 4, 6).to(memory_format=torch.channels_last)[..., ::2], torch.empty(2, 3, 4, 5).permute(0, 2, 3, 1), torch.empty(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d)]
for t in cases:
    for fmt in (torch.contiguous_format, torch.channels_last, torch.preserve_format):
        try:
            r = t.to(memory_format=fmt)
            print(r is t, r.stride())
        except RuntimeError as e:
            print("RuntimeError", e)
    print(t.to(torch.float64, memory_format=torch.contiguous_format).stride())
g = torch.randn(2, 3, 4, 5, requires_grad=True).to(memory_format=torch.channels_last)
h = g.to(memory_format=torch.contiguous_format)
print(h.grad_fn, h.stride())
"""


def test_to_contiguous_format_undoes_channels_last():
    check_snippet(_TO_MEMORY_FORMAT)


# ----------------------------------------------------------------------- module hooks recipe

_FULL_BACKWARD_HOOK_WARNING = """
import warnings
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
model[0].register_full_backward_hook(lambda m, gin, gout: print("hook", gin, [g.shape for g in gout]))
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    model(torch.randn(2, 3)).sum().backward()
print([(x.category.__name__, x.filename) for x in w])
"""


def test_full_backward_hook_warning_points_at_the_users_backward_call():
    check_snippet(_FULL_BACKWARD_HOOK_WARNING)


# ------------------------------------------------------ model ensembling / per-sample grads

_VMAP_RANDOMNESS = """
from torch.func import vmap, functional_call, replace_all_batch_norm_modules_
torch.manual_seed(0)
rnd = lambda a: a + torch.rand(2)
for mode in ("same", "different"):
    print(mode, vmap(rnd, randomness=mode)(torch.zeros(3, 2)), torch.rand(1))
for f in (lambda: vmap(rnd)(torch.zeros(3, 2)), lambda: vmap(nn.Dropout(0.5))(torch.ones(3, 4)), lambda: vmap(rnd, randomness="x")):
    try:
        f()
    except RuntimeError as e:
        print("RuntimeError", e)
print(torch.rand(1))
print(vmap(nn.Dropout(0.5).eval())(torch.ones(2, 3)))
model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
print(replace_all_batch_norm_modules_(model) is model, model[1].running_mean, model[1].running_var, model[1].num_batches_tracked, model[1].track_running_stats)
print(list(model.state_dict()))
print(vmap(lambda x: model(x.unsqueeze(0)).sum())(torch.randn(5, 3)).shape)
"""


def test_vmap_randomness_and_batch_norm_without_running_stats():
    check_snippet(_VMAP_RANDOMNESS)


# -------------------------------------- fusing convolution and batch norm (custom Function)

_CONV_GRADS = {
    "conv1d": ((2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    "conv2d": ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=(2, 1), padding=1, dilation=(1, 2))),
    "conv3d": ((1, 2, 5, 4, 4), (3, 2, 2, 3, 2), dict(stride=1, padding=(1, 0, 1))),
}


@pytest.mark.parametrize("name", sorted(_CONV_GRADS))
def test_nn_grad_conv_input_and_weight(name):
    import importlib

    x_shape, w_shape, kw = _CONV_GRADS[name]
    from tests.oracle.helper import torch as T

    out_shape = getattr(T.nn.functional, name)(T.zeros(x_shape), T.zeros(w_shape), **kw).shape

    def grads(lib, x, w, go):
        g = importlib.import_module(lib.__name__ + ".nn.grad")
        return (
            getattr(g, f"{name}_input")(x.shape, w, go, **kw),
            getattr(g, f"{name}_weight")(x, w.shape, go, **kw),
        )

    check(grads, [rand(*x_shape), rand(*w_shape), rand(*out_shape)], grad_fn=False, atol=1e-5)
