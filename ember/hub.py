"""``ember.hub``: torch.hub's cache of downloaded weights and its ``hubconf.py`` entrypoints.

``load_state_dict_from_url`` returns the file cached under ``<get_dir()>/checkpoints`` (the
directory torch uses, so weights torch downloaded are found) or downloads it first; ``load``
runs an entrypoint of a local directory's ``hubconf.py`` (``source="local"``). Fetching a GitHub
repository's code (``list``, ``help``, ``load(source="github")``) is not supported: clone it
and pass its directory with ``source="local"``.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import warnings
import zipfile
from typing import Any
from urllib.parse import urlparse

ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")

__all__ = [
    "download_url_to_file",
    "get_dir",
    "help",
    "list",
    "load",
    "load_state_dict_from_url",
    "set_dir",
]

_hub_dir: str | None = None


_HUB_HEADERS = {"User-Agent": "torch.hub"}  # the agent torch's downloads announce


def _get_torch_home() -> str:
    default = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, default))


def get_dir() -> str:
    """Return the hub cache directory: the one :func:`set_dir` chose, else
    ``$TORCH_HOME/hub`` (``$TORCH_HOME`` defaults to ``$XDG_CACHE_HOME/torch``, that to
    ``~/.cache/torch``)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    return _hub_dir if _hub_dir is not None else os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Set the hub cache directory used to save downloaded models and weights."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(
    url: str, dst: str, hash_prefix: str | None = None, progress: bool = True
) -> None:
    """Download ``url`` to the path ``dst`` (through a temporary file, moved when complete);
    with ``hash_prefix``, the file's SHA256 must start with it."""
    from urllib.request import Request, urlopen  # (on first use: a slow import)

    dst = os.path.expanduser(dst)
    # written next to dst under a unique name, and moved onto dst only once complete and
    # verified, so an interrupted download never leaves a truncated file at dst
    partial = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in the finally below
        dir=os.path.dirname(dst) or ".",
        prefix=os.path.basename(dst) + ".",
        suffix=".partial",
        delete=False,
    )
    try:
        with urlopen(Request(url, headers=_HUB_HEADERS)) as response:
            lengths = response.info().get_all("Content-Length")
            total = int(lengths[0]) if lengths else 0
            expected = f"/{total}" if total else ""  # unknown or zero: no total shown
            hasher = hashlib.sha256()
            received = 0
            for chunk in iter(lambda: response.read(READ_DATA_CHUNK), b""):
                partial.write(chunk)
                hasher.update(chunk)
                received += len(chunk)
                if progress:
                    sys.stderr.write(f"\r{received}{expected} bytes")
            if progress:
                sys.stderr.write("\n")
            partial.close()
        digest = hasher.hexdigest()
        if hash_prefix is not None and not digest.startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(partial.name, dst)
    finally:
        partial.close()
        if os.path.exists(partial.name):
            os.remove(partial.name)


def _is_legacy_zip_format(filename: str) -> bool:
    # torch < 1.6 saved a zip holding exactly one file (and no directory)
    if not zipfile.is_zipfile(filename):
        return False
    with zipfile.ZipFile(filename) as archive:
        members = archive.infolist()
    return [m.is_dir() for m in members] == [False]


def _legacy_zip_load(filename: str, model_dir: str, map_location, weights_only: bool):
    import ember

    warnings.warn(
        "Falling back to the old format < 1.6. This support will be deprecated in favor of "
        "default zipfile format introduced in 1.6. Please redo torch.save() to save it in the "
        "new zipfile format.",
        FutureWarning,
        stacklevel=3,
    )
    with zipfile.ZipFile(filename) as f:
        members = f.infolist()
        if len(members) != 1:
            raise RuntimeError("Only one file(not dir) is allowed in the zipfile")
        target = os.path.realpath(model_dir)
        path = os.path.realpath(os.path.join(model_dir, members[0].filename))
        if not path.startswith(target + os.sep):
            raise ValueError(f"{members[0].filename} is outside of {model_dir}")
        f.extractall(model_dir)
        extracted_file = os.path.join(model_dir, members[0].filename)
    return ember.load(extracted_file, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(
    url: str,
    model_dir: str | None = None,
    map_location=None,
    progress: bool = True,
    check_hash: bool = False,
    file_name: str | None = None,
    weights_only: bool = False,
) -> dict[str, Any]:
    """Load the object saved at ``url``, downloading it into ``model_dir`` (default
    ``<get_dir()>/checkpoints``) unless it is there already; a zip holding one legacy file is
    extracted first."""
    import ember

    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn(
            "TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2
        )
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    path = _cached_download(url, model_dir, file_name, check_hash, progress)
    if _is_legacy_zip_format(path):
        return _legacy_zip_load(path, model_dir, map_location, weights_only)
    return ember.load(path, map_location=map_location, weights_only=weights_only)


def _cached_download(url: str, model_dir: str, file_name, check_hash: bool, progress: bool):
    """The path of ``url``'s file in ``model_dir``, downloaded first if it is not there; with
    ``check_hash`` the hex digits after the last '-' of the file name must prefix its SHA256."""
    os.makedirs(model_dir, exist_ok=True)
    name = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    path = os.path.join(model_dir, name)
    if os.path.exists(path):
        return path
    sys.stdout.write(f'Downloading: "{url}" to {path}\n')
    match = HASH_REGEX.search(name) if check_hash else None
    download_url_to_file(url, path, match.group(1) if match else None, progress=progress)
    return path


# ----------------------------------------------------------------------------- hubconf.py


@contextlib.contextmanager
def _add_to_sys_path(path: str):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _hubconf(repo_or_dir: str, source: str):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        raise NotImplementedError(
            "ember.hub cannot fetch code from GitHub: clone the repository and call "
            "hub.load(path, model, source='local')"
        )
    with _add_to_sys_path(repo_or_dir):
        path = os.path.join(repo_or_dir, MODULE_HUBCONF)
        spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, path)
        if spec is None:
            raise AssertionError(f"failed to load spec from {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _entry(module, model: str):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    deps = getattr(module, VAR_DEPENDENCY, None)
    if deps is not None:
        missing = [pkg for pkg in deps if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def list(  # noqa: A001
    github: str,
    force_reload: bool = False,
    skip_validation: bool = False,
    trust_repo="check",
    verbose: bool = True,
) -> builtins.list:
    """Return the entrypoints of a GitHub repository's ``hubconf.py`` (not supported: ember
    does not fetch code; :func:`load` runs a local clone's entrypoints)."""
    module = _hubconf(github, "github")
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(  # noqa: A001
    github: str,
    model: str,
    force_reload: bool = False,
    skip_validation: bool = False,
    trust_repo="check",
) -> str | None:
    """Return the docstring of a GitHub repository's entrypoint (not supported: see
    :func:`list`)."""
    return _entry(_hubconf(github, "github"), model).__doc__


def load(
    repo_or_dir: str,
    model: str,
    *args,
    source: str = "github",
    trust_repo="check",
    force_reload: bool = False,
    verbose: bool = True,
    skip_validation: bool = False,
    **kwargs,
):
    """Call the entrypoint ``model`` of ``hubconf.py`` in the directory ``repo_or_dir`` with
    ``*args`` and ``**kwargs`` (``source="local"``; GitHub repositories are not fetched)."""
    source = source.lower()
    return _entry(_hubconf(repo_or_dir, source), model)(*args, **kwargs)
