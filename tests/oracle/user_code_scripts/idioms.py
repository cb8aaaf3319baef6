# ruff: noqa  (tutorial-style user code, kept as users write it)
import torch
import torch.nn.functional as F

x = torch.arange(24.0).reshape(2, 3, 4)
print(torch.einsum("bij,bjk->bik", x, x.transpose(1, 2)))
print(
    torch.einsum("ii->i", torch.eye(3)),
    torch.einsum("i,j->ij", torch.arange(3.0), torch.arange(2.0)),
)
print(
    torch.einsum("...ij->...ji", x).shape, torch.einsum("bhqd,bhkd->bhqk", x[None], x[None]).shape
)
print(torch.einsum(x, [0, 1, 2], [0, 2]))
idx = torch.tensor([[0, 2], [1, 0]])
t = torch.tensor([[1, 2, 3], [4, 5, 6]])
print(torch.gather(t, 1, idx), t.gather(1, idx))
print(torch.zeros(3, 5).scatter_(0, torch.tensor([[0, 1, 2, 0, 0]]), 1.0))
print(torch.zeros(2, 4).scatter(1, torch.tensor([[1], [3]]), torch.ones(2, 1)))
print(torch.zeros(5).scatter_add_(0, torch.tensor([0, 1, 0, 4]), torch.ones(4)))
print(torch.zeros(5).index_add_(0, torch.tensor([0, 1, 0]), torch.tensor([1.0, 2.0, 3.0])))
print(
    torch.zeros(3).scatter_reduce(
        0, torch.tensor([0, 0, 2]), torch.tensor([1.0, 5.0, 2.0]), reduce="amax", include_self=False
    )
)
labels = torch.tensor([0, 2, 1])
print(F.one_hot(labels), F.one_hot(labels, num_classes=4).float())
print(torch.zeros(3, 4).scatter_(1, labels.unsqueeze(1), 1))
a = torch.arange(12).reshape(3, 4)
print(a[[0, 2]], a[:, [1, 3]], a[[0, 1], [1, 2]], a[a > 5], a[torch.tensor([True, False, True])])
print(a[None, :, None].shape, a[..., None].shape, a[1:, ::2], a[-1], a[:, -1])
a[a > 8] = 0
print(a)
a[0] = torch.tensor([9, 9, 9, 9])
print(a)
a[:, 1] += 100
print(a)
b = a.clone()
b[[0, 0], [1, 1]] = 5
print(b)
print(a.masked_fill(a > 50, -1), a.masked_select(a > 50), torch.masked_select(a, a < 3))
print(torch.nonzero(a > 50), (a > 50).nonzero(as_tuple=True), torch.argwhere(a == 0))
print(a.index_select(0, torch.tensor([2, 0])), torch.take(a, torch.tensor([0, 5])))
print(torch.where(a > 50))
print(
    a.unique(),
    torch.unique(a, return_counts=True),
    torch.unique(torch.tensor([3, 1, 3]), sorted=True, return_inverse=True),
)
print(
    a.flip(0),
    a.roll(1, 1),
    torch.rot90(a),
    a.repeat(2, 1).shape,
    a.expand(2, 3, 4).shape,
    a.unsqueeze(0).expand(2, -1, -1).shape,
)
print(
    torch.chunk(torch.arange(10), 3),
    torch.split(torch.arange(10), [3, 7]),
    torch.arange(10).split(4),
)
print(torch.tril(torch.ones(3, 3)), torch.triu(torch.ones(3, 3), diagonal=1))
mask = torch.triu(torch.ones(4, 4), diagonal=1).bool()
print(torch.zeros(4, 4).masked_fill(mask, float("-inf")))
print(
    torch.cumsum(torch.arange(5), 0),
    torch.cumprod(torch.arange(1.0, 5), 0),
    torch.diff(torch.tensor([1, 4, 9])),
)
print(
    torch.bmm(x, x.transpose(1, 2)).shape,
    torch.mm(x[0], x[0].T),
    torch.mv(x[0], torch.ones(4)),
    torch.dot(torch.ones(3), torch.ones(3)),
)
print(
    torch.outer(torch.arange(3.0), torch.arange(2.0)),
    torch.cross(torch.tensor([1.0, 0, 0]), torch.tensor([0.0, 1, 0]), dim=0),
)
print(
    torch.norm(torch.tensor([3.0, 4.0])),
    torch.linalg.norm(torch.tensor([[3.0, 4.0]]), dim=1),
    torch.tensor([3.0, 4.0]).norm(p=1),
)
print(
    F.normalize(torch.tensor([[3.0, 4.0]]), dim=1),
    F.cosine_similarity(torch.tensor([[1.0, 0]]), torch.tensor([[1.0, 1]])),
)
print(torch.cdist(torch.tensor([[0.0, 0], [1, 1]]), torch.tensor([[1.0, 0]])))
print(
    F.pad(torch.ones(2, 2), (1, 1)),
    F.pad(torch.ones(1, 1, 2, 2), (1, 0, 0, 1), mode="constant", value=2.0),
)
print(
    torch.clamp(torch.tensor([-2.0, 0.5, 3.0]), min=-1, max=1),
    torch.tensor([-2.0, 3.0]).clamp(min=0),
    torch.tensor([1.0, 2.0]).clip(0, 1.5),
)
print(torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij"))
print(torch.stack(torch.meshgrid(torch.arange(2), torch.arange(3), indexing="xy"), dim=-1).shape)
print(
    torch.bucketize(torch.tensor([0.5, 2.5]), torch.tensor([0.0, 1.0, 2.0, 3.0])),
    torch.searchsorted(torch.tensor([0.0, 1.0, 2.0]), torch.tensor([1.5])),
)
print(
    torch.histc(torch.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3),
    torch.bincount(torch.tensor([0, 1, 1, 3])),
)
print(
    torch.sort(torch.tensor([3.0, 1.0, 2.0]), descending=True),
    torch.argsort(torch.tensor([3, 1, 2])),
)
print(torch.topk(torch.tensor([1.0, 5.0, 3.0, 4.0]), k=2, largest=False))
print(
    torch.kthvalue(torch.tensor([1.0, 5.0, 3.0]), 2),
    torch.median(torch.tensor([1.0, 5.0, 3.0, 2.0])),
    torch.mode(torch.tensor([1, 1, 2])),
)
print(
    torch.std(torch.tensor([1.0, 2.0, 3.0, 4.0])),
    torch.var(torch.tensor([1.0, 2.0, 3.0, 4.0]), unbiased=False),
    torch.std_mean(torch.tensor([1.0, 2.0, 3.0])),
)
print(
    torch.tensor([[1.0, 2.0], [3.0, 4.0]]).mean(dim=0, keepdim=True),
    torch.tensor([[1, 2], [3, 4]]).sum(dim=(0, 1)),
    torch.tensor([[1.0, 2.0]]).prod(1),
)
print(
    torch.logsumexp(torch.tensor([1.0, 2.0, 3.0]), dim=0),
    torch.softmax(torch.tensor([1.0, 2.0]), dim=0),
    torch.tensor([1.0, 2.0]).log_softmax(0),
)
print(
    torch.allclose(torch.tensor([1.0]), torch.tensor([1.0 + 1e-9])),
    torch.equal(torch.ones(2), torch.ones(2)),
    torch.isclose(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1])),
)
print(
    torch.any(torch.tensor([False, True])),
    torch.all(torch.tensor([[True, False]]), dim=1),
    torch.tensor([1, 0]).any().item(),
)
print(
    torch.isnan(torch.tensor([float("nan"), 1.0])),
    torch.nan_to_num(torch.tensor([float("nan"), float("inf")])),
    torch.isfinite(torch.tensor([float("inf")])),
)
print(
    torch.sign(torch.tensor([-2.0, 0.0, 3.0])),
    torch.floor(torch.tensor([1.5, -1.5])),
    torch.ceil(torch.tensor([1.2])),
    torch.trunc(torch.tensor([-1.7])),
    torch.frac(torch.tensor([1.25])),
)
print(
    torch.tensor([5, 7]) // 2,
    torch.tensor([5, -7]) % 3,
    torch.tensor([5, 7]) / 2,
    torch.div(torch.tensor([5, -7]), 2, rounding_mode="floor"),
    torch.div(torch.tensor([5, -7]), 2, rounding_mode="trunc"),
)
print(
    torch.tensor([1, 2]) + 1.5,
    torch.tensor([1, 2]) * True,
    torch.tensor([True]) + torch.tensor([True]),
    2 ** torch.tensor([1, 2]),
    torch.tensor([2.0]) ** 0.5,
)
print(
    torch.max(torch.tensor([1, 5]), torch.tensor([3, 2])),
    torch.maximum(torch.tensor([1.0, 5.0]), torch.tensor(2.0)),
    torch.min(torch.tensor([[4, 2], [1, 3]]), dim=0),
)
print(
    torch.flatten(torch.zeros(2, 3, 4), start_dim=1).shape,
    torch.zeros(2, 3, 4).view(2, -1).shape,
    torch.zeros(2, 3, 4).reshape(-1).shape,
    torch.zeros(6).view(2, 3).t().is_contiguous(),
)
try:
    torch.zeros(2, 3).t().view(6)
except RuntimeError as e:
    print("RuntimeError", e)
try:
    torch.ones(2, 3) @ torch.ones(2, 3)
except RuntimeError as e:
    print("RuntimeError", e)
try:
    torch.ones(2, 3) + torch.ones(3, 2)
except RuntimeError as e:
    print("RuntimeError", e)
try:
    torch.ones(3)[5]
except IndexError as e:
    print("IndexError", e)
try:
    torch.cat([torch.ones(2, 3), torch.ones(2, 4)])
except RuntimeError as e:
    print("RuntimeError", e)
try:
    torch.ones(2, 3).view(4, 2)
except RuntimeError as e:
    print("RuntimeError", e)
try:
    F.cross_entropy(torch.ones(2, 3), torch.tensor([0, 3]))
except IndexError as e:
    print("IndexError", e)
try:
    torch.nn.Linear(3, 2)(torch.ones(4, 5))
except RuntimeError as e:
    print("RuntimeError", e)
try:
    torch.ones(2, dtype=torch.long).mean()
except RuntimeError as e:
    print("RuntimeError", e)
try:
    torch.ones(2).numpy() if False else torch.ones(2, requires_grad=True).numpy()
except RuntimeError as e:
    print("RuntimeError", e)
try:
    torch.tensor([1, 2]).float().requires_grad_().long().requires_grad_()
except RuntimeError as e:
    print("RuntimeError", e)
