"""``ember.version``: the version strings torch scripts read.

``__version__`` is the torch API level ember implements, as a :class:`TorchVersion` whose local
label names ember's own release (``2.13.0+ember.0.1.0``): code that branches on
``torch.__version__ >= "2.0"`` takes torch 2.13's path. ``ember_version`` is ember's package
version. ``torch.version.cuda`` is None on a CPU-only build, as here.
"""

from __future__ import annotations

import re

__all__ = [
    "TorchVersion",
    "__version__",
    "cuda",
    "debug",
    "ember",
    "ember_version",
    "git_version",
    "hip",
]


def _key(v) -> tuple:
    """PEP 440 ordering of a version (string or tuple of ints): the release numbers, padded,
    then the local label, which sorts a release after the bare one (``2.13.0+cpu > 2.13.0``)."""
    if isinstance(v, tuple):
        release, local = tuple(int(x) for x in v), ()
    else:
        m = re.match(r"\s*v?(\d+(?:\.\d+)*)(?:\+([a-z0-9.]+))?\s*$", str(v), re.IGNORECASE)
        if m is None:
            raise ValueError(f"Invalid version: {v!r}")
        release = tuple(int(x) for x in m.group(1).split("."))
        labels = m.group(2).lower().split(".") if m.group(2) else []
        local = tuple((1, int(x), "") if x.isdigit() else (0, 0, x) for x in labels)
    while release and release[-1] == 0:
        release = release[:-1]
    return release, local


class TorchVersion(str):
    """A version string that compares as a PEP 440 version with strings and tuples, as torch's
    ``torch.torch_version.TorchVersion`` does (``torch.__version__ >= (2, 0)``)."""

    def _cmp(self, other) -> int:
        a, b = _key(self), _key(other)
        return (a > b) - (a < b)

    def __lt__(self, other) -> bool:
        return self._cmp(other) < 0

    def __le__(self, other) -> bool:
        return self._cmp(other) <= 0

    def __gt__(self, other) -> bool:
        return self._cmp(other) > 0

    def __ge__(self, other) -> bool:
        return self._cmp(other) >= 0

    def __eq__(self, other) -> bool:
        try:
            return self._cmp(other) == 0
        except (ValueError, TypeError):
            return False

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


ember_version = "0.1.0"
ember = ember_version  # torch.version.ember: who answers as torch under the stand-in
__version__ = TorchVersion(f"2.13.0+ember.{ember_version}")
cuda = None
hip = None
git_version = "unknown"
debug = False
