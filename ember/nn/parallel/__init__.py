"""``ember.nn.parallel``: ``DistributedDataParallel`` (gradients averaged across the processes
of a group, see :mod:`.distributed`) and ``DataParallel`` (no GPUs: runs the module as is).

``DistributedDataParallel`` (and with it ``ember.distributed``) is imported on first access."""

from ember.nn.parallel.data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


def __getattr__(name: str):
    if name in ("DistributedDataParallel", "distributed"):
        from ember.nn.parallel import distributed

        return distributed if name == "distributed" else distributed.DistributedDataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
