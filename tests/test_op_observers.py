"""The op table's observers (``add_observer``): what the profiler and the tracer build on."""

import pytest

import ember
from ember._ops import registry


class Log:
    def __init__(self):
        self.calls = []

    def enter(self, op, inputs, params, self_):
        self.calls.append(("enter", op.name, len(inputs), self_ is not None))
        return len(self.calls)

    def exit(self, token, result):
        self.calls.append(("exit", token, result is not None))


def test_observer_sees_out_of_place_and_inplace_calls():
    log = Log()
    x = ember.ones(3, requires_grad=True)
    registry.add_observer(log)
    try:
        y = x * 2
        y.add_(1)
    finally:
        registry.remove_observer(log)
    x + 1  # not seen any more
    names = [c[1] for c in log.calls if c[0] == "enter"]
    assert names == ["mul", "add"]
    assert log.calls[0][3] is False and log.calls[2][3] is True
    assert log.calls[1] == ("exit", 1, True)
    assert y.tolist() == [3.0, 3.0, 3.0] and y.grad_fn.name() == "AddBackward0"


def test_observer_exits_when_the_op_raises():
    log = Log()
    registry.add_observer(log)
    try:
        with pytest.raises(RuntimeError):
            ember.ones(2) + ember.ones(3)
    finally:
        registry.remove_observer(log)
    assert log.calls[-1] == ("exit", 1, False)
    assert registry._OBSERVERS == []
