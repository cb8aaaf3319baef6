"""User code: complex numbers built from real pairs (``view_as_complex`` / ``view_as_real`` /
``complex`` / ``polar``), as rotary position embeddings use them."""

from __future__ import annotations

import pytest

from tests.oracle._user_code import check_snippet
from tests.oracle.helper import check, check_double_backward, check_raises, rand


def _rope(lib, xq, xk):
    # LLaMA's apply_rotary_emb, as written in the reference implementation
    dim, end, theta = xq.shape[-1], xq.shape[1], 10000.0
    freqs = 1.0 / (theta ** (lib.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = lib.arange(end, device=freqs.device)
    freqs = lib.outer(t, freqs).float()
    freqs_cis = lib.polar(lib.ones_like(freqs), freqs)
    xq_ = lib.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = lib.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = lib.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = lib.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def test_rotary_embedding():
    check(_rope, [rand(2, 5, 3, 8), rand(2, 5, 3, 8)])


@pytest.mark.parametrize(
    "fn, shape",
    [
        (lambda lib, x: lib.view_as_complex(x), (3, 2)),
        (lambda lib, x: lib.view_as_real(lib.view_as_complex(x) * (1 + 2j)), (2, 3, 2)),
        (lambda lib, x: lib.view_as_complex(x.transpose(0, 1)).abs(), (4, 3, 2)),
        (lambda lib, x: lib.view_as_complex(x[:, 2:].reshape(3, 2, 2)).angle(), (3, 6)),
        (lambda lib, x: lib.view_as_complex(x).real, (1, 2)),
        (lambda lib, x: lib.view_as_real(lib.view_as_complex(x)), (5, 2)),
    ],
)
def test_views(fn, shape):
    check(fn, [rand(*shape)])


def test_view_as_real_of_complex_input_is_a_view():
    z = rand(3, 4, dtype="complex64")
    check(lambda lib, z: lib.view_as_real(z), [z], grad=False, view=True)
    check(lambda lib, z: lib.view_as_real(z.t()), [z], grad=False, view=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_and_polar(dtype):
    a, b = rand(3, 4, dtype=dtype), rand(4, dtype=dtype)
    check(lambda lib, a, b: lib.view_as_real(lib.complex(a, b)), [a, b])
    check(lambda lib, a, b: lib.view_as_real(lib.polar(a, b)), [a, b])
    check(lambda lib, a, b: (lib.polar(a.abs(), b) * lib.complex(b, a)).abs(), [a, b])


def test_double_backward():
    a, b = rand(3, dtype="float64"), rand(3, dtype="float64")
    check_double_backward(lambda lib, a, b: lib.view_as_real(lib.polar(a, b) ** 2), [a, b])
    check_double_backward(lambda lib, a, b: lib.complex(a, b).abs() ** 3, [a, b])
    x = rand(4, 2, dtype="float64")
    check_double_backward(lambda lib, x: lib.view_as_real(lib.view_as_complex(x) ** 3), [x])


def test_version_shared_with_base():
    check_snippet("""
        x = torch.zeros(3, 2)
        z = torch.view_as_complex(x)
        z.mul_(2)
        x[0, 1] = 5.0
        print(z, x._version, z._version, z.is_contiguous(), z.stride(), z.storage_offset())
        r = torch.view_as_real(z)
        r[1, 0] = 7.0
        print(x, r.stride(), r._base is x, z._base is x)
    """)


@pytest.mark.parametrize(
    "fn, inputs",
    [
        (lambda lib, x: lib.view_as_real(x), [rand(3)]),
        (lambda lib, x: lib.view_as_complex(x), [rand(3, 3)]),
        (lambda lib, x: lib.view_as_complex(x.t()), [rand(2, 3)]),
        (lambda lib, x: lib.view_as_complex(x), [rand(3, 2, dtype="int64")]),
        (lambda lib, x: lib.view_as_complex(x[:, 1:3]), [rand(2, 4)]),
        (lambda lib, x: lib.view_as_complex(x[:, ::3]), [rand(3, 4, 2)[..., 0]]),
        (lambda lib, x: lib.view_as_complex(x), [rand()]),
        (lambda lib, a: lib.complex(a, a.double()), [rand(2)]),
        (lambda lib, a: lib.complex(a, a), [rand(2, dtype="int64")]),
        (lambda lib, a: lib.polar(a, a[:2]), [rand(3)]),
    ],
)
def test_errors(fn, inputs):
    e, t = check_raises(fn, inputs)
    assert str(e) == str(t)


def test_complex_from_numpy_pairs():
    out = check_snippet("""
        x = torch.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 2, 2))
        z = torch.view_as_complex(x)
        print(z, z.dtype, torch.view_as_real(z).shape)
        print(torch.complex(torch.tensor([1.0]), torch.tensor([2.0])))
        print(torch.view_as_complex(torch.zeros(0, 2)))
        print(torch.view_as_real(torch.zeros(0, dtype=torch.complex64)))
        print(torch.polar(torch.tensor([2.0], dtype=torch.float64), torch.tensor([0.0]).double()))
    """)
    assert "complex64" in out


def test_real_input_of_complex_product_gets_real_grad_silently():
    import warnings

    import ember
    from ember._ops import copying

    copying._WARNED_COMPLEX_CAST.clear()  # the cast warns once per process
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * ember.tensor([1 + 2j, 3 - 1j])).abs().sum().backward()
    assert x.grad.dtype is ember.float32
