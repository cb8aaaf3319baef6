"""``ember.utils``: helpers around the core (``checkpoint``, ``data``, ``dlpack``, ``hooks``,
``benchmark``, ``tensorboard``...), each imported on first attribute access (``import torch;
torch.utils.data`` works as in torch)."""

import importlib

_SUBMODULES = frozenset(
    {
        "_python_dispatch",
        "_pytree",
        "benchmark",
        "checkpoint",
        "data",
        "dlpack",
        "hooks",
        "model_zoo",
        "tensorboard",
    }
)


def __getattr__(name: str):
    if name in _SUBMODULES:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | _SUBMODULES)
