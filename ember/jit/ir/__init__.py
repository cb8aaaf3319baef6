"""ember's graph IR, TorchScript's shape: a ``Graph`` owns a root ``Block`` of ``Node``s
(a doubly linked list between a Param and a Return node) over SSA ``Value``s with types.

Importable alone: it needs nothing of ember but duck-typed tensors and dtypes for constants.
"""

from ember.jit.ir.block import Block
from ember.jit.ir.graph import DTYPE_CODES, Graph, constant_type
from ember.jit.ir.node import Node
from ember.jit.ir.printer import format_float
from ember.jit.ir.types import (
    AnyType,
    BoolType,
    ClassType,
    DeviceObjType,
    DictType,
    FloatType,
    FutureType,
    IntType,
    ListType,
    NoneType,
    NumberType,
    OptionalType,
    StringType,
    TensorType,
    TupleType,
    Type,
)
from ember.jit.ir.value import Use, Value

__all__ = [
    "Block",
    "DTYPE_CODES",
    "Graph",
    "Node",
    "Use",
    "Value",
    "constant_type",
    "format_float",
    "AnyType",
    "BoolType",
    "ClassType",
    "DeviceObjType",
    "DictType",
    "FloatType",
    "FutureType",
    "IntType",
    "ListType",
    "NoneType",
    "NumberType",
    "OptionalType",
    "StringType",
    "TensorType",
    "TupleType",
    "Type",
]
