"""The checkpoint recipe of docs/guide/checkpoints.md: model + optimizer + lr scheduler + RNG
states saved at step 5 and resumed reproduce steps 6-10 bit for bit."""

import random

import numpy as np

import ember
from ember import nn, optim


def _make():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 2))
    opt = optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def _step(model, opt, sched):
    # the batch and the dropout mask both come from RNGs that the checkpoint must restore
    x = ember.randn(4, 8) + float(np.random.rand()) + random.random()
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    return loss.item()


def _save(path, model, opt, sched, step):
    ember.save(
        {
            "step": step,
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "rng": {
                "ember": ember.get_rng_state(),
                "numpy": np.random.get_state(),
                "python": random.getstate(),
            },
        },
        path,
    )


def _resume(path):
    model, opt, sched = _make()
    ckpt = ember.load(path, weights_only=False)  # NumPy's and Python's RNG states are objects
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    ember.set_rng_state(ckpt["rng"]["ember"])
    np.random.set_state(ckpt["rng"]["numpy"])
    random.setstate(ckpt["rng"]["python"])
    return model, opt, sched, ckpt["step"]


def test_resume_reproduces_the_run_bit_for_bit(tmp_path):
    np.random.seed(1)
    random.seed(2)
    model, opt, sched = _make()
    straight = []
    for step in range(1, 11):
        straight.append(_step(model, opt, sched))
        if step == 5:
            _save(tmp_path / "ckpt.pt", model, opt, sched, step)
    final = {k: v.clone() for k, v in model.state_dict().items()}

    model, opt, sched, start = _resume(tmp_path / "ckpt.pt")
    resumed = [_step(model, opt, sched) for _ in range(start + 1, 11)]
    assert resumed == straight[5:]
    for k, v in model.state_dict().items():
        assert np.array_equal(v.numpy(), final[k].numpy()), k
    assert sched.get_last_lr() == [1e-2 * 0.5**5]
