"""Array helpers of ``ember.utils.tensorboard``: tensors to NumPy, image layouts, PNG bytes.

Everything here works on NumPy arrays; ember tensors are turned into arrays once, by
``make_np``, before any summary is built.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from ember._core.tensor import Tensor

__all__ = ["make_np", "convert_to_HWC", "make_grid", "figure_to_image", "encode_png"]


def make_np(x) -> np.ndarray:
    """Return ``x`` (an ember tensor, ndarray or Python/NumPy scalar) as a NumPy array."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        arr = x.detach().numpy()
        if arr.dtype.name == "bfloat16":  # as torch: bfloat16 is logged through float16
            arr = arr.astype(np.float16)
        return np.asarray(arr)
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Return an ``(N, 1|3, H, W)`` batch tiled row-major as one ``(3, H*rows, W*cols)`` image."""
    if not isinstance(images, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    padded = np.zeros((nrows * ncols, 3, h, w), dtype=images.dtype)
    padded[:n] = images
    # (rows, cols, 3, H, W) -> (3, rows, H, cols, W)
    grid = padded.reshape(nrows, ncols, 3, h, w).transpose(2, 0, 3, 1, 4)
    return grid.reshape(3, nrows * h, ncols * w)


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:  # noqa: N802 (torch's name)
    """Return an image array laid out as ``input_format`` (NCHW, CHW, HWC, HW, ...) as HWC RGB."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(
            "You can not use the same dimension shorthand twice."
            + " " * 13
            + f"input_format: {input_format}"
        )
    if len(tensor.shape) != len(input_format):
        raise AssertionError(
            "size of input tensor and input format are different."
            + " " * 9
            + f"tensor shape: {tensor.shape}, input_format: {input_format}"
        )
    input_format = input_format.upper()
    if len(input_format) == 4:
        nchw = tensor.transpose([input_format.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        return hwc
    hw = tensor.transpose([input_format.find(c) for c in "HW"])
    return np.stack([hw, hw, hw], 2)


def figure_to_image(figures, close: bool = True) -> np.ndarray:
    """Return a matplotlib figure (or list of figures) rendered as a CHW (or NCHW) uint8 array."""
    import matplotlib.backends.backend_agg as backend_agg
    import matplotlib.pyplot as plt

    def render(figure):
        canvas = backend_agg.FigureCanvasAgg(figure)
        canvas.draw()
        data = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        w, h = figure.canvas.get_width_height()
        chw = np.moveaxis(data.reshape(h, w, 4)[:, :, :3], 2, 0)
        if close:
            plt.close(figure)
        return chw

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(hwc: np.ndarray) -> bytes:
    """Return the PNG encoding of an ``(H, W, 1|3|4)`` uint8 image (PIL if installed)."""
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if Image is not None:
        import io

        img = hwc[:, :, 0] if hwc.shape[2] == 1 else hwc
        with io.BytesIO() as out:
            Image.fromarray(np.ascontiguousarray(img)).save(out, format="PNG")
            return out.getvalue()
    h, w, c = hwc.shape
    color = {1: 0, 3: 2, 4: 6}[c]  # grey, RGB, RGBA; 8 bits per sample
    rows = np.zeros((h, 1 + w * c), dtype=np.uint8)  # filter byte 0 (None) before each row
    rows[:, 1:] = hwc.reshape(h, w * c)
    header = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )
