"""Passes over ember's IR: plain functions changing a graph in place."""

from ember.jit.passes.dce import eliminate_dead_code

__all__ = ["eliminate_dead_code"]
