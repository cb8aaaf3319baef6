"""torchinfo's README: summary() of a CNN, its totals and printed table."""

import torch
import torchinfo
from _models import CNN

model = CNN()
stats = torchinfo.summary(model, input_size=(1, 1, 28, 28), verbose=0)
assert stats.total_params == sum(p.numel() for p in model.parameters()), stats.total_params
text = str(stats)
for line in ("Conv2d", "MaxPool2d", "Linear", "Total params", "Params size (MB)"):
    assert line in text, text
stats = torchinfo.summary(
    model,
    input_data=torch.randn(2, 1, 28, 28),
    verbose=0,
    col_names=("input_size", "output_size", "num_params", "mult_adds"),
)
assert "[2, 10]" in str(stats)
print(stats)
