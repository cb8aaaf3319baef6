"""``ember.distributed``: ``torch.distributed`` for processes on CPUs.

``init_process_group("gloo", ...)`` (``env://``, ``tcp://`` or a given store) connects every pair
of ranks over TCP; the collectives (``all_reduce``, ``broadcast``, ``all_gather``, ``reduce``,
``gather``, ``scatter``, ``reduce_scatter``, ``all_to_all``, ``barrier``), point-to-point
``send``/``recv``/``isend``/``irecv`` and the object collectives then work on ember tensors, with
NumPy doing the reductions. ``ember.nn.parallel.DistributedDataParallel`` builds on them.

Modules: :mod:`.store` (``TCPStore``, ``FileStore``, ``HashStore``, ``PrefixStore``, the error
classes), :mod:`.distributed_c10d` (initialisation, groups, ``ReduceOp``, ``Backend``,
``Work``), :mod:`._collectives` (the operations), :mod:`._mesh` (the transport), :mod:`.run`
(``python -m ember.distributed.run``, a ``torchrun``-like launcher) and
:mod:`.elastic.multiprocessing.errors` (``record``).
"""

from __future__ import annotations

from ember.distributed._collectives import *  # noqa: F403
from ember.distributed._collectives import __all__ as _collectives_all
from ember.distributed._collectives import _broadcast_coalesced  # noqa: F401
from ember.distributed.distributed_c10d import *  # noqa: F403
from ember.distributed.distributed_c10d import __all__ as _c10d_all
from ember.distributed.distributed_c10d import get_node_local_rank
from ember.distributed.store import *  # noqa: F403
from ember.distributed.store import __all__ as _store_all


def __getattr__(name: str):
    if name == "optim":  # ``ember.distributed.optim`` imports ember.optim: loaded on use
        import importlib

        return importlib.import_module("ember.distributed.optim")
    raise AttributeError(f"module 'ember.distributed' has no attribute {name!r}")


def is_available() -> bool:
    """Return True: ember's distributed package works (CPU processes over TCP or MPI)."""
    return True


__all__ = ["is_available", "get_node_local_rank", *_c10d_all, *_collectives_all, *_store_all]
