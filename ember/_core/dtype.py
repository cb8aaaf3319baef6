"""dtypes and torch's type promotion.

An ember ``dtype`` wraps a NumPy dtype (bfloat16 comes from ``ml_dtypes``). Promotion follows
torch, not NumPy: categories bool < integer < floating < complex; within a category the wider
type wins; dimensioned tensors outrank 0-dim tensors, which outrank Python scalars, unless the
lower-priority operand is of a higher *category* (``int_tensor + 1.5`` is float32, the default
float dtype, never float64).
"""

from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

__all__ = [
    "dtype",
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "complex64",
    "complex128",
    "get_default_dtype",
    "set_default_dtype",
    "promote_types",
    "can_cast",
    "finfo",
    "iinfo",
]

# category ranks
_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, printed as torch prints it (``torch.float32``)."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed", "_cat")

    def __init__(self, name: str, np_dtype, cat: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self._cat = cat
        self.is_floating_point = cat == _FLOAT
        self.is_complex = cat == _COMPLEX
        self.is_signed = name != "uint8" and name != "bool"

    def __repr__(self) -> str:
        return "torch." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> dtype:
        """Return the real counterpart of a complex dtype (self otherwise)."""
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """Return the complex counterpart of a floating dtype."""
        if self.is_complex:
            return self
        return _REAL_TO_COMPLEX[self]


float16 = dtype("float16", np.float16, _FLOAT)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT)
float32 = dtype("float32", np.float32, _FLOAT)
float64 = dtype("float64", np.float64, _FLOAT)
complex64 = dtype("complex64", np.complex64, _COMPLEX)
complex128 = dtype("complex128", np.complex128, _COMPLEX)
uint8 = dtype("uint8", np.uint8, _INT)
int8 = dtype("int8", np.int8, _INT)
int16 = dtype("int16", np.int16, _INT)
int32 = dtype("int32", np.int32, _INT)
int64 = dtype("int64", np.int64, _INT)
bool = dtype("bool", np.bool_, _BOOL)  # noqa: A001 - torch.bool

ALL_DTYPES = (
    bool,
    uint8,
    int8,
    int16,
    int32,
    int64,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
    complex128,
)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# NumPy dtype -> ember dtype; the one way ops learn the dtype of the array they produced.
FROM_NP: dict[np.dtype, dtype] = {d.np: d for d in ALL_DTYPES}
_COMPLEX_TO_REAL = {complex64: float32, complex128: float64}
_REAL_TO_COMPLEX = {
    float16: complex64,
    bfloat16: complex64,
    float32: complex64,
    float64: complex128,
}


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """Return the ember dtype of a NumPy dtype, or raise TypeError like torch.from_numpy."""
    try:
        return FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype)}. The only supported "
            "types are: float64, float32, float16, complex64, complex128, int64, int32, int16, "
            "int8, uint8, and bool."
        ) from None


_default_float = [float32]


def get_default_dtype() -> dtype:
    """Return the current default floating point dtype (initially ``float32``)."""
    return _default_float[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating point dtype (float32, float64, float16 or bfloat16)."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_float[0] = d
    _RESULT_CACHE.clear()


# ---------------------------------------------------------------------------------------------
# promotion


def _promote(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a._cat != b._cat:
        hi, lo = (a, b) if a._cat > b._cat else (b, a)
        if hi.is_complex and lo.is_floating_point and lo is float64:
            return complex128
        return hi
    if a._cat == _INT:
        if a is uint8 or b is uint8:
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return a if a.itemsize >= b.itemsize else b
    if {a, b} == {float16, bfloat16}:
        return float32
    return a if a.itemsize >= b.itemsize else b


_PROMOTE = {(a, b): _promote(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """Return the smallest dtype both ``type1`` and ``type2`` cast to (torch's table)."""
    return _PROMOTE[type1, type2]


def can_cast(from_: dtype, to: dtype) -> builtins.bool:
    """Return whether torch's promotion allows casting ``from_`` to ``to`` (no category drop)."""
    return from_._cat <= to._cat


def scalar_dtype(value) -> dtype:
    """Return the dtype a Python scalar takes when it becomes a tensor on its own."""
    t = type(value)
    if t is builtins.bool or t is np.bool_:
        return bool
    if t is int or isinstance(value, np.integer):
        return int64
    if t is complex or isinstance(value, np.complexfloating):
        return get_default_dtype().to_complex()
    return get_default_dtype()


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # torch's combine_categories: ``higher`` has priority unless ``lower`` is of a higher category
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return _PROMOTE[higher, lower]
    return higher


_RESULT_CACHE: dict = {}


def result_type_of(dims: tuple, zeros: tuple, scalars: tuple) -> dtype:
    """Promote dimensioned-tensor dtypes, 0-dim-tensor dtypes and Python-scalar dtypes as torch."""
    key = (dims, zeros, scalars)
    r = _RESULT_CACHE.get(key)
    if r is None:
        groups = []
        for group in key:
            acc = None
            for d in group:
                acc = d if acc is None else _PROMOTE[acc, d]
            groups.append(acc)
        d, z, s = groups
        r = _combine(d, _combine(z, s))
        _RESULT_CACHE[key] = r
    return r


# ---------------------------------------------------------------------------------------------
# finfo / iinfo


class finfo:
    """Machine limits for a floating point dtype, as ``torch.finfo``."""

    def __init__(self, type: dtype | None = None):  # noqa: A002 - torch's argument name
        type = get_default_dtype() if type is None else type
        if not (type.is_floating_point or type.is_complex):
            raise TypeError(
                f"torch.finfo() requires a floating point input type. Use "
                f"torch.iinfo to handle '{type!r}'"
            )
        self.dtype = type.to_real().name
        info = ml_dtypes.finfo(type.to_real().np)
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = float(info.resolution)

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:
    """Machine limits for an integer dtype, as ``torch.iinfo``."""

    def __init__(self, type: dtype):  # noqa: A002
        if type.is_floating_point or type.is_complex:
            raise TypeError(
                f"torch.iinfo() requires an integer input type. Use torch.finfo "
                f"to handle '{type!r}'"
            )
        self.dtype = type.name
        info = np.iinfo(type.np) if type is not bool else None
        self.bits = type.itemsize * 8
        self.max = int(info.max) if info else 1
        self.min = int(info.min) if info else 0

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
