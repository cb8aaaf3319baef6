"""The op table. Importing this package registers every op family and its Tensor methods."""

from ember._ops import convert, creation, index, linalg, pointwise, reduce, shape  # noqa: F401
from ember._ops.registry import API

__all__ = ["API"]
