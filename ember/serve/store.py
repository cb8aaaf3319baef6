"""The model store: finding archives in it, reading their manifest, extracting them safely.

A ``.mar`` is a zip (TorchServe's default), a ``.tar.gz`` whose members sit under one
``<model-name>/`` folder (``--archive-format tgz``), or a folder (``no-archive``); each holds
``MAR-INF/MANIFEST.json``. Extraction refuses members that would land outside the target
folder (absolute paths, ``..``), links and device files, so a crafted archive writes nothing
outside the folder made for it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

__all__ = ["ArchiveError", "ModelArchive", "extract_archive", "read_manifest", "resolve_url"]

MANIFEST = "MAR-INF/MANIFEST.json"


class ArchiveError(ValueError):
    """A model archive or a registration URL that cannot be served."""


def _safe_member(name: str) -> PurePosixPath:
    """The relative path of an archive member, or ArchiveError if it escapes its folder."""
    norm = name.replace("\\", "/")
    path = PurePosixPath(norm)
    if norm.startswith("/") or path.is_absolute() or (len(norm) > 1 and norm[1] == ":"):
        raise ArchiveError(f"archive member {name!r} has an absolute path")
    if any(part == ".." for part in path.parts):
        raise ArchiveError(f"archive member {name!r} points outside the archive ('..')")
    return path


def _extract_zip(src: Path, dest: Path) -> None:
    with zipfile.ZipFile(src) as z:
        members = z.infolist()
        for info in members:  # check all before writing any
            _safe_member(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise ArchiveError(f"archive member {info.filename!r} is a symbolic link")
        for info in members:
            target = dest / _safe_member(info.filename)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as r, open(target, "wb") as w:
                shutil.copyfileobj(r, w)


def _extract_tar(src: Path, dest: Path) -> None:
    with tarfile.open(src, "r:*") as t:
        members = t.getmembers()
        for m in members:
            _safe_member(m.name)
            if not (m.isfile() or m.isdir()):
                raise ArchiveError(
                    f"archive member {m.name!r} is a link or special file, which is not allowed"
                )
        # TorchServe's tgz puts everything under "<model-name>/": strip that one folder
        tops = {PurePosixPath(m.name).parts[0] for m in members if PurePosixPath(m.name).parts}
        strip = len(tops) == 1 and not any(m.name == MANIFEST for m in members)
        for m in members:
            rel = _safe_member(m.name)
            if strip:
                rel = PurePosixPath(*rel.parts[1:]) if len(rel.parts) > 1 else None
            if rel is None:
                continue
            target = dest / rel
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with t.extractfile(m) as r, open(target, "wb") as w:
                shutil.copyfileobj(r, w)


def _copy_folder(src: Path, dest: Path) -> None:
    for root, dirs, files in os.walk(src):
        for name in dirs + files:
            if os.path.islink(os.path.join(root, name)):
                raise ArchiveError(f"model folder {src} holds a symbolic link: {name!r}")
    shutil.copytree(src, dest, dirs_exist_ok=True)


def extract_archive(src: str | os.PathLike, dest: str | os.PathLike) -> dict:
    """Extract a ``.mar`` (zip, tar.gz or folder) into ``dest``; return its manifest."""
    src, dest = Path(src), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        if src.is_dir():
            _copy_folder(src, dest)
        elif zipfile.is_zipfile(src):
            _extract_zip(src, dest)
        elif tarfile.is_tarfile(src):
            _extract_tar(src, dest)
        else:
            raise ArchiveError(f"{src.name} is not a model archive (zip, tar.gz or folder)")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise ArchiveError(f"{src.name} is a damaged archive: {exc}") from None
    return read_manifest(dest)


def read_manifest(folder: str | os.PathLike) -> dict:
    """Return the parsed ``MAR-INF/MANIFEST.json`` of an extracted archive."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise ArchiveError("the archive has no MAR-INF/MANIFEST.json")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"MAR-INF/MANIFEST.json is not valid JSON: {exc}") from None
    model = manifest.get("model") if isinstance(manifest, dict) else None
    if not isinstance(model, dict) or not model.get("handler"):
        raise ArchiveError("MAR-INF/MANIFEST.json has no model.handler")
    return manifest


def resolve_url(url: str, model_store: str | os.PathLike, allowed_urls: list[str]) -> Path:
    """The archive in the model store that a registration ``url`` names.

    A plain name is a file or folder directly in the store. An ``http(s)://`` URL is fetched
    into the store only when it is listed, exactly, in ``allowed_urls``.
    """
    store = Path(model_store).resolve()
    if urlsplit(url).scheme in ("http", "https"):
        if url not in allowed_urls:
            raise ArchiveError(
                f"Given URL {url} does not match any allowed URL(s) (allowed_urls in the config)"
            )
        name = PurePosixPath(urlsplit(url).path).name
        _safe_name(name, url)
        target = store / name
        if target.exists():
            raise ArchiveError(f"Model file already exists {name}")
        with urllib.request.urlopen(url, timeout=60) as r, open(target, "wb") as w:  # noqa: S310
            shutil.copyfileobj(r, w)
        return target
    if urlsplit(url).scheme:
        raise ArchiveError(f"Invalid model url {url}: only model store names and http(s)")
    _safe_name(url, url)
    target = (store / url).resolve()
    if target.parent != store:
        raise ArchiveError(f"Model {url} is outside the model store")
    if not target.exists():
        raise FileNotFoundError(f"Model not found in model store: {url}")
    return target


def _safe_name(name: str, url: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise ArchiveError(f"Model {url} is outside the model store")


class ModelArchive:
    """A model archive extracted into a private temporary folder."""

    def __init__(self, path: Path):
        self.path = path
        self.model_dir = Path(tempfile.mkdtemp(prefix="ember-serve-"))
        try:
            self.manifest = extract_archive(path, self.model_dir)
        except BaseException:
            shutil.rmtree(self.model_dir, ignore_errors=True)
            raise

    @property
    def model_name(self) -> str:
        return self.manifest["model"].get("modelName") or self.path.stem

    @property
    def version(self) -> str:
        return str(self.manifest["model"].get("modelVersion") or "1.0")

    def cleanup(self) -> None:
        shutil.rmtree(self.model_dir, ignore_errors=True)
