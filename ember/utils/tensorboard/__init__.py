"""``ember.utils.tensorboard``: ``SummaryWriter`` for TensorBoard, as ``torch.utils.tensorboard``.

Like torch's, it needs the ``tensorboard`` package (``pip install ember[tensorboard]``): importing
it without raises ``ModuleNotFoundError: No module named 'tensorboard'``.
"""

import tensorboard

_version = tuple(
    int(p) for p in getattr(tensorboard, "__version__", "0").split(".")[:2] if p.isdigit()
)
if _version < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del _version, tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from ember.utils.tensorboard.writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
