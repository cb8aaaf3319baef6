"""Scaled dot-product attention and multi-head attention of ``ember.nn.functional``.

Both are compositions of ember ops (matmul, the fused softmax, dropout, linear), so their
backward passes are differentiable again. ``multi_head_attention_forward`` follows torch's
function step by step (shape checks, mask canonicalisation, in-projection, ``bias_k``/``bias_v``,
``add_zero_attn``, static keys, weights averaged over heads) with one difference of layout:
heads are kept as a 4-D ``(N, num_heads, L, head_dim)`` view of the projection instead of a
copied ``(N * num_heads, L, head_dim)`` tensor, so no copy is made between the in-projection
GEMM and the batched attention products. The module ``nn.MultiheadAttention`` calls
``_mha_forward`` with ``batch_first=True`` to project batch-first inputs without transposing
them first.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember._core.tensor import Tensor, _wrap
from ember._ops.registry import python_level

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]


# ------------------------------------------------------------------------------ masks


def _none_or_dtype(input: Tensor | None):
    """Return ``input.dtype``, or None for None."""
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


@python_level
def _canonical_mask(
    mask: Tensor | None,
    mask_name: str,
    other_type,
    other_name: str,
    target_type,
    check_other: bool = True,
) -> Tensor | None:
    """Return ``mask`` as an additive float mask of ``target_type`` (bool True -> -inf)."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype is not ember.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. "
            "Use same type for both instead.",
            stacklevel=3,
        )
    if not is_float:  # ops a trace records (0/1 then -inf for 1), so other masks flow through
        mask = mask.to(target_type).masked_fill_(mask, -math.inf)
    return mask


def _padded_positions(mask: Tensor) -> np.ndarray:
    """Return the bool array of positions a key padding mask (bool or additive) removes."""
    return mask._data if mask.dtype is ember.bool else mask._data != 0


# ------------------------------------------------------------------------------ sdpa


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Return ``softmax(q k^T * scale + mask) v`` (causal mask, dropout, grouped heads)."""
    from ember.nn._functional.activation import softmax
    from ember.nn._functional.dropout import dropout
    from ember.nn.attention import ENABLED, SDPBackend, _select_sdp_backend
    from ember.nn.attention.bias import CausalBias

    if isinstance(attn_mask, CausalBias):
        return CausalBias._dispatch(
            query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa
        )
    if not ENABLED[SDPBackend.MATH]:  # ``sdpa_kernel`` narrowed the choice: torch's checks
        _select_sdp_backend(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    dt = query._data.dtype
    bias = None
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                "is_causal=True"
            )
        bias = _wrap(np.triu(np.full((L, S), -np.inf, dtype=dt), 1))
    elif attn_mask is not None:
        if attn_mask.dtype is ember.bool:
            bias = _wrap(np.where(attn_mask._data, 0.0, -np.inf).astype(dt))
        else:
            bias = attn_mask
    if enable_gqa:
        key = _repeat_heads(key, query.shape[-3] // key.shape[-3])
        value = _repeat_heads(value, query.shape[-3] // value.shape[-3])
    # torch gives 0 (not nan) for a query whose every key is masked: such rows are unmasked
    # for the softmax and their probabilities zeroed after it (a zero gradient flows back)
    dead = None
    if bias is not None and not is_causal:
        rows = np.isneginf(bias._data).all(-1, keepdims=True)
        if rows.any():
            dead = _wrap(rows)
            bias = bias.masked_fill(dead, 0.0)
    # scaling q (L x E) is cheaper than scaling the scores (L x S) when E < S
    attn = ember.matmul(query * scale_factor, key.transpose(-2, -1))
    if bias is not None:
        attn = attn + bias
    attn = softmax(attn, dim=-1)
    if dead is not None:
        attn = attn.masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, training=True)
    return ember.matmul(attn, value)


def _repeat_heads(t: Tensor, rep: int) -> Tensor:
    if rep == 1:
        return t
    shape = tuple(t.shape)
    e = t.unsqueeze(-3).expand(shape[:-2] + (rep,) + shape[-2:])
    return e.reshape(shape[:-3] + (shape[-3] * rep,) + shape[-2:])


# ------------------------------------------------------------------------------ checks


@python_level
def _mha_shape_check(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    num_heads: int,
) -> bool:
    """Check the dims of the inputs and masks; return whether the input is batched."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D"
                f" but found {key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D"
                f" but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                f" but found {attn_mask.dim()}-D tensor instead"
            )
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D"
                f" but found {key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D"
                f" but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D"
                    f" but found {attn_mask.dim()}-D tensor instead"
                )
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(
                        f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}"
                    )
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received "
        f"{query.dim()}-D query tensor"
    )


@python_level
def _check_key_padding_mask(key_padding_mask: Tensor, src_len: int, bsz: int) -> None:
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(
            f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}"
        )
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(
            f"Expected key_padded_mask.shape[1] to be {src_len}, "
            f"but got {key_padding_mask.shape[1]}"
        )


# ------------------------------------------------------------------------------ projections


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    from ember.nn.functional import linear  # the composite: a trace records ``aten::linear``

    return linear(x, w, b)


@python_level
def _in_projection_packed(
    q: Tensor, k: Tensor, v: Tensor, w: Tensor, b: Tensor | None = None
) -> list[Tensor]:
    """Return ``[q', k', v']``: q, k, v projected by the rows of ``w`` packed in q, k, v order.

    Self-attention (``q is k is v``) is one GEMM; encoder-decoder attention (``k is v``) two.
    The results are views of the projections (torch returns contiguous copies).
    """
    E = q.size(-1)
    if k is v:
        if q is k:
            return list(_linear(q, w, b).split(E, dim=-1))
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        return [_linear(q, w_q, b_q), *_linear(k, w_kv, b_kv).split(E, dim=-1)]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return [_linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)]


@python_level
def _in_projection(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    w_q: Tensor,
    w_k: Tensor,
    w_v: Tensor,
    b_q: Tensor | None = None,
    b_k: Tensor | None = None,
    b_v: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Return ``(q', k', v')``: three separate projections to the query's embedding size."""
    Eq = q.size(-1)
    # each weight maps its input's embedding size to the query's
    for name, w, x in (("query", w_q, q), ("key", w_k, k), ("value", w_v, v)):
        want = (Eq, x.size(-1))
        if tuple(w.shape) != want:
            raise AssertionError(f"expecting {name} weights shape of {want}, but got {w.shape}")
    for name, b in (("query", b_q), ("key", b_k), ("value", b_v)):
        if b is not None and tuple(b.shape) != (Eq,):
            raise AssertionError(f"expecting {name} bias shape of {(Eq,)}, but got {b.shape}")
    return _linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)


# ------------------------------------------------------------------------------ mha


@python_level
def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Return ``(attn_output, attn_weights)`` of multi-head attention over sequence-first
    ``(L, N, E)`` (or unbatched ``(L, E)``) inputs; weights are None unless ``need_weights``."""
    return _mha_forward(
        query,
        key,
        value,
        embed_dim_to_check,
        num_heads,
        in_proj_weight,
        in_proj_bias,
        bias_k,
        bias_v,
        add_zero_attn,
        dropout_p,
        out_proj_weight,
        out_proj_bias,
        training,
        key_padding_mask,
        need_weights,
        attn_mask,
        use_separate_proj_weight,
        q_proj_weight,
        k_proj_weight,
        v_proj_weight,
        static_k,
        static_v,
        average_attn_weights,
        is_causal,
        batch_first=False,
    )


@python_level
def _mha_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
    batch_first=False,
):
    """``multi_head_attention_forward``; with ``batch_first`` the batched inputs are
    ``(N, L, E)``. The output is ``(L, N, E)`` either way (the caller transposes it)."""
    from ember.nn._functional.activation import softmax
    from ember.nn._functional.dropout import dropout

    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        batch_first = False
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    seq, bat = (1, 0) if batch_first else (0, 1)
    tgt_len, bsz, embed_dim = query.shape[seq], query.shape[bat], query.shape[2]
    src_len = key.shape[seq]

    key_padding_mask = _canonical_mask(
        key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask", query.dtype
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the scaled dot-product attention makes the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is no longer causal

    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")

    def seq_first(shape):  # torch's messages show sequence-first shapes
        return ember.Size((shape[1], shape[0], *shape[2:])) if batch_first else shape

    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {seq_first(key.shape)[:2]} do not match "
                f"value's {seq_first(value.shape)[:2]}"
            )
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(
            f"key shape {seq_first(key.shape)} does not match value shape {seq_first(value.shape)}"
        )

    # in-projection: q, k, v keep the input's layout, (L, N, E) or (N, L, E)
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(
                    f"use_separate_proj_weight is True but {name}_proj_weight is None"
                )
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = _in_projection(
            query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v
        )

    # attention mask as (1 or N * num_heads, L, S)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                    f"{(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                    f"{(bsz * num_heads, tgt_len, src_len)}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    # bias_k and bias_v come as a pair: one more key and value position, appended
    if (bias_k is None) != (bias_v is None):
        given, missing = ("bias_k", "bias_v") if bias_v is None else ("bias_v", "bias_k")
        raise AssertionError(f"{given} is set but {missing} is None")
    if bias_k is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        shape = (bsz, 1, embed_dim) if batch_first else (1, bsz, embed_dim)
        k = ember.cat([k, bias_k.expand(shape)], dim=seq)
        v = ember.cat([v, bias_v.expand(shape)], dim=seq)
        attn_mask, key_padding_mask = _pad_masks(attn_mask, key_padding_mask)

    # heads: (N, num_heads, length, head_dim) views of the projections
    q = _split_heads(q, num_heads, head_dim, batch_first)
    if static_k is None:
        k = _split_heads(k, num_heads, head_dim, batch_first)
    else:
        k = _static(static_k, "static_k", bsz, num_heads, head_dim)
    if static_v is None:
        v = _split_heads(v, num_heads, head_dim, batch_first)
    else:
        v = _static(static_v, "static_v", bsz, num_heads, head_dim)

    if add_zero_attn:
        zeros = ember.zeros((bsz, num_heads, 1, head_dim), dtype=k.dtype)
        k = ember.cat([k, zeros], dim=2)
        v = ember.cat([v, zeros], dim=2)
        attn_mask, key_padding_mask = _pad_masks(attn_mask, key_padding_mask)
    src_len = k.shape[2]

    # merge the masks into one additive mask broadcasting to (N, num_heads, L, S)
    if attn_mask is not None:
        lead = (1, 1) if attn_mask.shape[0] == 1 else (bsz, num_heads)
        attn_mask = attn_mask.view(*lead, tgt_len, src_len)
    if key_padding_mask is not None:
        _check_key_padding_mask(key_padding_mask, src_len, bsz)
        kpm = key_padding_mask.view(bsz, 1, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if not training:
        dropout_p = 0.0

    if need_weights:
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        weights = ember.matmul(q * math.sqrt(1.0 / float(head_dim)), k.transpose(-2, -1))
        if attn_mask is not None:
            weights = weights + attn_mask
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = ember.matmul(weights, v)
    else:
        weights = None
        from ember.nn import functional as F  # the public one: a trace records one node

        out = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)

    # (N, H, L, hd) -> (L * N, E): one copy, then the out-projection as one GEMM
    out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if weights is not None:
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
    if not is_batched:
        out = out.squeeze(1)
        if weights is not None:
            weights = weights.squeeze(0)
    return out, weights


@python_level
def _pad_masks(attn_mask, key_padding_mask):
    """Return both masks with one more (zero: attend) column for an appended key."""
    from ember.nn._functional.misc import pad

    return tuple(None if m is None else pad(m, (0, 1)) for m in (attn_mask, key_padding_mask))


@python_level
def _split_heads(x: Tensor, num_heads: int, head_dim: int, batch_first: bool) -> Tensor:
    """Return the ``(N, num_heads, length, head_dim)`` view of a ``(L, N, E)`` projection (or
    ``(N, L, E)`` with ``batch_first``)."""
    a, b = x.shape[0], x.shape[1]
    if batch_first:
        return x.view(a, b, num_heads, head_dim).transpose(1, 2)
    return x.view(a, b, num_heads, head_dim).permute(1, 2, 0, 3)


@python_level
def _static(t: Tensor, name: str, bsz: int, num_heads: int, head_dim: int) -> Tensor:
    """Return a ``(N * num_heads, S, head_dim)`` static key/value as ``(N, num_heads, S, hd)``."""
    if t.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {t.size(0)}")
    if t.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.size(2)}")
    return t.view(bsz, num_heads, t.size(1), head_dim)
