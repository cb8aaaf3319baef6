"""torchsummary's README: summary(model, input_size) prints the Keras-style table."""

import contextlib
import io

from _models import CNN
from torchsummary import summary

model = CNN()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    summary(model, (1, 28, 28), device="cpu")
text = out.getvalue()
total = sum(p.numel() for p in model.parameters())
assert f"Total params: {total:,}" in text, text
assert "Conv2d-1" in text and "Linear-" in text
print(text)
