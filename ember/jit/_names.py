"""The Python module torch names a class after (``__torch__.<module>.<Class>``)."""

from __future__ import annotations

__all__ = ["torch_module"]

# ember layers kept in another file than torch's: class name -> torch's ``torch.nn.modules`` file
_TORCH_FILE = {
    "MultiheadAttention": "activation",
    "Container": "container",
    "CrossMapLRN2d": "normalization",
    "NLLLoss2d": "loss",
    "FractionalMaxPool2d": "pooling",
    "FractionalMaxPool3d": "pooling",
    "LazyLinear": "linear",
    **{f"LazyConv{d}d": "conv" for d in (1, 2, 3)},
    **{f"LazyConvTranspose{d}d": "conv" for d in (1, 2, 3)},
    **{f"LazyBatchNorm{d}d": "batchnorm" for d in (1, 2, 3)},
    **{f"LazyInstanceNorm{d}d": "instancenorm" for d in (1, 2, 3)},
}


def torch_module(cls) -> str:
    """Return the module torch's class of the same name lives in (``ember.nn.modules.attention``
    -> ``torch.nn.modules.activation`` for ``MultiheadAttention``); user classes keep theirs."""
    mod = getattr(cls, "__module__", None) or ""
    if mod != "ember" and not mod.startswith("ember."):
        return mod
    if mod.startswith("ember.nn.modules.") and cls.__name__ in _TORCH_FILE:
        return "torch.nn.modules." + _TORCH_FILE[cls.__name__]
    return "torch" + mod[len("ember") :]
