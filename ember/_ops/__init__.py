"""The op table. Importing this package registers every op family and its Tensor methods."""

from ember._ops import (  # noqa: F401
    binary,
    compare,
    convert,
    copying,
    creation,
    einsum,
    extrema,
    fft,
    index,
    linalg,
    linalg_decomp,
    linalg_norm,
    linalg_solve,
    operators,
    pointwise,
    reduce,
    scan,
    shape,
    special,
    stats,
    ternary,
    unary,
)
from ember._ops.registry import API

__all__ = ["API"]
