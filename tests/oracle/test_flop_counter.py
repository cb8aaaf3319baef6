"""torch.utils.flop_counter.FlopCounterMode: the same counts per op and per module as torch."""

import importlib

import pytest

import ember

torch = pytest.importorskip("torch")


def _counts(lib, program):
    mode_cls = importlib.import_module(lib.__name__ + ".utils.flop_counter").FlopCounterMode
    lib.manual_seed(0)
    with mode_cls(display=False) as counter:
        program(lib)
    table = {
        module: sorted((str(op), n) for op, n in counts.items())
        for module, counts in counter.get_flop_counts().items()
    }
    return counter.get_total_flops(), table


def _mlp(lib):
    model = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.ReLU(), lib.nn.Linear(5, 2))
    model(lib.randn(4, 3)).sum().backward()


def _products_and_convolutions(lib):
    lib.randn(2, 3, 4) @ lib.randn(2, 4, 5)
    x = lib.randn(1, 2, 5, 5, requires_grad=True)
    lib.nn.functional.conv2d(x, lib.randn(3, 2, 3, 3, requires_grad=True)).sum().backward()
    lib.randn(3, 4) @ lib.randn(4)  # a matrix-vector product: not counted
    lib.randn(2, 3, 4) @ lib.randn(4, 5)
    w = lib.randn(2, 3, 3, 3, requires_grad=True)
    lib.nn.functional.conv_transpose2d(lib.randn(1, 2, 5, 5), w, stride=2).sum().backward()
    lib.mm(lib.randn(2, 3), lib.randn(3, 4))
    lib.baddbmm(lib.randn(2, 3, 5), lib.randn(2, 3, 4), lib.randn(2, 4, 5))


def _nested_modules(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = lib.nn.Conv2d(1, 4, 3)
            self.f = lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(4 * 6 * 6, 10))

        def forward(self, x):
            return self.f(lib.relu(self.c(x)))

    Net()(lib.randn(2, 1, 8, 8)).sum().backward()


def _backward_outside(lib):
    # only what runs inside the mode counts: this backward runs after it
    _backward_outside.loss = lib.nn.Linear(3, 2)(lib.randn(4, 3)).sum()


@pytest.mark.parametrize(
    "program", [_mlp, _products_and_convolutions, _nested_modules, _backward_outside]
)
def test_counts_match_torch(program):
    assert _counts(ember, program) == _counts(torch, program)


def test_table_and_no_counting_after_exit(capsys):
    from ember.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(depth=1) as counter:
        ember.nn.Linear(3, 2)(ember.randn(4, 3))
    printed = capsys.readouterr().out
    assert "Global" in printed and "aten.addmm" in printed and "Linear" in printed
    ember.mm(ember.randn(2, 2), ember.randn(2, 2))
    assert counter.get_total_flops() == 2 * 4 * 3 * 2
