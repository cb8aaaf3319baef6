"""``ember.multiprocessing``: Python's :mod:`multiprocessing` with tensors sent through shared
memory, as ``torch.multiprocessing``.

Everything in :mod:`multiprocessing` is re-exported. Importing this module registers the tensor
reductions (:mod:`ember.multiprocessing.reductions`): a tensor put on a ``Queue``, sent through a
``Pipe`` or passed to a ``spawn``-ed ``Process`` is moved to shared memory
(``Tensor.share_memory_()``) and the receiver maps the same bytes instead of unpickling a copy.
:func:`spawn` / :func:`start_processes` (:mod:`ember.multiprocessing.spawn`) run a function in
``nprocs`` processes and report a child's failure in the parent.
"""

import multiprocessing
from multiprocessing import *  # noqa: F403

from ember.multiprocessing.reductions import init_reductions
from ember.multiprocessing.spawn import (
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += ["ProcessContext", "ProcessExitedException", "ProcessRaisedException"]
__all__ += ["SpawnContext", "spawn", "start_processes"]
__all__ += multiprocessing.__all__  # type: ignore[attr-defined]

# Only torch's "file_descriptor" strategy exists here: storages are anonymous in-memory files
# whose descriptors travel between processes, so nothing is left behind by a killed process.
_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor"}


def set_sharing_strategy(new_strategy: str) -> None:
    """Set the strategy for sharing CPU tensors (one of :func:`get_all_sharing_strategies`)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(
            f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}"
        )
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    """Return the current strategy for sharing CPU tensors."""
    return _sharing_strategy


def get_all_sharing_strategies() -> set:
    """Return the set of sharing strategies supported on this system."""
    return set(_all_sharing_strategies)


init_reductions()
