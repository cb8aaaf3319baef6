"""ONNX translations of the shape, indexing, joining and copying ops."""

from __future__ import annotations

import numpy as np

from ember.onnx._context import INT64_MAX, onnx_type
from ember.onnx._dynamic import shape_tensor, size_tensor
from ember.onnx._symbolic import _as, _out, symbolic, unsupported


@symbolic("view", "_unsafe_view", "_reshape_alias", "reshape")
def _view(ctx, node, x, shape, **params):
    # the traced sizes are concrete; keep the leading dims that do not change as 0 ("copy from
    # the input") and let the first changed one be -1, so a dynamic batch dim still fits
    if node.dyn and "shape" in node.dyn:  # sizes computed from the dynamic dims
        return [ctx.add1("Reshape", [x, shape_tensor(ctx, shape, node.dyn["shape"])])]
    src = node.inputs[0].shape
    spec = list(shape)
    k = 0
    while k < min(len(src), len(spec)) and src[k] == spec[k]:
        k += 1
    spec = [0] * k + spec[k:]
    if k < len(spec) and 0 not in spec[k:]:
        spec[k] = -1
    return [ctx.add1("Reshape", [x, ctx.ints(spec)])]


@symbolic("permute")
def _permute(ctx, node, x, dims):
    nd = len(node.inputs[0].shape)
    return [ctx.add1("Transpose", [x], perm=[d % nd for d in dims])]


@symbolic("transpose", "t")
def _transpose(ctx, node, x, dim0=0, dim1=1):
    nd = len(node.inputs[0].shape)
    if nd < 2:
        return [ctx.add1("Identity", [x])]
    perm = list(range(nd))
    perm[dim0 % nd], perm[dim1 % nd] = perm[dim1 % nd], perm[dim0 % nd]
    return [ctx.add1("Transpose", [x], perm=perm)]


@symbolic("unsqueeze")
def _unsqueeze(ctx, node, x, dim):
    nd = len(node.inputs[0].shape) + 1
    return [ctx.add1("Unsqueeze", [x, ctx.ints([dim % nd])])]


@symbolic("squeeze")
def _squeeze(ctx, node, x, dim=None, dims=None):
    src = node.inputs[0].shape
    nd = len(src)
    if dim is not None:
        dims = (dim,)
    if dims is None:
        dims = tuple(i for i, n in enumerate(src) if n == 1)
    dims = [d % nd for d in dims if src[d % nd] == 1] if nd else []
    if not dims:
        return [ctx.add1("Identity", [x])]
    return [ctx.add1("Squeeze", [x, ctx.ints(dims)])]


@symbolic("slice")
def _slice(ctx, node, x, dim, start, end, step=1):
    size = node.inputs[0].shape[dim]
    end = INT64_MAX if end >= size else end  # "to the end", whatever the size at run time
    dyn = node.dyn or {}
    starts = size_tensor(ctx, dyn["start"]) if "start" in dyn else ctx.ints([start])
    ends = size_tensor(ctx, dyn["end"]) if "end" in dyn and end != INT64_MAX else ctx.ints([end])
    ins = [x, starts, ends, ctx.ints([dim]), ctx.ints([step])]
    return [ctx.add1("Slice", ins)]


@symbolic("select")
def _select(ctx, node, x, dim, index):
    if node.dyn and "index" in node.dyn:  # x[:, -1] along a dynamic dim
        y = ctx.add1("Gather", [x, size_tensor(ctx, node.dyn["index"])], axis=dim)
        return [ctx.add1("Squeeze", [y, ctx.ints([dim])])]
    if isinstance(index, str):  # an index computed in the graph (a loop's iteration number)
        return [ctx.add1("Gather", [x, index], axis=dim)]
    return [ctx.add1("Gather", [x, ctx.const(np.asarray(index, dtype=np.int64))], axis=dim)]


@symbolic("index")
def _index(ctx, node, x, idx):
    links = node.links or {}
    mask = links.get(("idx", 0))
    if mask is not None and mask[0] == "mask" and mask[2] == len(idx):
        # x[mask]: the positions of the mask's True values, found at run time
        pos = ctx.add1("Transpose", [ctx.add1("NonZero", [ctx.name(mask[1])])], perm=[1, 0])
        return [ctx.add1("GatherND", [x, pos])]
    arrays = [i for i, e in enumerate(idx) if isinstance(e, np.ndarray)]
    plain = all(isinstance(e, np.ndarray) or e == slice(None) for e in idx)
    if any(link[0] == "mask" for link in links.values()):
        raise unsupported(node, ctx.opset, "only a bool mask over the leading dims is exported")
    if len(arrays) != 1 or not plain or idx[arrays[0]].dtype == np.bool_:
        raise unsupported(node, ctx.opset, "only indexing with one integer index list is exported")
    axis = arrays[0]
    link = links.get(("idx", axis))
    if link is not None:  # an index tensor computed by the model: read at run time
        ind = ctx.name(link[1])
        if link[1].dtype.np != np.int64:
            ind = ctx.add1("Cast", [ind], to=onnx_type(_int64()))
        return [ctx.add1("Gather", [x, ind], axis=axis)]
    size = node.inputs[0].shape[axis]
    ind = np.where(idx[axis] < 0, idx[axis] + size, idx[axis]).astype(np.int64)
    return [ctx.add1("Gather", [x, ctx.const(ind)], axis=axis)]


def _int64():
    from ember._core import dtype as D

    return D.int64


@symbolic("narrow_copy")
def _narrow(ctx, node, x, dim, start, length):
    ins = [x, ctx.ints([start]), ctx.ints([start + length]), ctx.ints([dim])]
    return [ctx.add1("Slice", ins)]


@symbolic("cat")
def _cat(ctx, node, *xs, dim=0, sizes=()):
    dt = _out(node).dtype
    ins = [_as(ctx, node, i, x, dt) for i, x in enumerate(xs)]
    nd = len(_out(node).shape)
    return [ctx.add1("Concat", ins, axis=dim % nd)]


@symbolic("stack")
def _stack(ctx, node, *xs, dim=0):
    dt = _out(node).dtype
    nd = len(_out(node).shape)
    axes = ctx.ints([dim % nd])
    ins = [ctx.add1("Unsqueeze", [_as(ctx, node, i, x, dt), axes]) for i, x in enumerate(xs)]
    return [ctx.add1("Concat", ins, axis=dim % nd)]


@symbolic("split", "split_with_sizes")
def _split(ctx, node, x, dim, sizes):
    nd = len(node.inputs[0].shape)
    return ctx.add("Split", [x, ctx.ints(sizes)], n_out=len(sizes), axis=dim % nd)


@symbolic("unbind")
def _unbind(ctx, node, x, dim=0):
    nd = len(node.inputs[0].shape)
    n = node.inputs[0].shape[dim % nd]
    parts = ctx.add("Split", [x, ctx.ints([1] * n)], n_out=n, axis=dim % nd)
    axes = ctx.ints([dim % nd])
    return [ctx.add1("Squeeze", [p, axes]) for p in parts]


@symbolic("expand")
def _expand(ctx, node, x, shape):
    # a dim the input already has at full size is given as 1: Expand keeps the input's size,
    # which stays right when that dim is dynamic
    src = node.inputs[0].shape
    lead = len(shape) - len(src)
    spec = [s if i < lead or src[i - lead] != s else 1 for i, s in enumerate(shape)]
    if node.dyn and "shape" in node.dyn:
        return [ctx.add1("Expand", [x, shape_tensor(ctx, spec, node.dyn["shape"])])]
    return [ctx.add1("Expand", [x, ctx.ints(spec)])]


@symbolic("repeat")
def _repeat(ctx, node, x, repeats):
    nd = len(node.inputs[0].shape)
    if len(repeats) > nd:
        shape = [1] * (len(repeats) - nd) + list(node.inputs[0].shape)
        x = ctx.add1("Reshape", [x, ctx.ints(shape)])
    return [ctx.add1("Tile", [x, ctx.ints(repeats)])]


@symbolic("flip")
def _flip(ctx, node, x, dims):
    nd = len(node.inputs[0].shape)
    dims = [d % nd for d in dims]
    n = len(dims)
    ins = [x, ctx.ints([-1] * n), ctx.ints([-INT64_MAX] * n), ctx.ints(dims), ctx.ints([-1] * n)]
    return [ctx.add1("Slice", ins)]


@symbolic("clone", "alias", "contiguous", "detach")
def _identity(ctx, node, x, **params):
    return [ctx.add1("Identity", [x])]


@symbolic("_to_copy")
def _to_copy(ctx, node, x, dtype=None, **params):
    out = _out(node).dtype
    if node.inputs[0].dtype is out:
        return [ctx.add1("Identity", [x])]
    return [ctx.add1("Cast", [x], to=onnx_type(out))]


@symbolic("pad")
def _pad(ctx, node, x, pads, mode="constant", value=0.0):
    nd = len(node.inputs[0].shape)
    # ember's pads list (before, after) per dim from the last dim backwards
    begins, ends = [0] * nd, [0] * nd
    for i, (b, e) in enumerate(pads):
        begins[nd - 1 - i], ends[nd - 1 - i] = b, e
    if min(begins + ends) < 0:
        raise unsupported(node, ctx.opset, "negative padding is not exported")
    onnx_mode = {
        "constant": "constant",
        "reflect": "reflect",
        "replicate": "edge",
        "circular": "wrap",
    }.get(mode)
    if onnx_mode is None:
        raise unsupported(node, ctx.opset)
    ins = [x, ctx.ints(begins + ends)]
    if onnx_mode == "constant":
        ins.append(
            ctx.const(np.asarray(0.0 if value is None else value, dtype=_out(node).dtype.np))
        )
    return [ctx.add1("Pad", ins, mode=onnx_mode)]
