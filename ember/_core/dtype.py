"""dtypes and torch's type promotion.

An ember ``dtype`` wraps a NumPy dtype (bfloat16's comes from ``ml_dtypes``, whose extension
takes most of a second to load: it is imported when bfloat16's NumPy dtype is first needed, see
``_LazyBfloat16``). Promotion follows
torch, not NumPy: categories bool < integer < floating < complex; within a category the wider
type wins; dimensioned tensors outrank 0-dim tensors, which outrank Python scalars, unless the
lower-priority operand is of a higher *category* (``int_tensor + 1.5`` is float32, the default
float dtype, never float64).
"""

from __future__ import annotations

import builtins
import sys

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

    __slots__ = (
        "name",
        "np",
        "itemsize",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "abbr",
        "_cat",
    )

    def __init__(self, name: str, np_dtype, cat: int, abbr: str):
        self.name = name
        self.abbr = abbr
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self._cat = cat
        self.is_floating_point = cat == _FLOAT
        self.is_complex = cat == _COMPLEX
        self.is_signed = not name.startswith("uint") and name != "bool"

    def __repr__(self) -> str:
        return "torch." + self.name

    def __reduce__(self):
        return self.name  # the global ember.<name> (torch.<name> under the stand-in), as torch

    def __copy__(self) -> dtype:
        return self

    def __deepcopy__(self, memo) -> dtype:
        return self

    def to_real(self) -> dtype:
        """Return the real counterpart of a complex dtype (self otherwise)."""
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """Return the complex counterpart of a floating dtype (float16 -> complex64: ember has
        no complex32)."""
        if self.is_complex:
            return self
        c = _REAL_TO_COMPLEX.get(self)
        if c is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {_SCALAR_NAMES[self.name]}")
        return c


class _LazyBfloat16(dtype):
    """bfloat16 until its NumPy dtype is first read: ``.np`` imports ml_dtypes, fills the slot
    and turns the object into a plain ``dtype`` (``__class__`` assignment), so later reads cost
    what any dtype's do. No bfloat16 array can exist before ml_dtypes is imported, and every
    array's dtype reaches ember through ``FROM_NP``, which resolves it (``_FromNumpy``)."""

    __slots__ = ()

    def __init__(self):
        self.name, self.abbr, self.itemsize, self._cat = "bfloat16", "bf16", 2, _FLOAT
        self.is_floating_point, self.is_complex, self.is_signed = True, False, True

    @property
    def np(self) -> np.dtype:
        return _resolve_bfloat16()


# (printed as torch.dtype, as the class it becomes)
_LazyBfloat16.__name__ = _LazyBfloat16.__qualname__ = "dtype"
_NP_SLOT = dtype.np  # the slot descriptor (the subclass's property hides it)


def _resolve_bfloat16() -> np.dtype:
    import ml_dtypes

    d = np.dtype(ml_dtypes.bfloat16)
    if type(bfloat16) is _LazyBfloat16:
        _NP_SLOT.__set__(bfloat16, d)
        bfloat16.__class__ = dtype
        FROM_NP[d] = bfloat16
        HALF_NP.add(d)
    return d


float16 = dtype("float16", np.float16, _FLOAT, "f16")
bfloat16 = _LazyBfloat16()
float32 = dtype("float32", np.float32, _FLOAT, "f32")
float64 = dtype("float64", np.float64, _FLOAT, "f64")
complex64 = dtype("complex64", np.complex64, _COMPLEX, "c64")
complex128 = dtype("complex128", np.complex128, _COMPLEX, "c128")
uint8 = dtype("uint8", np.uint8, _INT, "u8")
int8 = dtype("int8", np.int8, _INT, "i8")
int16 = dtype("int16", np.int16, _INT, "i16")
int32 = dtype("int32", np.int32, _INT, "i32")
int64 = dtype("int64", np.int64, _INT, "i64")
bool = dtype("bool", np.bool_, _BOOL, "b8")  # noqa: A001 - torch.bool
# torch 2.13's "limited support" unsigned types: creation, casts, copies, views and a few
# kernels; they promote with no other dtype (ember/_ops/unsigned.py gates the ops)
uint16 = dtype("uint16", np.uint16, _INT, "u16")
uint32 = dtype("uint32", np.uint32, _INT, "u32")
uint64 = dtype("uint64", np.uint64, _INT, "u64")
UNSIGNED = (uint16, uint32, uint64)
ON_UNSIGNED: list = []  # callables run when the first uint16/32/64 array reaches ember


class _Complex32(dtype):
    """``torch.complex32`` (``chalf``): a name ember knows and cannot store (NumPy has no
    complex of two float16s); making a tensor of it raises."""

    __slots__ = ()

    def __init__(self):
        self.name, self.abbr, self.itemsize, self._cat = "complex32", "c32", 4, _COMPLEX
        self.is_floating_point, self.is_complex, self.is_signed = False, True, True

    @property
    def np(self) -> np.dtype:
        raise TypeError(
            "ember has no complex32 (chalf) storage: NumPy has no complex type of two float16s;"
            " use complex64"
        )


_Complex32.__name__ = _Complex32.__qualname__ = "dtype"
complex32 = _Complex32()

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
_BY_NAME = {d.name: d for d in ALL_DTYPES + UNSIGNED + (complex32,)}


class _FromNumpy(dict):
    """NumPy dtype -> ember dtype; bfloat16's entry is added when it is resolved, or on the
    first lookup of a bfloat16 array's dtype (ml_dtypes imported by the user)."""

    def __missing__(self, key):
        for u in UNSIGNED:
            if key == u.np:  # the first unsigned array: its ops are gated from now on
                for u2 in UNSIGNED:
                    self[u2.np] = u2
                for f in ON_UNSIGNED:
                    f()
                return u
        if "ml_dtypes" in sys.modules and type(bfloat16) is _LazyBfloat16:
            _resolve_bfloat16()
            if key in self:
                return self[key]
        raise KeyError(key)


# NumPy dtype -> ember dtype; the one way ops learn the dtype of the array they produced.
FROM_NP: dict[np.dtype, dtype] = _FromNumpy({d.np: d for d in ALL_DTYPES if d is not bfloat16})
# the NumPy dtypes torch computes in float32 (float16, and bfloat16 once resolved): a set the
# op modules share, so that testing membership needs no ml_dtypes
HALF_NP: set[np.dtype] = {np.dtype(np.float16)}
# Python's own number types stand for torch dtypes where a dtype is expected
_PY_TYPES = {builtins.float: float64, builtins.int: int64, builtins.bool: bool, complex: complex128}
_COMPLEX_TO_REAL = {complex64: float32, complex128: float64, complex32: float16}
_REAL_TO_COMPLEX = {
    float16: complex64,
    bfloat16: complex64,
    float32: complex64,
    float64: complex128,
}


# torch's ScalarType names, used in its error messages ("... for 'Long'")
_SCALAR_NAMES = {
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float32": "Float",
    "float64": "Double",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
    "complex32": "ComplexHalf",
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
}


# c10's C++ type names, used in other messages ("... with dtype 'long int'")
_CPP_NAMES = {
    "bool": "bool",
    "uint8": "unsigned char",
    "int8": "signed char",
    "int16": "short int",
    "int32": "int",
    "int64": "long int",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "float32": "float",
    "float64": "double",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
    # NumPy unsigned types ember has no dtype for, named in range errors
    "uint16": "short unsigned int",
    "uint32": "unsigned int",
    "uint64": "long unsigned int",
}


def scalar_type_name(d: dtype) -> str:
    """Return torch's ScalarType name of ``d`` (``Long`` for int64), as its messages print it."""
    return _SCALAR_NAMES[d.name]


def cpp_type_name(d: dtype) -> str:
    """Return the C++ type name torch prints for ``d`` (``long int`` for int64)."""
    return _CPP_NAMES[d.name]


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """Return the ember dtype of a NumPy dtype, or raise TypeError like torch.from_numpy."""
    try:
        return FROM_NP[np_dtype]
    except (KeyError, TypeError):
        pass
    try:
        return FROM_NP[np.dtype(np_dtype).newbyteorder("=")]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).type.__name__}. The "
            "only supported types are: float64, float32, float16, bfloat16, complex64, "
            "complex128, int64, int32, int16, int8, uint8, and bool."
        ) from None


def as_dtype(d, fn: str = "tensor"):
    """Return ``d`` as an ember dtype (None stays None; Python float -> float64, int -> int64,
    bool -> bool, complex -> complex128, as torch), or raise torch's TypeError."""
    if d is None or type(d) is dtype or isinstance(d, dtype):
        return d
    r = _PY_TYPES.get(d) if isinstance(d, type) else None
    if r is None:
        raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not {type(d).__name__}")
    return r


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
_PROMOTE.update({(u, u): u for u in UNSIGNED})


def uint_promotion_error(a: dtype, b: dtype) -> RuntimeError:
    """Return torch's error for promoting a uint16/32/64 with another dtype."""
    return RuntimeError(
        "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
        f"{_SCALAR_NAMES[a.name]} and {_SCALAR_NAMES[b.name]}"
    )


def _promote_pair(a: dtype, b: dtype) -> dtype:
    try:
        return _PROMOTE[a, b]
    except KeyError:
        if a in UNSIGNED or b in UNSIGNED:
            raise uint_promotion_error(a, b) from None
        raise


def _check_dtypes(fn: str, *args) -> None:
    for a in args:
        if not isinstance(a, dtype):
            raise TypeError(f"{fn}(): argument must be torch.dtype, not {type(a).__name__}")


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """Return the smallest dtype both ``type1`` and ``type2`` cast to (torch's table)."""
    try:
        return _PROMOTE[type1, type2]
    except (KeyError, TypeError):
        _check_dtypes("promote_types", type1, type2)
        return _promote_pair(type1, type2)


def can_cast(from_: dtype, to: dtype) -> builtins.bool:
    """Return whether torch's promotion allows casting ``from_`` to ``to`` (no category drop)."""
    _check_dtypes("can_cast", from_, to)
    return from_._cat <= to._cat


def scalar_dtype(value) -> dtype:
    """Return the dtype a Python scalar takes when it becomes a tensor on its own."""
    t = type(value)
    if t is builtins.bool:
        return bool
    # torch reads NumPy scalars as Python numbers; np.bool_ is not a Python bool (nor int), so
    # torch takes it for a float: ``int_tensor + np.bool_(True)`` is float32
    if isinstance(value, (int, np.integer)):
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
        return _promote_pair(higher, lower)
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
                acc = d if acc is None else _promote_pair(acc, d)
            groups.append(acc)
        d, z, s = groups
        r = _combine(d, _combine(z, s))
        _RESULT_CACHE[key] = r
    return r


# ---------------------------------------------------------------------------------------------
# finfo / iinfo


class finfo:
    """Machine limits for a floating point dtype, as ``torch.finfo``."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: dtype | None = None):  # noqa: A002 - torch's argument name
        type = get_default_dtype() if type is None else type
        if not isinstance(type, dtype):
            raise TypeError(f"finfo(): argument 'type' must be torch.dtype, not {type!r}")
        if not (type.is_floating_point or type.is_complex):
            raise TypeError(
                f"torch.finfo() requires a floating point input type. Use "
                f"torch.iinfo to handle '{type!r}'"
            )
        real = type.to_real()
        if real is bfloat16:
            import ml_dtypes

            info = ml_dtypes.finfo(real.np)
        else:
            info = np.finfo(real.np)
        self.bits = builtins.int(info.bits)
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = builtins.float(info.tiny)
        self.smallest_normal = self.tiny
        # torch: 10 ** -digits10, computed in double (NumPy's is rounded to the dtype)
        self.resolution = 10.0 ** -builtins.int(info.precision)
        self.dtype = real.name

    def _key(self) -> tuple:
        return tuple(getattr(self, k) for k in self.__slots__)

    def __eq__(self, other) -> builtins.bool:
        return isinstance(other, finfo) and self._key() == other._key()

    def __hash__(self) -> builtins.int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:
    """Machine limits for an integer dtype, as ``torch.iinfo``."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type: dtype):  # noqa: A002 - torch's argument name
        if not isinstance(type, dtype):
            raise TypeError(f"iinfo(): argument 'type' must be torch.dtype, not {type!r}")
        if type is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.is_floating_point or type.is_complex:
            raise TypeError(
                f"torch.iinfo() requires an integer input type. Use torch.finfo "
                f"to handle '{type!r}'"
            )
        info = np.iinfo(type.np)
        self.bits = builtins.int(info.bits)
        self.max = builtins.int(info.max)
        self.min = builtins.int(info.min)
        self.dtype = type.name

    def __eq__(self, other) -> builtins.bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self) -> builtins.int:
        return hash(self.dtype)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
