"""A model's worker process: loads the handler once, then answers batches from the server.

Run as ``python -m ember.serve.worker SPEC_JSON`` by the server. Frames come on stdin and go
out on the original stdout; anything the handler prints goes to stderr. In this process
``import torch`` is ember and ``import ts`` is :mod:`ember.serve.ts`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
import traceback

__all__ = ["main"]

BUILTIN = {
    "base_handler": "ts.torch_handler.base_handler",
    "image_classifier": "ts.torch_handler.image_classifier",
    "text_classifier": "ts.torch_handler.text_classifier",
    "tensor_handler": "ts.torch_handler.tensor_handler",
}


class _TsAliasFinder(importlib.abc.MetaPathFinder):
    """``ts`` and ``ts.X`` resolve to the modules of ``ember.serve.ts``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "ts" and not fullname.startswith("ts."):
            return None
        from ember._standin import _AliasLoader

        module = importlib.import_module("ember.serve." + fullname)
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(module), is_package=hasattr(module, "__path__")
        )


def install_ts_alias() -> None:
    """Make ``import ts...`` give ember's TorchServe-compatible modules."""
    if not any(isinstance(f, _TsAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TsAliasFinder())


def load_entry_point(handler: str, context):
    """The callable ``(data, context) -> list`` for a manifest's ``handler``, initialised."""
    from ember.serve.ts.utils.util import list_classes_from_module

    target, _, function = handler.partition(":")
    if target in BUILTIN:
        target = BUILTIN[target]
    elif target.endswith(".py"):
        target = target[:-3]
    module = importlib.import_module(target)
    if function or (hasattr(module, "handle") and not list_classes_from_module(module)):
        entry = getattr(module, function or "handle")
        entry(None, context)  # TorchServe's convention: a first call with no data initialises
        return entry
    classes = [c for c in list_classes_from_module(module) if hasattr(c, "handle")]
    if len(classes) != 1:
        raise ValueError(
            f"Expected only one class in custom service code or a function entry point "
            f"{[c.__name__ for c in classes]}"
        )
    service = classes[0]()
    if hasattr(service, "initialize"):
        service.initialize(context)
    return service.handle


def _encode(value, content_type):
    """(content type, bytes) of one answer as TorchServe's worker returns it."""
    if isinstance(value, (bytes, bytearray)):
        return content_type or "application/octet-stream", bytes(value)
    if isinstance(value, str):
        return content_type or "text/plain; charset=utf-8", value.encode("utf-8")
    return content_type or "application/json", json.dumps(value).encode("utf-8")


def predict(entry, context, batch):
    """Run one batch; return ``("ok", [(status, content_type, body), ...])`` or an error."""
    from ember.serve.ts.context import RequestProcessor
    from ember.serve.ts.utils.util import PredictionException

    context.request_ids = {i: req["requestId"] for i, req in enumerate(batch)}
    context.request_processor = [RequestProcessor(req["headers"]) for req in batch]
    context.metrics.request_ids = context.request_ids
    try:
        result = entry([req["data"] for req in batch], context)
    except PredictionException as exc:
        return ("error", exc.error_code, exc.message)
    except MemoryError:
        return ("error", 507, "Out of resources")
    except Exception as exc:  # the handler's failure: answered, the worker lives on
        traceback.print_exc(file=sys.stderr)
        return ("error", 500, f"{type(exc).__name__}: {exc}")
    if not isinstance(result, list):
        return ("error", 503, "Invalid model predict output")
    if len(result) != len(batch):
        return ("error", 503, "number of batch response mismatched")
    out = []
    for i, value in enumerate(result):
        code, _ = context.get_response_status(i)
        try:
            ctype, body = _encode(value, context.get_response_content_type(i))
        except (TypeError, ValueError) as exc:
            return ("error", 503, f"Invalid model predict output: {exc}")
        out.append((code or 200, ctype, body))
    return ("ok", out)


def main(argv: list[str] | None = None) -> None:
    """Entry point of a worker process."""
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    out = os.fdopen(os.dup(1), "wb")  # the protocol's stream
    os.dup2(2, 1)  # prints of the handler go to stderr, never into the protocol
    inp = sys.stdin.buffer
    from ember._standin import install_as_torch

    install_as_torch()
    install_ts_alias()
    from ember.serve.protocol import read_frame, write_frame
    from ember.serve.ts.context import Context
    from ember.serve.ts.metrics import MetricsStore

    model_dir = spec["model_dir"]
    sys.path.insert(0, model_dir)
    os.chdir(model_dir)
    with open(os.path.join(model_dir, "MAR-INF", "MANIFEST.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    context = Context(
        spec["model_name"],
        model_dir,
        manifest,
        spec["batch_size"],
        None,
        "ember",
        metrics=MetricsStore(spec["model_name"]),
    )
    try:
        entry = load_entry_point(manifest["model"]["handler"], context)
    except BaseException as exc:
        traceback.print_exc(file=sys.stderr)
        write_frame(out, ("failed", f"{type(exc).__name__}: {exc}"))
        return
    write_frame(out, ("ready", os.getpid()))
    while True:
        msg = read_frame(inp)
        if msg is None or msg[0] == "stop":
            return
        if msg[0] == "predict":
            write_frame(out, predict(entry, context, msg[1]))


if __name__ == "__main__":
    main()
