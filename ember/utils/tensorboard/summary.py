"""Summary protocol buffers of ``ember.utils.tensorboard``, built as ``torch.utils.tensorboard``
builds them (tensorboard's own proto classes), so TensorBoard reads ember's logs and torch's alike.
"""

from __future__ import annotations

import io
import logging
import wave

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ember._core.tensor import Tensor
from ember.utils.tensorboard._utils import convert_to_HWC, encode_png, make_np

__all__ = [
    "hparams",
    "scalar",
    "tensor_proto",
    "histogram_raw",
    "histogram",
    "make_histogram",
    "image",
    "image_boxes",
    "draw_boxes",
    "make_image",
    "video",
    "make_video",
    "mesh",
    "audio",
    "custom_scalars",
    "text",
    "pr_curve_raw",
    "pr_curve",
    "compute_curve",
]

logger = logging.getLogger(__name__)


def _plugin_metadata(name: str, content: bytes = b"") -> SummaryMetadata:
    return SummaryMetadata(
        plugin_data=SummaryMetadata.PluginData(plugin_name=name, content=content)
    )


def _one(tag: str, **value) -> Summary:
    """A ``Summary`` of one value: every summary function here returns one."""
    return Summary(value=[Summary.Value(tag=tag, **value)])


# protocol buffers cannot hold a message of 2 GiB or more
_PROTO_LIMIT = 2**31


def _shape(*sizes: int) -> TensorShapeProto:
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in sizes])


# ------------------------------------------------------------------------------ scalars


def scalar(name: str, tensor, collections=None, new_style: bool = False, double_precision=False):
    """Return a ``Summary`` holding one scalar (``simple_value``, or a tensor when new_style)."""
    arr = make_np(tensor).squeeze()
    if arr.ndim != 0:
        raise AssertionError(
            "Tensor should contain one element (0 dimensions)."
            + " " * 13
            + f"Was given size: {arr.size} and {arr.ndim} dimensions."
        )
    value = float(arr)
    if not new_style:
        return _one(name, simple_value=value)
    if double_precision:
        proto = TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[value], dtype="DT_FLOAT")
    return _one(name, tensor=proto, metadata=_plugin_metadata("scalars"))


# numpy dtype name -> (proto dtype, proto field); complex values are stored as (re, im) pairs
_TENSOR_TYPES = {
    "float16": ("DT_HALF", "half_val"),
    "bfloat16": ("DT_BFLOAT16", "half_val"),
    "float32": ("DT_FLOAT", "float_val"),
    "float64": ("DT_DOUBLE", "double_val"),
    "int8": ("DT_INT8", "int_val"),
    "uint8": ("DT_UINT8", "uint32_val"),
    "int16": ("DT_INT16", "int_val"),
    "int32": ("DT_INT32", "int_val"),
    "int64": ("DT_INT64", "int64_val"),
    "complex64": ("DT_COMPLEX64", "scomplex_val"),
    "complex128": ("DT_COMPLEX128", "dcomplex_val"),
    "bool": ("DT_BOOL", "bool_val"),
}


def tensor_proto(tag: str, tensor: Tensor) -> Summary:
    """Return a ``Summary`` holding the whole tensor as a ``TensorProto``."""
    arr = tensor.detach().numpy()
    if arr.nbytes >= _PROTO_LIMIT:
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    name = arr.dtype.name
    if name not in _TENSOR_TYPES:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field = _TENSOR_TYPES[name]
    flat = arr.reshape(-1)
    if field == "half_val":
        # torch stores the float32 bit pattern of each half value (its half_to_int)
        values = flat.astype(np.float32).view(np.int32).tolist()
    elif arr.dtype.kind == "c":
        values = np.stack([flat.real, flat.imag], -1).reshape(-1).tolist()
    else:
        values = flat.tolist()
    proto = TensorProto(dtype=dtype, tensor_shape=_shape(*arr.shape), **{field: values})
    return _one(tag, metadata=_plugin_metadata("tensor"), tensor=proto)


# ------------------------------------------------------------------------------ histograms


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """Return a ``Summary`` holding a histogram given by its statistics and buckets."""
    hist = HistogramProto(
        min=min,
        max=max,
        num=num,
        sum=sum,
        sum_squares=sum_squares,
        bucket_limit=bucket_limits,
        bucket=bucket_counts,
    )
    return _one(name, histo=hist)


def histogram(name: str, values, bins, max_bins=None) -> Summary:
    """Return a ``Summary`` holding the histogram of ``values`` (``np.histogram`` bins)."""
    return _one(name, histo=make_histogram(make_np(values).astype(float), bins, max_bins))


def make_histogram(values: np.ndarray, bins, max_bins=None) -> HistogramProto:
    """Return the ``HistogramProto`` of ``values``, trimmed to the non-empty range of buckets."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins)
    if max_bins is not None and counts.size > max_bins:
        # merge runs of ``group`` neighbouring bins (the last run may be shorter); each merged
        # bin keeps its first left edge, and the right end stays where it was
        group = counts.size // max_bins
        runs = -(-counts.size // group)
        counts = np.concatenate([counts, np.zeros(runs * group - counts.size, counts.dtype)])
        counts = counts.reshape(runs, group).sum(axis=1)
        limits = np.append(limits[:-1][::group], limits[-1])
    # keep the buckets from the first to the last non-empty one; TensorBoard stores right
    # limits only, so one empty bucket on the left keeps the leftmost limit
    cum = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1 : end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start : end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(
        min=values.min(),
        max=values.max(),
        num=len(values),
        sum=values.sum(),
        sum_squares=values.dot(values),
        bucket_limit=limits.tolist(),
        bucket=counts.tolist(),
    )


# ------------------------------------------------------------------------------ images, audio


def image(tag: str, tensor, rescale=1, dataformats: str = "NCHW") -> Summary:
    """Return a ``Summary`` holding one PNG image (a batch is tiled into a grid)."""
    arr = convert_to_HWC(make_np(tensor), dataformats)
    scale = 1 if arr.dtype == np.uint8 else 255  # floats are in [0, 1]
    arr = (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return _one(tag, image=make_image(arr, rescale=rescale))


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None):
    """Return a ``Summary`` holding an image with ``(N, 4)`` xyxy boxes drawn on it (pillow)."""
    arr = convert_to_HWC(make_np(tensor_image), dataformats)
    boxes = make_np(tensor_boxes)
    arr = arr.astype(np.float32) * (1 if arr.dtype == np.uint8 else 255)
    img = make_image(arr.clip(0, 255).astype(np.uint8), rescale, rois=boxes, labels=labels)
    return _one(tag, image=img)


def _draw_single_box(image, xmin, ymin, xmax, ymax, display_str, color="black", thickness=2):
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default()
    draw = ImageDraw.Draw(image)
    left, right, top, bottom = xmin, xmax, ymin, ymax
    corners = [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)]
    draw.line(corners, width=thickness, fill=color)
    if display_str:
        box = font.getbbox(display_str)  # (left, top, right, bottom)
        text_width, text_height = box[2] - box[0], box[3] - box[1]
        margin = np.ceil(0.05 * text_height)
        draw.rectangle(
            [(left, bottom - text_height - 2 * margin), (left + text_width, bottom)], fill=color
        )
        draw.text(
            (left + margin, bottom - text_height - margin), display_str, fill="black", font=font
        )
    return image


def draw_boxes(disp_image, boxes, labels=None):
    """Return the PIL image with each xyxy box of ``boxes`` drawn in red (with its label)."""
    for i in range(boxes.shape[0]):
        x0, y0, x1, y1 = boxes[i, :4]
        label = None if labels is None else labels[i]
        disp_image = _draw_single_box(disp_image, x0, y0, x1, y1, label, color="Red")
    return disp_image


def make_image(tensor: np.ndarray, rescale=1, rois=None, labels=None) -> Summary.Image:
    """Return the ``Summary.Image`` of an HWC uint8 array (boxes drawn and resizing by
    ``rescale`` use pillow)."""
    height, width, channel = tensor.shape
    if rescale != 1 or rois is not None:
        from PIL import Image

        img = Image.fromarray(tensor)
        if rois is not None:
            img = draw_boxes(img, rois, labels=labels)
        img = img.resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
        tensor = np.asarray(img).reshape(img.size[1], img.size[0], channel)
    return Summary.Image(
        height=height, width=width, colorspace=channel, encoded_image_string=encode_png(tensor)
    )


def _prepare_video(v: np.ndarray) -> np.ndarray:
    """Return a ``(B, T, C, H, W)`` batch of clips as ``(T, H', W', C)`` frames, the clips tiled
    into a grid (the batch padded to a power of two)."""
    b, t, c, h, w = v.shape
    if v.dtype == np.uint8:
        v = np.float32(v) / 255.0
    n = v.shape[0]
    if n & (n - 1):  # not a power of 2
        v = np.concatenate((v, np.zeros((2 ** n.bit_length() - n, t, c, h, w))), axis=0)
    n_rows = 2 ** ((b.bit_length() - 1) // 2)
    n_cols = v.shape[0] // n_rows
    v = v.reshape(n_rows, n_cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    return v.reshape(t, n_rows * h, n_cols * w, c)


def video(tag: str, tensor, fps=4) -> Summary:
    """Return a ``Summary`` holding a ``(N, T, C, H, W)`` video as an animated GIF (moviepy)."""
    arr = _prepare_video(make_np(tensor))
    scale = 1 if arr.dtype == np.uint8 else 255
    arr = (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return _one(tag, image=make_video(arr, fps))


def make_video(tensor: np.ndarray, fps):
    """Return the GIF ``Summary.Image`` of ``(T, H, W, C)`` uint8 frames, or None (after
    torch's message) when moviepy is missing."""
    try:
        import moviepy  # noqa: F401
    except ImportError:
        print("add_video needs package moviepy")
        return None
    try:
        from moviepy import editor as mpy
    except ImportError:
        print(
            "moviepy is installed, but can't import moviepy.editor.",
            "Some packages could be missing [imageio, requests]",
        )
        return None
    import pathlib
    import tempfile

    _, h, w, c = tensor.shape
    frames = list(tensor)
    with tempfile.TemporaryDirectory() as scratch:
        gif = pathlib.Path(scratch) / "video.gif"
        animation = mpy.ImageSequenceClip(frames, fps=fps)
        try:  # moviepy >= 1.0 takes a logger; older releases do not
            animation.write_gif(str(gif), verbose=False, logger=None)
        except TypeError:
            animation.write_gif(str(gif), verbose=False)
        data = gif.read_bytes()
    return Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=data)


def audio(tag: str, tensor, sample_rate: int = 44100) -> Summary:
    """Return a ``Summary`` holding a mono 16-bit WAV of ``tensor`` (values in [-1, 1])."""
    array = make_np(tensor).squeeze()
    if abs(array).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        array = array.clip(-1, 1)
    if array.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    pcm = np.asarray(array * 32767).astype("<i2")  # 16-bit little-endian PCM
    with io.BytesIO() as fio:
        with wave.open(fio, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(sample_rate)
            w.writeframes(pcm.data)
        data = fio.getvalue()
    snd = Summary.Audio(
        sample_rate=sample_rate,
        num_channels=1,
        length_frames=pcm.shape[-1],
        encoded_audio_string=data,
        content_type="audio/wav",
    )
    return _one(tag, audio=snd)


# ------------------------------------------------------------------------------ text, layout


def text(tag: str, text: str) -> Summary:
    """Return a ``Summary`` holding ``text`` for the text plugin (tag ``<tag>/text_summary``)."""
    smd = _plugin_metadata("text", TextPluginData(version=0).SerializeToString())
    proto = TensorProto(
        dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")], tensor_shape=_shape(1)
    )
    return _one(tag + "/text_summary", metadata=smd, tensor=proto)


def custom_scalars(layout: dict) -> Summary:
    """Return the custom-scalars layout ``{category: {chart: [kind, tags]}}`` as a ``Summary``."""
    categories = []
    for title, charts_spec in layout.items():
        charts = []
        for chart_name, (kind, tags) in charts_spec.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = layout_pb2.MarginChartContent.Series(
                    value=tags[0], lower=tags[1], upper=tags[2]
                )
                content = layout_pb2.MarginChartContent(series=[series])
                charts.append(layout_pb2.Chart(title=chart_name, margin=content))
            else:
                content = layout_pb2.MultilineChartContent(tag=tags)
                charts.append(layout_pb2.Chart(title=chart_name, multiline=content))
        categories.append(layout_pb2.Category(title=title, chart=charts))
    proto = TensorProto(
        dtype="DT_STRING",
        string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
        tensor_shape=TensorShapeProto(),
    )
    return _one(
        "custom_scalars__config__", tensor=proto, metadata=_plugin_metadata("custom_scalars")
    )


# ------------------------------------------------------------------------------ hparams


def _hparam_kind(value):
    """(SessionStartInfo field, DataType name, value to store, may it have a discrete domain).

    Checked in torch's order, numbers before bools: a bool hparam is logged as a number, as
    torch logs it. A tensor is logged as its first element, without a domain."""
    if isinstance(value, (int, float)):
        return "number_value", "DATA_TYPE_FLOAT64", value, True
    if isinstance(value, str):
        return "string_value", "DATA_TYPE_STRING", value, True
    if isinstance(value, bool):
        return "bool_value", "DATA_TYPE_BOOL", value, True
    if isinstance(value, Tensor):
        return "number_value", "DATA_TYPE_FLOAT64", make_np(value).reshape(-1)[0], False
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """Return the experiment, session-start and session-end ``Summary`` of the hparams plugin."""
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType,
        Experiment,
        HParamInfo,
        MetricInfo,
        MetricName,
        Status,
    )
    from tensorboard.plugins.hparams.metadata import (
        EXPERIMENT_TAG,
        PLUGIN_DATA_VERSION,
        PLUGIN_NAME,
        SESSION_END_INFO_TAG,
        SESSION_START_INFO_TAG,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    for arg, name in ((hparam_dict, "hparam_dict"), (metric_dict, "metric_dict")):
        if not isinstance(arg, dict):
            logger.warning("parameter: %s should be a dictionary, nothing logged.", name)
            raise TypeError(f"parameter: {name} should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete if hparam_domain_discrete else {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for key, choices in domains.items():
        valid = key in hparam_dict and isinstance(choices, list)
        if not valid or any(not isinstance(c, type(hparam_dict[key])) for c in choices):
            raise TypeError(
                f"parameter: hparam_domain_discrete[{key}] should be a list of same type as "
                f"hparam_dict[{key}]."
            )

    infos = []
    start_info = SessionStartInfo()
    for key, value in hparam_dict.items():
        if value is None:
            continue
        field, data_type, value, domain_allowed = _hparam_kind(value)
        setattr(start_info.hparams[key], field, value)
        domain = None
        if domain_allowed and key in domains:
            domain = struct_pb2.ListValue(
                values=[struct_pb2.Value(**{field: choice}) for choice in domains[key]]
            )
        infos.append(HParamInfo(name=key, type=DataType.Value(data_type), domain_discrete=domain))

    def summary(tag, **content):
        data = HParamsPluginData(version=PLUGIN_DATA_VERSION, **content).SerializeToString()
        return _one(tag, metadata=_plugin_metadata(PLUGIN_NAME, data))

    start = summary(SESSION_START_INFO_TAG, session_start_info=start_info)
    metrics = [MetricInfo(name=MetricName(tag=tag)) for tag in metric_dict]
    exp = summary(EXPERIMENT_TAG, experiment=Experiment(hparam_infos=infos, metric_infos=metrics))
    end = summary(
        SESSION_END_INFO_TAG,
        session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS")),
    )
    return exp, start, end


# ------------------------------------------------------------------------------ pr curves


def _pr_summary(tag: str, data: np.ndarray, num_thresholds: int) -> Summary:
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    proto = TensorProto(
        dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=_shape(*data.shape)
    )
    return _one(tag, metadata=_plugin_metadata("pr_curves", content), tensor=proto)


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    """Return a ``Summary`` holding a precision-recall curve given by its counts."""
    num_thresholds = min(num_thresholds, 127)  # as torch: larger values break the proto
    data = np.stack([make_np(a) for a in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, data, num_thresholds)


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None) -> Summary:
    """Return a ``Summary`` holding the precision-recall curve of ``predictions``."""
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _pr_summary(tag, data, num_thresholds)


def compute_curve(labels, predictions, num_thresholds=None, weights=None) -> np.ndarray:
    """Return the ``(6, num_thresholds)`` tp, fp, tn, fn, precision, recall table."""
    # each prediction falls in the bucket of the threshold just below it; a bucket's weight
    # counts positives (label 1) and negatives (label 0) separately
    buckets = np.floor(predictions * (num_thresholds - 1)).astype(np.int32)
    positive = labels.astype(np.float64)
    weight = np.broadcast_to(np.asarray(1.0 if weights is None else weights), positive.shape)
    inside = (buckets >= 0) & (buckets < num_thresholds)  # outside [0, 1]: not counted
    buckets = buckets[inside]

    def per_bucket(w):
        return np.bincount(buckets, weights=w[inside], minlength=num_thresholds)

    # a threshold's true/false positives: everything at or above it (a reversed running sum)
    tp = per_bucket(positive * weight)[::-1].cumsum()[::-1]
    fp = per_bucket((1.0 - positive) * weight)[::-1].cumsum()[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    eps = 1e-7  # keeps 0/0 at 0
    precision = tp / np.maximum(eps, tp + fp)
    recall = tp / np.maximum(eps, tp + fn)
    return np.array([tp, fp, tn, fn, precision, recall])


# ------------------------------------------------------------------------------ meshes


def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None):
    """Return a ``Summary`` of the mesh plugin: ``(B, N, 3)`` vertices, faces and colors."""
    import json

    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData

    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [
        (vertices, MeshPluginData.VERTEX),
        (faces, MeshPluginData.FACE),
        (colors, MeshPluginData.COLOR),
    ]
    parts = [(make_np(t), kind) for t, kind in parts if t is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for arr, kind in parts:
        smd = metadata.create_summary_metadata(
            tag, display_name, kind, components, arr.shape, description, json_config=json_config
        )
        proto = TensorProto(
            dtype="DT_FLOAT",
            float_val=arr.reshape(-1).tolist(),
            tensor_shape=_shape(*arr.shape[:3]),
        )
        values.append(
            Summary.Value(tag=metadata.get_instance_name(tag, kind), tensor=proto, metadata=smd)
        )
    return Summary(value=values)
