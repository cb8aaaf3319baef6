"""ember.sparse: sparse COO tensors, as ``torch.sparse`` (the subset graph-network code uses).

``torch.sparse_coo_tensor`` / ``dense.to_sparse()`` build a ``SparseTensor`` (``_coo.py``);
``torch.sparse.mm``, ``torch.spmm``, ``torch.mm``/``matmul``/``@`` multiply it with dense
matrices through the op table (``_ops.py``), so gradients reach the dense operand and the
sparse operand's values. ``_grad.py`` makes sparse *gradients* work as torch's:
``embedding(sparse=True)``'s gradient, ``s + s`` with torch's merge, AccumulateGrad for sparse
``.grad``, and ``dense.add_(sparse)`` (installed when the first sparse tensor is made).
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._core import dtype as D
from ember._core.tensor import Size, Tensor, _wrap
from ember._ops.registry import publish as _publish
from ember.sparse._coo import SparseTensor, sparse_coo_tensor, to_sparse, to_sparse_coo
from ember.sparse._products import addmm, mm, spmm
from ember.sparse._reductions import log_softmax, softmax
from ember.sparse._reductions import sparse_sum as sum  # noqa: A004  (torch.sparse.sum)

__all__ = ["addmm", "log_softmax", "mm", "softmax", "sum", "spmm", "sparse_coo_tensor"]


class _LegacySparseType(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, SparseTensor) and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'torch.sparse.{cls.__name__}'>"


def _legacy(name: str, dtype: D.dtype):
    def __new__(cls, *args, size=None):
        """``torch.sparse.<Type>Tensor(indices, values, size)`` or ``(*sizes)`` (empty)."""
        if args and isinstance(args[0], Tensor):
            warnings.warn(
                "torch.sparse.SparseTensor(indices, values, shape, *, device=) is deprecated.  "
                "Please use torch.sparse_coo_tensor(indices, values, shape, dtype=, device=).",
                UserWarning,
                stacklevel=2,
            )
            indices, values = args[0], args[1]
            if len(args) > 2:
                size = args[2]
            return sparse_coo_tensor(indices, values, size)
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, Size)) else args
        nd = len(sizes)
        return SparseTensor._make(
            np.zeros((nd, 0), np.int64),
            _wrap(np.zeros(0, dtype.np)),
            sizes,
            True,
        )

    return _LegacySparseType(name, (), {"__new__": __new__, "dtype": dtype, "is_sparse": True})


FloatTensor = _legacy("FloatTensor", D.float32)
DoubleTensor = _legacy("DoubleTensor", D.float64)
LongTensor = _legacy("LongTensor", D.int64)
IntTensor = _legacy("IntTensor", D.int32)
ByteTensor = _legacy("ByteTensor", D.uint8)
BoolTensor = _legacy("BoolTensor", D.bool)
HalfTensor = _legacy("HalfTensor", D.float16)

# dense tensors convert to COO
_publish(None, to_sparse, function=False)
_publish(None, to_sparse_coo, function=False)
