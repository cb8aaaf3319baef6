"""einops' README: rearrange/reduce/repeat/pack/einsum on torch tensors, and its torch layers."""

import torch
from einops import einsum, pack, rearrange, reduce, repeat, unpack
from einops.layers.torch import EinMix, Rearrange, Reduce

x = torch.randn(2, 3, 4, 6)
assert rearrange(x, "b c h w -> b (c h w)").shape == (2, 72)
assert torch.equal(rearrange(x, "b c h w -> b h w c"), x.permute(0, 2, 3, 1))
pooled = reduce(x, "b c (h h2) (w w2) -> b c h w", "max", h2=2, w2=2)
assert torch.equal(pooled, torch.nn.functional.max_pool2d(x, 2))
assert repeat(x, "b c h w -> b c h w k", k=2).shape == (2, 3, 4, 6, 2)
packed, ps = pack([x, torch.randn(2, 5)], "b *")
assert packed.shape == (2, 77)
a, b = unpack(packed, ps, "b *")
assert torch.equal(a, x)
m, n = torch.randn(3, 4), torch.randn(4, 5)
assert torch.allclose(einsum(m, n, "i j, j k -> i k"), m @ n)

model = torch.nn.Sequential(
    Rearrange("b c h w -> b (c h w)"),
    torch.nn.Linear(72, 8),
    EinMix("b n -> b k", weight_shape="n k", n=8, k=4),
    Reduce("b k -> k", "mean"),
)
out = model(x)
out.sum().backward()
assert out.shape == (4,) and model[1].weight.grad is not None
print("einops ok")
