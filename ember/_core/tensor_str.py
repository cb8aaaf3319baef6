"""Torch-exact string formatting of tensor values.

``format_tensor`` renders a NumPy array the way ``repr(torch_tensor)`` renders the
equivalent torch tensor, character for character.  The print options
(``set_printoptions`` / ``get_printoptions`` / ``printoptions``) mirror
``torch.set_printoptions`` and friends.

Overview of the rules (they follow ``torch/_tensor_str.py``):

* A tensor with more than ``threshold`` elements is *summarised*: along every axis
  longer than ``2 * edgeitems`` only the first and last ``edgeitems`` entries are
  shown, with ``...`` in between.  Only the shown elements take part in choosing
  the number format, so a huge summarised tensor is never scanned in Python.
* Floating values share one format chosen from the non-zero finite shown values:
  integer-valued sets print as ``1.``; scientific notation is used when
  ``max / min > 1000``, ``max > 1e8`` or ``min < 1e-4`` (of the absolute values),
  unless ``sci_mode`` forces it on/off.  Every element is right-aligned to the
  widest non-zero finite element (nan, inf and zeros do not count).
* Complex tensors format real and imaginary parts with independent formats.
* Rows wrap so that each line holds ``floor((linewidth - indent) / (width + 2))``
  elements; nested dimensions are indented by one space per level and separated
  by ``ndim - 1`` newlines.
* Suffixes (``device=``, ``size=``, ``dtype=``, ``grad_fn=`` / ``requires_grad=``)
  follow the closing bracket and move to a new line when the line gets too long.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "PRINT_OPTS",
    "dtype_shown",
    "format_tensor",
    "get_printoptions",
    "printoptions",
    "set_printoptions",
]


# ----------------------------------------------------------------------------
# Print options
# ----------------------------------------------------------------------------


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

# profile name -> (precision, threshold, edgeitems, linewidth)
_PROFILES: dict[str, tuple[int, float, int, int]] = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set the options used when printing tensors (same semantics as torch).

    ``profile`` ("default", "short" or "full") first resets precision, threshold,
    edgeitems and linewidth; any explicitly given option then overrides it.  As in
    torch, an unknown profile name is ignored, and ``sci_mode`` is always assigned,
    so omitting it restores automatic selection.
    """
    if profile is not None and profile in _PROFILES:
        (
            PRINT_OPTS.precision,
            PRINT_OPTS.threshold,
            PRINT_OPTS.edgeitems,
            PRINT_OPTS.linewidth,
        ) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Return the current print options as a dict usable as ``set_printoptions(**d)``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Temporarily change print options; arguments are those of ``set_printoptions``."""
    saved = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**saved)


# ----------------------------------------------------------------------------
# dtype suffix rule
# ----------------------------------------------------------------------------


def dtype_shown(
    dtype_name: str, default_dtype_name: str, *, empty: bool = False, meta: bool = False
) -> bool:
    """Whether torch's repr prints ``dtype=torch.<dtype_name>``.

    For a tensor with elements, torch omits the dtype when it is the default float
    dtype, the matching default complex dtype (``complex128`` when the default is
    ``float64``, otherwise ``complex64``), ``int64`` or ``bool``.

    For an empty tensor (``empty=True``) and for a meta tensor (``meta=True``) there
    are no values to infer the dtype from, so torch omits it *only* when it equals
    the default float dtype: ``int64``, ``bool`` and complex dtypes are shown.
    """
    if empty or meta:
        return dtype_name != default_dtype_name
    default_complex = "complex128" if default_dtype_name == "float64" else "complex64"
    return dtype_name not in (default_dtype_name, default_complex, "int64", "bool")


# ----------------------------------------------------------------------------
# Element formatting
# ----------------------------------------------------------------------------


def _float_strings(values: np.ndarray) -> tuple[list[str], int]:
    """Format real floating values with torch's shared format.

    Returns the unpadded strings (flattened, C order) and the column width.
    """
    flat = np.asarray(values, dtype=np.float64).ravel()
    finite = np.isfinite(flat)
    counted = finite & (flat != 0)
    shown = flat[counted]
    precision = PRINT_OPTS.precision

    if shown.size == 0:
        # Nothing to infer a format from: integer mode, no sci notation, width 1.
        int_mode, sci_mode = True, False
    else:
        magnitudes = np.abs(shown)
        largest, smallest = magnitudes.max(), magnitudes.min()
        int_mode = bool(np.all(np.ceil(shown) == shown))
        if PRINT_OPTS.sci_mode is None:
            with np.errstate(over="ignore"):
                ratio = largest / smallest
            sci_mode = bool(ratio > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4)
        else:
            sci_mode = bool(PRINT_OPTS.sci_mode)

    items = flat.tolist()
    if sci_mode:
        spec = f".{precision}e"
        strings = [format(v, spec) for v in items]
    elif int_mode:
        # Integer-valued floats keep a trailing "." (except nan/inf) to mark the dtype.
        strings = [
            format(v, ".0f") + "." if ok else format(v, ".0f")
            for v, ok in zip(items, finite.tolist())
        ]
    else:
        spec = f".{precision}f"
        strings = [format(v, spec) for v in items]

    width = 1
    if shown.size:
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
        width = max(width, int(lengths[counted].max()))
    return strings, width


def _plain_strings(values: np.ndarray) -> tuple[list[str], int]:
    """Format integer / bool values (``str`` of the Python scalar)."""
    strings = [str(v) for v in np.ravel(values).tolist()]
    width = max(1, max(map(len, strings), default=1))
    return strings, width


def _pad(strings: list[str], width: int) -> list[str]:
    return [s.rjust(width) for s in strings]


def _element_strings(values: np.ndarray, kind: str) -> tuple[np.ndarray, int]:
    """Format every element of ``values``.

    Returns an object array of the final element strings (same shape as ``values``)
    and the element length used for line wrapping (width plus ", ").
    """
    if kind == "complex":
        cvalues = np.asarray(values).astype(np.complex128)
        real, real_width = _float_strings(cvalues.real)
        imag, imag_width = _float_strings(cvalues.imag)
        combined = []
        for re_s, im_s in zip(_pad(real, real_width), _pad(imag, imag_width)):
            im_s = (im_s + "j").lstrip()
            combined.append(re_s + im_s if im_s[0] in "+-" else re_s + "+" + im_s)
        strings = combined
        element_length = real_width + 2 + imag_width + 1
    else:
        if kind == "float":
            raw, width = _float_strings(values)
        elif kind == "bool":
            raw, width = _plain_strings(np.asarray(values).astype(bool))
        else:
            raw, width = _plain_strings(values)
        strings = _pad(raw, width)
        element_length = width + 2
    out = np.empty(len(strings), dtype=object)
    out[:] = strings
    return out.reshape(np.shape(values)), element_length


def _kind(dtype_name: str, values: np.ndarray) -> str:
    if dtype_name.startswith("complex"):
        return "complex"
    if dtype_name.startswith(("float", "bfloat", "half", "double")):
        return "float"
    if dtype_name == "bool":
        return "bool"
    if dtype_name.startswith(("int", "uint")):
        return "int"
    # Unknown name: fall back on the NumPy dtype of the values.
    if values.dtype.kind == "c":
        return "complex"
    if values.dtype.kind == "b":
        return "bool"
    if values.dtype.kind in "iu":
        return "int"
    return "float"


# ----------------------------------------------------------------------------
# Layout
# ----------------------------------------------------------------------------


def _summarized_selection(values: np.ndarray, cut: list[bool], edge: int) -> np.ndarray:
    """Keep only the first/last ``edge`` entries along every axis flagged in ``cut``."""
    index = []
    for size, is_cut in zip(values.shape, cut):
        if is_cut:
            index.append(np.r_[0:edge, size - edge : size])
        else:
            index.append(np.arange(size))
    return values[np.ix_(*index)]


def _render(
    strings: np.ndarray, cut: list[bool], indent: int, edge: int, element_length: int
) -> str:
    """Lay out pre-formatted element strings as nested brackets."""
    if strings.ndim == 1:
        items = strings.tolist()
        if cut[0]:
            items = items[:edge] + [" ..."] + items[edge:]
        per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"

    slices = [
        _render(strings[i], cut[1:], indent + 1, edge, element_length)
        for i in range(strings.shape[0])
    ]
    if cut[0]:
        slices = slices[:edge] + ["..."] + slices[edge:]
    separator = "," + "\n" * (strings.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(slices) + "]"


def _tensor_body(values: np.ndarray, kind: str, indent: int) -> str:
    """The bracketed value text of a non-empty tensor."""
    summarize = values.size > PRINT_OPTS.threshold
    edge = PRINT_OPTS.edgeitems
    if values.ndim == 0:
        strings, _ = _element_strings(values, kind)
        return strings.item()
    if summarize and not edge:
        return "[...]"
    cut = [bool(summarize and size > 2 * edge) for size in values.shape]
    shown = _summarized_selection(values, cut, edge) if any(cut) else values
    strings, element_length = _element_strings(shown, kind)
    return _render(strings, cut, indent, edge, element_length)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    # torch measures the last line as "chars after the last newline + 2"
    # (or "whole string + 2" without a newline); reproduce that exactly.
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _shape_str(shape: tuple[int, ...]) -> str:
    return str(tuple(int(d) for d in shape))


def format_tensor(
    values: np.ndarray,
    *,
    dtype_name: str,
    show_dtype: bool,
    requires_grad: bool = False,
    grad_fn: str | None = None,
    device: str | None = None,
    prefix: str = "tensor(",
) -> str:
    """Return ``repr`` of the torch tensor holding ``values``, exactly as torch prints it.

    ``dtype_name`` is torch's dtype name (``"float32"``, ``"bfloat16"``...); it decides
    how values are formatted and what the ``dtype=`` suffix says.  ``show_dtype``
    says whether that suffix is printed (see :func:`dtype_shown`).  ``device`` is
    printed as ``device='...'`` when given; ``"meta"`` devices print ``...`` in place
    of values plus a ``size=`` suffix, like torch.
    """
    values = np.asarray(values)
    indent = len(prefix)
    suffixes: list[str] = []
    if device is not None:
        suffixes.append(f"device='{device}'")

    if device is not None and device.split(":")[0] == "meta":
        suffixes.append("size=" + _shape_str(values.shape))
        body = "..."
    elif values.size == 0:
        # An explicit size is printed unless the shape is (0,), matching NumPy.
        if values.ndim != 1:
            suffixes.append("size=" + _shape_str(values.shape))
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + _shape_str(values.shape))
        body = _tensor_body(values, _kind(dtype_name, values), indent)
    if show_dtype:
        suffixes.append(f"dtype=torch.{dtype_name}")

    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")

    return _add_suffixes(prefix + body, suffixes, indent)
