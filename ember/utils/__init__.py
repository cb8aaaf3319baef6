"""``ember.utils``: helpers around the core library."""

from ember.utils import checkpoint, dlpack  # noqa: F401
