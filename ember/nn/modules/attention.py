"""MultiheadAttention (torch keeps it in ``nn.modules.activation``; ember re-exports it there)."""

from __future__ import annotations

import ember
from ember._core.grad_mode import is_grad_enabled
from ember._core.tensor import Tensor
from ember.nn import init
from ember.nn._functional import attention as FA
from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head attention: ``concat(head_1, ..., head_h) W_o`` with
    ``head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d)) V W_i^V``."""

    __constants__ = ["batch_first"]

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0,"
                f" got embed_dim={embed_dim} and num_heads={num_heads} instead"
            )
        super().__init__()
        self.embed_dim = embed_dim
        # keys and values default to the query's embedding size
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = (self.kdim, self.vdim) == (embed_dim, embed_dim)
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim, leftover = divmod(embed_dim, num_heads)
        if leftover:
            raise AssertionError("embed_dim must be divisible by num_heads")
        # one packed (3E, E) input projection when q, k and v share the embedding size, else
        # three; the unused names are registered as None, in torch's order
        packed = {"in_proj_weight": (3 * embed_dim, embed_dim)}
        separate = {
            "q_proj_weight": (embed_dim, embed_dim),
            "k_proj_weight": (embed_dim, self.kdim),
            "v_proj_weight": (embed_dim, self.vdim),
        }
        used, unused = (packed, separate) if self._qkv_same_embed_dim else (separate, packed)
        for name, shape in used.items():
            self.register_parameter(name, Parameter(ember.empty(shape, dtype=dtype)))
        for name in unused:
            self.register_parameter(name, None)
        bias_param = Parameter(ember.empty(3 * embed_dim, dtype=dtype)) if bias else None
        self.register_parameter("in_proj_bias", bias_param)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, dtype=dtype
        )
        if add_bias_kv:
            self.bias_k = Parameter(ember.empty((1, 1, embed_dim), dtype=dtype))
            self.bias_v = Parameter(ember.empty((1, 1, embed_dim), dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """Xavier-uniform projections, zero biases, Xavier-normal ``bias_k``/``bias_v``."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        # checkpoints of torch 1.1 lack this flag
        if "_qkv_same_embed_dim" not in state:
            state["_qkv_same_embed_dim"] = True
        super().__setstate__(state)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Return ``(attn_output, attn_weights)``; weights are None unless ``need_weights``."""
        is_batched = query.dim() == 3
        float_masks = any(
            m is not None and m.is_floating_point() for m in (attn_mask, key_padding_mask)
        )
        key_padding_mask = FA._canonical_mask(
            key_padding_mask,
            "key_padding_mask",
            FA._none_or_dtype(attn_mask),
            "attn_mask",
            query.dtype,
        )
        attn_mask = FA._canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        batch_first = self.batch_first and is_batched
        out, weights = FA._mha_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
            batch_first=batch_first,
        )
        if batch_first:
            out = out.transpose(1, 0)
            if not float_masks and self._fast_path(query, key, value):
                out = out.contiguous()  # torch's fused inference kernel writes (N, L, E)
        return out, weights

    def _fast_path(self, query: Tensor, key: Tensor, value: Tensor) -> bool:
        """Whether torch would run its fused inference kernel (same numbers, other layout)."""
        if self.training or not (query is key and key is value) or self.num_heads % 2:
            return False
        if self.in_proj_weight is None or self.in_proj_bias is None:
            return False
        if self.bias_k is not None or self.add_zero_attn:
            return False
        if query.dtype != self.in_proj_weight.dtype or query.dtype != self.in_proj_bias.dtype:
            return False
        args = (
            query,
            self.in_proj_weight,
            self.in_proj_bias,
            self.out_proj.weight,
            self.out_proj.bias,
        )
        return not (is_grad_enabled() and any(a is not None and a.requires_grad for a in args))

    def merge_masks(
        self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, query: Tensor
    ) -> tuple[Tensor | None, int | None]:
        """Return ``(merged_mask, mask_type)``: the masks as one ``(N, num_heads, L, L)`` mask
        (type 2), the key padding mask alone (type 1), or ``(None, None)``."""
        mask_type, merged = None, None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1
                )
            merged = expanded
            if key_padding_mask is not None:
                kpm = key_padding_mask.view(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1
                )
                merged = expanded + kpm
        return merged, mask_type
