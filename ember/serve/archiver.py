"""``ember-model-archiver``: writes ``.mar`` model archives in TorchServe's layout.

The flags are torch-model-archiver's. The archive holds the files given (model file, serialized
state dict, handler, extra files, requirements, config) at its root and
``MAR-INF/MANIFEST.json``::

    {"createdOn": "02/12/2026 17:09:16", "runtime": "python",
     "model": {"modelName": "mnist", "serializedFile": "mnist.pt", "handler": "handler.py",
               "modelFile": "model.py", "modelVersion": "1.0"},
     "archiverVersion": "..."}
"""

from __future__ import annotations

import argparse
import datetime
import glob
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

__all__ = ["BUILTIN_HANDLERS", "ArchiverError", "archive", "main", "manifest_for"]

BUILTIN_HANDLERS = ("image_classifier", "text_classifier", "base_handler", "tensor_handler")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-.]*$")
_SUFFIX = {"default": ".mar", "zip-store": ".mar", "tgz": ".tar.gz", "no-archive": ""}
MANIFEST = "MAR-INF/MANIFEST.json"


class ArchiverError(Exception):
    """An archiving request that cannot be carried out."""


def _archiver_version() -> str:
    from ember.version import ember_version

    return f"ember-{ember_version}"


def manifest_for(
    model_name: str,
    version: str,
    handler: str,
    serialized_file: str | None = None,
    model_file: str | None = None,
    requirements_file: str | None = None,
    config_file: str | None = None,
    runtime: str = "python",
) -> dict:
    """Return the MANIFEST.json dict that TorchServe writes for these arguments."""
    model: dict = {"modelName": model_name}
    if serialized_file:
        model["serializedFile"] = os.path.basename(serialized_file)
    model["handler"] = os.path.basename(handler)
    if model_file:
        model["modelFile"] = os.path.basename(model_file)
    if version:
        model["modelVersion"] = version
    if requirements_file:
        model["requirementsFile"] = os.path.basename(requirements_file)
    if config_file:
        model["configFile"] = os.path.basename(config_file)
    return {
        "createdOn": datetime.datetime.now().strftime("%d/%m/%Y %H:%M:%S"),
        "runtime": runtime,
        "model": model,
        "archiverVersion": _archiver_version(),
    }


def _handler_file(handler: str) -> str | None:
    """The file to copy for ``--handler`` (None for a built-in handler's name)."""
    if handler in BUILTIN_HANDLERS:
        return None
    path = handler.split(":")[0] if ":" in handler and not os.path.exists(handler) else handler
    if not path.endswith(".py"):
        path += ".py"
    if not os.path.isfile(path):
        raise ArchiverError(f"handler file does not exist: {path}")
    return path


def _gather(
    serialized_file, model_file, handler, extra_files, requirements_file, config_file
) -> dict[str, str]:
    """Archive name -> source path of every file to put at the archive's root."""
    files: dict[str, str] = {}
    for path in (serialized_file, model_file, requirements_file, config_file, handler):
        if path:
            if not os.path.isfile(path):
                raise ArchiverError(f"File does not exist: {path}")
            files[os.path.basename(path)] = path
    for item in (extra_files or "").split(","):
        item = item.strip()
        if not item:
            continue
        wildcard = any(c in item for c in "*?[")
        if not wildcard and not os.path.exists(item):
            raise ArchiverError(f"File does not exist: {item}")
        for match in glob.glob(item):
            if os.path.isfile(match):
                files[os.path.basename(match)] = match
            elif os.path.isdir(match):  # a folder's contents go to the archive's root
                for root, dirs, names in os.walk(match):
                    dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
                    for name in names:
                        if name.endswith((".pyc", ".mar")):
                            continue
                        src = os.path.join(root, name)
                        files[os.path.relpath(src, match).replace(os.sep, "/")] = src
    files.pop(MANIFEST, None)
    return files


def archive(
    model_name: str,
    version: str,
    handler: str,
    serialized_file: str | None = None,
    model_file: str | None = None,
    extra_files: str | None = None,
    requirements_file: str | None = None,
    config_file: str | None = None,
    export_path: str | os.PathLike | None = None,
    archive_format: str = "default",
    force: bool = False,
    runtime: str = "python",
) -> Path:
    """Write a model archive; return its path (``<export_path>/<model_name>.mar``)."""
    if not _NAME.match(model_name):
        raise ArchiverError(
            "Model name contains special characters.\nThe allowed regular expression filter "
            "for model name is: ^[A-Za-z0-9][A-Za-z0-9_\\-.]*$"
        )
    if archive_format not in _SUFFIX:
        raise ArchiverError(f"invalid archive format {archive_format!r}")
    export = Path(export_path if export_path is not None else os.getcwd())
    if not export.is_dir():
        raise ArchiverError(
            f"Given export-path {export} is not a directory. Point to a valid export-path "
            "directory."
        )
    out = export / f"{model_name}{_SUFFIX[archive_format]}"
    if out.exists():
        if not force:
            raise ArchiverError(
                f"{out} already exists.\nPlease specify --force/-f option to overwrite the "
                "model archive output file.\nSee -h/--help for more details."
            )
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    files = _gather(
        serialized_file,
        model_file,
        _handler_file(handler),
        extra_files,
        requirements_file,
        config_file,
    )
    handler_name = handler if handler in BUILTIN_HANDLERS else handler.replace(os.sep, "/")
    if ":" in handler_name and handler not in BUILTIN_HANDLERS:
        file_part, func = handler_name.rsplit(":", 1)
        handler_name = os.path.basename(file_part) + ":" + func
    manifest = manifest_for(
        model_name,
        version,
        handler_name,
        serialized_file,
        model_file,
        requirements_file,
        config_file,
        runtime,
    )
    text = json.dumps(manifest, indent=2)
    if archive_format == "no-archive":
        for name, src in files.items():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, out / name)
        (out / "MAR-INF").mkdir(parents=True, exist_ok=True)
        (out / MANIFEST).write_text(text, encoding="utf-8")
    elif archive_format == "tgz":
        fd, tmp = tempfile.mkstemp(dir=export, suffix=".part")
        os.close(fd)
        with tarfile.open(tmp, "w:gz") as t:
            for name, src in files.items():
                t.add(src, arcname=f"{model_name}/{name}")
            info = tarfile.TarInfo(f"{model_name}/{MANIFEST}")
            info.size = len(text.encode())
            t.addfile(info, io.BytesIO(text.encode()))
        os.replace(tmp, out)
    else:
        mode = zipfile.ZIP_STORED if archive_format == "zip-store" else zipfile.ZIP_DEFLATED
        fd, tmp = tempfile.mkstemp(dir=export, suffix=".part")
        os.close(fd)
        with zipfile.ZipFile(tmp, "w", mode) as z:
            for name, src in files.items():
                z.write(src, name)
            z.writestr(MANIFEST, text)
        os.replace(tmp, out)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ember-model-archiver",
        description="Writes TorchServe model archives (.mar) that ember-serve and TorchServe "
        "serve.",
    )
    p.add_argument("--model-name", required=True, help="name of the model (and of the .mar)")
    p.add_argument("--serialized-file", help="state dict (.pt/.pth) of an eager model")
    p.add_argument("--model-file", help="Python file defining the model's one nn.Module class")
    p.add_argument(
        "--handler",
        required=True,
        help="a default handler's name (" + ", ".join(BUILTIN_HANDLERS) + ") or a handler file",
    )
    p.add_argument("--extra-files", help="comma-separated files, folders or wildcards")
    p.add_argument("--runtime", default="python", choices=["python", "python3"])
    p.add_argument("--export-path", default=None, help="folder to write to (default: cwd)")
    p.add_argument(
        "--archive-format", default="default", choices=["tgz", "no-archive", "zip-store", "default"]
    )
    p.add_argument("-f", "--force", action="store_true", help="overwrite an existing archive")
    p.add_argument("-v", "--version", required=True, help="the model's version")
    p.add_argument("-r", "--requirements-file", help="requirements.txt of the model")
    p.add_argument("-c", "--config-file", help="model configuration (YAML)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``ember-model-archiver``."""
    args = _parser().parse_args(argv)
    try:
        out = archive(
            args.model_name,
            args.version,
            args.handler,
            serialized_file=args.serialized_file,
            model_file=args.model_file,
            extra_files=args.extra_files,
            requirements_file=args.requirements_file,
            config_file=args.config_file,
            export_path=args.export_path,
            archive_format=args.archive_format,
            force=args.force,
            runtime=args.runtime,
        )
    except (ArchiverError, OSError) as exc:
        print(f"ember-model-archiver: error: {exc}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
