"""Archiver, model store and config without a server: formats, manifest, refusals."""

from __future__ import annotations

import io
import json
import stat
import tarfile
import zipfile

import pytest

from ember.serve.archiver import ArchiverError, archive, main
from ember.serve.config import ServeConfig, read_properties
from ember.serve.store import ArchiveError, extract_archive, resolve_url


@pytest.fixture
def files(tmp_path):
    (tmp_path / "model.py").write_text("class M: pass\n")
    (tmp_path / "weights.pt").write_bytes(b"w")
    (tmp_path / "handler.py").write_text("def handle(data, context): return data\n")
    (tmp_path / "index_to_name.json").write_text('{"0": "zero"}')
    (tmp_path / "out").mkdir()
    return tmp_path


@pytest.mark.parametrize("fmt", ["default", "zip-store", "tgz", "no-archive"])
def test_archive_formats_round_trip(files, fmt):
    out = archive(
        "m1",
        "1.0",
        str(files / "handler.py"),
        serialized_file=str(files / "weights.pt"),
        model_file=str(files / "model.py"),
        extra_files=str(files / "index_to_name.json"),
        export_path=files / "out",
        archive_format=fmt,
    )
    assert out.name == {"tgz": "m1.tar.gz", "no-archive": "m1"}.get(fmt, "m1.mar")
    dest = files / "x"
    manifest = extract_archive(out, dest)
    assert manifest["runtime"] == "python" and set(manifest) >= {"createdOn", "archiverVersion"}
    assert manifest["model"] == {
        "modelName": "m1",
        "serializedFile": "weights.pt",
        "handler": "handler.py",
        "modelFile": "model.py",
        "modelVersion": "1.0",
    }
    assert (dest / "index_to_name.json").read_text() == '{"0": "zero"}'
    assert (dest / "weights.pt").read_bytes() == b"w"


def test_archiver_refusals(files, capsys):
    args = ["--model-name", "m", "--version", "1", "--handler", "image_classifier"]
    assert main([*args, "--export-path", str(files / "out")]) == 0
    manifest = json.loads(zipfile.ZipFile(files / "out" / "m.mar").read("MAR-INF/MANIFEST.json"))
    assert manifest["model"]["handler"] == "image_classifier"
    assert main([*args, "--export-path", str(files / "out")]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main([*args, "--export-path", str(files / "out"), "--force"]) == 0
    with pytest.raises(ArchiverError, match="special characters"):
        archive("../m", "1", "image_classifier", export_path=files / "out")
    with pytest.raises(ArchiverError, match="does not exist"):
        archive("m2", "1", str(files / "nope.py"), export_path=files / "out")


def _zip(members) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("MAR-INF/MANIFEST.json", '{"model": {"modelName": "t", "handler": "h.py"}}')
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


@pytest.mark.parametrize("name", ["../escape.txt", "/abs.txt", "a/../../escape.txt"])
def test_zip_traversal_refused(tmp_path, name):
    src = tmp_path / "evil.mar"
    src.write_bytes(_zip([(name, "x")]))
    with pytest.raises(ArchiveError):
        extract_archive(src, tmp_path / "dest" / "inner")
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "dest" / "escape.txt").exists()


def test_zip_symlink_refused(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        info = zipfile.ZipInfo("link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    (tmp_path / "l.mar").write_bytes(buf.getvalue())
    with pytest.raises(ArchiveError, match="symbolic link"):
        extract_archive(tmp_path / "l.mar", tmp_path / "d")


def test_tar_link_refused(tmp_path):
    with tarfile.open(tmp_path / "t.tar.gz", "w:gz") as t:
        info = tarfile.TarInfo("m/link")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(info)
    with pytest.raises(ArchiveError, match="link"):
        extract_archive(tmp_path / "t.tar.gz", tmp_path / "d")


def test_resolve_url(tmp_path):
    (tmp_path / "a.mar").write_bytes(b"")
    assert resolve_url("a.mar", tmp_path, []) == (tmp_path / "a.mar").resolve()
    for bad in ("../a.mar", str(tmp_path / "a.mar"), "sub/a.mar", "file:///etc/passwd"):
        with pytest.raises(ArchiveError):
            resolve_url(bad, tmp_path, [])
    with pytest.raises(ArchiveError, match="allowed"):
        resolve_url("http://example.com/a.mar", tmp_path, ["http://example.com/a.mar.x"])
    with pytest.raises(FileNotFoundError):
        resolve_url("b.mar", tmp_path, [])


def test_config():
    text = "# c\ninference_address=http://0.0.0.0:8443\nbatch_size : 4\nallowed_urls=a,b\\\n  ,c\n"
    assert read_properties(text)["batch_size"] == "4"
    cfg = ServeConfig.from_properties(text)
    assert cfg.batch_size == 4 and cfg.allowed_urls == ["a", "b", "c"]
    assert cfg.token_auth_required()  # listening beyond loopback forces tokens
    default = ServeConfig()
    assert not default.token_auth_required()
    assert {h for h, _ in default.addresses().values()} == {"127.0.0.1"}
    assert [p for _, p in default.addresses().values()] == [8080, 8081, 8082]
    with pytest.raises(ValueError, match="not an integer"):
        ServeConfig.from_properties("batch_size=x")


def test_key_file_is_private(tmp_path):
    from ember.serve.server import write_key_file

    keys = write_key_file(tmp_path / "key_file.json")
    assert stat.S_IMODE((tmp_path / "key_file.json").stat().st_mode) == 0o600
    assert set(json.loads((tmp_path / "key_file.json").read_text())) == set(keys)


def test_worker_threads_share_the_cores(monkeypatch):
    """Each worker's BLAS pool gets (cores - 1) // workers threads, at least one; counts the
    user set in the server's environment are passed through untouched."""
    import os

    from ember.serve.wlm import worker_env

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(9)), raising=False)
    assert worker_env(1)["OPENBLAS_NUM_THREADS"] == "8"
    assert worker_env(3)["OMP_NUM_THREADS"] == "2"
    assert worker_env(20)["MKL_NUM_THREADS"] == "1"
    assert worker_env(1)["EMBER_AS_TORCH"] == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    env = worker_env(4)
    assert env["OMP_NUM_THREADS"] == "3" and "OPENBLAS_NUM_THREADS" not in env


def test_metrics_series_are_the_labelled_children():
    """The cached per-version children update the same series ``labels()`` names."""
    pytest.importorskip("prometheus_client")
    from ember.serve.metrics import Metrics

    m = Metrics()
    for code in (200, 200, 500):
        m.observe_response("mnist", "1.0", code, 0.002)
    m.observe_batch("mnist", "1.0", 3, [0.001, 0.002, 0.003])
    text = m.render().decode()
    label = 'model_name="mnist",model_version="1.0"'
    assert f"ts_inference_requests_total{{{label}}} 3.0" in text
    assert f'ember_serve_responses_total{{code="200",{label}}} 2.0' in text
    assert f'ember_serve_responses_total{{code="500",{label}}} 1.0' in text
    assert f"ts_queue_latency_microseconds_total{{{label}}} 6000.0" in text
    assert f"ember_serve_batch_size_count{{{label}}} 1.0" in text
    assert f"ember_serve_queue_latency_seconds_count{{{label}}} 3.0" in text
