"""A tour of ember's foundation: tensors, views, autograd. Run: python examples/autograd_demo.py

Written exactly as PyTorch code; only the import differs.
"""

import ember as torch

torch.manual_seed(0)

print("== tensors and dtypes ==")
x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
print(x)
print("int64 + float32 ->", (torch.tensor([1, 2]) + torch.tensor([0.5, 0.5])).dtype)
print("int / int       ->", (torch.tensor([1, 2]) / 2).dtype)

print("\n== views share storage ==")
base = torch.zeros(2, 3)
row = base[1]
row[:] = 7.0
print(base)
print("row is a view:", row._base is base)
print("strides of base.t():", base.t().stride(), "| version of base:", base._version)

print("\n== autograd ==")
w = torch.randn(3, 2, requires_grad=True)
b = torch.zeros(2, requires_grad=True)
inp = torch.randn(4, 3)
out = (inp @ w + b).tanh()
loss = (out * out).mean()
print("loss:", loss)
print("grad_fn chain:", loss.grad_fn.name(), "<-", loss.grad_fn.next_functions[0][0].name())
loss.backward()
print("dloss/dw:\n", w.grad)
print("dloss/db:", b.grad)

print("\n== higher order ==")
t = torch.tensor(2.0, requires_grad=True)
y = t**3
(dy,) = torch.autograd.grad(y, t, create_graph=True)
(d2y,) = torch.autograd.grad(dy, t)
print(f"y = t^3 at t=2: dy/dt = {dy.item():.1f}, d2y/dt2 = {d2y.item():.1f}")

print("\n== no_grad ==")
with torch.no_grad():
    z = w * 2
print("z.requires_grad under no_grad:", z.requires_grad)
