"""The profiler's slot in the core: ``ACTIVE`` lists the recorders collecting now.

``ember.profiler._recorder`` owns the list's contents and fills ``begin_range`` / ``end_range``
when it is imported; code at any layer (optimizers, DataLoader, custom Functions) tests
``ACTIVE`` (one truthiness test) and calls them only while it is non-empty, so it never
imports the profiler. The same pattern as the engine's ``NODE_PROFILER`` and the registry's
``AUTOCAST``.
"""

from __future__ import annotations

ACTIVE: list = []


def begin_range(name: str):  # pragma: no cover - replaced by ember.profiler._recorder
    """Open a user range ``name`` in every active recorder; return the handles."""
    raise RuntimeError("no profiler is recording")


def end_range(handles) -> None:  # pragma: no cover - replaced by ember.profiler._recorder
    """Close the ranges ``begin_range`` opened."""
    raise RuntimeError("no profiler is recording")
