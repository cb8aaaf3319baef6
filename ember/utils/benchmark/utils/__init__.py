"""The pieces of ``ember.utils.benchmark``: ``common``, ``timer``, ``compare``."""
