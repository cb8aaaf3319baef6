"""A ``bitsandbytes``-shaped module: ``import ember.contrib.bitsandbytes as bnb``.

``bnb.optim.Adam8bit``, ``AdamW8bit``, ``PagedAdamW8bit``, ``Lion8bit``, ``SGD8bit``,
``RMSprop8bit`` (ember.optim.optim8bit), ``bnb.nn.StableEmbedding`` and
``bnb.functional.quantize_blockwise`` / ``dequantize_blockwise`` / ``create_dynamic_map``.
"""

from ember.contrib.bitsandbytes import functional, nn, optim

__all__ = ["functional", "nn", "optim"]
