"""Gradcheck and gradgradcheck of every differentiable op in ``ember._ops.API``, in float64.

Ops are found by probing, so the test grows as ops land: each public function is called on
float64 inputs with values in (0.2, 0.8) (inside every domain: log, acos, atanh...; away from
the kinks of abs, relu, floor...) with a few argument patterns; those that return a float64
tensor requiring grad are checked. Ops needing particular arguments (matrix shapes, equations,
lists) are given explicit samples in ``SAMPLES``. Random ops are left out (their output
changes between calls).
"""

import warnings

import numpy as np
import pytest

import ember
from ember._ops import API
from ember.autograd import gradcheck, gradgradcheck

RANDOM = {"bernoulli", "normal", "multinomial", "poisson", "dropout"}
# randomized in torch; on the probe's 2x3 inputs the centred matrix has a zero singular value,
# where singular vectors (and so finite differences) are not differentiable
RANDOM |= {"pca_lowrank", "svd_lowrank"}

# deprecated spellings (chain_matmul, cross without dim) warn as torch; log(0) in logcumsumexp
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


def _t(*shape, low=0.2, high=0.8, seed=0):
    rng = np.random.default_rng(seed + 7 * len(shape) + sum(shape))
    return ember.tensor(rng.uniform(low, high, shape), dtype=ember.float64, requires_grad=True)


def _spd(n, seed=0):
    a = np.random.default_rng(seed).uniform(-1, 1, (n, n))
    return ember.tensor(a @ a.T + n * np.eye(n), dtype=ember.float64, requires_grad=True)


# name -> (function, inputs); the function's float inputs requiring grad are checked
SAMPLES = {
    "mm": (ember.mm, lambda: (_t(2, 3), _t(3, 2))),
    "matmul": (ember.matmul, lambda: (_t(2, 2, 3), _t(3, 2))),
    "bmm": (ember.bmm, lambda: (_t(2, 2, 3), _t(2, 3, 2))),
    "mv": (ember.mv, lambda: (_t(2, 3), _t(3))),
    "dot": (ember.dot, lambda: (_t(3), _t(3))),
    "vdot": (ember.vdot, lambda: (_t(3), _t(3))),
    "outer": (ember.outer, lambda: (_t(3), _t(2))),
    "ger": (ember.ger, lambda: (_t(3), _t(2))),
    "addmm": (
        lambda a, b, c: ember.addmm(a, b, c, beta=0.5, alpha=2),
        lambda: (_t(2, 2), _t(2, 3), _t(3, 2)),
    ),
    "addmv": (ember.addmv, lambda: (_t(2), _t(2, 3), _t(3))),
    "addr": (ember.addr, lambda: (_t(3, 2), _t(3), _t(2))),
    "addbmm": (ember.addbmm, lambda: (_t(2, 2), _t(2, 2, 3), _t(2, 3, 2))),
    "baddbmm": (ember.baddbmm, lambda: (_t(2, 2, 2), _t(2, 2, 3), _t(2, 3, 2))),
    "det": (ember.det, lambda: (_spd(3),)),
    # differentiable in ``other`` only (torch raises for ``input``, as ember)
    "igamma": (
        lambda x: ember.igamma(ember.full((2, 3), 1.5, dtype=ember.float64), x),
        lambda: (_t(2, 3),),
    ),
    "igammac": (
        lambda x: ember.igammac(ember.full((2, 3), 1.5, dtype=ember.float64), x),
        lambda: (_t(2, 3),),
    ),
    "logdet": (ember.logdet, lambda: (_spd(3),)),
    "slogdet": (lambda a: ember.slogdet(a)[1], lambda: (_spd(3),)),
    "inverse": (ember.inverse, lambda: (_spd(3),)),
    "matrix_exp": (ember.matrix_exp, lambda: (_t(3, 3),)),
    "matrix_power": (lambda a: ember.matrix_power(a, 3), lambda: (_t(3, 3),)),
    "einsum": (lambda a, b: ember.einsum("ij,jk->ik", a, b), lambda: (_t(2, 3), _t(3, 2))),
    "narrow": (lambda a: ember.narrow(a, 1, 1, 2), lambda: (_t(2, 3),)),
    "reshape": (lambda a: ember.reshape(a, (3, 2)), lambda: (_t(2, 3),)),
    "unflatten": (lambda a: ember.unflatten(a, 0, (2, 3)), lambda: (_t(6, 2),)),
    "split_with_sizes": (lambda a: ember.split_with_sizes(a, [1, 2], 1), lambda: (_t(2, 3),)),
    "where": (lambda a, b: ember.where(a > b, a, b * 2), lambda: (_t(2, 3), _t(2, 3, seed=1))),
    "cat": (lambda a, b: ember.cat([a, b], 1), lambda: (_t(2, 3), _t(2, 2))),
    "stack": (lambda a, b: ember.stack([a, b], 0), lambda: (_t(2, 3), _t(2, 3, seed=1))),
    "polygamma": (lambda a: ember.polygamma(1, a), lambda: (_t(2, 3),)),
    "acosh": (ember.acosh, lambda: (_t(2, 3, low=1.2, high=2.0),)),
    "arccosh": (ember.arccosh, lambda: (_t(2, 3, low=1.2, high=2.0),)),
    "index_put": (
        lambda a, v: ember.index_put(a, (ember.tensor([1, 0]),), v),
        lambda: (_t(2, 3), _t(2, 3, seed=1)),
    ),
    "getitem": (lambda a: a[[1, 0, 1], 1:], lambda: (_t(2, 3),)),
    "expand": (lambda a: a.expand(2, 3, 3), lambda: (_t(3, 1),)),
    "view": (lambda a: a.view(3, 2), lambda: (_t(2, 3),)),
    "unfold": (lambda a: a.unfold(1, 2, 1), lambda: (_t(2, 3),)),
}

# generic argument patterns: f(x), f(x, y), f(x, 1), f(x, 0, 1), f(x, y, y)
PATTERNS = [
    lambda x, y: (x,),
    lambda x, y: (x, y),
    lambda x, y: (x, 1),
    lambda x, y: (x, 0, 1),
    lambda x, y: (x, y, y),
]


# nodes whose backward raises in torch too ("derivative for ... is not implemented")
_NO_DERIVATIVE = {
    "NotImplemented",
    "GeqrfBackward0",
    "Unique2Backward0",
    "UniqueDimBackward0",
    "UniqueConsecutiveBackward0",
}


def _differentiable(out) -> bool:
    outs = out if isinstance(out, tuple) else (out,)
    return any(
        isinstance(o, ember.Tensor)
        and o.requires_grad
        and o.dtype is ember.float64
        and o.grad_fn is not None
        and o.grad_fn.name() not in _NO_DERIVATIVE
        for o in outs
    )


def _probe():
    """Return {name: (function, make_inputs)} for every op that can be checked."""
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn in sorted(API.items()):
            if name in RANDOM or name.startswith(("rand", "dropout")):
                continue
            if name in SAMPLES:
                continue
            for pattern in PATTERNS:
                make = lambda pattern=pattern: pattern(_t(2, 3), _t(2, 3, seed=1))  # noqa: E731
                try:
                    out = fn(*make())
                except Exception:  # noqa: BLE001 - probing: this pattern does not apply
                    continue
                if _differentiable(out):
                    found[name] = (fn, make)
                    break
        for name, (fn, make) in SAMPLES.items():
            if name in API or hasattr(ember.Tensor, name) or name == "getitem":
                try:
                    out = fn(*make())
                except Exception:  # noqa: BLE001 - an op another engineer has not landed
                    continue
                if _differentiable(out):
                    found[name] = (fn, make)
    return found


OPS = _probe()

# ops whose gradients disagree with finite differences, as found by this test (owners: the
# op families); each entry is a bug to fix, then delete the entry (the xfails are strict)
KNOWN_BAD_GRAD: dict = {}
KNOWN_BAD_GRADGRAD: dict = {}


def _only_float_outputs(fn):
    # gradcheck compares float outputs; integer outputs (indices) pass through
    def wrapped(*args):
        out = fn(*args)
        if isinstance(out, tuple):
            return tuple(o for o in out if isinstance(o, ember.Tensor))
        return out

    return wrapped


def _params(table):
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=table[name]))
        if name in table
        else name
        for name in sorted(OPS)
    ]


@pytest.mark.parametrize("name", _params(KNOWN_BAD_GRAD))
def test_gradcheck(name):
    fn, make = OPS[name]
    assert gradcheck(_only_float_outputs(fn), make(), eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("name", _params(KNOWN_BAD_GRADGRAD))
def test_gradgradcheck(name):
    fn, make = OPS[name]
    assert gradgradcheck(_only_float_outputs(fn), make(), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_core_families_are_covered():
    """The probe finds the ops of every family that has landed (guards against a probe that
    silently finds nothing)."""
    core = {"add", "mul", "div", "pow", "exp", "log", "tanh", "sigmoid", "relu", "sqrt", "abs"}
    core |= {"sum", "mean", "max", "matmul", "mm", "cat", "stack", "transpose", "getitem"}
    core |= {"reshape", "view", "expand", "where", "clamp"}
    assert core <= set(OPS), sorted(core - set(OPS))
    assert len(OPS) >= 100
