"""A module that wraps a builtin for fx tracing (``wrap("len")``), for test_fx.py: the name
is patched in this module's globals during traces only."""

import pytest

import ember.fx

torch = pytest.importorskip("torch")
torch.fx.wrap("len")
ember.fx.wrap("len")


def count_plus(x):
    return x + len(x)
