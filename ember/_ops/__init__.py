"""The op table. Importing this package registers every op family and its Tensor methods."""

from ember._ops import (  # noqa: F401
    convert,
    creation,
    einsum,
    index,
    linalg,
    linalg_decomp,
    linalg_norm,
    linalg_solve,
    pointwise,
    reduce,
    shape,
)
from ember._ops.registry import API

__all__ = ["API"]
