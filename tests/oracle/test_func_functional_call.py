"""Oracle tests for ``func.functional_call`` / ``nn.utils.stateless.functional_call``."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("torch.func")

_rng = np.random.default_rng(0)


class _Net:
    """Build the same small net (Linear, BatchNorm1d, Linear) for a lib; weights from numpy."""

    @staticmethod
    def build(lib, tied=False):
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 4))
        if tied:
            m.add_module("3", lib.nn.Linear(4, 4))
            m[3].weight = m[2].weight
        return m


def _load(lib, m, arrays):
    with lib.no_grad():
        for name, t in list(m.named_parameters()) + list(m.named_buffers()):
            if name in arrays:
                t.copy_(lib.tensor(arrays[name]))


def _arrays(m):
    return {
        n: _rng.standard_normal(tuple(t.shape)).astype(np.float32)
        for n, t in list(m.named_parameters()) + list(m.named_buffers())
        if t.dtype == torch.float32
    }


def _both(tied=False):
    t = _Net.build(torch, tied)
    e = _Net.build(ember, tied)
    arr = _arrays(t)
    arr["1.running_var"] = np.abs(arr["1.running_var"]) + 0.5
    _load(torch, t, arr)
    _load(ember, e, arr)
    return e, t


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("train", [True, False])
def test_substitution_grads_and_restore(train):
    e, t = _both()
    e.train(train)
    t.train(train)
    w = _rng.standard_normal((4, 3)).astype(np.float32)
    rm = _rng.standard_normal(4).astype(np.float32)
    x = _rng.standard_normal((5, 3)).astype(np.float32)
    ew = ember.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ed = {"0.weight": ew, "1.running_mean": ember.tensor(rm)}
    td = {"0.weight": tw, "1.running_mean": torch.tensor(rm)}
    eo = ember.func.functional_call(e, ed, (ember.tensor(x),))
    to = torch.func.functional_call(t, td, (torch.tensor(x),))
    _close(eo, to)
    eo.sum().backward()
    to.sum().backward()
    _close(ew.grad, tw.grad)
    assert e[0].weight.grad is None and t[0].weight.grad is None
    # originals restored; BN updated the substituted buffer (in place) only
    assert isinstance(e[0].weight, ember.nn.Parameter)
    _close(e[1].running_mean, t[1].running_mean)
    _close(ed["1.running_mean"], td["1.running_mean"])
    _close(e[1].num_batches_tracked, t[1].num_batches_tracked)
    # plain calls agree afterwards
    _close(e(ember.tensor(x)), t(torch.tensor(x)))


def test_args_kwargs_and_dict_sequence():
    e, t = _both()
    e.eval()
    t.eval()
    x = _rng.standard_normal((2, 3)).astype(np.float32)
    b = _rng.standard_normal(4).astype(np.float32)
    eo = ember.func.functional_call(e, ({"0.bias": ember.tensor(b)}, {}), ember.tensor(x))
    to = torch.func.functional_call(t, ({"0.bias": torch.tensor(b)}, {}), torch.tensor(x))
    _close(eo, to)
    lin_e, lin_t = ember.nn.Linear(3, 4), torch.nn.Linear(3, 4)
    W = _rng.standard_normal((4, 3)).astype(np.float32)
    eo = ember.func.functional_call(
        lin_e, {"weight": ember.tensor(W), "bias": ember.zeros(4)}, (), {"input": ember.tensor(x)}
    )
    to = torch.func.functional_call(
        lin_t, {"weight": torch.tensor(W), "bias": torch.zeros(4)}, (), {"input": torch.tensor(x)}
    )
    _close(eo, to)


def _same_error(fe, ft, exc):
    with pytest.raises(exc) as te:
        ft()
    with pytest.raises(exc) as ee:
        fe()
    assert str(ee.value) == str(te.value)


def test_errors():
    e, t = _both()
    x = np.zeros((2, 3), np.float32)
    ex, tx = ember.tensor(x), torch.tensor(x)
    _same_error(
        lambda: ember.func.functional_call(e, ({"a": ex}, {"a": ex}), ex),
        lambda: torch.func.functional_call(t, ({"a": tx}, {"a": tx}), tx),
        ValueError,
    )
    _same_error(
        lambda: ember.func.functional_call(e, [{"a": ex}, 3], ex),
        lambda: torch.func.functional_call(t, [{"a": tx}, 3], tx),
        ValueError,
    )
    with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts to be a dict"):
        ember.func.functional_call(e, 3, ex)
    _same_error(
        lambda: ember.func.functional_call(e, {"0.weight": ex, "zzz": ex}, ex, strict=True),
        lambda: torch.func.functional_call(t, {"0.weight": tx, "zzz": tx}, tx, strict=True),
        RuntimeError,
    )
    _same_error(
        lambda: ember.func.functional_call(e, {"9.weight": ex}, ex),
        lambda: torch.func.functional_call(t, {"9.weight": tx}, tx),
        AttributeError,
    )


def test_restored_on_exception():
    e, _ = _both()
    orig = e[0].weight
    with pytest.raises(RuntimeError):
        ember.func.functional_call(e, {"0.weight": ember.zeros(4, 7)}, ember.zeros(2, 3))
    assert e[0].weight is orig
    # a new (non-existing) name is removed again afterwards
    ember.func.functional_call(e.eval(), {"0.extra": ember.zeros(1)}, ember.zeros(2, 3))
    assert not hasattr(e[0], "extra")


def test_tie_weights():
    e, t = _both(tied=True)
    e.eval()
    t.eval()
    x = _rng.standard_normal((2, 3)).astype(np.float32)
    w = _rng.standard_normal((4, 4)).astype(np.float32)
    for tie in (True, False):
        eo = ember.func.functional_call(e, {"2.weight": ember.tensor(w)}, ember.tensor(x),
                                        tie_weights=tie)  # fmt: skip
        to = torch.func.functional_call(t, {"2.weight": torch.tensor(w)}, torch.tensor(x),
                                        tie_weights=tie)  # fmt: skip
        _close(eo, to)
    _same_error(
        lambda: ember.func.functional_call(
            e, {"2.weight": ember.tensor(w), "3.weight": ember.zeros(4, 4)}, ember.tensor(x)
        ),
        lambda: torch.func.functional_call(
            t, {"2.weight": torch.tensor(w), "3.weight": torch.zeros(4, 4)}, torch.tensor(x)
        ),
        ValueError,
    )
    # strict with tie_weights: giving one of the tied names is enough
    names = [n for n, _ in t.named_parameters()] + [n for n, _ in t.named_buffers()]
    ed = {n: v for n, v in e.state_dict(keep_vars=True).items() if n != "3.weight"}
    td = {n: v for n, v in t.state_dict(keep_vars=True).items() if n != "3.weight"}
    assert "3.weight" not in names
    _close(
        ember.func.functional_call(e, ed, ember.tensor(x), strict=True),
        torch.func.functional_call(t, td, torch.tensor(x), strict=True),
    )


def _three_tied(lib):
    m = lib.nn.Sequential(*(lib.nn.Linear(2, 2, bias=False) for _ in range(3)))
    m[1].weight = m[0].weight
    m[2].weight = m[0].weight
    return m


@pytest.mark.parametrize(
    "given",
    [{"0.weight": 0}, {"1.weight": 1}, {"0.weight": 0, "1.weight": 1, "2.weight": 2},
     {"0.weight": 0, "1.weight": 0, "2.weight": 0}, {"2.weight": 0, "0.weight": 0, "1.weight": 1}],
)  # fmt: skip
def test_three_way_tie(given):
    values = [np.full((2, 2), v, np.float32) for v in range(3)]
    x = np.ones((1, 2), np.float32)
    out = []
    for lib in (ember, torch):
        m = _three_tied(lib)
        m.eval()
        params = {n: lib.tensor(values[v]) for n, v in given.items()}
        # the same tensor object where the given indices agree
        first = {}
        params = {n: first.setdefault(given[n], t) for n, t in params.items()}
        try:
            out.append(lib.func.functional_call(m, params, lib.tensor(x)).detach().numpy())
        except Exception as e:
            out.append((type(e).__name__, str(e)))
    if isinstance(out[1], np.ndarray):
        np.testing.assert_allclose(out[0], out[1])
    else:
        assert out[0] == out[1]


def test_partly_given_tie_group_is_no_error():
    # torch raises KeyError('2.weight') here (it indexes the given dict with every tied name);
    # ember spreads the one given tensor over the group
    m = _three_tied(ember)
    w = ember.full((2, 2), 2.0)
    out = ember.func.functional_call(m, {"0.weight": w, "1.weight": w}, ember.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), np.full((1, 2), 64.0))
    with pytest.raises(ValueError, match="which are tied"):
        ember.func.functional_call(m, {"0.weight": w, "1.weight": w + 1}, ember.ones(1, 2))


def test_stateless_deprecated_alias():
    e, t = _both()
    e.eval()
    x = ember.zeros(2, 3)
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        out = ember.nn.utils.stateless.functional_call(e, {"2.bias": ember.ones(4)}, x)
    assert out.shape == (2, 4)


@pytest.mark.parametrize(
    "dicts",
    [
        lambda lib: ({"0.weight": lib.zeros(2, 2)}, {"0.weight": lib.ones(2, 2)}),
        lambda lib: [{"1.weight": lib.zeros(2, 2)}, {"2.weight": lib.ones(2, 2)}],
        lambda lib: [{"2.weight": lib.ones(2, 2)}, {"1.weight": 1, "2.weight": 2}, {"1.weight": 0}],
        lambda lib: [{"0.weight": lib.zeros(2, 2)}, ("0.weight", 1)],
        lambda lib: lib.zeros(2),
        lambda lib: (),
    ],
)
def test_sequence_of_dicts(dicts):
    out = []
    for lib in (ember, torch):
        m = _three_tied(lib)
        with lib.no_grad():
            m[0].weight.fill_(0.5)  # (tied: all three layers)
        try:
            r = lib.func.functional_call(m, dicts(lib), lib.ones(1, 2), tie_weights=False)
            out.append(r.detach().numpy().tolist())
        except Exception as e:
            out.append((type(e).__name__, str(e).replace("ember", "torch")))
    assert out[0] == out[1]
