"""User code: learning-rate schedulers driven from a training loop (chained, plateau, one-cycle,
cyclic, lambda schedulers, their state dicts and warnings), and the old-style scheduler base
class custom warm-up schedulers subclass."""

from __future__ import annotations

from tests.oracle._user_code import check_snippet

LOOP = """
    import warnings
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    s = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    s.step()
    print(opt.param_groups[0]["lr"])
    opt.step()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s.step(3)
        print(s.get_lr(), s.last_epoch, s.base_lrs, [str(x.message) for x in w])
    s2 = torch.optim.lr_scheduler.ChainedScheduler([
        torch.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2),
        torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)])
    for i in range(3):
        opt.step()
        s2.step()
        print(round(opt.param_groups[0]["lr"], 6), s2.get_last_lr())
    s3 = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, "max", patience=0, threshold=0.1,
                                                    cooldown=1, min_lr=1e-4)
    for v in [1, 1, 1, 2, 2, 2, 2]:
        s3.step(v)
        print(opt.param_groups[0]["lr"], end=" ")
    print(s3.get_last_lr(), sorted(s3.state_dict().keys()))
    s4 = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, steps_per_epoch=2, epochs=2,
                                             anneal_strategy="linear", three_phase=True)
    for i in range(4):
        opt.step()
        s4.step()
        print(round(opt.param_groups[0]["lr"], 5), round(opt.param_groups[0]["momentum"], 5))
    try:
        opt.step()
        s4.step()
    except ValueError as e:
        print("ValueError", e)
    o = torch.optim.Adam(model.parameters(), lr=1e-3)
    sc = torch.optim.lr_scheduler.CyclicLR(o, 0.001, 0.01, step_size_up=2, cycle_momentum=False,
                                           mode="triangular2")
    for i in range(6):
        o.step()
        sc.step()
        print(round(sc.get_last_lr()[0], 6), end=" ")
    print()
    try:
        torch.optim.lr_scheduler.CyclicLR(o, 0.001, 0.01)
    except ValueError as e:
        print("ValueError", e)
    sl = torch.optim.lr_scheduler.LambdaLR(o, [lambda e: 0.5 ** e])
    print(sl.state_dict()["lr_lambdas"], isinstance(sl, torch.optim.lr_scheduler.LRScheduler))
"""


def test_schedulers_in_a_loop():
    check_snippet(LOOP)


def test_legacy_lrscheduler_base():
    check_snippet("""
        class WarmupLR(torch.optim.lr_scheduler._LRScheduler):
            def __init__(self, optimizer, warmup_steps, last_epoch=-1):
                self.warmup_steps = warmup_steps
                super().__init__(optimizer, last_epoch)
            def get_lr(self):
                scale = min(1.0, (self.last_epoch + 1) / self.warmup_steps)
                return [base_lr * scale for base_lr in self.base_lrs]
        opt = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        sched = WarmupLR(opt, warmup_steps=4)
        for _ in range(5):
            opt.step()
            sched.step()
            print(sched.get_last_lr())
        print(isinstance(sched, torch.optim.lr_scheduler.LRScheduler))
    """)
