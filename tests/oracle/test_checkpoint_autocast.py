"""Checkpointed regions recompute under the autocast state of their forward, as torch's."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _run(lib, reentrant, outer_autocast):
    lib.manual_seed(0)
    layer = lib.nn.Linear(4, 4)
    x = lib.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4), requires_grad=True)
    checkpoint = lib.utils.checkpoint.checkpoint
    with lib.autocast("cpu", dtype=lib.bfloat16, enabled=outer_autocast):
        y = checkpoint(lambda t: layer(t).relu(), x, use_reentrant=reentrant)
    y.float().sum().backward()
    return y, x.grad, layer.weight.grad


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("outer_autocast", [True, False])
def test_recompute_under_forward_autocast(reentrant, outer_autocast):
    ours, theirs = _run(ember, reentrant, outer_autocast), _run(torch, reentrant, outer_autocast)
    for e, t in zip(ours, theirs):
        assert str(e.dtype) == str(t.dtype)
        np.testing.assert_allclose(
            e.float().detach().numpy(), t.float().detach().numpy(), rtol=2e-2, atol=1e-2
        )
