"""``torch.ao``: ember has no quantization (see ``ember.ao.quantization``)."""

from ember.ao import quantization

__all__ = ["quantization"]
