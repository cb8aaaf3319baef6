"""Embedding, one_hot, distances, padding, linear/bilinear of ``ember.nn.functional``
(scaled dot-product attention lives in ``attention.py``).

``embedding`` and ``pad`` are ops with torch's grad_fn names. Their backward passes are linear
maps written in ember ops (a scatter-add op whose own backward is the gather, and a product
with a constant selection matrix per padded dim), so they are differentiable again.
"""

from __future__ import annotations

import numpy as np

import ember
from ember._core.tensor import Tensor, _wrap
from ember._ops.copying import keep_layout_of
from ember._ops.registry import dispatch, op

__all__ = [
    "bilinear",
    "cosine_similarity",
    "embedding",
    "embedding_bag",
    "linear",
    "one_hot",
    "pad",
    "pdist",
]


# ------------------------------------------------------------------------------ embedding


@op("embedding", grad_fn="EmbeddingBackward0", args=("weight", "indices"), save=("indices",))
def _embedding(w, idx, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return np.take(w, idx, axis=0)


@_embedding.backward
def _(ctx, g, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    (idx,) = ctx.saved_tensors
    num = ctx._input_meta[0][0][0]
    if sparse:
        if scale_grad_by_freq:
            raise RuntimeError(
                "embedding_backward: scale_grad_by_freq not supported with sparse gradients"
            )
        from ember.sparse._grad import embedding_sparse_grad

        return embedding_sparse_grad(g, idx, num, padding_idx), None
    if scale_grad_by_freq:
        g = g * _inverse_counts(idx._data, num, g._data.dtype, g.ndim - idx.ndim)
    return dispatch(_embedding_grad, (g, idx), {"num": num, "pad": padding_idx}), None


def _inverse_counts(idx: np.ndarray, num: int, dtype, trailing: int) -> Tensor:
    """1 / (how often each index occurs in ``idx``), shaped to scale the gradient rows."""
    counts = np.bincount(idx.reshape(-1), minlength=num)[idx]
    scale = (1.0 / counts).astype(dtype)
    return _wrap(scale.reshape(scale.shape + (1,) * trailing))


@op(
    "embedding_dense_backward",
    grad_fn="EmbeddingDenseBackwardBackward0",
    args=("grad_output", "indices"),
    save=("indices",),
)
def _embedding_grad(g, idx, num, pad):
    out = np.zeros((num,) + g.shape[idx.ndim :], g.dtype)
    np.add.at(out, idx, g)
    if pad >= 0:
        out[pad] = 0
    return out


@_embedding_grad.backward
def _(ctx, gg, num, pad):
    (idx,) = ctx.saved_tensors
    if pad >= 0:
        gg = gg.clone()
        gg[pad] = 0
    return dispatch(_embedding, (gg, idx), {}), None


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Return the rows of ``weight`` at the indices ``input`` (renormalised to ``max_norm``)."""
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx = n + padding_idx
    else:
        padding_idx = -1
    if input.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {_type_str(input)} instead (while checking arguments for "
            "embedding)"
        )
    idx = input._data
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm(weight, idx, max_norm, norm_type)
    params = {"padding_idx": padding_idx}
    if scale_grad_by_freq or sparse:
        params["scale_grad_by_freq"] = bool(scale_grad_by_freq)
        params["sparse"] = bool(sparse)
    return dispatch(_embedding, (weight, input), params)


def _type_str(t: Tensor) -> str:
    from ember._ops.registry import _type_name

    return f"torch.{_type_name(t.dtype)}Tensor"


def _renorm(weight: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    # torch's embedding_renorm_: in place, outside autograd, on the rows looked up
    rows = np.unique(idx)
    w = weight._data
    norms = np.linalg.norm(w[rows], ord=norm_type, axis=1)
    scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    w[rows] *= scale[:, None]
    weight._vc[0] += 1


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Return the sum, mean or max of the embeddings of each bag of indices.

    Bags are the rows of a 2-D ``input``, or the slices of a 1-D ``input`` starting at
    ``offsets``; indices equal to ``padding_idx`` are left out; empty bags give zeros.
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    n = weight.shape[0]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n
    idx = input._data
    psw = per_sample_weights
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated "
                "is a mini-batch of fixed length sequences. However, found "
                f"offsets of type {type(offsets)}"
            )
        b = idx.shape[0]
        bag_of = np.broadcast_to(np.arange(b)[:, None], idx.shape)
        flat_idx, flat_bag = idx.reshape(-1), bag_of.reshape(-1)
        if psw is not None:
            psw = psw.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        off = offsets._data.astype(np.int64)
        if include_last_offset:
            starts, end = off[:-1], off[-1]
        else:
            starts, end = off, idx.size
        b = starts.size
        flat_idx = idx[:end]
        flat_bag = np.searchsorted(starts, np.arange(flat_idx.size), side="right") - 1
        if psw is not None:
            psw = psw[:end] if end != idx.size else psw
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    keep = flat_bag >= 0
    if padding_idx is not None:
        keep &= flat_idx != padding_idx
    if max_norm is not None:
        _renorm(weight, flat_idx[keep], max_norm, norm_type)
    if input.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {_type_str(input)} instead (while checking arguments for "
            "embedding_bag)"
        )
    kidx = np.ascontiguousarray(flat_idx[keep], dtype=np.int64)
    if kidx.size and (kidx.min() < 0 or kidx.max() >= n):
        raise IndexError("index out of range in self")
    kbag = flat_bag[keep]
    counts = np.bincount(kbag, minlength=b)
    params = {"kidx": kidx, "kbag": kbag, "keep": keep, "counts": counts, "mode": mode}
    if scale_grad_by_freq or sparse:
        params["sparse"] = bool(sparse)
        params["scale_grad_by_freq"] = (
            _bag_freq_divisors(flat_idx, kidx, n)
            if scale_grad_by_freq and not sparse
            else bool(scale_grad_by_freq)
        )
    return dispatch(_embedding_bag, (weight, psw), params)


def _bag_freq_divisors(flat_idx: np.ndarray, kidx: np.ndarray, n: int) -> np.ndarray:
    """The count each kept index's gradient is divided by, as torch's CPU kernel does it: it
    walks the distinct indices in sorted order and divides the ``i``-th one's gradient by the
    count of the ``i``-th *sorted index* (``counts[indices[i]]``), not by its own count."""
    all_idx = flat_idx.astype(np.int64)
    counts = np.bincount(all_idx, minlength=n)
    ordered = np.sort(all_idx)
    group = np.searchsorted(np.unique(ordered), kidx)
    return counts[ordered[group]]


def _bag_reduce(rows, counts, ufunc):
    """Reduce the rows of each bag (rows sorted by bag) with ``ufunc``; empty bags give 0."""
    out = np.zeros((counts.size,) + rows.shape[1:], rows.dtype)
    full = counts > 0
    if rows.shape[0]:
        starts = (np.cumsum(counts) - counts)[full]
        out[full] = ufunc.reduceat(rows, starts, axis=0)
    return out


@op(
    "embedding_bag",
    grad_fn="EmbeddingBagBackward0",
    args=("weight", "per_sample_weights"),
    save=("weight", "per_sample_weights"),
)
def _embedding_bag(w, psw, kidx, kbag, keep, counts, mode, scale_grad_by_freq=False, sparse=False):
    rows = np.take(w, kidx, axis=0)
    if psw is not None:
        rows *= psw[keep][:, None].astype(rows.dtype, copy=False)
    if mode == "max":
        return _bag_reduce(rows, counts, np.maximum)
    out = _bag_reduce(rows, counts, np.add)
    if mode == "mean":
        out /= np.maximum(counts, 1)[:, None].astype(out.dtype)
    return out


@_embedding_bag.backward
def _(ctx, g, kidx, kbag, keep, counts, mode, scale_grad_by_freq=False, sparse=False):
    w, psw = ctx.saved_tensors
    need_w, need_psw = ctx.needs_input_grad
    num = ctx._input_meta[0][0][0]
    kidx_t, kbag_t = _wrap(kidx), _wrap(kbag)
    if mode == "max":
        # the gradient of each (bag, column) goes to the first row holding the maximum
        rows = w._data[kidx]
        best = _bag_reduce(rows, counts, np.maximum)
        pos = np.where(rows == best[kbag], np.arange(kidx.size)[:, None], kidx.size)
        first = _bag_reduce(pos, counts, np.minimum)[counts > 0]
        g_rows = g.new_zeros((kidx.size,) + tuple(g.shape[1:]))
        g_rows = g_rows.scatter(0, _wrap(first), g[_wrap(np.flatnonzero(counts))])
        return dispatch(_embedding_grad, (g_rows, kidx_t), {"num": num, "pad": -1}), None
    if mode == "mean":
        g = g / _wrap(np.maximum(counts, 1)[:, None].astype(g._data.dtype))
    g_rows = dispatch(_embedding, (g, kbag_t), {})
    gw = gpsw = None
    if need_w:
        scaled = g_rows if psw is None else g_rows * psw[_wrap(keep)].unsqueeze(-1)
        if sparse:
            if scale_grad_by_freq:
                raise RuntimeError(
                    "embedding_backward: scale_grad_by_freq not supported with sparse gradients"
                )
            from ember.sparse._grad import embedding_sparse_grad

            gw = embedding_sparse_grad(scaled, kidx_t, num, -1)
        else:
            if scale_grad_by_freq is not False:  # the divisors computed at the call
                div = (1.0 / scale_grad_by_freq).astype(scaled._data.dtype)
                scaled = scaled * _wrap(div[:, None])
            gw = dispatch(_embedding_grad, (scaled, kidx_t), {"num": num, "pad": -1})
    if need_psw:
        dots = (g_rows * dispatch(_embedding, (w, kidx_t), {})).sum(-1)
        gpsw = psw.new_zeros(psw.shape).index_put((_wrap(np.flatnonzero(keep)),), dots)
    return gw, gpsw


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Return int64 one-hot vectors of the class indices ``tensor`` (a new last dim)."""
    if tensor.dtype is not ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = tensor._data
    if a.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    elif a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(a.max()) + 1 if a.size else 0
    elif a.size and a.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (a[..., None] == np.arange(num_classes)).astype(np.int64, order="C")
    return _wrap(out)


# ------------------------------------------------------------------------------ distances


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Return the cosine of the angle between ``x1`` and ``x2`` along ``dim``."""
    if tuple(x1.shape) != tuple(x2.shape):
        shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
        x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """Return the p-norm distances between all pairs of rows (upper triangle, row-major)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    if i.size == 0:
        return input.new_zeros((0,))
    d = input[_wrap(i)] - input[_wrap(j)]
    return d.norm(p, 1)


# ------------------------------------------------------------------------------ padding


def _pad_index(n: int, left: int, right: int, mode: str) -> np.ndarray:
    """Return, per output position along one dim, the input position it copies (-1: fill)."""
    pos = np.arange(-left, n + right)
    if mode == "constant":
        return np.where((pos >= 0) & (pos < n), pos, -1)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    if mode == "circular":
        return pos % n
    # reflect (without repeating the edge)
    period = 2 * (n - 1) if n > 1 else 1
    r = np.abs(pos) % period
    return np.where(r >= n, period - r, r)


def _pad_forward(x, pads, mode, value):
    out = x
    for k, (left, right) in enumerate(pads):
        if left == 0 and right == 0:
            continue
        axis = x.ndim - 1 - k
        idx = _pad_index(out.shape[axis], left, right, mode)
        taken = np.take(out, np.maximum(idx, 0), axis=axis)
        if mode == "constant":
            shape = [1] * out.ndim
            shape[axis] = idx.size
            taken = np.where((idx >= 0).reshape(shape), taken, x.dtype.type(value))
        out = taken
    return keep_layout_of(np.ascontiguousarray(out), x)


def _pad_backward(ctx, g, pads, mode, value):
    shape = ctx._input_meta[0][0]
    nd = len(shape)
    sizes = list(shape)
    # apply the adjoint of each dim's selection, last padded dim first
    for k in reversed(range(len(pads))):
        left, right = pads[k]
        if left == 0 and right == 0:
            continue
        axis = nd - 1 - k
        n = sizes[axis]
        idx = _pad_index(n, left, right, mode)
        m = np.zeros((idx.size, n), dtype=g._data.dtype)
        keep = idx >= 0
        m[np.nonzero(keep)[0], idx[keep]] = 1
        g = ember.matmul(g.movedim(axis, -1), _wrap(m)).movedim(-1, axis)
    return g


def _pad_op(grad_fn: str):
    p = op("pad", grad_fn=grad_fn)(_pad_forward)
    p.backward(_pad_backward)
    return p


_PAD_OPS: dict = {"constant": _pad_op("ConstantPadNdBackward0"), "circular": _pad_op("CopySlices")}
for _k in (1, 2, 3):
    _PAD_OPS["reflect", _k] = _pad_op(f"ReflectionPad{_k}DBackward0")
    _PAD_OPS["replicate", _k] = _pad_op(f"ReplicationPad{_k}DBackward0")


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, ...)``."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.dim():
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {input.dim()}"
        )
    pads = tuple((int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(k))
    if mode == "constant":
        # negative padding crops (torch narrows before it pads: its error comes from narrow)
        for i, (a, b) in enumerate(pads):
            n = input.shape[input.dim() - 1 - i] + min(a, 0)
            if n < 0 or n + min(b, 0) < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        params = {"pads": pads, "mode": mode, "value": 0.0 if value is None else value}
        return dispatch(_PAD_OPS["constant"], (input,), params)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise AssertionError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if input.dim() not in (k + 1, k + 2) or k > 3:
        raise NotImplementedError(
            "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"
        )
    for i, (a, b) in enumerate(pads):
        n = input.shape[input.dim() - 1 - i]
        if mode == "reflect" and (a >= n or b >= n):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({a}, {b}) at dimension {input.dim() - 1 - i} of "
                f"input {list(input.shape)}"
            )
        if mode == "circular" and (a > n or b > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    key = "circular" if mode == "circular" else (mode, k)
    return dispatch(_PAD_OPS[key], (input,), {"pads": pads, "mode": mode, "value": 0.0})


# ------------------------------------------------------------------------------ linear


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Return ``input @ weight.T + bias``."""
    from ember.nn.modules.linear import _linear

    return _linear(input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """Return ``x1^T A x2 + b`` for each output feature."""
    from ember.nn.modules.linear import _bilinear

    return _bilinear(input1, input2, weight, bias)
