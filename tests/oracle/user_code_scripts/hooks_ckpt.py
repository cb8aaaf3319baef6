# ruff: noqa  (tutorial-style user code, kept as users write it)

import torch, io, os
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from _common import det_init, det_data


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


net = Net()
det_init(net, 0.1)
print(net)
params = list(net.parameters())
print(len(params), params[0].size())
inp = det_data(4, 3, 32, 32)
out = net(inp)
print(out.shape, out[0, :3])
net.zero_grad()
out.backward(torch.ones(4, 10) * 0.1)
print((net.conv1.bias.grad * 1e5).round(decimals=2))
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
labels = torch.tensor([1, 2, 3, 4])
for i in range(3):
    optimizer.zero_grad()
    outputs = net(inp)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    print(f"[{i + 1}] loss: {loss.item():.3f}")
_, predicted = torch.max(outputs, 1)
print(predicted, (predicted == labels).sum().item())
correct_pred = {c: 0 for c in range(10)}
for label, prediction in zip(labels, predicted):
    if label == prediction:
        correct_pred[label.item()] += 1
# checkpoint
PATH = __TMP__ + "/T_ckpt.pt"
torch.save(
    {
        "epoch": 5,
        "model_state_dict": net.state_dict(),
        "optimizer_state_dict": optimizer.state_dict(),
        "loss": loss,
    },
    PATH,
)
model = Net()
optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
checkpoint = torch.load(PATH, weights_only=True)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
epoch = checkpoint["epoch"]
loss = checkpoint["loss"]
print(epoch, loss, optimizer.state_dict()["param_groups"])
model.eval()
print(torch.equal(model(inp), net(inp)))


# warmstart
class NetB(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.fc = nn.Linear(3, 3)


netB = NetB()
print(netB.load_state_dict(net.state_dict(), strict=False))
try:
    netB.load_state_dict(net.state_dict())
except RuntimeError as e:
    print("RuntimeError", e)
bad = net.state_dict()
bad["conv1.weight"] = torch.zeros(2, 2)
try:
    net.load_state_dict(bad)
except RuntimeError as e:
    print("RuntimeError", e)
# hooks
activation = {}


def get_activation(name):
    def hook(model, input, output):
        activation[name] = output.detach()

    return hook


h = net.fc2.register_forward_hook(get_activation("fc2"))
net(inp)
print(activation["fc2"].shape)
h.remove()


def pre(m, args):
    print("pre", type(m).__name__, [a.shape for a in args])


h2 = net.fc3.register_forward_pre_hook(pre)
grads = []
h3 = net.fc1.register_full_backward_hook(
    lambda m, gi, go: grads.append((len(gi), gi[0].shape, go[0].shape))
)
net(inp).sum().backward()
print(grads)
h2.remove()
h3.remove()
for name, module in net.named_modules():
    print(repr(name), type(module).__name__)
print([n for n, _ in net.named_children()], [n for n, _ in net.named_buffers()])
bn = nn.BatchNorm2d(3)
print(list(bn.state_dict().keys()), bn.num_batches_tracked)
bn(inp)
print(bn.running_mean, bn.num_batches_tracked)
buf = io.BytesIO()
torch.save(net.state_dict(), buf)
buf.seek(0)
sd = torch.load(buf)
print(type(sd).__name__, list(sd.keys())[:2])
print(net.training, net.eval().training, net.train().training, net.fc1.training)
net.requires_grad_(False)
print(all(not p.requires_grad for p in net.parameters()))
print(sum(p.numel() for p in net.parameters()))
print(net.fc1.weight.dtype, net.double().fc1.weight.dtype, net.float().fc1.weight.dtype)
net.apply(lambda m: print(type(m).__name__) if isinstance(m, nn.Linear) else None)


def init_weights(m):
    if isinstance(m, nn.Linear):
        torch.nn.init.xavier_uniform_(m.weight)
        m.bias.data.fill_(0.01)


net.apply(init_weights)
print(net.fc1.bias[:3])
print(net.state_dict()["fc1.bias"][:2])
print(nn.ModuleList([nn.Linear(2, 2), nn.ReLU()]))
print(nn.ModuleDict({"a": nn.Linear(2, 2)}))
print(nn.ParameterList([nn.Parameter(torch.ones(2))]))
print(nn.ParameterDict({"p": nn.Parameter(torch.ones(2, 3))}))
print(nn.Parameter(torch.ones(2)))
print(nn.Linear(2, 3).weight.shape)
