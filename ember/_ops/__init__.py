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
    gather_scatter,
    index,
    joining,
    linalg,
    linalg_decomp,
    linalg_norm,
    linalg_solve,
    movement,
    operators,
    pointwise,
    reduce,
    scan,
    scatter_reduce,
    shape,
    sorting,
    special,
    stats,
    ternary,
    unary,
)
from ember._ops.registry import API

__all__ = ["API"]
