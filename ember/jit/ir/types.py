"""TorchScript's types: small immutable objects printing as torch prints them.

``str(t)`` is the Python annotation form (``List[int]``, ``Optional[Tensor]``); ``t.ir_str()``
is the form graphs print (``int[]``, ``Tensor?``), as torch's ``str(graph)`` does.
"""

from __future__ import annotations

__all__ = [
    "Type",
    "AnyType",
    "TensorType",
    "IntType",
    "FloatType",
    "BoolType",
    "StringType",
    "NoneType",
    "DeviceObjType",
    "NumberType",
    "ListType",
    "OptionalType",
    "TupleType",
    "DictType",
    "ClassType",
    "FutureType",
    "scalar_type_name",
]

# dtype (as ``str(dtype)`` prints it) -> torch's ScalarType name, as tensor types print it
_SCALAR_NAMES = {
    "torch.float32": "Float",
    "torch.float64": "Double",
    "torch.float16": "Half",
    "torch.bfloat16": "BFloat16",
    "torch.int64": "Long",
    "torch.int32": "Int",
    "torch.int16": "Short",
    "torch.int8": "Char",
    "torch.uint8": "Byte",
    "torch.bool": "Bool",
    "torch.complex64": "ComplexFloat",
    "torch.complex128": "ComplexDouble",
}


def scalar_type_name(dtype) -> str:
    """Return torch's ScalarType name of ``dtype`` (``Float`` for float32)."""
    return _SCALAR_NAMES.get(str(dtype), str(dtype).replace("torch.", "").capitalize())


class Type:
    """The base of TorchScript types; equal when their printed forms are."""

    _name = "Any"

    def kind(self) -> str:
        return type(self).__name__

    def ir_str(self) -> str:
        return str(self)

    def annotation_str(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return str(self)

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def _key(self):
        return ()

    def containedTypes(self) -> list:
        return []

    def isSubtypeOf(self, other: Type) -> bool:
        """True when a value of this type can stand where ``other`` is expected."""
        if isinstance(other, AnyType) or self == other:
            return True
        if isinstance(other, OptionalType):
            return isinstance(self, NoneType) or self.isSubtypeOf(other.getElementType())
        if isinstance(self, TensorType) and isinstance(other, TensorType):
            return other == TensorType.get()
        if isinstance(other, NumberType):
            return isinstance(self, (IntType, FloatType))
        return False

    @classmethod
    def get(cls):
        """Return the type's single instance (types without parameters)."""
        return cls()


class AnyType(Type):
    _name = "Any"


class _Simple(Type):
    pass


class IntType(_Simple):
    _name = "int"


class FloatType(_Simple):
    _name = "float"


class BoolType(_Simple):
    _name = "bool"


class StringType(_Simple):
    _name = "str"


class NoneType(_Simple):
    _name = "NoneType"


class DeviceObjType(_Simple):
    _name = "Device"


class NumberType(_Simple):
    _name = "Scalar"


class TensorType(Type):
    """A tensor, optionally refined with dtype, sizes, strides, requires_grad and device."""

    def __init__(
        self,
        dtype=None,
        sizes: tuple | None = None,
        strides: tuple | None = None,
        requires_grad: bool | None = None,
        device: str | None = None,
    ):
        self._dtype = dtype
        self._sizes = None if sizes is None else tuple(int(s) for s in sizes)
        self._strides = None if strides is None else tuple(int(s) for s in strides)
        self._requires_grad = requires_grad
        self._device = None if device is None else str(device)

    @classmethod
    def create_from_tensor(cls, t) -> TensorType:
        """Return the complete type of tensor ``t`` (as the tracer records it)."""
        return cls(t.dtype, tuple(t.shape), tuple(t.stride()), bool(t.requires_grad), t.device)

    def _key(self):
        return (str(self._dtype), self._sizes, self._strides, self._requires_grad, self._device)

    def dtype(self):
        return self._dtype

    def scalarType(self) -> str | None:
        return None if self._dtype is None else scalar_type_name(self._dtype)

    def sizes(self) -> list | None:
        return None if self._sizes is None else list(self._sizes)

    def strides(self) -> list | None:
        return None if self._strides is None else list(self._strides)

    def dim(self) -> int | None:
        return None if self._sizes is None else len(self._sizes)

    def requires_grad(self) -> bool | None:
        return self._requires_grad

    def device(self) -> str | None:
        return self._device

    def isComplete(self) -> bool:
        return self._dtype is not None and self._sizes is not None and self._strides is not None

    def with_dtype(self, dtype) -> TensorType:
        return TensorType(dtype, self._sizes, self._strides, self._requires_grad, self._device)

    def __str__(self) -> str:
        if self._dtype is None and self._sizes is None:
            return "Tensor"
        parts = []
        if self._sizes is not None:
            parts += [str(s) for s in self._sizes]
        if self._strides is not None and self._sizes:
            parts.append("strides=[" + ", ".join(str(s) for s in self._strides) + "]")
        if self._requires_grad is not None:
            parts.append(f"requires_grad={int(self._requires_grad)}")
        if self._device is not None:
            parts.append(f"device={self._device}")
        head = "Tensor" if self._dtype is None else scalar_type_name(self._dtype)
        return f"{head}({', '.join(parts)})"

    def ir_str(self) -> str:
        return str(self)

    def annotation_str(self) -> str:
        return "Tensor"


class _ContainerOf(Type):
    """A type holding values of one element type (``List``, ``Optional``, ``Future``)."""

    def __init__(self, elem: Type):
        self._elem = elem

    def getElementType(self) -> Type:
        return self._elem

    def containedTypes(self) -> list:
        return [self._elem]

    def _key(self):
        return (self._elem,)


class ListType(_ContainerOf):
    """``List[T]``; graphs print it ``T[]``."""

    @classmethod
    def ofInts(cls) -> ListType:
        return cls(IntType())

    @classmethod
    def ofTensors(cls) -> ListType:
        return cls(TensorType())

    def __str__(self) -> str:
        return f"List[{self._elem.annotation_str()}]"

    def ir_str(self) -> str:
        return f"{self._elem.ir_str()}[]"


class OptionalType(_ContainerOf):
    """``Optional[T]``; graphs print it ``T?``."""

    def __str__(self) -> str:
        return f"Optional[{self._elem.annotation_str()}]"

    def ir_str(self) -> str:
        return f"{self._elem.ir_str()}?"


class TupleType(Type):
    """``Tuple[A, B]``; graphs print it ``(A, B)``, or ``NamedTuple(values : A, ...)`` when
    its fields are named (the result of ``x.max(0)``)."""

    def __init__(self, elems, names=None):
        self._elems = tuple(elems)
        self._names = tuple(names) if names is not None else None

    def elements(self) -> list:
        return list(self._elems)

    def containedTypes(self) -> list:
        return list(self._elems)

    def _key(self):
        return self._elems, self._names

    def __str__(self) -> str:
        return "Tuple[" + ", ".join(e.annotation_str() for e in self._elems) + "]"

    def ir_str(self) -> str:
        if self._names is not None:
            fields = (f"{k} : {e.ir_str()}" for k, e in zip(self._names, self._elems))
            return "NamedTuple(" + ", ".join(fields) + ")"
        return "(" + ", ".join(e.ir_str() for e in self._elems) + ")"


class DictType(Type):
    """``Dict[K, V]``; graphs print it ``Dict(K, V)``."""

    def __init__(self, key: Type, value: Type):
        self._k, self._v = key, value

    def getKeyType(self) -> Type:
        return self._k

    def getValueType(self) -> Type:
        return self._v

    def containedTypes(self) -> list:
        return [self._k, self._v]

    def _key(self):
        return (self._k, self._v)

    def __str__(self) -> str:
        return f"Dict[{self._k.annotation_str()}, {self._v.annotation_str()}]"

    def ir_str(self) -> str:
        return f"Dict({self._k.ir_str()}, {self._v.ir_str()})"


class ClassType(Type):
    """A module or class type, named by its qualified name (``__torch__.Net``)."""

    def __init__(self, qualname: str):
        self._qualname = qualname

    def qualified_name(self) -> str:
        return self._qualname

    def name(self) -> str:
        return self._qualname.rsplit(".", 1)[-1]

    def _key(self):
        return (self._qualname,)

    def __str__(self) -> str:
        return self._qualname

    def ir_str(self) -> str:
        return self._qualname


class FutureType(_ContainerOf):
    """``Future[T]``, the result of ``fork``."""

    def __str__(self) -> str:
        return f"Future[{self._elem.annotation_str()}]"

    def ir_str(self) -> str:
        return f"Future({self._elem.ir_str()})"
