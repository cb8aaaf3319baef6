"""Compare what two programs printed: the text exactly, the printed floats within rounding.

A script that trains for a while and prints its numbers depends on the last bit of every BLAS
result, and those bits differ between machines and BLAS kernels (a coefficient that rounds to
zero prints as ``-0.0000`` on one machine and ``0.0000`` on another). ``assert_same_printed``
compares everything that is not a floating-point literal character for character (the spaces
before a literal aside: tensor printing pads columns to the widest number) and the literals
numerically: two units of their last printed digit, or a relative 1e-4, whichever is larger.
Integers compare exactly.
"""

from __future__ import annotations

import math
import re

# a float literal as Python and torch print them: 1.5, -0.0000, 1.2e-05, 3., inf, nan
_FLOAT = re.compile(
    r"(?<![\w.])[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+(?:[eE][-+]?\d+)?|inf|nan)"
    r"(?![\w.])"
)
_PADDING = re.compile(r"[ \t]*<f>")  # columns are padded to the widest number


def _split(text: str) -> tuple[str, list[str]]:
    numbers = _FLOAT.findall(text)
    skeleton = _PADDING.sub("<f>", _FLOAT.sub("<f>", text))
    return skeleton, numbers


def _last_place(literal: str) -> float:
    """One unit of the last digit printed in ``literal``."""
    mantissa, _, exponent = literal.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _close(a: str, b: str, rel: float) -> bool:
    if a == b:
        return True
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
        return x == y or (math.isnan(x) and math.isnan(y))
    tol = max(2 * max(_last_place(a), _last_place(b)), rel * max(abs(x), abs(y)))
    return abs(x - y) <= tol


def printed_difference(got: str, want: str, rel: float = 1e-4) -> str | None:
    """Return None when ``got`` and ``want`` print the same (floats within rounding), else
    a line saying where they first differ."""
    if got == want:
        return None
    skel_got, nums_got = _split(got)
    skel_want, nums_want = _split(want)
    if skel_got != skel_want:
        lines_got, lines_want = skel_got.splitlines(), skel_want.splitlines()
        for i, (a, b) in enumerate(zip(lines_got, lines_want)):
            if a != b:
                return f"line {i + 1} differs (numbers masked):\n  got:  {a!r}\n  want: {b!r}"
        return f"{len(lines_got)} lines printed, {len(lines_want)} expected"
    for a, b in zip(nums_got, nums_want):
        if not _close(a, b, rel):
            return f"printed number {a} where {b} was expected"
    return None


def assert_same_printed(got: str, want: str, rel: float = 1e-4) -> None:
    """Assert that two programs' outputs are the same text, floats compared within rounding."""
    why = printed_difference(got, want, rel)
    assert why is None, f"{why}\n--- expected (torch) printed:\n{want}\n--- got:\n{got}"
