"""The autograd walk-through of PyTorch's tutorials, run on ember.

    python examples/autograd_walkthrough.py

It follows "Automatic differentiation with torch.autograd" and "A gentle introduction to
torch.autograd": tensors that require grad, the grad_fn of results, backward with a vector
argument, gradients that accumulate until zeroed, no_grad / detach / .data / requires_grad_(),
a custom autograd.Function with its own backward, gradcheck and a Jacobian. It is written as
PyTorch code; replace the import below with ``import torch`` and it prints exactly the same
(tests/test_example_autograd_walkthrough.py checks that). Inputs are fixed numbers, not random
draws: ember's random numbers are not torch's.
"""

import ember as torch

print("== 1. tensors that require grad, and the grad_fn of results ==")
x = torch.ones(5)  # input
y = torch.zeros(3)  # expected output
w = torch.linspace(-1.0, 1.0, 15).reshape(5, 3).requires_grad_()
b = torch.tensor([0.1, -0.2, 0.3], requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print("z =", z)
print("loss =", loss)
print("grad_fn of z:", z.grad_fn.name())
print("grad_fn of loss:", loss.grad_fn.name())
# type(f).__name__ rather than f.name(): torch names the leaf node
# "torch::autograd::AccumulateGrad", ember "AccumulateGrad"
print(
    "next_functions of z's grad_fn:", [(type(f).__name__, i) for f, i in z.grad_fn.next_functions]
)
print("leaves:", w.is_leaf, b.is_leaf, "| z is a leaf:", z.is_leaf)
z.retain_grad()  # keep the gradient of this non-leaf too

print("\n== 2. backward() on a scalar loss ==")
loss.backward()
print("w.grad =", w.grad)
print("b.grad =", b.grad)
print("z.grad (retained) =", z.grad)

print("\n== 3. backward with a vector: Q = 3a^3 - b^2 ==")
a = torch.tensor([2.0, 3.0], requires_grad=True)
bb = torch.tensor([6.0, 4.0], requires_grad=True)
Q = 3 * a**3 - bb**2
print("Q =", Q)
external_grad = torch.tensor([1.0, 1.0])
Q.backward(gradient=external_grad)  # Q is not a scalar: pass dQ/dQ
print("a.grad == 9a^2:", 9 * a**2 == a.grad)
print("bb.grad == -2bb:", -2 * bb == bb.grad)

v = torch.tensor([0.1, 1.0, 0.0001])
xs = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
ys = xs * 2
while ys.data.norm() < 1000:
    ys = ys * 2
print("ys =", ys)
ys.backward(v)  # the vector-Jacobian product v^T J
print("xs.grad =", xs.grad)

print("\n== 4. gradients accumulate until they are zeroed ==")
inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")

print("\n== 5. turning tracking off: no_grad, detach, .data, requires_grad_() ==")
z = torch.matmul(x, w) + b
print("z.requires_grad:", z.requires_grad)
with torch.no_grad():
    z = torch.matmul(x, w) + b
print("under no_grad:", z.requires_grad)
z = torch.matmul(x, w) + b
z_det = z.detach()
print("detached:", z_det.requires_grad, "| shares storage:", z_det.data_ptr() == z.data_ptr())
print("w.data:", w.data.requires_grad, w.data.shape)
print("torch.is_grad_enabled():", torch.is_grad_enabled())

frozen = torch.tensor([1.0, 2.0, 3.0])
print("before requires_grad_():", frozen.requires_grad)
frozen.requires_grad_()
(frozen * frozen).sum().backward()
print("after, d(sum x^2)/dx =", frozen.grad)


print("\n== 6. a custom autograd.Function ==")


class Exp(torch.autograd.Function):
    """exp(x), whose backward reuses the saved output: d exp(x)/dx = exp(x)."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class MyClamp(torch.autograd.Function):
    """clamp(x, lo, hi) with a hand-written backward: the gradient passes where lo < x < hi."""

    @staticmethod
    def forward(ctx, i, lo, hi):
        ctx.save_for_backward(i)
        ctx.lo, ctx.hi = lo, hi
        return i.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad_output):
        (i,) = ctx.saved_tensors
        inside = (i > ctx.lo) & (i < ctx.hi)
        return grad_output * inside, None, None  # no gradient for lo and hi


t = torch.tensor([-1.0, 0.0, 0.5, 2.0], requires_grad=True)
e = Exp.apply(t)
print("Exp.apply(t) =", e)
print("its grad_fn:", e.grad_fn.name())
e.sum().backward()
print("t.grad (= exp(t)) =", t.grad)
t.grad = None
c = MyClamp.apply(t, -0.5, 1.0)
print("MyClamp.apply(t, -0.5, 1.0) =", c)
c.backward(torch.tensor([1.0, 2.0, 3.0, 4.0]))
print("t.grad =", t.grad)

print("\n== 7. gradcheck (float64) ==")
t64 = torch.tensor([[-1.5, 0.25, 0.7], [1.1, -0.3, 2.0]], dtype=torch.float64, requires_grad=True)
print("gradcheck(Exp.apply):", torch.autograd.gradcheck(Exp.apply, (t64,), eps=1e-6, atol=1e-4))
print(
    "gradcheck(MyClamp.apply):",
    torch.autograd.gradcheck(lambda u: MyClamp.apply(u, -1.0, 1.0), (t64,)),
)
print("gradgradcheck(torch.tanh):", torch.autograd.gradgradcheck(torch.tanh, (t64,)))

print("\n== 8. a Jacobian and higher-order gradients ==")


W = torch.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]])


def f(u):
    return W @ u.sin() + u[0] * u[2]


point = torch.tensor([1.0, 2.0, 3.0])
jac = torch.autograd.functional.jacobian(f, point)
print("jacobian of f at", point, "=")
print(jac)
s = torch.tensor(2.0, requires_grad=True)
(ds,) = torch.autograd.grad(s**3, s, create_graph=True)
(d2s,) = torch.autograd.grad(ds, s)
print("d(s^3)/ds at 2 =", ds, "| second derivative =", d2s)
