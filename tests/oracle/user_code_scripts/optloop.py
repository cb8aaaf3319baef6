# ruff: noqa  (tutorial-style user code, kept as users write it)

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split
from _common import det_init, det_data

X = det_data(100, 8)
y = (X.sum(1) > 0).long()
ds = TensorDataset(X, y)
print(len(ds), ds[0][0].shape, ds[0][1])
loader = DataLoader(ds, batch_size=32, shuffle=False, drop_last=False)
print(len(loader))
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Dropout(0.0), nn.Linear(16, 2))
det_init(model)
for name, opt_cls, kw in [
    ("SGD", torch.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)),
    ("Adam", torch.optim.Adam, dict(lr=1e-2, betas=(0.9, 0.99))),
    ("AdamW", torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.01, amsgrad=True)),
    ("RMSprop", torch.optim.RMSprop, dict(lr=1e-2)),
    ("Adagrad", torch.optim.Adagrad, dict(lr=1e-1)),
]:
    det_init(model)
    opt = opt_cls(model.parameters(), **kw)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    for epoch in range(4):
        total = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            out = model(xb)
            loss = loss_fn(out, yb)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            opt.step()
            total += loss.item() * xb.size(0)
        sched.step()
        print(
            name, epoch, round(total / len(ds), 4), sched.get_last_lr(), opt.param_groups[0]["lr"]
        )
    print(opt)
    sd = opt.state_dict()
    print(
        sorted(sd.keys()),
        sd["param_groups"][0]["params"],
        list(sd["state"].keys())[:3],
        sorted(sd["state"][0].keys()),
    )
print(sched.state_dict())
# more schedulers
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scheds = [
    lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[2, 4], gamma=0.1),
    lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
    lambda o: torch.optim.lr_scheduler.LambdaLR(o, lr_lambda=lambda e: 0.95**e),
    lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=10),
    lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=4),
    lambda o: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    lambda o: torch.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2),
    lambda o: torch.optim.lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0),
]
for mk in scheds:
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    s = mk(opt)
    lrs = []
    for i in range(8):
        opt.step()
        s.step()
        lrs.append(round(s.get_last_lr()[0], 6))
    print(type(s).__name__, lrs)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
s = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
for v in [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7]:
    s.step(v)
    print(opt.param_groups[0]["lr"], end=" ")
print()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
s1 = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=2)
s2 = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
s = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[s1, s2], milestones=[2])
for i in range(5):
    opt.step()
    s.step()
    print(round(opt.param_groups[0]["lr"], 6), end=" ")
print()
# param groups
opt = torch.optim.SGD(
    [{"params": model[0].parameters()}, {"params": model[3].parameters(), "lr": 1e-3}],
    lr=1e-2,
    momentum=0.9,
)
print(opt)
opt.add_param_group({"params": [nn.Parameter(torch.ones(2))], "lr": 5.0})
print(len(opt.param_groups), [g["lr"] for g in opt.param_groups])
train_ds, val_ds = random_split(ds, [80, 20])
print(len(train_ds), len(val_ds), type(train_ds).__name__)
train_ds, val_ds = random_split(ds, [0.7, 0.3], generator=torch.Generator().manual_seed(42))
print(len(train_ds), len(val_ds))
