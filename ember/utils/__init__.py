"""``ember.utils``: helpers around the core library (``checkpoint``, ``data``, ``dlpack``)."""

from ember.utils import checkpoint, data, dlpack  # noqa: F401
