"""The printed-output comparison the user-code oracle tests use (``tests/printed.py``)."""

from __future__ import annotations

import pytest

from tests.printed import assert_same_printed, printed_difference


def test_equal_text_is_equal():
    assert printed_difference("loss 0.25\n", "loss 0.25\n") is None


@pytest.mark.parametrize(
    "got, want",
    [
        ("Result: y = 0.0000 + -1.3993 * P3(0.0000 + 0.2481 x)",
         "Result: y = -0.0000 + -1.3993 * P3(0.0000 + 0.2481 x)"),
        ("tensor([ 0.0000, 1.5000])", "tensor([-0.0000, 1.5000])"),  # padding follows the sign
        ("loss 1.3993", "loss 1.3994"),
        ("1.234567e-05", "1.234568e-05"),
        ("mean 12345.678", "mean 12345.679"),
        ("nan inf -inf", "nan inf -inf"),
    ],
)  # fmt: skip
def test_rounding_noise_is_equal(got, want):
    assert printed_difference(got, want) is None


@pytest.mark.parametrize(
    "got, want",
    [
        ("loss 1.3993", "loss 1.4093"),      # a real difference in the numbers
        ("step 3", "step 4"),                # integers compare exactly
        ("shape (2, 3)", "shape (3, 2)"),
        ("ok\n", "ok\n\n"),                  # one line more
        ("grad_fn=<AddBackward0>", "grad_fn=<MulBackward0>"),
        ("nan", "inf"),
        ("x 1.0", "x 1.0 2.0"),
    ],
)  # fmt: skip
def test_real_differences_are_reported(got, want):
    assert printed_difference(got, want) is not None
    with pytest.raises(AssertionError):
        assert_same_printed(got, want)
