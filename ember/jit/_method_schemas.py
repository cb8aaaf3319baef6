"""The TorchScript overloads of tensor methods whose schemas ``jit.script`` fills in: a method
call is matched against its overloads in torch's order (first match wins), and the node gets
every parameter, the omitted ones as their defaults (``x.softmax(0)`` is
``aten::softmax(%x, %dim, %none)``), as torch's schema matching makes it.

An overload is written ``"dim: int, *, dtype: ScalarType? = None -> Tensor"`` (the parameters
after ``self``; ``*`` starts the keyword-only ones).
"""

from __future__ import annotations

import ast

__all__ = ["Overload", "Param", "overloads"]

_NO_DEFAULT = object()


class Param:
    """One parameter: name, type (``int``, ``int[]``, ``bool``, ``Scalar``, ``Tensor``, a
    ``?`` suffix for Optional), default, keyword-only flag."""

    __slots__ = ("name", "type", "default", "kwonly")

    def __init__(self, name: str, type_: str, default, kwonly: bool):
        self.name, self.type, self.default, self.kwonly = name, type_, default, kwonly

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    @property
    def is_int_list(self) -> bool:
        return self.type.rstrip("?") == "int[]"


class Overload:
    """The parameters after ``self`` and the result type of one method overload."""

    __slots__ = ("params", "returns")

    def __init__(self, spec: str):
        params, _, self.returns = spec.partition("->")
        self.returns = self.returns.strip() or "Tensor"
        self.params: list[Param] = []
        kwonly = False
        for part in filter(None, (p.strip() for p in params.split(","))):
            if part == "*":
                kwonly = True
                continue
            head, eq, default = part.partition("=")
            name, _, type_ = head.partition(":")
            value = ast.literal_eval(default.strip()) if eq else _NO_DEFAULT
            self.params.append(Param(name.strip(), type_.strip(), value, kwonly))

    @property
    def n_positional(self) -> int:
        return sum(not p.kwonly for p in self.params)


_DTYPE = "*, dtype: ScalarType? = None"
_PAIR = " -> (values, indices)"
_REDUCE = [_DTYPE, "dim: int[]?, keepdim: bool = False, " + _DTYPE]
_STD = ["unbiased: bool = True", "dim: int[]?, unbiased: bool = True, keepdim: bool = False"]
_ARG = ["dim: int? = None, keepdim: bool = False"]
_SOFTMAX = ["dim: int, dtype: ScalarType? = None"]
_CUM = ["dim: int, " + _DTYPE]
_ALPHA = ["other: Tensor, alpha: Scalar = 1", "other: Scalar, alpha: Scalar = 1"]

_TABLE: dict[str, list[str]] = {
    "sum": [_REDUCE[1], _REDUCE[0]],
    "mean": _REDUCE,
    "nansum": ["dim: int[]? = None, keepdim: bool = False, " + _DTYPE],
    "prod": [
        "*, dtype: ScalarType? = None",
        "dim: int, keepdim: bool = False, *, dtype: ScalarType? = None",
    ],  # fmt: skip
    "std": _STD,
    "var": _STD,
    "argmax": _ARG,
    "argmin": _ARG,
    "softmax": _SOFTMAX,
    "log_softmax": _SOFTMAX,
    "cumsum": _CUM,
    "cumprod": _CUM,
    "add": _ALPHA,
    "sub": _ALPHA,
    "flatten": ["start_dim: int = 0, end_dim: int = -1"],
    "chunk": ["chunks: int, dim: int = 0 -> Tensor[]"],
    "split": ["split_size: int, dim: int = 0 -> Tensor[]"],
    "unbind": ["dim: int = 0 -> Tensor[]"],
    "clamp": ["min: Scalar? = None, max: Scalar? = None"],
    "clamp_": ["min: Scalar? = None, max: Scalar? = None"],
    "contiguous": ["*, memory_format: int = 0"],
    "clone": ["*, memory_format: int? = None"],
    "norm": ["p: Scalar = 2"],
    "addmm": ["mat1: Tensor, mat2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1"],
    "expand": ["size: int[], *, implicit: bool = False"],
    "max": ["", "dim: int, keepdim: bool = False" + _PAIR, "other: Tensor"],
    "min": ["", "dim: int, keepdim: bool = False" + _PAIR, "other: Tensor"],
    "median": ["", "dim: int, keepdim: bool = False" + _PAIR],
    "sort": ["dim: int = -1, descending: bool = False" + _PAIR],
    "topk": ["k: int, dim: int = -1, largest: bool = True, sorted: bool = True" + _PAIR],
}
_PARSED: dict[str, list[Overload]] = {}


def overloads(name: str) -> list[Overload] | None:
    """The overloads of tensor method ``name`` in torch's matching order, or None."""
    specs = _TABLE.get(name)
    if specs is None:
        return None
    if name not in _PARSED:
        _PARSED[name] = [Overload(s) for s in specs]
    return _PARSED[name]
