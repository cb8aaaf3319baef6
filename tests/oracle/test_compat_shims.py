"""Oracle tests: the switches and shims training scripts touch on a CPU-only machine
(``backends``, ``version``, ``amp``/``cuda.amp``, ``autograd.Variable``, ``distributed``)."""

from __future__ import annotations

import warnings

import pytest

import ember
from tests.oracle.helper import torch


def _warnings(fn):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        result = fn()
    return result, [(w.category, str(w.message)) for w in got]


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.amp.GradScaler("cuda"),
        lambda lib: lib.cuda.amp.GradScaler(),
        lambda lib: lib.amp.GradScaler("cuda", enabled=False),
    ],
)
def test_grad_scaler_disables_itself_without_cuda(make):
    (ts, tw), (es, ew) = _warnings(lambda: make(torch)), _warnings(lambda: make(ember))
    assert ew == tw
    assert es.is_enabled() == ts.is_enabled() is False
    assert es.get_scale() == ts.get_scale() and es.state_dict() == ts.state_dict()


def test_scaled_training_step_is_the_plain_step():
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.Linear(3, 2)
        with lib.no_grad():
            m.weight.copy_(lib.arange(6.0).reshape(2, 3) / 10)
            m.bias.zero_()
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        scaler = lib.amp.GradScaler("cuda", enabled=False)
        for _ in range(3):
            opt.zero_grad()
            with lib.autocast("cuda", enabled=False):
                loss = m(lib.ones(4, 3)).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            scaler.step(opt)
            scaler.update()
        return m.weight.detach().numpy().tolist()

    for e, t in zip(run(ember), run(torch)):
        assert e == pytest.approx(t)


@pytest.mark.parametrize(
    "enter",
    [lambda lib: lib.autocast(device_type="cuda"), lambda lib: lib.cuda.amp.autocast()],
)
def test_cuda_autocast_disables_itself(enter):
    def use(lib):
        with enter(lib):
            return lib.is_autocast_enabled()

    (t_on, tw), (e_on, ew) = _warnings(lambda: use(torch)), _warnings(lambda: use(ember))
    assert e_on == t_on is False and ew == tw


def test_backend_flags_and_versions():
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(ember.backends.cudnn, name) == getattr(torch.backends.cudnn, name)
    assert ember.backends.cudnn.is_available() == torch.backends.cudnn.is_available()
    assert ember.backends.cudnn.version() == torch.backends.cudnn.version()
    assert ember.backends.mps.is_available() == torch.backends.mps.is_available()
    assert ember.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    ember.backends.cudnn.deterministic = True
    try:
        assert ember.backends.cudnn.deterministic is True
    finally:
        ember.backends.cudnn.deterministic = False
    assert ember.version.cuda is None is torch.version.cuda
    assert ember.version.__version__ == ember.__version__
    assert ember.distributed.is_initialized() is False


def test_variable_is_the_tensor():
    for lib in (torch, ember):
        t = lib.ones(2)
        v = lib.autograd.Variable(t, requires_grad=True)
        assert v is not t and v.data_ptr() == t.data_ptr() and v.requires_grad and v.is_leaf
        assert not t.requires_grad and isinstance(lib.zeros(1), lib.autograd.Variable)
        u = lib.autograd.Variable(lib.ones(2, requires_grad=True) * 2)
        assert u.grad_fn is None and not u.requires_grad


def test_version_compares_as_torch_version():
    # code that branches on torch.__version__ takes torch 2.13's path; ember's release is the
    # local label
    v, t = ember.__version__, torch.__version__
    assert v.startswith("2.13.0+ember.") and v.endswith(ember.version.ember_version)
    for other in ("2.0", "2.13", "2.13.0", "2.13.1", "3", "1.13.1", (2, 0), (2, 13, 0), (2, 14)):
        for op in ("__lt__", "__le__", "__gt__", "__ge__"):
            assert getattr(v, op)(other) == getattr(t, op)(other), (op, other)
        assert (v == other) == (t == other), other
    assert int(v.split(".")[0]) == int(t.split(".")[0])
