"""``bitsandbytes.optim``: the 8-bit optimizers of ember.optim.optim8bit."""

from ember.optim.optim8bit import (
    Adam8bit,
    AdamW8bit,
    Lion8bit,
    Optimizer8bit,
    PagedAdamW8bit,
    RMSprop8bit,
    SGD8bit,
)

__all__ = [
    "Adam8bit",
    "AdamW8bit",
    "Lion8bit",
    "Optimizer8bit",
    "PagedAdamW8bit",
    "RMSprop8bit",
    "SGD8bit",
]
