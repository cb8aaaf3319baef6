"""``bitsandbytes.nn.StableEmbedding``."""

from __future__ import annotations

from ember import nn as _nn
from ember._core.tensor import Tensor

__all__ = ["StableEmbedding"]


class StableEmbedding(_nn.Embedding):
    """Embedding followed by a LayerNorm, Xavier-uniform initialised, whose weight keeps
    32-bit optimizer states in the 8-bit optimizers (as bitsandbytes' ``StableEmbedding``)."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            num_embeddings,
            embedding_dim,
            padding_idx,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            sparse,
            _weight,
            device=device,
            dtype=dtype,
        )
        self.norm = _nn.LayerNorm(embedding_dim, device=device)
        self.weight._bnb_optim_bits = 32  # read by ember.optim.optim8bit

    def reset_parameters(self) -> None:
        _nn.init.xavier_uniform_(self.weight)
        self._fill_padding_idx_with_zero()

    def forward(self, input: Tensor) -> Tensor:
        import ember

        emb = super().forward(input).to(ember.get_default_dtype())
        return self.norm(emb).to(self.weight.dtype)
