"""``ember.nn.attention.bias``: causal attention biases for ``scaled_dot_product_attention``.

torch's ``CausalBias`` is a tensor subclass that reroutes ``F.scaled_dot_product_attention``
through ``__torch_function__``. ember has no such protocol: its ``CausalBias`` is a Tensor holding
the materialized bool mask (True = attend), which ``F.scaled_dot_product_attention`` applies as
any bool ``attn_mask``; the results are the same.
"""

from __future__ import annotations

from enum import IntEnum, auto
from warnings import warn

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember.overrides import _disabled_torch_function_impl

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """Where a causal bias's triangle is anchored: ``UPPER_LEFT`` (``tril(ones(L, S))``, as
    ``is_causal=True``) or ``LOWER_RIGHT`` (``tril(ones(L, S), diagonal=S - L)``)."""

    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


def _mask(variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> Tensor:
    offset = 0 if variant == CausalVariant.UPPER_LEFT else seq_len_kv - seq_len_q
    return _wrap(np.tri(seq_len_q, seq_len_kv, offset, dtype=bool))


class CausalBias(Tensor):
    """A causal (triangular) attention bias of ``seq_len_q`` x ``seq_len_kv``; make one with
    ``causal_upper_left`` or ``causal_lower_right``."""

    __torch_function__ = _disabled_torch_function_impl  # (scaled_dot_product_attention reads it)

    def __new__(cls, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warn(
                "Lower right causal bias will produce NaNs in the output when "
                "seq_len_q > seq_len_kv!",
                stacklevel=2,
            )
        t = _mask(variant, seq_len_q, seq_len_kv)
        t.__class__ = cls
        t.variant, t.seq_len_q, t.seq_len_kv = variant, seq_len_q, seq_len_kv
        return t

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        pass

    def _upper_left(self, device) -> Tensor:
        """Return the upper-left causal mask as a plain bool Tensor."""
        return _mask(CausalVariant.UPPER_LEFT, self.seq_len_q, self.seq_len_kv)

    def _lower_right(self, device) -> Tensor:
        """Return the lower-right causal mask as a plain bool Tensor."""
        return _mask(CausalVariant.LOWER_RIGHT, self.seq_len_q, self.seq_len_kv)

    def _materialize(self, device=None) -> Tensor:
        """Return the bias as a plain ``(seq_len_q, seq_len_kv)`` bool Tensor."""
        return _mask(self.variant, self.seq_len_q, self.seq_len_kv)

    @staticmethod
    def _dispatch(
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attn_mask: CausalBias,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        enable_gqa: bool = False,
    ) -> Tensor:
        """Return attention of ``query`` over ``key``/``value`` under the causal bias."""
        from ember.nn.functional import scaled_dot_product_attention

        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        upper = attn_mask.variant == CausalVariant.UPPER_LEFT
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or upper:
            mask, is_causal = None, True
        elif attn_mask.variant == CausalVariant.LOWER_RIGHT:
            mask = attn_mask._materialize()
        else:
            raise ValueError(
                f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}"
            )
        return scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
        )

    def __repr__(self) -> str:
        return repr(self._materialize())


def causal_upper_left(*size) -> CausalBias:
    """Return the upper-left causal bias of ``size`` (``(seq_len_q, seq_len_kv)``)."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size) -> CausalBias:
    """Return the lower-right causal bias of ``size`` (``(seq_len_q, seq_len_kv)``)."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])
