"""User code: ``torch.gradient`` (finite differences of sampled values) with uniform steps and
with coordinates, edge orders 1 and 2, compared with torch in value and gradient."""

from __future__ import annotations

import pytest

from tests.oracle._user_code import check_snippet
from tests.oracle.helper import check, check_raises, rand

COORDS = [0.0, 0.5, 1.5, 1.75, 3.0]


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x, e: lib.gradient(x, edge_order=e),
        lambda lib, x, e: lib.gradient(x, spacing=0.5, dim=1, edge_order=e),
        lambda lib, x, e: lib.gradient(x, spacing=[2.0, 3.0], edge_order=e),
        lambda lib, x, e: lib.gradient(x, spacing=(lib.tensor(COORDS),), dim=0, edge_order=e),
        lambda lib, x, e: lib.gradient(x, dim=-1, edge_order=e),
    ],
)
def test_values_and_grads(fn, edge_order):
    check(lambda lib, x: fn(lib, x, edge_order), [rand(5, 4, dtype="float64")], grad_fn=False)


def test_integer_input_and_errors():
    check_snippet("""
        print(torch.gradient(torch.tensor([1, 4, 9, 16])))
        for f in [lambda: torch.gradient(torch.ones(1)),
                  lambda: torch.gradient(torch.ones(2), edge_order=2),
                  lambda: torch.gradient(torch.ones(3), edge_order=3)]:
            try:
                f()
            except RuntimeError as e:
                print("RuntimeError", e)
    """)


def test_mismatched_spacing_is_an_error():
    check_raises(lambda lib, x: lib.gradient(x, spacing=[1.0, 2.0, 3.0]), [rand(3, 3)])
