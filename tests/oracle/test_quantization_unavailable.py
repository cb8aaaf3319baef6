"""ember has no quantization: torch's entry points exist and say so (NotImplementedError), so a
quantization tutorial stops with a clear message instead of an AttributeError."""

from __future__ import annotations

import pytest

import ember
from tests.oracle.helper import torch

ENTRY_POINTS = [
    lambda L: L.ao.quantization.quantize_dynamic(L.nn.Linear(2, 2), {L.nn.Linear}),
    lambda L: L.quantization.quantize_dynamic(L.nn.Linear(2, 2), {L.nn.Linear}),
    lambda L: L.ao.quantization.get_default_qconfig("x86"),
    lambda L: L.ao.quantization.prepare(L.nn.Linear(2, 2)),
    lambda L: L.ao.quantization.default_dynamic_qconfig,
]


@pytest.mark.parametrize("case", range(len(ENTRY_POINTS)))
def test_entry_points_exist_in_torch_and_raise_clearly_in_ember(case):
    ENTRY_POINTS[case](torch)  # (torch: they exist and run)
    with pytest.raises(NotImplementedError, match="ember has no quantized tensors"):
        ENTRY_POINTS[case](ember)


def test_quantized_dtypes_are_missing_with_a_reason():
    assert hasattr(torch, "qint8") and not hasattr(ember, "qint8")
    with pytest.raises(AttributeError, match="ember has no quantized tensors"):
        ember.qint8  # noqa: B018


def test_other_missing_names_stay_attribute_errors():
    with pytest.raises(AttributeError):
        ember.no_such_function  # noqa: B018
    assert getattr(ember, "no_such_function", None) is None
