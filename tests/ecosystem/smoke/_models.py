"""The small models the smoke checks inspect (plain torch code, run on ember by the stand-in)."""

import torch
from torch import nn


class CNN(nn.Module):
    """The MNIST CNN of examples/mnist.py, in miniature."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 13 * 13, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        return self.fc(torch.flatten(x, 1))


def cnn_macs() -> int:
    """Multiply-accumulates of CNN's conv and linear layers on one 1x28x28 image."""
    return 4 * 26 * 26 * 9 + 4 * 13 * 13 * 10
