"""Sparse COO tensors: ``torch.sparse_coo_tensor`` and the class behind it.

A ``SparseTensor`` is a ``Tensor`` subclass holding ``_idx`` (an int64 ``(sparse_dim, nnz)``
array), ``_vals`` (a dense ember Tensor ``(nnz, *dense_shape)``) and its size. Autograd runs on
``_vals``: ops on a sparse tensor are ember ops on its values, so the gradient of a sparse
operand reaches whatever its values came from. Dense tensors never see any of this: the class
only overrides methods on itself, and the Python operators of a dense left operand give way to
the subclass's reflected ones (``dense @ sparse`` calls ``SparseTensor.__rmatmul__``).
"""

from __future__ import annotations

import builtins
import numbers

import numpy as np

from ember._core import dtype as D
from ember._core.device import as_device
from ember._core.layout import sparse_coo
from ember._core.tensor import Size, Tensor, _wrap
from ember._ops import linalg as _linalg
from ember._ops.registry import API
from ember.overrides import _disabled_torch_function_impl


class SparseTensor(Tensor):
    """A sparse tensor in COO format (``layout=torch.sparse_coo``)."""

    __torch_function__ = _disabled_torch_function_impl  # its ops are its own methods

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _make(idx: np.ndarray, vals: Tensor, shape: tuple, coalesced: bool) -> SparseTensor:
        t = object.__new__(SparseTensor)
        t._idx = idx
        t._vals = vals
        t._sshape = tuple(builtins.int(s) for s in shape)
        t._is_coalesced = builtins.bool(coalesced or idx.shape[1] < 2)
        t._dense_leaf = None
        t.dtype = vals.dtype
        t._requires_grad = False
        t._grad_fn = None
        t._vc = [0]
        if not _linalg.SPARSE:  # the first sparse tensor: linalg's products learn of it
            from ember.sparse._grad import install_dense_methods
            from ember.sparse._products import _register

            _register()
            install_dense_methods()
            from ember._core import node
            from ember.sparse._grad import accumulate

            node.SPARSE_ACCUMULATE = accumulate
        return t

    def _with_values(self, vals: Tensor, coalesced: bool | None = None) -> SparseTensor:
        c = self._is_coalesced if coalesced is None else coalesced
        return SparseTensor._make(self._idx, vals, self._sshape, c)

    @property
    def _data(self):
        raise NotImplementedError(
            "this operation does not support sparse COO tensors in ember; call .to_dense() "
            "first (sparse tensors support products, sums, softmax and elementwise "
            "scalar arithmetic)"
        )

    # ------------------------------------------------------------------ metadata
    @property
    def device(self):
        from ember._core.device import CPU

        return CPU  # (sparse tensors have no meta form: no data array to ask)

    @property
    def shape(self) -> Size:
        return Size(self._sshape)

    def size(self, dim: int | None = None):
        """Return the size of the tensor, or of dimension ``dim``."""
        if dim is None:
            return Size(self._sshape)
        return self._sshape[_wrap_dim(dim, len(self._sshape))]

    def dim(self) -> int:
        """Return the number of dimensions (sparse plus dense)."""
        return len(self._sshape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return len(self._sshape)

    def numel(self) -> int:
        """Return the number of elements of the dense tensor this represents."""
        n = 1
        for s in self._sshape:
            n *= s
        return n

    nelement = numel

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def layout(self):
        return sparse_coo

    def is_contiguous(self, memory_format=None) -> bool:
        raise RuntimeError("Sparse CPU tensors do not have is_contiguous")

    def stride(self, dim=None):
        raise RuntimeError("Sparse CPU tensors do not have strides")

    def type(self, dtype=None, non_blocking: bool = False):
        """Return the type name (``torch.sparse.FloatTensor``) or cast to ``dtype``."""
        if dtype is None:
            from ember._core.tensor import _TYPE_NAMES

            return _TYPE_NAMES[self.dtype.name].replace("torch.", "torch.sparse.")
        return self.to(dtype)

    def sparse_dim(self) -> int:
        """Return the number of sparse dimensions."""
        return self._idx.shape[0]

    def dense_dim(self) -> int:
        """Return the number of dense dimensions."""
        return len(self._sshape) - self._idx.shape[0]

    def _nnz(self) -> int:
        """Return the number of specified elements (duplicates included)."""
        return self._idx.shape[1]

    def is_coalesced(self) -> bool:
        """Return True if the indices are sorted and unique."""
        return self._is_coalesced

    def _indices(self) -> Tensor:
        """Return the indices, coalesced or not."""
        return _wrap(self._idx)

    def _values(self) -> Tensor:
        """Return the values, coalesced or not (outside the graph, as torch's)."""
        return self._vals.detach()

    def indices(self) -> Tensor:
        """Return the indices of a coalesced tensor."""
        if not self._is_coalesced:
            raise RuntimeError(
                "Cannot get indices on an uncoalesced tensor, please call .coalesce() first"
            )
        return _wrap(self._idx)

    def values(self) -> Tensor:
        """Return the values of a coalesced tensor."""
        if not self._is_coalesced:
            raise RuntimeError(
                "Cannot get values on an uncoalesced tensor, please call .coalesce() first"
            )
        return self._vals

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        leaf = self._dense_leaf
        return self._vals.requires_grad or (leaf is not None and leaf.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._vals.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        """Set whether autograd records operations on this (leaf) tensor; return self."""
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @grad_fn.setter
    def grad_fn(self, fn) -> None:
        raise RuntimeError("cannot set the grad_fn of a sparse tensor")

    @property
    def is_leaf(self) -> bool:
        return self._vals.grad_fn is None

    @property
    def grad(self):
        """The gradient: sparse (coalesced) after ``torch.sparse.mm``/``to_dense``/sums,
        dense after ``torch.mm``/``matmul``/``@``, as torch."""
        leaf = self._dense_leaf
        dense = leaf.grad if leaf is not None else None
        g = self._vals._grad
        if g is None:
            return dense
        # every duplicate of a position gets the position's gradient: keep one per position
        idx, first, _ = _unique_positions(self._idx, self._sshape)
        sparse = SparseTensor._make(idx, g[_wrap(first)], self._sshape, False)
        # torch flags its masked gradients uncoalesced, but a full sum's gradient coalesced
        sparse._is_coalesced = self.__dict__.get("_grad_from_sum", False)
        return sparse if dense is None else dense + sparse.to_dense()

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            raise RuntimeError("ember: only None can be assigned to a sparse tensor's .grad")
        self._vals._grad = None
        if self._dense_leaf is not None:
            self._dense_leaf._grad = None

    def detach(self) -> SparseTensor:
        """Return a sparse tensor sharing indices and values, out of the graph."""
        return self._with_values(self._vals.detach())

    def detach_(self) -> SparseTensor:
        """Detach this tensor from the graph in place; return self."""
        self._vals = self._vals.detach()
        return self

    # ------------------------------------------------------------------ in place
    # In-place ops rebind ``_idx``/``_vals`` to new arrays rather than writing into them, so a
    # sparse tensor sharing them (AccumulateGrad's shallow copy) never changes underneath.
    def _assign(self, other: SparseTensor) -> SparseTensor:
        self._idx, self._vals = other._idx, other._vals
        self._is_coalesced = other._is_coalesced
        self._vc[0] += 1
        return self

    def zero_(self) -> SparseTensor:
        """Remove every specified element (nnz becomes 0); return self."""
        sd = self._idx.shape[0]
        empty = self._vals.detach().new_zeros((0,) + tuple(self._vals.shape[1:]))
        return self._assign(SparseTensor._make(np.zeros((sd, 0), np.int64), empty, (), True))

    def mul_(self, other) -> SparseTensor:
        """Multiply the values by a number (or 0-d tensor) in place; return self."""
        return self._assign(self.mul(other))

    def div_(self, other) -> SparseTensor:
        """Divide the values by a number (or 0-d tensor) in place; return self."""
        return self._assign(self.div(other))

    def add_(self, other, *, alpha=1) -> SparseTensor:
        """Add ``alpha * other`` (sparse, same size) in place; return self."""
        if not isinstance(other, SparseTensor):
            raise RuntimeError(
                "add(sparse, dense) is not supported. Use add(dense, sparse) instead."
            )
        return self._assign(self.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1) -> SparseTensor:
        """Subtract ``alpha * other`` (sparse, same size) in place; return self."""
        return self.add_(other, alpha=-alpha)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_

    def clone(self, *, memory_format=None) -> SparseTensor:
        """Return a copy (indices and values copied)."""
        return SparseTensor._make(
            self._idx.copy(), self._vals.clone(), self._sshape, self._is_coalesced
        )

    # ------------------------------------------------------------------ conversion
    def to(self, *args, **kwargs) -> SparseTensor:
        """Return the tensor cast to ``dtype`` (devices other than cpu raise)."""
        dtype = kwargs.get("dtype")
        for a in args:
            if isinstance(a, D.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif a is not None and str(a).split(":")[0] != "cpu":
                as_device(a)  # torch's device errors
                raise RuntimeError(f"ember sparse tensors live on the cpu, not {a}")
        device = kwargs.get("device")
        if device is not None and str(device).split(":")[0] != "cpu":
            raise RuntimeError(f"ember sparse tensors live on the cpu, not {device}")
        if dtype is None or dtype is self.dtype:
            return self
        return self._with_values(self._vals.to(dtype))

    def double(self) -> SparseTensor:
        """Return the tensor as float64."""
        return self.to(D.float64)

    def float(self) -> SparseTensor:
        """Return the tensor as float32."""
        return self.to(D.float32)

    def half(self) -> SparseTensor:
        """Return the tensor as float16."""
        return self.to(D.float16)

    def long(self) -> SparseTensor:
        """Return the tensor as int64."""
        return self.to(D.int64)

    def int(self) -> SparseTensor:
        """Return the tensor as int32."""
        return self.to(D.int32)

    def cpu(self) -> SparseTensor:
        """Return self (ember tensors live on the cpu)."""
        return self

    def to_dense(self, dtype=None, *, masked_grad: bool | None = None) -> Tensor:
        """Return the dense (strided) tensor this represents; duplicates are summed."""
        from ember.sparse._ops import _to_dense

        vals = self._vals if dtype is None else self._vals.to(dtype)
        return _to_dense(vals, idx=self._idx, shape=self._sshape)

    def to_sparse(self, sparse_dim: int | None = None, **kwargs) -> SparseTensor:
        """Return self (already sparse COO)."""
        return self

    to_sparse_coo = to_sparse

    def coalesce(self) -> SparseTensor:
        """Return the tensor with duplicate indices summed and indices sorted."""
        if self._is_coalesced:
            return self
        idx, _, inverse = _unique_positions(self._idx, self._sshape)
        from ember.sparse._ops import _coalesce

        summed = _coalesce(self._vals, inverse=inverse, nnz=idx.shape[1])
        return SparseTensor._make(idx, summed, self._sshape, True)

    # ------------------------------------------------------------------ printing
    def __repr__(self, *, tensor_contents=None) -> str:
        from ember._core.tensor_str import PRINT_OPTS, _kind, _tensor_body, dtype_shown

        indent = len("tensor(")

        def body(a: np.ndarray, name: str, ind: int) -> str:
            if a.size == 0:
                return "[], size=" + str(tuple(a.shape))
            return _tensor_body(a, _kind(name, a), ind)

        ip, vp = "indices=tensor(", "values=tensor("
        text = (
            ip
            + body(self._idx, "int64", indent + len(ip))
            + "),\n"
            + " " * indent
            + vp
            + body(self._vals.detach().numpy(), self.dtype.name, indent + len(vp))
            + ")"
        )
        suffixes = ["size=" + str(self._sshape), f"nnz={self._idx.shape[1]}"]
        if dtype_shown(self.dtype.name, D.get_default_dtype().name):
            suffixes.append(f"dtype=torch.{self.dtype.name}")
        suffixes.append("layout=torch.sparse_coo")
        fn = self.grad_fn
        if fn is not None:
            suffixes.append(f"grad_fn=<{type(fn).__name__}>")
        elif self.requires_grad:
            suffixes.append("requires_grad=True")
        parts = ["tensor(" + text]
        last = len(parts[0]) - parts[0].rfind("\n") + 1
        force = True  # torch starts the suffixes of a sparse tensor on a new line
        for s in suffixes:
            if force or last + len(s) + 2 > PRINT_OPTS.linewidth:
                parts.append(",\n" + " " * indent + s)
                last = indent + len(s)
                force = False
            else:
                parts.append(", " + s)
                last += len(s) + 2
        return "".join(parts) + ")"

    __str__ = __repr__

    # ------------------------------------------------------------------ arithmetic
    def _scalar(self, other, fn: str):
        if isinstance(other, (numbers.Number, np.number)) and not isinstance(other, Tensor):
            return self._with_values(getattr(self._vals, fn)(other))
        if isinstance(other, Tensor) and not other.is_sparse and other.ndim == 0:
            return self._with_values(getattr(self._vals, fn)(other))
        return None

    def __mul__(self, other):
        r = self._scalar(other, "__mul__")
        if r is not None:
            return r
        if isinstance(other, Tensor) and not other.is_sparse and not self.dense_dim():
            # sparse * dense keeps the sparse pattern: values times dense at the indices
            if other.ndim > self.ndim:
                raise RuntimeError(
                    f"mul: expected dense of at most {self.ndim} dims, got {other.ndim}"
                )
            full = other.expand(self._sshape)
            return self._with_values(self._vals * full[tuple(_wrap(r) for r in self._idx)])
        raise NotImplementedError(
            "ember: a sparse tensor multiplies by a number or a dense tensor only"
        )

    __rmul__ = __mul__
    mul = __mul__

    def __truediv__(self, other):
        r = self._scalar(other, "__truediv__")
        if r is None:
            raise NotImplementedError("ember: a sparse tensor divides by a number only")
        return r

    div = __truediv__

    def __neg__(self) -> SparseTensor:
        return self._with_values(-self._vals)

    neg = __neg__

    def add(self, other, *, alpha=1):
        """Return ``self + alpha * other`` for a sparse ``other`` of the same size."""
        if isinstance(other, SparseTensor):
            return _add_sparse(self, other, alpha)
        if isinstance(other, Tensor):
            raise RuntimeError(
                "add(sparse, dense) is not supported. Use add(dense, sparse) instead."
            )
        raise NotImplementedError("ember: a sparse tensor adds a sparse tensor only")

    __add__ = add

    def sub(self, other, *, alpha=1):
        """Return ``self - alpha * other`` for a sparse ``other`` of the same size."""
        return self.add(other, alpha=-alpha)

    __sub__ = sub

    def __radd__(self, other):
        if isinstance(other, Tensor):  # dense + sparse is dense
            return other + self.to_dense()
        return NotImplemented

    def __rsub__(self, other):
        if isinstance(other, Tensor):
            return other - self.to_dense()
        return NotImplemented

    def t(self) -> SparseTensor:
        """Return the transpose of a 2-D sparse tensor."""
        if self.sparse_dim() != 2 or self.dense_dim():
            raise RuntimeError(
                f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but self is "
                f"{self.sparse_dim()} sparse and {self.dense_dim()} dense"
            )
        return self.transpose(0, 1)

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        """Return the tensor with two sparse dimensions swapped."""
        n = len(self._sshape)
        d0, d1 = _wrap_dim(dim0, n), _wrap_dim(dim1, n)
        sd = self._idx.shape[0]
        if d0 >= sd or d1 >= sd:
            raise NotImplementedError("ember: transpose of dense dimensions of a sparse tensor")
        idx = self._idx.copy()
        idx[[d0, d1]] = idx[[d1, d0]]
        shape = list(self._sshape)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        return SparseTensor._make(idx, self._vals, tuple(shape), d0 == d1 and self._is_coalesced)

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        """Return the sum over ``dim`` (sparse or dense result, as ``torch.sparse.sum``)."""
        from ember.sparse._reductions import sparse_sum

        return sparse_sum(self, dim, dtype=dtype)

    # ------------------------------------------------------------------ products
    def mm(self, mat2: Tensor) -> Tensor:
        """Return the (dense) product ``self @ mat2``."""
        from ember.sparse._products import _mm

        return _mm(self, mat2, "mm")

    def matmul(self, other: Tensor) -> Tensor:
        """Return the (dense) product ``self @ other``."""
        from ember.sparse._products import _mm

        return _mm(self, other, "mm")

    __matmul__ = matmul

    def __rmatmul__(self, other):
        if isinstance(other, Tensor):
            from ember.sparse._products import _mm

            return _mm(other, self, "mm")
        return NotImplemented

    def softmax(self, dim: int, dtype=None) -> SparseTensor:
        """Return softmax over ``dim`` of the specified elements."""
        from ember.sparse._reductions import softmax

        return softmax(self, dim, dtype)

    def log_softmax(self, dim: int, dtype=None) -> SparseTensor:
        """Return log-softmax over ``dim`` of the specified elements."""
        from ember.sparse._reductions import log_softmax

        return log_softmax(self, dim, dtype)

    def __reduce_ex__(self, proto):
        return (_rebuild_sparse, (self._indices(), self._vals.detach(), self._sshape))

    def __deepcopy__(self, memo):
        return self.clone()


def _rebuild_sparse(indices, values, size) -> SparseTensor:
    return sparse_coo_tensor(indices, values, size)


def _wrap_dim(dim: int, n: int) -> int:
    lo, hi = -builtins.max(n, 1), builtins.max(n, 1) - 1
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return dim % builtins.max(n, 1)


def _unique_positions(idx: np.ndarray, shape: tuple):
    """The sorted unique columns of ``idx``, the first occurrence of each, and the inverse."""
    sd = idx.shape[0]
    if idx.shape[1] == 0:
        return idx, np.zeros(0, np.int64), np.zeros(0, np.int64)
    lin = np.ravel_multi_index(tuple(idx), shape[:sd]) if sd else np.zeros(idx.shape[1], np.int64)
    uniq, first, inverse = np.unique(lin, return_index=True, return_inverse=True)
    out = np.stack(np.unravel_index(uniq, shape[:sd])).astype(np.int64).reshape(sd, -1)
    return out, first.astype(np.int64), inverse.reshape(-1).astype(np.int64)


def _add_sparse(a: SparseTensor, b: SparseTensor, alpha) -> SparseTensor:
    if a._sshape != b._sshape:
        raise RuntimeError(
            f"add: expected sizes of 'self' and 'other' to match, but {list(a._sshape)} != "
            f"{list(b._sshape)}"
        )
    if a._idx.shape[0] != b._idx.shape[0]:
        raise NotImplementedError("ember: adding sparse tensors of different sparse_dim")
    if a is b:  # torch: the same tensor twice scales its values
        return a._with_values(a._vals * (1 + alpha))
    from ember.sparse._grad import merge_add

    dt = D.promote_types(a.dtype, b.dtype)
    if a.dtype is not dt:
        a = a.to(dt)
    return merge_add(a, b, alpha)  # torch's merge walk over the two index lists


# ---------------------------------------------------------------------------------------------
# creation


def _as_tensor(x, dtype=None) -> Tensor:
    if isinstance(x, Tensor):
        return x if dtype is None or x.dtype is dtype else x.to(dtype)
    return API["tensor"](x, dtype=dtype)  # (ember.tensor: the default device's factory)


def sparse_coo_tensor(
    indices=None,
    values=None,
    size=None,
    *,
    dtype: D.dtype | None = None,
    device=None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> SparseTensor:
    """Return a sparse COO tensor with the given ``indices`` (sparse_dim x nnz) and
    ``values`` (nnz x dense dims), of ``size`` (inferred from the indices if omitted)."""
    if device is not None and str(device).split(":")[0] != "cpu":
        raise RuntimeError(f"ember sparse tensors live on the cpu, not {device}")
    if values is None:  # torch's third overload: sparse_coo_tensor(size), no elements
        size = indices if size is None else size
        if size is None or indices is not None and size is not indices:
            raise TypeError(
                "sparse_coo_tensor() received an invalid combination of arguments - expected "
                "(indices, values, size=None, ...) or (size, ...)"
            )
        size = tuple(builtins.int(n) for n in size)
        indices = np.zeros((len(size), 0), np.int64)
        values = np.zeros(0, (dtype or D.get_default_dtype()).np)
    ind = _as_tensor(indices)
    vals = _as_tensor(values, dtype)
    idx = np.asarray(ind.detach().numpy())
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    idx = idx.astype(np.int64, copy=False)
    sd, nnz = idx.shape
    if vals.ndim == 0:
        raise RuntimeError("values must have at least one dimension (nnz)")
    if vals.shape[0] != nnz:
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz "
            f"from values: {vals.shape[0]}"
        )
    dense_dim = vals.ndim - 1
    if size is None:
        top = idx.max(axis=1) + 1 if nnz else np.zeros(sd, np.int64)
        size = tuple(builtins.int(s) for s in top) + tuple(vals.shape[1:])
    else:
        size = tuple(builtins.int(s) for s in size)
        if len(size) != sd + dense_dim:
            raise RuntimeError(
                f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                f"{len(size)}, sparse_dim = {sd}, dense_dim = {dense_dim}"
            )
        if check_invariants and nnz:
            lo, hi = idx.min(axis=1), idx.max(axis=1)
            for d in range(sd):
                if lo[d] < 0:
                    raise RuntimeError(f"found negative index {lo[d]} for dim {d}")
                if hi[d] >= size[d]:
                    raise RuntimeError(
                        f"size is inconsistent with indices: for dim {d}, size is {size[d]} "
                        f"but found index {hi[d]}"
                    )
        if tuple(vals.shape[1:]) != size[sd:]:
            raise RuntimeError(
                f"values has incorrect size, expected {list((nnz,) + size[sd:])}, got "
                f"{list(vals.shape)}"
            )
    if requires_grad:
        if not (vals.dtype.is_floating_point or vals.dtype.is_complex):
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        vals = vals.detach().requires_grad_(True)
    return SparseTensor._make(idx, vals, size, builtins.bool(is_coalesced))


def to_sparse(
    self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None, dense_dim=None
) -> SparseTensor:
    """Return the COO form of a dense tensor: its nonzero elements (or nonzero rows of the
    trailing dense dimensions when ``sparse_dim`` is less than ``dim()``), coalesced."""
    if isinstance(self, SparseTensor):
        return self
    if layout is not None and layout is not sparse_coo:
        raise NotImplementedError(f"ember: to_sparse(layout={layout}) (COO only)")
    n = self.ndim
    sd = n if sparse_dim is None else builtins.int(sparse_dim)
    if not 0 < sd <= n if n else sd != 0:
        raise RuntimeError(f"sparse_dim must be in [0, {n}] but got {sd}")
    a = self.detach().numpy()
    shape = tuple(a.shape)
    mask = a != 0
    if sd < n:
        mask = mask.reshape(shape[:sd] + (-1,)).any(axis=-1)
    idx = np.stack(np.nonzero(mask)).astype(np.int64).reshape(sd, -1)
    vals = self[tuple(_wrap(r) for r in idx)] if sd else self.unsqueeze(0)
    return SparseTensor._make(idx, vals, shape, True)


def to_sparse_coo(self: Tensor) -> SparseTensor:
    """Return the COO form of a dense tensor (``to_sparse()``)."""
    return to_sparse(self)
