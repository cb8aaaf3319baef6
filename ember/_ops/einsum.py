"""einsum: any equation, with ``...`` and broadcasting, as torch parses and checks it.

One operand: the result is built from views as torch builds it (diagonal for a repeated label,
permute, then sum over the labels left out), so it is a view when torch's is. Several operands:
one op whose forward is ``np.einsum(..., optimize=True)`` and whose backward is einsum again:
the gradient of an operand is the einsum of the output gradient with the other operands
(conjugated), so double backward works. A label repeated in an operand gets its gradient through
an identity matrix, and a label summed in that operand alone through a vector of ones.
"""

from __future__ import annotations

import functools
import string

import numpy as np

from ember._core.tensor import Tensor, _wrap
from ember._ops.pointwise import _conj
from ember._ops.registry import _type_name, dispatch, op, packed_items, publish

_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _err(msg: str) -> RuntimeError:
    return RuntimeError(f"einsum(): {msg}")


def _parse_terms(equation: str):
    """Return (input terms, output term or None); a term is a list of letters and '...'."""
    arrow = equation.find("->")
    lhs_end = arrow if arrow >= 0 else len(equation)
    terms, cur, i = [], [], 0
    ell_seen = False
    while i < lhs_end:
        c = equation[i]
        if c == ",":
            terms.append(cur)
            cur, ell_seen = [], False
        elif c == ".":
            if ell_seen:
                raise _err(
                    f"found '.' for operand {len(terms)} for which an ellipsis was already found"
                )
            if equation[i : i + 3] != "..." or i + 3 > lhs_end:
                raise _err(f"found '.' for operand {len(terms)} that is not part of any ellipsis")
            cur.append("...")
            ell_seen = True
            i += 2
        elif c in _LETTERS:
            cur.append(c)
        elif c != " ":
            raise _err(
                f"invalid subscript given at index {i} in the equation string, subscripts must "
                "be in [a-zA-Z]"
            )
        i += 1
    terms.append(cur)
    if arrow < 0:
        return terms, None
    out, i, ell_seen = [], arrow + 2, False
    while i < len(equation):
        c = equation[i]
        if c == ".":
            if ell_seen:
                raise _err("found '.' for output but an ellipsis (...) was already found")
            if equation[i : i + 3] != "...":
                raise _err("found '.' for output that is not part of any ellipsis (...)")
            out.append("...")
            ell_seen = True
            i += 2
        elif c in _LETTERS:
            if c in out:
                raise _err(f"output subscript {c} appears more than once in the output")
            out.append(c)
        elif c != " ":
            raise _err(
                f"invalid subscript given at index {i} in the equation string, subscripts must "
                "be in [a-zA-Z]"
            )
        i += 1
    return terms, out


@functools.lru_cache(maxsize=512)
def _plan(equation: str, shapes: tuple):
    """Return (input label strings, output label string, label sizes, full operand shapes)."""
    terms, out = _parse_terms(equation)
    if len(terms) > len(shapes):
        raise _err("fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise _err("more operands were provided than specified in the equation")
    used = {c for t in terms for c in t} | set(out or ())
    free = [c for c in _LETTERS if c not in used]
    n_ell = []
    for i, (t, shape) in enumerate(zip(terms, shapes)):
        n = len([c for c in t if c != "..."])
        if "..." in t:
            if n > len(shape):
                raise _err(
                    f"the number of subscripts in the equation ({n}) is more than the number of "
                    f"dimensions ({len(shape)}) for operand {i}"
                )
            n_ell.append(len(shape) - n)
        else:
            if n != len(shape):
                raise _err(
                    f"the number of subscripts in the equation ({n}) does not match the number "
                    f"of dimensions ({len(shape)}) for operand {i} and no ellipsis was given"
                )
            n_ell.append(0)
    E = max(n_ell) if n_ell else 0
    ell = "".join(free[:E])
    labels = []
    for t, e in zip(terms, n_ell):
        labels.append("".join(ell[E - e :] if c == "..." else c for c in t))
    sizes: dict = {}
    for i, (lab, shape) in enumerate(zip(labels, shapes)):
        seen: dict = {}
        for c, s in zip(lab, shape):
            if c in seen and seen[c] != s:
                raise _err(
                    f"subscript {c} is repeated for operand {i} but the sizes don't match, "
                    f"{s} != {seen[c]}"
                )
            seen[c] = s
        for c, s in seen.items():
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = s
            elif s != 1 and s != prev:
                if c in ell:
                    raise _err(
                        "operands do not broadcast with remapped shapes (original->remapped): "
                        + " ".join(str(list(sh)) for sh in shapes)
                    )
                raise _err(
                    f"subscript {c} has size {s} for operand {i} which does not broadcast with "
                    f"previously seen size {prev}"
                )
    if out is None:
        counts: dict = {}
        for lab in terms:
            for c in lab:
                if c != "...":
                    counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    else:
        for c in out:
            if c != "..." and c not in sizes:
                raise _err(
                    f"output subscript {c} does not appear in the equation for any input operand"
                )
        output = "".join(ell if c == "..." else c for c in out)
    full = tuple(tuple(sizes[c] for c in lab) for lab in labels)
    return tuple(labels), output, sizes, full


def _equation(labels, output) -> str:
    return ",".join(labels) + "->" + output


# ------------------------------------------------------------------------------ the op

_OPS: dict = {}
_ARGS = tuple(f"operand{i}" for i in range(64))  # (torch saves its operands unnamed)


def _einsum_op(n: int, grad_fn: str):
    key = (n, grad_fn)
    o = _OPS.get(key)
    if o is None:
        o = op("einsum", grad_fn=grad_fn, args=_ARGS[:n], save=tuple("_" + a for a in _ARGS[:n]))(
            _forward
        )
        o.backward(_backward)
        _OPS[key] = o
    return o


def _forward(*arrays, labels, output, full):
    arrays = [a if a.shape == f else np.broadcast_to(a, f) for a, f in zip(arrays, full)]
    if len(arrays) > 1:
        # NumPy hands a contraction to BLAS (block sums, as torch's bmm) only for operands
        # without zero strides; over an expanded view it sums term by term, float32 error
        # growing with the length of the sum
        arrays = [np.ascontiguousarray(a) if _expanded(a) else a for a in arrays]
    res = np.asarray(np.einsum(_equation(labels, output), *arrays, optimize=True))
    if res.dtype != arrays[0].dtype and all(a.dtype == arrays[0].dtype for a in arrays):
        # NumPy contracts bfloat16 in float32 (ml_dtypes >= 0.5): round back, as torch does
        res = res.astype(arrays[0].dtype)
    return res if res.flags.c_contiguous else np.ascontiguousarray(res)


def _expanded(a: np.ndarray) -> bool:
    return any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape))


def _backward(ctx, g, labels, output, full):
    ts = ctx.saved_tensors
    need = ctx.needs_input_grad
    grads = []
    for k, lab in enumerate(labels):
        if not need[k]:
            grads.append(None)
            continue
        sizes = dict(zip(lab, full[k]))
        for j, other in enumerate(labels):
            sizes.update(zip(other, full[j]))
        taken = set("".join(labels)) | set(output)
        fresh = (c for c in _LETTERS if c not in taken)
        in_labels = [output] + [other for j, other in enumerate(labels) if j != k]
        operands = [g] + [_conj(t) for j, t in enumerate(ts) if j != k]
        target, seen = [], set()
        for c in lab:
            if c in seen:  # a repeated label: its gradient lives on the diagonal
                d = next(fresh)
                in_labels.append(c + d)
                operands.append(_wrap(np.eye(sizes[c], dtype=g._data.dtype)))
                target.append(d)
            else:
                seen.add(c)
                target.append(c)
        present = set("".join(in_labels))
        for c in seen - present:  # summed in this operand alone: the gradient is broadcast
            in_labels.append(c)
            operands.append(_wrap(np.ones(sizes[c], dtype=g._data.dtype)))
        grads.append(_multi(tuple(in_labels), "".join(target), operands))
    return tuple(grads)


def _multi(labels: tuple, output: str, operands) -> Tensor:
    sizes: dict = {}
    for lab, t in zip(labels, operands):
        for c, s in zip(lab, t.shape):
            if sizes.get(c, 1) == 1:
                sizes[c] = s
    full = tuple(tuple(sizes[c] for c in lab) for lab in labels)
    summed = any(c not in output for lab in labels for c in lab)
    o = _einsum_op(len(operands), "ViewBackward0" if summed else "MulBackward0")
    return dispatch(o, tuple(operands), {"labels": labels, "output": output, "full": full})


# ------------------------------------------------------------------------------ public


def _single(x: Tensor, lab: str, output: str) -> Tensor:
    lab = list(lab)
    while len(set(lab)) != len(lab):
        c = next(c for c in lab if lab.count(c) > 1)
        i = lab.index(c)
        j = lab.index(c, i + 1)
        x = x.diagonal(0, i, j)
        lab = [d for k, d in enumerate(lab) if k not in (i, j)] + [c]
    rest = [c for c in lab if c not in output]
    order = [lab.index(c) for c in output] + [lab.index(c) for c in rest]
    x = x.permute(tuple(order))
    if rest:
        x = x.sum(tuple(range(len(output), len(lab))))
    return x


def _from_sublists(args):
    def letters(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
                out.append(_LETTERS[s])
            else:
                raise ValueError(
                    f"einsum(): expected subscript to be within the range [0, 52), but got {s}"
                )
        return "".join(out)

    args = list(args)
    operands, subs = args[0::2], args[1::2]
    out = None
    if len(operands) > len(subs):
        operands, out = operands[:-1], operands[-1]
        operands, out = operands, out if not isinstance(out, Tensor) else None
    eq = ",".join(letters(s) for s in subs)
    if out is not None:
        eq += "->" + letters(out)
    return eq, operands


def einsum(equation, *operands) -> Tensor:
    """Return the sum of products of ``operands`` given by the Einstein summation
    ``equation`` (labels a-z A-Z, ``...`` for broadcast dimensions, ``->`` for the output)."""
    if not isinstance(equation, str):
        equation, operands = _from_sublists((equation,) + operands)
    packed = packed_items(operands)
    if packed is not None:
        operands = packed
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"einsum(): argument 'tensors' must be tuple of Tensors, but found element of "
                f"type {type(t).__name__} at pos {i}"
            )
    labels, output, _, full = _plan(equation, tuple(tuple(t.shape) for t in operands))
    if len(operands) == 1:
        return _single(operands[0], labels[0], output)
    dt = operands[0].dtype
    for t in operands[1:]:
        if t.dtype is not dt:
            raise RuntimeError(
                f"expected scalar type {_type_name(dt)} but found {_type_name(t.dtype)}"
            )
    # torch's name: with a label summed out, its result is a view of a bmm; else a product
    summed = any(c not in output for lab in labels for c in lab)
    o = _einsum_op(len(operands), "ViewBackward0" if summed else "MulBackward0")
    return dispatch(o, tuple(operands), {"labels": labels, "output": output, "full": full})


publish(None, einsum, method=False)  # (its ops are made per operand count: _einsum_op)
