"""Oracle tests: torch's errors for misbehaving custom ``autograd.Function`` subclasses (wrong
gradient counts, shapes and types, legacy Functions, missing methods), run through torch and
ember by ``same`` (exception class and message)."""

import warnings

import pytest

from tests.oracle.test_autograd_oracle import X34, case, leaf, same

CASES: list = []


@case(CASES)
def _save_non_tensor(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    Bad.apply(leaf(lib, X34))


def _returning(lib, make_grads, n_args=2):
    class Ret(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, n=2):
            return x * n

        @staticmethod
        def backward(ctx, g):
            return make_grads(lib, g)

    x = leaf(lib, X34)
    out = Ret.apply(x, 2) if n_args == 2 else Ret.apply(x)
    out.sum().backward()
    return x.grad


@case(CASES)
def _too_few_grads(lib):
    return _returning(lib, lambda lib, g: g)


@case(CASES)
def _extra_none_grads(lib):
    return _returning(lib, lambda lib, g: (g * 2, None, None, None))


@case(CASES)
def _extra_grads_not_none(lib):
    return _returning(lib, lambda lib, g: (g, None, g))


@case(CASES)
def _grad_for_non_tensor(lib):
    return _returning(lib, lambda lib, g: (g, g))


@case(CASES)
def _grad_not_a_tensor(lib):
    return _returning(lib, lambda lib, g: 3, n_args=1)


@case(CASES)
def _grad_wrong_shape(lib):
    return _returning(lib, lambda lib, g: g.sum(0)[:2], n_args=1)


@case(CASES)
def _grad_broadcastable_shape(lib):
    return _returning(lib, lambda lib, g: g.sum(0, keepdim=True), n_args=1)


@case(CASES)
def _grad_other_dtype(lib):
    return _returning(lib, lambda lib, g: g.float(), n_args=1)


@case(CASES)
def _legacy_function(lib):
    class Legacy(lib.autograd.Function):
        def forward(self, x):
            return x * 2

        def backward(self, g):
            return g

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            Legacy()(leaf(lib, X34))
        except RuntimeError as e:
            err = str(e)
    return err, [(w.category.__name__, str(w.message).split(" should")[1]) for w in seen]


@case(CASES)
def _no_backward(lib):
    class NoBack(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    NoBack.apply(leaf(lib, X34)).sum().backward()


@case(CASES)
def _no_forward(lib):
    class NoFwd(lib.autograd.Function):
        pass

    NoFwd.apply(leaf(lib, X34))


@case(CASES)
def _backward_and_vjp(lib):
    class Both(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    Both.apply(leaf(lib, X34)).sum().backward()


@case(CASES)
def _only_vjp(lib):
    class OnlyVjp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 7

    x = leaf(lib, X34)
    OnlyVjp.apply(x).sum().backward()
    return x.grad


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_custom_function_errors(fn):
    same(fn)
