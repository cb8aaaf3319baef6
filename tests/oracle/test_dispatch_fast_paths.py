"""Oracle tests for the per-op hot path (issue 27): a Python number beside a float32/float64
tensor (cached as a 0-d array of the tensor's dtype), nodes made without ``Node.__init__``, the
engine's direct call of a hook-free node, and the gradients a node hands its post hooks."""

import numpy as np
import pytest

import ember
from ember._ops import pointwise

torch = pytest.importorskip("torch")

NUMBERS = [1.01, 0.1, -0.05, 1 / 3, 0.0, -0.0, float("nan"), float("inf"), -float("inf"),
           1e-45, 3.4e38, 1e39, 1.7e308, 5e-324, 1e30, 1e31]  # fmt: skip
DTYPES = ["float32", "float64", "float16"]
OPS = {
    "mul": lambda x, c: x * c,
    "rmul": lambda x, c: c * x,
    "add": lambda x, c: x + c,
    "radd": lambda x, c: c + x,
    "sub": lambda x, c: x - c,
    "mul_": lambda x, c: x.clone().mul_(c),
    "add_": lambda x, c: x.clone().add_(c),
}


def _same(e, t) -> None:
    assert str(e.dtype) == str(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    a, b = e.detach().numpy(), t.detach().numpy()
    np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_number_operand_bitwise_as_torch(name, dtype):
    rng = np.random.default_rng(1)
    data = (rng.standard_normal(64) * 10.0 ** rng.uniform(-8, 8, 64)).astype(dtype)
    data[:4] = [0.0, -0.0, np.inf, np.nan]
    fn = OPS[name]
    for c in NUMBERS:
        with np.errstate(all="ignore"):
            e = fn(ember.from_numpy(data.copy()), c)
        t = fn(torch.from_numpy(data.copy()), c)
        _same(e, t)
    for c in NUMBERS:  # a 0-d tensor (NumPy returns scalars for 0-d operands)
        e, t = fn(ember.tensor(data[5]), c), fn(torch.tensor(data[5]), c)
        _same(e, t)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_chain_values_and_grads_as_torch(dtype):
    def run(lib):
        x = lib.from_numpy(np.linspace(-2, 2, 16).astype(dtype)).requires_grad_()
        y = x
        for _ in range(10):
            y = ((y * 1.01 + 0.1).sin() - 0.05) * -0.0 + y * 0.5
        y.sum().backward()
        return y, x.grad, type(y.grad_fn).__name__

    ey, eg, en = run(ember)
    ty, tg, tn = run(torch)
    _same(ey, ty)
    np.testing.assert_allclose(eg.numpy(), tg.numpy(), rtol=1e-6)
    assert en == tn


def test_number_cache_is_bounded_and_read_only():
    x = ember.ones(3)
    for i in range(3 * pointwise._NUMBER_ARRAYS_MAX):
        x * (1.0 + i / 7)
    assert len(pointwise._NUMBER_ARRAYS) <= pointwise._NUMBER_ARRAYS_MAX
    a = pointwise.number_operand(np.ones(2, np.float32), 2.5)
    assert a.dtype == np.float32 and a.ndim == 0 and not a.flags.writeable
    # no caching for what a 0-d array would change: zeros' signs, NaN, big values, ints
    for c in (0.0, -0.0, float("nan"), 1e31, 3):
        assert pointwise.number_operand(np.ones(2, np.float32), c) is c


@pytest.mark.parametrize(
    "expr",
    [
        lambda lib, x, w: x - 0.05,
        lambda lib, x, w: x + 0.1,
        lambda lib, x, w: 0.1 + x,
        lambda lib, x, w: x * 1.01,
        lambda lib, x, w: w + x,
        lambda lib, x, w: x - w,
        lambda lib, x, w: w * x,
        lambda lib, x, w: lib.add(x, w, alpha=2),
        lambda lib, x, w: lib.sub(w, x, alpha=2),
    ],
)
def test_post_hook_sees_undefined_grads_for_inputs_not_requiring_grad(expr):
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = lib.tensor([0.5, -1.0, 2.0])  # does not require grad
        seen = []
        y = expr(lib, x, w)
        y.grad_fn.register_hook(
            lambda gi, go: seen.append([None if g is None else g.tolist() for g in gi])
        )
        y.sum().backward()
        return seen, x.grad.tolist()

    assert run(ember) == run(torch)


def test_hooked_and_plain_nodes_in_one_pass_as_torch():
    # the engine calls hook-free nodes directly and the others through call_function
    def run(lib):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        log = []
        a = x * 1.5
        a.register_hook(lambda g: log.append(("tensor", g.tolist())) or g * 2)
        b = a.sin()
        b.grad_fn.register_prehook(lambda go: log.append(("pre", go[0].tolist())))
        c = b - 0.25
        c.retain_grad()
        d = c * c
        d.sum().backward()
        return log, x.grad.tolist(), c.grad.tolist()

    (el, eg, ec), (tl, tg, tc) = run(ember), run(torch)
    assert [k for k, _ in el] == [k for k, _ in tl]
    for (_, a), (_, b) in zip(el, tl):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(eg, tg, rtol=1e-6)
    np.testing.assert_allclose(ec, tc, rtol=1e-6)


def test_second_backward_raises_as_torch():
    for lib in (ember, torch):
        x = lib.randn(4, requires_grad=True)
        y = (x * 1.01 + 0.1).sin() - 0.05
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.sum().backward()


def test_anomaly_mode_names_the_node_as_torch():
    msgs = {}
    for lib in (ember, torch):
        x = lib.tensor([-1.0, 2.0], requires_grad=True)
        y = (x * 1.01).sqrt() - 0.05
        with lib.autograd.detect_anomaly(), pytest.warns(UserWarning) as rec:
            with pytest.raises(RuntimeError, match="returned nan values") as err:
                y.sum().backward()
        msgs[lib.__name__] = (str(err.value), any("SqrtBackward0" in str(w.message) for w in rec))
    assert msgs["ember"] == msgs["torch"]


def test_node_fields_and_versions():
    x = ember.randn(3, requires_grad=True)
    y = x * 2.0
    z = y.sin()
    assert z.grad_fn.next_functions == ((y.grad_fn, 0),)
    assert y.grad_fn.next_functions[1] == (None, 0)
    assert z.grad_fn._sequence_nr() > y.grad_fn._sequence_nr()
    assert type(y.grad_fn).__name__ == "MulBackward0" and z.grad_fn.name() == "SinBackward0"
    y.add_(1.0)  # the saved input of sin changed: torch's version error
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
