"""``ember.version``: the version strings torch scripts read (``torch.version.cuda`` is None on a
CPU-only build, as here)."""

__version__ = "0.1.0"
cuda = None
hip = None
git_version = "unknown"
debug = False
