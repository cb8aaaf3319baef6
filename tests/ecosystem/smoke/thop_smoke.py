"""thop's README: profile() counts MACs and parameters; clever_format prints them."""

import torch
from _models import CNN, cnn_macs
from thop import clever_format, profile

model = CNN()
macs, params = profile(model, inputs=(torch.randn(1, 1, 28, 28),), verbose=False)
assert params == sum(p.numel() for p in model.parameters()), params
assert macs >= cnn_macs(), macs
print(clever_format([macs, params], "%.3f"))
