"""ember.compile and Python state: what a program builds during the call is its own (objects it
constructs, lists it fills, cells it makes) and compiles in one graph with fullgraph=True; what
existed before the call (arguments, globals, the closure's cells and containers) is a side effect
and breaks the graph — fullgraph=True raises Unsupported naming the store and its line."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember._dynamo
from ember._dynamo.exc import Unsupported


class _Recipe:
    def __init__(self, scale):
        self.scale = scale  # attributes of an object built during the call: local
        self.parts = []


def _builds_local_state(x):
    recipe = _Recipe(2.0)
    outs = [None, None]
    outs[0] = x * recipe.scale  # a store into a list made here
    table = {}
    table["y"] = outs[0] + 1
    count = 0

    def bump():
        nonlocal count  # a cell this call made
        count += 1

    bump()
    outs[1] = table["y"] * count
    return outs[0] + outs[1]


def test_state_built_during_the_call_compiles_in_one_graph():
    x = ember.randn(3, 4)
    f = ember.compile(_builds_local_state, fullgraph=True)
    for _ in range(3):
        np.testing.assert_array_equal(f(x).numpy(), _builds_local_state(x).numpy())
    assert len(ember._dynamo.explain(_builds_local_state)(x).break_reasons) == 0


_CACHE: dict = {}


def _fills_a_global(x):
    _CACHE["last"] = 1
    return x + 1


def _fills_an_argument(x, store):
    store[0] = 5
    return x + 1


def _sets_an_attribute(x, obj):
    obj.seen = True
    return x + 1


def _make_counter():
    count = 0

    def step(x):
        nonlocal count  # the enclosing call's cell existed before this call
        count += 1
        return x * 2

    return step


@pytest.mark.parametrize(
    "fn, args, what",
    [
        (_fills_a_global, (), "a store into a Python container"),
        (_fills_an_argument, ([0],), "a store into a Python container"),
        (_sets_an_attribute, (_Recipe(1.0),), "STORE_ATTR"),
        (_make_counter(), (), "STORE_DEREF"),
    ],
    ids=["global dict", "argument list", "argument attribute", "outer cell"],
)
def test_state_from_before_the_call_is_a_side_effect(fn, args, what):
    with pytest.raises(Unsupported, match=what) as info:
        ember.compile(fn, fullgraph=True)(ember.ones(2), *args)
    assert "test_compile_side_effects.py:" in str(info.value)  # names the line
    # without fullgraph it runs eagerly, so the effect happens on every call
    store = [0]
    g = ember.compile(_fills_an_argument)
    for _ in range(2):
        store[0] = 0
        np.testing.assert_array_equal(g(ember.ones(2), store).numpy(), [2.0, 2.0])
        assert store == [5]
