"""``ember.utils``: helpers around the core library."""

from ember.utils import dlpack  # noqa: F401
