# ruff: noqa  (tutorial-style user code, kept as users write it)
import torch

target_transform = lambda y: torch.zeros(10, dtype=torch.float).scatter_(
    0, torch.tensor(y), value=1
)
print(target_transform(3))
print(torch.zeros(3, 4).scatter_(1, torch.tensor([[1], [2], [0]]), value=2.5))
print(torch.zeros(3, 4).scatter(1, torch.tensor([[1], [2], [0]]), 7))
print(torch.zeros(3).scatter_(0, torch.tensor([1, 1]), torch.tensor([1.0, 2.0]), reduce="add"))
print(torch.zeros(3).scatter_(0, torch.tensor([1, 2]), 3.0, reduce="multiply"))
import numpy as np

img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(3, 3, 2)
t = torch.from_numpy(img).permute(2, 0, 1).float().div(255)
print(t.shape, t[0, 0])
mean = torch.tensor([0.5, 0.5]).view(-1, 1, 1)
std = torch.tensor([0.25, 0.25]).view(-1, 1, 1)
print(((t - mean) / std)[1, 1])
print(torch.flip(t, dims=[2])[0, 0], t.transpose(1, 2).contiguous().shape)
print(
    torch.nn.functional.interpolate(
        t.unsqueeze(0), size=(4, 4), mode="bilinear", align_corners=False
    )[0, 0, 0]
)
print(torch.nn.functional.interpolate(t.unsqueeze(0), scale_factor=2, mode="nearest").shape)
print(
    torch.nn.functional.pad(t, (1, 1, 1, 1), mode="reflect").shape,
    torch.nn.functional.pad(t, (1, 1), mode="replicate").shape,
)
print(t.clamp(0.02, 0.05)[0])
print(
    torch.nn.functional.avg_pool2d(t.unsqueeze(0), 2).shape,
    torch.nn.functional.adaptive_avg_pool2d(t.unsqueeze(0), (1, 1)).flatten(),
)
print(torch.nn.functional.one_hot(torch.tensor(3), 5), torch.eye(5)[torch.tensor([1, 3])])
x = torch.arange(12.0).reshape(3, 4)
print(
    x.unfold(1, 2, 1).shape,
    torch.nn.functional.unfold(t.unsqueeze(0), 2).shape,
    torch.nn.functional.fold(torch.nn.functional.unfold(t.unsqueeze(0), 2), (3, 3), 2).shape,
)
print(torch.nn.functional.pixel_shuffle(torch.arange(16.0).view(1, 4, 2, 2), 2).shape)
print(
    torch.nn.functional.grid_sample(t.unsqueeze(0), torch.zeros(1, 2, 2, 2), align_corners=True)[
        0, :, 0, 0
    ]
)
print(torch.from_numpy(np.ascontiguousarray(img[::-1])).shape)
try:
    torch.from_numpy(img[::-1])
except ValueError as e:
    print("ValueError", str(e)[:60])
print(torch.tensor(img).dtype, torch.as_tensor(img).float().mean())
