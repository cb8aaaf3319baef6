# ruff: noqa  (tutorial-style user code, kept as users write it)
import torch


def det_init(model, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(
                torch.sin(torch.arange(p.numel(), dtype=p.dtype) * (0.37 + i)).reshape(p.shape)
                * scale
            )


def det_data(*shape, k=0.013):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=torch.float32) * k + 0.5).reshape(shape)
