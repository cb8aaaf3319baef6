"""The op table. Importing this package registers every op family and its Tensor methods."""

from ember._core.tensor import Tensor
from ember._ops import (  # noqa: F401
    binary,
    cat_split,
    compare,
    complex_parts,
    complex_views,
    composite_reductions,
    convert,
    copying,
    creation,
    distances,
    einsum,
    extrema,
    fft,
    foreach,
    frombuffer,
    gather_scatter,
    histogram,
    index,
    index_reduce,
    inference,
    inplace_functions,
    inplace_view,
    integer_math,
    joining,
    linalg,
    linalg_compat,
    linalg_decomp,
    linalg_lowrank,
    linalg_norm,
    linalg_solve,
    meta,
    movement,
    numeric_gradient,
    operators,
    pointwise,
    reduce,
    scan,
    scatter_reduce,
    scatter_views,
    shape,
    slicing,
    sorting,
    special,
    splitting,
    stats,
    strides,
    tensor_extras,
    ternary,
    torch_settings,
    torch_utilities,
    trapezoid,
    unary,
    unsigned,
    windows,
)
from ember._ops.registry import API

unsigned.wrap_factories()
inplace_functions.publish_all()
meta.wrap_factories()  # once every factory is in the table: device="meta" for them all

__all__ = ["API"]


def _document_inplace_methods() -> None:
    # an in-place method defined next to its op without a docstring of its own says what it is
    for name, fn in list(vars(Tensor).items()):
        base = name[:-1]
        if (
            name.endswith("_")
            and not name.startswith("_")
            and callable(fn)
            and not getattr(fn, "__doc__", None)
            and hasattr(Tensor, base)
        ):
            try:
                fn.__doc__ = f"In-place version of :meth:`Tensor.{base}`; return ``self``."
            except (AttributeError, TypeError):  # a builtin or a bound method
                pass


_document_inplace_methods()
