"""``torch._dynamo.eval_frame.OptimizedModule``: what ``torch.compile(module)`` returns.

ember runs eagerly, so the wrapper compiles nothing; it exists so that code written against
torch's compiled modules works unchanged: the original module is the child ``_orig_mod`` (state
dict keys ``_orig_mod.``-prefixed, as torch saves them), calling the wrapper calls the module
(its hooks included), and attributes the wrapper lacks are read from the module.
"""

from __future__ import annotations

from ember.nn.modules.module import Module

__all__ = ["OptimizedModule"]


class OptimizedModule(Module):
    """A module returned by ``torch.compile``: forwards to ``_orig_mod``."""

    def __init__(self, mod: Module) -> None:
        super().__init__()
        self._orig_mod = mod
        # an instance attribute, as torch's: calling the wrapper runs the module's __call__
        self.forward = mod.__call__

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)
