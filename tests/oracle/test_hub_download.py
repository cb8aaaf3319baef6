"""``ember.hub`` downloads against ``torch.hub``'s, from ``file://`` URLs (no network): the file
written, the progress text, hash checking, the cache, the legacy one-file zip format."""

from __future__ import annotations

import hashlib
import os
import pathlib
import zipfile

import numpy as np
import pytest

import ember
import ember.hub

torch = pytest.importorskip("torch")
thub = pytest.importorskip("torch.hub")


def _payload(tmp_path: pathlib.Path, size: int = 20000) -> tuple[str, str]:
    data = np.random.default_rng(1).bytes(size)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    return src.as_uri(), hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("progress", [True, False])
@pytest.mark.parametrize("prefix", [None, "good", "bad", ""])
def test_download_url_to_file_like_torch(tmp_path, capsys, progress, prefix):
    url, digest = _payload(tmp_path)
    hash_prefix = {"good": digest[:10], "bad": "0000beef", None: None, "": ""}[prefix]
    outcomes = []
    for hub in (thub, ember.hub):
        out_dir = tmp_path / hub.__name__
        out_dir.mkdir()
        dst = out_dir / "file.bin"
        try:
            hub.download_url_to_file(url, str(dst), hash_prefix, progress=progress)
            result = dst.read_bytes() == pathlib.Path(url[len("file://") :]).read_bytes()
        except Exception as exc:  # noqa: BLE001 - compared as (class, message)
            result = (type(exc).__name__, str(exc))
        captured = capsys.readouterr()
        leftovers = sorted(p.name for p in out_dir.iterdir() if p.name != "file.bin")
        # torch's progress bar is tqdm's when installed; compare only that something was shown
        outcomes.append((result, leftovers, bool(captured.err) == progress))
    assert outcomes[0] == outcomes[1]


def test_load_state_dict_from_url_cache_hash_and_legacy_zip(tmp_path, capsys):
    results = []
    for lib, hub in ((torch, thub), (ember, ember.hub)):
        root = tmp_path / lib.__name__
        root.mkdir()
        src = root / "src.pt"
        lib.save({"w": lib.arange(4.0)}, str(src))
        digest = hashlib.sha256(src.read_bytes()).hexdigest()
        named = root / f"weights-{digest[:8]}.pt"
        named.write_bytes(src.read_bytes())
        # a legacy checkpoint: a zip holding one file, the old non-zip serialization
        legacy = root / "legacy.zip"
        inner = root / "inner.pt"
        lib.save({"v": lib.ones(2)}, str(inner), _use_new_zipfile_serialization=False)
        with zipfile.ZipFile(legacy, "w") as archive:
            archive.write(inner, "inner.pt")
        model_dir = root / "cache"
        out = []
        loaded = hub.load_state_dict_from_url(named.as_uri(), str(model_dir), check_hash=True)
        out.append(loaded["w"].tolist())
        out.append(capsys.readouterr().out.replace(str(root), "<root>").replace(digest[:8], "<h>"))
        # cached now: no second download message
        hub.load_state_dict_from_url(named.as_uri(), str(model_dir), check_hash=True)
        out.append(capsys.readouterr().out)
        bad = root / "bad-0000beef.pt"
        bad.write_bytes(src.read_bytes())
        try:
            hub.load_state_dict_from_url(bad.as_uri(), str(model_dir), check_hash=True)
        except RuntimeError as exc:
            out.append(str(exc).split("got")[0])
        capsys.readouterr()
        with pytest.warns(FutureWarning, match="Falling back to the old format"):
            out.append(hub.load_state_dict_from_url(legacy.as_uri(), str(model_dir))["v"].tolist())
        out.append(sorted(n.replace(digest[:8], "<h>") for n in os.listdir(model_dir)))
        out.append(
            hub.load_state_dict_from_url(src.as_uri(), str(model_dir), file_name="x.pt")[
                "w"
            ].tolist()
        )
        out.append(capsys.readouterr().out.replace(str(root), "<root>"))
        results.append(out)
    assert results[0] == results[1]
