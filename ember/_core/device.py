"""Devices. ``cpu`` maps to NumPy; ``cuda`` is where a CuPy backend would plug in."""

from __future__ import annotations

import re

_NO_CUDA = (
    "ember has no CUDA backend: no CuPy-backed 'cuda' device is available on this machine. "
    "Use device='cpu'."
)

# every device type torch's parser knows, in its order (its error lists them)
_TYPES = (
    "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, "
    "vulkan, mps, meta, hpu, mtia, privateuseone"
)
_KNOWN = frozenset(_TYPES.split(", "))
_DEVICE_RE = re.compile(r"([a-zA-Z_]+)(?::([1-9]\d*|0))?")


class CudaUnavailableError(RuntimeError, AssertionError):
    """Raised where a CUDA device is needed. torch (built without CUDA) raises an
    AssertionError there; this error is both, so handlers written for either catch it."""


class device:
    """A device, as ``torch.device('cpu')`` or ``torch.device('cuda', 0)``."""

    __slots__ = ("type", "index")

    def __init__(self, type, index: int | None = None):  # noqa: A002 - torch's argument name
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int):
            # a bare index names the current accelerator, and there is none
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid type {type.__class__.__name__}")
        if type not in _KNOWN:
            type, idx = _parse(type)
            if idx is not None:
                if index is not None:
                    raise RuntimeError(
                        f"type (string) must not include an index because index was "
                        f"passed explicitly: {type}:{idx}"
                    )
                index = idx
        self.type = type
        self.index = index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        # as torch: a device never equals a string (``t.device == "cpu"`` is False); compare
        # ``t.device.type == "cpu"`` or with ``device("cpu")``
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __enter__(self) -> device:
        # ``with device("meta"):`` makes it the default device of the factories inside. As in
        # torch built without CUDA, ``with device("cuda"):`` is entered and the factories
        # inside raise (``default_device()`` users resolve it with ``as_device``)
        DEFAULT.append(self if self.type == "cuda" else as_device(self))
        return self

    def __exit__(self, *exc) -> None:
        DEFAULT.pop()
        return None

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))


def _parse(text: str) -> tuple:
    """Split a device string as torch does: ``(type, index or None)``, or raise its error."""
    if not text:
        raise RuntimeError("Device string must not be empty")
    m = _DEVICE_RE.fullmatch(text)
    if m is None:
        raise RuntimeError(f"Invalid device string: '{text}'")
    kind, idx = m.group(1), m.group(2)
    if kind not in _KNOWN:
        raise RuntimeError(
            f"Expected one of {_TYPES} device type at start of device string: {kind}"
        )
    return kind, None if idx is None else int(idx)


CPU = device("cpu")
META = device("meta")
DEFAULT: list = []  # the default devices of enclosing ``with device(...)`` blocks


def default_device() -> device:
    """Return the device factories use when given none (``with device(...)``,
    ``set_default_device``): cpu or meta, or a cuda device whose block was entered (pass it
    through ``as_device`` before holding tensors on it)."""
    return DEFAULT[-1] if DEFAULT else _SET_DEFAULT[0]


_SET_DEFAULT = [CPU]  # set_default_device's choice


def as_device(d) -> device:
    """Return ``d`` as a device that ember can hold tensors on (cpu, meta), else raise."""
    if d is None or d is CPU:
        return CPU
    dev = d if isinstance(d, device) else device(d)
    if dev.type == "cpu":
        return CPU
    if dev.type == "cuda":
        raise CudaUnavailableError(_NO_CUDA)
    if dev.type == "meta":
        return META
    raise RuntimeError(f"PyTorch is not linked with support for {dev.type} devices")
