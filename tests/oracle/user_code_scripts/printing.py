# ruff: noqa  (tutorial-style user code, kept as users write it)
import torch

print(torch.arange(2000).reshape(40, 50).float() / 7)
print(torch.arange(2000))
print(torch.tensor([1e-10, 1.0, 1e10]))
print(torch.tensor([float("nan"), float("inf"), -float("inf"), 1.5]))
print(torch.tensor([1 + 2j, 3 - 4j]))
print(torch.tensor([True, False]))
print(torch.tensor([[1, -2], [100, 4]], dtype=torch.int8))
print(torch.zeros(2, 0), torch.zeros(0), torch.zeros(2, 0, 3))
print(
    torch.tensor([0.1, 0.25], dtype=torch.float16), torch.tensor([0.1, 0.25], dtype=torch.bfloat16)
)
print(torch.ones(2, 3, 4))
print(torch.tensor(1e-8), torch.tensor(123456789.0), torch.tensor(-0.0))
print(torch.tensor([1.0, 2.0]).to(torch.float64).requires_grad_())
torch.set_printoptions(precision=2)
print(torch.tensor([1.23456, 2.5]))
torch.set_printoptions(profile="full")
print(torch.arange(1200).reshape(2, 600)[:, :3])
torch.set_printoptions(profile="default")
torch.set_printoptions(sci_mode=False)
print(torch.tensor([1e-6, 1.0]))
torch.set_printoptions(sci_mode=None, precision=4)
x = torch.ones(3, requires_grad=True)
print(x * 2, (x * 2).sum(), x[0], x.view(3, 1)[1:])
print(torch.nn.Parameter(torch.zeros(2, 2)))
print(
    torch.tensor([1, 2]).dtype,
    torch.tensor([1.0]).dtype,
    torch.tensor([1, 2.0]).dtype,
    torch.tensor([True, 1]).dtype,
)
print(
    str(torch.float32),
    repr(torch.int64),
    torch.float32.is_floating_point,
    torch.finfo(torch.float32).eps,
    torch.iinfo(torch.int32).max,
)
print(torch.finfo(torch.float16))
print(torch.iinfo(torch.int8))
print(
    torch.device("cpu"),
    repr(torch.device("cpu")),
    torch.device("cpu", 0),
    torch.device("cuda:0"),
    torch.device("cuda:0").type,
    torch.device("cuda:1").index,
)
print(
    torch.ones(2).device == torch.device("cpu"),
    torch.ones(2).device == "cpu",
    torch.ones(2).is_cuda,
)
print(
    f"{torch.tensor(3.14159):.2f}", f"{torch.tensor(2)}", "{:.3f}".format(torch.tensor(1.0).item())
)
print(format(torch.tensor(2.5), ".1f"))
try:
    print(f"{torch.tensor([1.0, 2.0]):.2f}")
except TypeError as e:
    print("TypeError", e)
print(torch.ones(2, 2).numpy().dtype, torch.tensor(3).item(), torch.tensor([2.5]).item())
print(
    int(torch.tensor(3.7)),
    float(torch.tensor(2)),
    bool(torch.tensor(0)),
    torch.tensor(3).__index__(),
)
l = [1, 2, 3, 4]
print(l[torch.tensor(1)])
print(len(torch.zeros(5, 2)), list(torch.arange(3)), [t.item() for t in torch.arange(3)])
try:
    len(torch.tensor(1.0))
except TypeError as e:
    print("TypeError", e)
try:
    bool(torch.ones(2))
except RuntimeError as e:
    print("RuntimeError", e)
print(torch.tensor([[1.0, 2.0], [3.0, 4.0]]).numpy())
print(torch.get_default_dtype())
torch.set_default_dtype(torch.float64)
print(
    torch.tensor([1.0]).dtype,
    torch.ones(1).dtype,
    torch.arange(1.0, 3).dtype,
    torch.tensor(1).dtype,
)
torch.set_default_dtype(torch.float32)
print(
    torch.empty(2, 3).shape,
    torch.empty((2, 3)).shape,
    torch.Tensor(2, 3).shape,
    torch.Tensor([1, 2]),
    torch.FloatTensor([1, 2]),
    torch.LongTensor([1, 2]),
)
print(torch.Tensor().shape, torch.tensor([[1, 2]]).T)
print(
    torch.zeros(3).new_zeros(2),
    torch.zeros(3).new_full((2,), 3.0),
    torch.zeros(3).new_tensor([1, 2]),
    torch.zeros(3, dtype=torch.int).new_empty(2).dtype,
)
