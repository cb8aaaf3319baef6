"""``SummaryWriter`` and ``FileWriter``: event files for TensorBoard, written as torch writes them.

Events go through tensorboard's own ``EventFileWriter`` (a background thread flushes a queue of
records every ``flush_secs`` or when ``max_queue`` fills), so the files are TensorBoard's format
by construction; ember only builds the summaries, from NumPy arrays.
"""

from __future__ import annotations

import os
import time

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ember.utils.tensorboard import summary as _summary
from ember.utils.tensorboard._utils import figure_to_image, make_grid, make_np

__all__ = ["FileWriter", "SummaryWriter"]


def _stamp(walltime):
    """The wall time an event records: the one given, else now."""
    return time.time() if walltime is None else walltime


class FileWriter:
    """Writes protocol buffers to one event file in ``log_dir``, asynchronously."""

    def __init__(self, log_dir, max_queue: int = 10, flush_secs: int = 120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """Return the directory where the event file is written."""
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None) -> None:
        """Add an ``Event`` protocol buffer (stamped with ``walltime`` or now)."""
        event.wall_time = _stamp(walltime)
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        """Add a ``Summary`` protocol buffer, wrapped in an ``Event``."""
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None) -> None:
        """Add a ``(GraphDef, RunMetadata)`` pair as a graph event and its step stats."""
        graph, stepstats = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)
        trm = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=stepstats.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=trm), None, walltime)

    def add_onnx_graph(self, graph, walltime=None) -> None:
        """Add a ``GraphDef`` protocol buffer."""
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self) -> None:
        """Write every pending event to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self) -> None:
        """Call the event writer's ``reopen``, as torch does (current tensorboard releases have
        none, so this raises AttributeError there as in torch)."""
        self.event_writer.reopen()


def _default_bins() -> list[float]:
    # TensorBoard's default histogram buckets: +-1e-12 * 1.1**k up to 1e20, and 0
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-b for b in reversed(pos)] + [0] + pos


class SummaryWriter:
    """Writes scalars, histograms, images, text and hparams to event files in ``log_dir``.

    ``log_dir`` defaults to ``runs/<Mon DD_HH-MM-SS>_<hostname><comment>``.
    """

    def __init__(
        self,
        log_dir=None,
        comment: str = "",
        purge_step=None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
    ) -> None:
        self.log_dir = log_dir or _default_log_dir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _new_writer(self, log_dir) -> FileWriter:
        return FileWriter(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self) -> FileWriter:
        """Return the default FileWriter, making it again after ``close``."""
        if self.file_writer is not None and self.all_writers is not None:
            return self.file_writer
        writer = self._new_writer(self.log_dir)
        self.file_writer = writer
        self.all_writers = {writer.get_logdir(): writer}
        if self.purge_step is not None:
            # a restart marker: TensorBoard drops the events logged at or after this step
            start = SessionLog(status=SessionLog.START)
            for event in (
                Event(step=self.purge_step, file_version="brain.Event:2"),
                Event(step=self.purge_step, session_log=start),
            ):
                writer.add_event(event)
            self.purge_step = None
        return writer

    def _write(self, summary, global_step=None, walltime=None) -> None:
        # every add_* method but add_scalars ends here: one Summary into the default file
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def get_logdir(self) -> str:
        """Return the directory where event files are written."""
        return self.log_dir

    # ---------------------------------------------------------------------------- scalars

    def add_scalar(
        self,
        tag: str,
        scalar_value,
        global_step=None,
        walltime=None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Add one scalar (a number, a 0-d or one-element tensor or array) at ``global_step``."""
        options = {"new_style": new_style, "double_precision": double_precision}
        self._write(_summary.scalar(tag, scalar_value, **options), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None, walltime=None):
        """Add several scalars to one chart: each key goes to its own sub-run directory
        ``<log_dir>/<main_tag>_<key>`` under the tag ``main_tag``."""
        walltime = _stamp(walltime)  # one time for all the sub-runs
        prefix = "{}/{}_".format(self._get_file_writer().get_logdir(), main_tag.replace("/", "_"))
        for key, value in tag_scalar_dict.items():
            run_dir = prefix + key
            if self.all_writers is None:
                raise AssertionError("self.all_writers is None")
            if run_dir not in self.all_writers:
                self.all_writers[run_dir] = self._new_writer(run_dir)
            summary = _summary.scalar(main_tag, value)
            self.all_writers[run_dir].add_summary(summary, global_step, walltime)

    def add_tensor(self, tag: str, tensor, global_step=None, walltime=None) -> None:
        """Add a whole tensor as a ``TensorProto``."""
        self._write(_summary.tensor_proto(tag, tensor), global_step, walltime)

    def add_custom_scalars(self, layout: dict) -> None:
        """Add a custom-scalars layout ``{category: {chart: ["Multiline"|"Margin", tags]}}``."""
        self._write(_summary.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        """Add a multiline chart of ``tags``."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """Add a margin chart of three tags (value, lower, upper)."""
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    # ---------------------------------------------------------------------------- histograms

    def add_histogram(
        self, tag: str, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None
    ) -> None:
        """Add the histogram of ``values``; ``bins`` is ``'tensorflow'`` (TensorBoard's
        exponential buckets) or anything ``np.histogram`` takes ('auto', 'fd', an int...)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._write(_summary.histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(
        self,
        tag,
        min,
        max,
        num,
        sum,
        sum_squares,
        bucket_limits,
        bucket_counts,
        global_step=None,
        walltime=None,
    ) -> None:
        """Add a histogram given by its statistics and bucket limits and counts."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        s = _summary.histogram_raw(
            tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts
        )
        self._write(s, global_step, walltime)

    # ---------------------------------------------------------------------------- media

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Add an image (float in [0, 1] or uint8; ``dataformats`` CHW, HWC, HW, ...)."""
        self._write(_summary.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(
        self, tag: str, img_tensor, global_step=None, walltime=None, dataformats="NCHW"
    ) -> None:
        """Add a batch of images, tiled into one grid image (``dataformats`` NCHW, NHWC...)."""
        self._write(_summary.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_image_with_boxes(
        self,
        tag: str,
        img_tensor,
        box_tensor,
        global_step=None,
        walltime=None,
        rescale=1,
        dataformats="CHW",
        labels=None,
    ) -> None:
        """Add an image with ``(N, 4)`` boxes ``[x1, y1, x2, y2]`` (and labels) drawn on it."""
        if labels is not None:
            if isinstance(labels, str):
                labels = [labels]
            if len(labels) != box_tensor.shape[0]:
                labels = None
        s = _summary.image_boxes(
            tag, img_tensor, box_tensor, rescale=rescale, dataformats=dataformats, labels=labels
        )
        self._write(s, global_step, walltime)

    def add_figure(self, tag: str, figure, global_step=None, close: bool = True, walltime=None):
        """Add a matplotlib figure (or list of figures) rendered as an image."""
        fmt = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime, dataformats=fmt)

    def add_video(self, tag: str, vid_tensor, global_step=None, fps=4, walltime=None) -> None:
        """Add a ``(N, T, C, H, W)`` video (needs moviepy, as torch's)."""
        self._write(_summary.video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag: str, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        """Add a mono sound clip (values in [-1, 1]) as 16-bit WAV."""
        self._write(_summary.audio(tag, snd_tensor, sample_rate=sample_rate), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        """Add text (markdown) under ``<tag>/text_summary``."""
        self._write(_summary.text(tag, text_string), global_step, walltime)

    def add_pr_curve(
        self,
        tag,
        labels,
        predictions,
        global_step=None,
        num_thresholds=127,
        weights=None,
        walltime=None,
    ) -> None:
        """Add the precision-recall curve of ``predictions`` in [0, 1] against 0/1 ``labels``."""
        curve = _summary.pr_curve(
            tag, make_np(labels), make_np(predictions), num_thresholds, weights
        )
        self._write(curve, global_step, walltime)

    def add_pr_curve_raw(
        self,
        tag,
        true_positive_counts,
        false_positive_counts,
        true_negative_counts,
        false_negative_counts,
        precision,
        recall,
        global_step=None,
        num_thresholds=127,
        weights=None,
        walltime=None,
    ) -> None:
        """Add a precision-recall curve given by its counts, precision and recall."""
        s = _summary.pr_curve_raw(
            tag,
            true_positive_counts,
            false_positive_counts,
            true_negative_counts,
            false_negative_counts,
            precision,
            recall,
            num_thresholds,
            weights,
        )
        self._write(s, global_step, walltime)

    # ---------------------------------------------------------------------------- hparams

    def add_hparams(
        self,
        hparam_dict: dict,
        metric_dict: dict,
        hparam_domain_discrete=None,
        run_name=None,
        global_step=None,
    ) -> None:
        """Add hyperparameters and their metrics, in a sub-run ``<log_dir>/<run_name>``
        (``run_name`` defaults to the current time)."""
        if not all(type(d) is dict for d in (hparam_dict, metric_dict)):  # exactly dicts
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        base = self._get_file_writer().get_logdir()
        with SummaryWriter(log_dir=os.path.join(base, run_name or str(time.time()))) as run:
            for summary in (exp, ssi, sei):
                run._write(summary, global_step)
            for name, value in metric_dict.items():
                run.add_scalar(name, value, global_step)

    def add_mesh(
        self,
        tag: str,
        vertices,
        colors=None,
        faces=None,
        config_dict=None,
        global_step=None,
        walltime=None,
    ) -> None:
        """Add a mesh or point cloud: ``(B, N, 3)`` vertices, optional colors and faces."""
        self._write(_summary.mesh(tag, vertices, colors, faces, config_dict), global_step, walltime)

    # ---------------------------------------------------------------------------- graph

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Add the graph of one call ``model(*input_to_model)``, recorded by ember's tracer."""
        from ember.utils.tensorboard._graph import graph

        self._get_file_writer().add_graph(graph(model, input_to_model, verbose, use_strict_trace))

    def add_onnx_graph(self, prototxt) -> None:
        """Add the graph of an ONNX model file (needs the onnx package)."""
        from ember.utils.tensorboard._graph import load_onnx_graph

        self._get_file_writer().add_onnx_graph(load_onnx_graph(prototxt))

    # ---------------------------------------------------------------------------- embedding

    @staticmethod
    def _encode(rawstr: str) -> str:
        return rawstr.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")

    def add_embedding(
        self,
        mat,
        metadata=None,
        label_img=None,
        global_step=None,
        tag: str = "default",
        metadata_header=None,
    ) -> None:
        """Add an ``(N, D)`` matrix for the embedding projector, with optional per-row labels
        (``metadata``) and ``(N, C, H, W)`` thumbnails (``label_img``)."""
        from google.protobuf import text_format
        from tensorboard.plugins.projector.projector_config_pb2 import (
            EmbeddingInfo,
            ProjectorConfig,
        )

        mat = make_np(mat)
        if global_step is None:
            global_step = 0
        step = str(global_step).zfill(5)
        subdir = f"{step}/{self._encode(tag)}"
        logdir = self._get_file_writer().get_logdir()
        save_path = os.path.join(logdir, subdir)
        if os.path.exists(save_path):
            if os.path.isdir(save_path):
                print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
            else:
                raise NotADirectoryError(
                    f"Path: `{save_path}` exists, but is a file. Cannot proceed."
                )
        else:
            os.makedirs(save_path)
        info = EmbeddingInfo()
        info.tensor_name = f"{tag}:{step}"
        info.tensor_path = os.path.join(subdir, "tensors.tsv")
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _write_tsv(metadata, save_path, metadata_header)
            info.metadata_path = os.path.join(subdir, "metadata.tsv")
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            _write_sprite(make_np(label_img), save_path)
            info.sprite.image_path = os.path.join(subdir, "sprite.png")
            info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        with open(os.path.join(save_path, "tensors.tsv"), "wb") as f:
            f.write("".join("\t".join(str(v) for v in row) + "\n" for row in mat.tolist()).encode())
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([info])
        with open(os.path.join(logdir, "projector_config.pbtxt"), "wb") as f:
            f.write(text_format.MessageToString(self._projector_config).encode())

    # ---------------------------------------------------------------------------- lifetime

    def flush(self) -> None:
        """Write every pending event of every sub-writer to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file (a second close does nothing)."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()


def _default_log_dir(comment: str) -> str:
    """``runs/<Mon DD_HH-MM-SS>_<hostname><comment>``, local time."""
    import socket

    started = time.strftime("%b%d_%H-%M-%S", time.localtime())
    return os.path.join("runs", f"{started}_{socket.gethostname()}{comment}")


def _write_tsv(metadata, save_path: str, metadata_header=None) -> None:
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    with open(os.path.join(save_path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode())


def _write_sprite(label_img, save_path: str) -> None:
    import math

    import numpy as np

    from ember.utils.tensorboard._utils import encode_png

    nrow = math.ceil(label_img.shape[0] ** 0.5)
    grid = make_grid(label_img, ncols=nrow)  # CHW
    side = grid.shape[2]
    square = np.zeros((side, side, 3))
    hwc = grid.transpose(1, 2, 0)
    square[: hwc.shape[0]] = hwc
    with open(os.path.join(save_path, "sprite.png"), "wb") as f:
        f.write(encode_png(np.uint8((square * 255).clip(0, 255))))
