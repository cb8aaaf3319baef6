"""Models for TorchScript archive tests, written once for either library (``lib`` is ember or
torch): an MLP, LeNet, a ResNet-18-style CNN with BatchNorm, an LSTM language model and a
small Transformer encoder, with an example input each."""

from __future__ import annotations

import numpy as np


def make(lib, name: str):
    nn = lib.nn
    F = nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = lib.flatten(x, 1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(2)
            self.layer1 = nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 8, 1))
            self.layer2 = nn.Sequential(BasicBlock(8, 16, 2), BasicBlock(16, 16, 1))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(16, 5)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer2(self.layer1(x))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    class LSTMLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(20, 8)
            self.lstm = nn.LSTM(8, 12, num_layers=2, batch_first=True)
            self.head = nn.Linear(12, 20)

        def forward(self, tokens):
            h, _ = self.lstm(self.embed(tokens))
            return self.head(h)

    class GRUTagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(6, 5, bidirectional=True)
            self.head = nn.Linear(10, 3)

        def forward(self, x):
            h, _ = self.gru(x)
            return self.head(h)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            return self.head(self.encoder(x))

    classes = {
        "mlp": MLP,
        "lenet": LeNet,
        "resnet": ResNet,
        "lstm": LSTMLM,
        "gru": GRUTagger,
        "transformer": Encoder,
    }
    return classes[name]()


def example(name: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "lstm":
        return rng.integers(0, 20, size=(2, 6)).astype(np.int64)
    shape = {
        "mlp": (2, 4),
        "lenet": (2, 1, 28, 28),
        "resnet": (2, 3, 16, 16),
        "gru": (5, 2, 6),
        "transformer": (2, 5, 16),
    }[name]
    return rng.normal(size=shape).astype(np.float32)


NAMES = ["mlp", "lenet", "resnet", "lstm", "gru", "transformer"]
