"""``ember.utils``: helpers around the core (``checkpoint``, ``data``, ``dlpack``, ``hooks``)."""

from ember.utils import checkpoint, data, dlpack, hooks  # noqa: F401
