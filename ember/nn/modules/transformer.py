"""Transformer, TransformerEncoder/Decoder and their layers (torch.nn.modules.transformer)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember._core.grad_mode import is_grad_enabled
from ember._core.tensor import Tensor
from ember.nn import functional as F
from ember.nn import init
from ember.nn._functional.attention import _canonical_mask, _none_or_dtype, _padded_positions
from ember.nn.modules.activation import GELU, ReLU
from ember.nn.modules.attention import MultiheadAttention
from ember.nn.modules.container import ModuleList
from ember.nn.modules.dropout import Dropout
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import LayerNorm
from ember.overrides import _unwrap

__all__ = [
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]


def _causal_mask(size: int, dtype=None) -> Tensor:
    # -inf strictly above the diagonal: position i may attend to positions <= i
    return ember.triu(ember.full((size, size), float("-inf"), dtype=dtype), diagonal=1)


def _sequence_length(x: Tensor, batch_first: bool) -> int:
    # unbatched inputs are (S, E); batched ones (N, S, E) or (S, N, E)
    return x.size(0 if x.dim() == 2 or not batch_first else 1)


def _detect_is_causal_mask(
    mask: Tensor | None, is_causal: bool | None = None, size: int | None = None
) -> bool:
    """Return ``is_causal``, or when it is None whether ``mask`` is the causal mask."""
    if is_causal is not None or mask is None:
        return is_causal is True
    # no hint given: compare the mask with the causal mask of its size
    reference = _causal_mask(mask.size(-2) if size is None else size, dtype=mask.dtype)
    return tuple(mask.shape) == tuple(reference.shape) and bool(
        np.array_equal(mask._data, reference._data)
    )


def _stack(layer: Module, count: int) -> ModuleList:
    # independent copies: each layer of the stack trains its own parameters
    return ModuleList(copy.deepcopy(layer) for _ in range(count))


def _named_activation(activation):
    # "relu"/"gelu" name nn.functional's function (looked up now, so a wrapped one is used)
    if not isinstance(activation, str):
        return activation
    if activation in ("relu", "gelu"):
        return getattr(F, activation)
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _left_aligned(valid: np.ndarray) -> bool:
    """Whether every row of ``valid`` is a run of True followed by a run of False."""
    return bool(np.all(valid[:, 1:] <= valid[:, :-1]))


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need"."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        custom_encoder: Any | None = None,
        custom_decoder: Any | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        common = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(*common, batch_first, norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(*common, batch_first, norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Return the decoder's output for ``tgt`` attending to the encoded ``src``."""
        if src.dim() == 3:
            batch_axis = 0 if self.batch_first else 1
            if src.size(batch_axis) != tgt.size(batch_axis):
                raise RuntimeError("the batch number of src and tgt must be equal")
        if {src.size(-1), tgt.size(-1)} != {self.d_model}:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        decoder_options = {
            "tgt_mask": tgt_mask,
            "memory_mask": memory_mask,
            "tgt_key_padding_mask": tgt_key_padding_mask,
            "memory_key_padding_mask": memory_key_padding_mask,
            "tgt_is_causal": tgt_is_causal,
            "memory_is_causal": memory_is_causal,
        }
        return self.decoder(tgt, memory, **decoder_options)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """Return the ``(sz, sz)`` causal mask: -inf above the diagonal, 0 elsewhere."""
        return _causal_mask(sz, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` and an optional final norm."""

    __constants__ = ["norm"]

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _stack(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        # use_nested_tensor: whether torch would take its nested-tensor inference path, which
        # ember mirrors by zeroing the padded positions of the output (see _nested_padding)
        why_not = _why_not_sparsity_fast_path(encoder_layer) if enable_nested_tensor else ""
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor and not why_not
        self.mask_check = mask_check
        if why_not:
            warnings.warn(
                f"enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}",
                stacklevel=2,
            )

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """Return ``src`` passed through the layers (and the final norm)."""
        src_key_padding_mask = _canonical_mask(
            src_key_padding_mask, "src_key_padding_mask", _none_or_dtype(mask), "mask", src.dtype
        )
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, False)
        first = self.layers[0]
        batch_first = first.self_attn.batch_first
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        is_causal = _detect_is_causal_mask(mask, is_causal, _sequence_length(src, batch_first))
        output = src
        for mod in self.layers:
            output = mod(
                output,
                src_mask=mask,
                is_causal=is_causal,
                src_key_padding_mask=src_key_padding_mask,
            )
        if padded is not None:
            # torch runs these inputs as nested tensors and pads the result back with zeros
            output = output.masked_fill(ember.from_numpy(padded).unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _nested_padding(self, src: Tensor, mask: Tensor | None, kpm: Tensor | None):
        """Return the padded positions when torch would take its nested-tensor path, else None.

        In inference with a key padding mask (and the conditions below), torch drops the padded
        tokens and pads its output with zeros there; the other outputs are unchanged."""
        first = self.layers[0]
        if not getattr(self, "use_nested_tensor", False) or first.training or src.dim() != 3:
            return None
        if kpm is None or mask is not None:
            return None
        padded = np.asarray(_padded_positions(kpm))
        if getattr(self, "mask_check", True) and not _left_aligned(~padded):
            return None
        args = [src] + [p for p in _fast_path_params(first)]
        if is_grad_enabled() and any(a is not None and a.requires_grad for a in args):
            return None
        return padded


def _fast_path_params(layer) -> list:
    return [
        layer.self_attn.in_proj_weight,
        layer.self_attn.in_proj_bias,
        layer.self_attn.out_proj.weight,
        layer.self_attn.out_proj.bias,
        layer.norm1.weight,
        layer.norm1.bias,
        layer.norm2.weight,
        layer.norm2.bias,
        layer.linear1.weight,
        layer.linear1.bias,
        layer.linear2.weight,
        layer.linear2.bias,
    ]


def _why_not_sparsity_fast_path(layer) -> str:
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (
            f"{name}.self_attn.batch_first was not True"
            "(use batch_first for better inference performance)"
        )
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer`` and an optional final norm."""

    __constants__ = ["norm"]

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        self.layers = _stack(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Return ``tgt`` passed through the layers attending to ``memory`` (and the norm)."""
        length = _sequence_length(tgt, self.layers[0].self_attn.batch_first)
        # every layer gets the same masks; the causal hint is resolved once for all of them
        options = {
            "tgt_mask": tgt_mask,
            "memory_mask": memory_mask,
            "tgt_key_padding_mask": tgt_key_padding_mask,
            "memory_key_padding_mask": memory_key_padding_mask,
            "tgt_is_causal": _detect_is_causal_mask(tgt_mask, tgt_is_causal, length),
            "memory_is_causal": memory_is_causal,
        }
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, **options)
        return x if self.norm is None else self.norm(x)


def _residual(layer, x: Tensor, norm: Module, block, *args) -> Tensor:
    """One residual sub-block of a Transformer layer: ``x + block(norm(x))`` (pre-norm,
    ``norm_first``) or ``norm(x + block(x))`` (post-norm, the paper's order)."""
    if layer.norm_first:
        return x + block(norm(x), *args)
    return norm(x + block(x, *args))


def _feed_forward(layer, x: Tensor) -> Tensor:
    # the position-wise feed-forward network, before its residual dropout
    return layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual and a LayerNorm (after
    the block, or before it with ``norm_first``)."""

    __constants__ = ["norm_first"]

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        activation = _named_activation(activation)
        fn = _unwrap(activation)  # (F.relu may have been wrapped since: see ember.overrides)
        if fn is _unwrap(F.relu) or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif fn is _unwrap(F.gelu) or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """Return the layer's output for ``src``."""
        src_key_padding_mask = _canonical_mask(
            src_key_padding_mask,
            "src_key_padding_mask",
            _none_or_dtype(src_mask),
            "src_mask",
            src.dtype,
        )
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, False)
        x = _residual(
            self, src, self.norm1, self._sa_block, src_mask, src_key_padding_mask, is_causal
        )
        return _residual(self, x, self.norm2, self._ff_block)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False) -> Tensor:
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(_feed_forward(self, x))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory and a feed-forward block, each with
    a residual and a LayerNorm (after the block, or before it with ``norm_first``)."""

    __constants__ = ["norm_first"]

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **kw
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **kw
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _named_activation(activation)

    def __setstate__(self, state):
        if "activation" not in state:
            state["activation"] = F.relu
        super().__setstate__(state)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Return the layer's output for ``tgt`` attending to ``memory``."""
        x = _residual(
            self, tgt, self.norm1, self._sa_block, tgt_mask, tgt_key_padding_mask, tgt_is_causal
        )
        x = _residual(
            self,
            x,
            self.norm2,
            self._mha_block,
            memory,
            memory_mask,
            memory_key_padding_mask,
            memory_is_causal,
        )
        return _residual(self, x, self.norm3, self._ff_block)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False) -> Tensor:
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False) -> Tensor:
        x = self.multihead_attn(
            x,
            mem,
            mem,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(_feed_forward(self, x))
