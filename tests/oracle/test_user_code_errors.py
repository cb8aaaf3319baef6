"""User code that goes wrong: the exception class and message torch users read (and the
tutorials' debugging sections quote) for common mistakes: autograd misuse, shape and dtype
mismatches in layers and losses, bad indices, module and optimizer misuse."""

from __future__ import annotations

import pytest

from tests.oracle._user_code import check_snippet

MISTAKES = """
def t(f):
    try:
        r = f()
        print("ok", r if not isinstance(r, torch.Tensor) else r.shape)
    except Exception as e:
        print(type(e).__name__, "|", str(e).split("\\n")[0][:300])
    try:
        r = f(); print("ok", r if not isinstance(r, torch.Tensor) else r.shape)
    except Exception as e:
        print(type(e).__name__, "|", str(e).split("\\n")[0][:300])
x = torch.ones(3, requires_grad=True)
t(lambda: (x.sigmoid().mul_(2)).sum().backward())
def inplace_after_save():
    a = torch.ones(3, requires_grad=True); b = a.sigmoid(); c = b * 2; b.add_(1); c.sum().backward()
t(inplace_after_save)
def inplace_after_save2():
    a = torch.ones(3, requires_grad=True); b = a * 2; c = b.exp(); b += 1; c.sum().backward()
t(inplace_after_save2)
t(lambda: torch.ones(3).sum().backward())
t(lambda: x.data.sum().backward())
def twice():
    y = (x * x).sum(); y.backward(); y.backward()
t(twice)
t(lambda: torch.autograd.grad((x * 2).sum(), torch.ones(2, requires_grad=True)))
t(lambda: torch.autograd.grad((x * 2), x))
t(lambda: x.view(3, 1).add_(1))
t(lambda: torch.nn.Linear(3, 2)(torch.ones(3, 4)))
t(lambda: torch.nn.Conv2d(3, 4, 3)(torch.ones(1, 2, 5, 5)))
t(lambda: torch.nn.Conv2d(3, 4, 3)(torch.ones(3, 5)))
t(lambda: F.nll_loss(torch.ones(2, 3), torch.tensor([1.0, 2.0])))
t(lambda: F.cross_entropy(torch.ones(2, 3), torch.tensor([[1, 2]])))
t(lambda: F.mse_loss(torch.ones(2, 3), torch.ones(3, 2)))
t(lambda: F.binary_cross_entropy(torch.ones(2) * 2, torch.ones(2)))
t(lambda: torch.nn.BatchNorm1d(3)(torch.ones(1, 3)))
t(lambda: torch.nn.Embedding(5, 2)(torch.tensor([5])))
t(lambda: torch.nn.Embedding(5, 2)(torch.tensor([1.0])))
t(lambda: torch.ones(2, 3).reshape(4, 2))
t(lambda: torch.ones(2, 3).permute(0))
t(lambda: torch.ones(2, 3).transpose(0, 2))
t(lambda: torch.ones(2, 3)[:, 3])
t(lambda: torch.ones(2, 3).sum(2))
t(lambda: torch.stack([torch.ones(2), torch.ones(3)]))
t(lambda: torch.ones(2, dtype=torch.long) * torch.ones(2, requires_grad=True))
t(lambda: torch.ones(2, dtype=torch.long).requires_grad_())
t(lambda: torch.tensor([1, 2], requires_grad=True))
t(lambda: torch.ones(2).float().numpy().__class__.__name__)
t(lambda: torch.ones(2) @ torch.ones(3))
t(lambda: torch.mm(torch.ones(2), torch.ones(2)))
t(lambda: torch.bmm(torch.ones(2, 2), torch.ones(2, 2)))
t(lambda: torch.matmul(torch.ones(2, 3, 4), torch.ones(5, 6)))
t(lambda: torch.ones(3).view(-1, -1))
t(lambda: torch.zeros(2).long() / 0)
t(lambda: torch.zeros(2).long() // 0)
t(lambda: torch.tensor([[1, 2], [3]]))
t(lambda: torch.tensor("abc"))
t(lambda: torch.ones(2, 2).item())
t(lambda: torch.ones(2).max(dim=1))
t(lambda: torch.gather(torch.ones(2, 3), 1, torch.tensor([[0, 5]])))
t(lambda: torch.gather(torch.ones(2, 3), 1, torch.tensor([[0.0]])))
t(lambda: torch.ones(2, 3).index_select(0, torch.tensor([2])))
t(lambda: torch.ones(2).masked_fill(torch.tensor([1, 0]), 0.0))
t(lambda: torch.cat([torch.ones(2), torch.ones(2).long()]).dtype)
t(lambda: torch.cat([]))
t(lambda: torch.optim.SGD([], lr=0.1))
t(lambda: torch.optim.Adam(nn.Linear(2, 2).parameters(), lr=-1))
t(lambda: torch.optim.SGD(torch.ones(2, requires_grad=True), lr=0.1))
t(lambda: nn.Linear(2, 2).load_state_dict({"weight": torch.ones(2, 2)}))
t(lambda: nn.Sequential(nn.Linear(2, 2))[3])
t(lambda: nn.Linear(2, 2).register_parameter("x", torch.ones(2)))
t(lambda: setattr(nn.Linear(2, 2), "weight", torch.ones(2)))
t(lambda: nn.Module()(torch.ones(2)))
t(lambda: nn.ModuleList([1]))
t(lambda: torch.load("/nonexistent_file.pt"))
t(lambda: torch.utils.data.DataLoader(range(3), batch_size=2, shuffle=True, sampler=[0, 1]))
t(lambda: next(iter(torch.utils.data.DataLoader([torch.ones(2), torch.ones(3)], batch_size=2))))
t(lambda: torch.nn.functional.softmax(torch.ones(2, 3)))
t(lambda: F.interpolate(torch.ones(1, 1, 2, 2), scale_factor=2, mode="bilinear").shape)
t(lambda: torch.nn.functional.interpolate(torch.ones(1, 1, 2), scale_factor=2, mode="bilinear"))
t(lambda: torch.randn(2, 3).split(4, dim=2))
t(lambda: torch.zeros((2, 3), dtype="float32"))
t(lambda: torch.arange(0, 10, 0))
t(lambda: torch.full((2,), 1.5, dtype=torch.long))
"""


def test_accelerator_index():
    check_snippet("""
        for f in [lambda: torch.device(0), lambda: torch.ones(2, device=0),
                  lambda: torch.ones(2).to(0)]:
            try:
                f()
            except RuntimeError as e:
                print("RuntimeError", e)
    """)


def test_common_mistakes():
    check_snippet(MISTAKES)


@pytest.mark.parametrize(
    "expr",
    [
        'torch.ones(2).to("cuda")',
        "torch.ones(2).cuda()",
        "nn.Linear(2, 2).cuda()",
        'torch.zeros(2, device="cuda")',
        'torch.ones(2, device=torch.device("cuda:0"))',
    ],
)
def test_cuda_calls_raise_what_torch_handlers_catch(expr):
    # torch raises AssertionError("Torch not compiled with CUDA enabled"); ember's error names
    # the fix and is also an AssertionError
    check_snippet(f"""
        try:
            {expr}
        except AssertionError as e:
            print("AssertionError", isinstance(e, Exception))
    """)
