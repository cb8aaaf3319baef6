"""torchviz's README: make_dot() draws the autograd graph of a model's output."""

import shutil
import tempfile

import torch
from _models import CNN
from torchviz import make_dot

model = CNN()
y = model(torch.randn(1, 1, 28, 28))
dot = make_dot(y.mean(), params=dict(model.named_parameters()), show_attrs=True)
for node in ("MeanBackward0", "AddmmBackward0", "ConvolutionBackward0", "conv1.weight"):
    assert node in dot.source, dot.source
if shutil.which("dot"):
    with tempfile.TemporaryDirectory() as tmp:
        path = dot.render(f"{tmp}/graph", format="png")
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
print("torchviz ok")
