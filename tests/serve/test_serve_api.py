"""The HTTP APIs against a real ember-serve process: shapes, codes, versions, scaling, bad input."""

from __future__ import annotations

import concurrent.futures
import io
import os
import time
import zipfile

import pytest

from tests.serve.conftest import Server

pytestmark = pytest.mark.slow
httpx = pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def server(store, tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("api"), store)
    yield s
    s.stop()


def predict(server, x, path="/predictions/tiny", **kw):
    return httpx.post(server.url("inference", path), json={"x": x, **kw}, timeout=60)


def test_ping_and_predict(server):
    r = httpx.get(server.url("inference", "/ping"))
    assert r.status_code == 200 and r.json() == {"status": "Healthy"}
    r = predict(server, [1.0, 2.0, 3.0, 4.0])
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["y"]) == 2 and body["torch"] == "ember"  # import torch in the handler
    assert r.headers["content-type"] == "application/json"
    assert predict(server, [0.0] * 4, "/predictions/tiny/1.0").status_code == 200


def test_not_found(server):
    r = predict(server, [0.0] * 4, "/predictions/nope")
    assert r.status_code == 404
    assert r.json() == {
        "code": 404,
        "type": "ModelNotFoundException",
        "message": "Model not found: nope",
    }
    r = predict(server, [0.0] * 4, "/predictions/tiny/9.9")
    assert r.status_code == 404 and r.json()["type"] == "ModelVersionNotFoundException"
    r = httpx.get(server.url("inference", "/nowhere"))
    assert r.status_code == 404 and r.json()["type"] == "ResourceNotFoundException"
    r = httpx.get(server.url("inference", "/predictions/tiny"))
    assert r.status_code == 405


def test_list_and_describe(server):
    r = httpx.get(server.url("management", "/models"))
    assert r.json() == {"models": [{"modelName": "tiny", "modelUrl": "tiny.mar"}]}
    (d,) = httpx.get(server.url("management", "/models/tiny")).json()
    assert d["modelName"] == "tiny" and d["modelVersion"] == "1.0"
    assert d["batchSize"] == 1 and d["minWorkers"] == 1 and d["loadedAtStartup"] is True
    (w,) = d["workers"]
    assert w["status"] == "READY" and w["pid"] > 0 and set(w) >= {"id", "startTime", "gpu"}


def test_versions_register_scale_unregister(server):
    m = lambda p: server.url("management", p)  # noqa: E731
    r = httpx.post(m("/models?url=tiny_v2.mar&model_name=tiny&initial_workers=1"), timeout=120)
    assert r.status_code == 200, r.text
    assert r.json() == {"status": 'Model "tiny" Version: 2.0 registered with 1 initial workers'}
    assert len(httpx.get(m("/models/tiny/all")).json()) == 2
    assert predict(server, [0.0] * 4, "/predictions/tiny/2.0").status_code == 200
    r = httpx.put(m("/models/tiny/2.0/set-default"))
    assert r.json() == {"status": 'Default version successfully updated for model "tiny" to "2.0"'}
    assert httpx.get(m("/models/tiny")).json()[0]["modelVersion"] == "2.0"
    r = httpx.put(m("/models/tiny/2.0?min_worker=2&synchronous=true"), timeout=120)
    assert r.json() == {"status": "Workers scaled to 2 for model: tiny, version: 2.0"}
    pids = {predict(server, [0.0] * 4, sleep=0.2).json()["pid"] for _ in range(1)}
    assert len(httpx.get(m("/models/tiny/2.0")).json()[0]["workers"]) == 2
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        rs = list(pool.map(lambda _: predict(server, [0.0] * 4, sleep=0.2), range(4)))
    pids = {r.json()["pid"] for r in rs}
    assert len(pids) == 2  # both workers served
    r = httpx.put(m("/models/tiny/2.0?min_worker=1"))
    assert r.status_code == 202 and r.json() == {"status": "Processing worker updates..."}
    deadline = time.monotonic() + 60
    while len(httpx.get(m("/models/tiny/2.0")).json()[0]["workers"]) != 1:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    r = httpx.put(m("/models/tiny/2.0?min_worker=3&max_worker=1"))
    assert r.status_code == 400
    r = httpx.delete(m("/models/tiny/2.0"))
    assert r.status_code == 400  # the default version, while 1.0 remains
    httpx.put(m("/models/tiny/1.0/set-default"))
    r = httpx.delete(m("/models/tiny/2.0"), timeout=60)
    assert r.json() == {"status": 'Model "tiny" unregistered'}
    assert len(httpx.get(m("/models/tiny/all")).json()) == 1
    r = httpx.post(m("/models"))
    assert r.status_code == 400 and r.json()["message"] == "Parameter url is required."


def test_register_refuses_outside_the_store(server, store, tmp_path):
    outside = tmp_path / "evil.mar"
    outside.write_bytes((store / "tiny.mar").read_bytes())
    m = server.url("management", "/models")
    for url in (str(outside), "../evil.mar", "http://example.com/x.mar", "file:///etc/passwd"):
        r = httpx.post(m, params={"url": url, "model_name": "evil"})
        assert r.status_code == 400, (url, r.text)
    r = httpx.post(m, params={"url": "missing.mar"})
    assert r.status_code == 404
    assert "evil" not in httpx.get(m).text


def test_traversal_archive_is_refused(server, store, tmp_path):
    evil = store / "traversal.mar"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("MAR-INF/MANIFEST.json", '{"model": {"modelName": "t", "handler": "h.py"}}')
        z.writestr("../../escaped.txt", "x")
    evil.write_bytes(buf.getvalue())
    try:
        r = httpx.post(server.url("management", "/models"), params={"url": "traversal.mar"})
        assert r.status_code == 400 and "outside the archive" in r.json()["message"]
    finally:
        evil.unlink()
    assert not any(p.name == "escaped.txt" for p in store.parent.rglob("escaped.txt"))


def test_bad_input(server):
    url = server.url("inference", "/predictions/tiny")
    r = httpx.post(url, content=b"x" * 200_000, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "max_request_size" in r.json()["message"]
    r = httpx.post(url, content=b'{"x": [1,', headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["message"].startswith("Invalid JSON body")
    truncated = b'--b\r\nContent-Disposition: form-data; name="data"; filename="a"\r\n\r\nabc'
    r = httpx.post(url, content=truncated, headers={"content-type": "multipart/form-data"})
    assert r.status_code == 400
    # wrong content type for the tensor handler: text, not JSON numbers
    tensor_url = server.url("management", "/models")
    assert (
        httpx.post(
            tensor_url, params={"url": "tiny_tensor.mar", "initial_workers": 1}, timeout=120
        ).status_code
        == 200
    )
    t = server.url("inference", "/predictions/tiny_tensor")
    r = httpx.post(t, content=b"1,2,3,4", headers={"content-type": "text/plain"})
    assert r.status_code == 400 and "application/json" in r.json()["message"]
    r = httpx.post(t, json=[1.0, 2.0, 3.0, 4.0])
    assert r.status_code == 200 and len(r.json()) == 2
    httpx.delete(server.url("management", "/models/tiny_tensor"), timeout=60)


def test_handler_exception_is_500_and_server_keeps_serving(server):
    r = predict(server, [0.0] * 4, fail=True)
    assert r.status_code == 500
    assert '"tiny"' in r.json()["message"] and "asked to fail" in r.json()["message"]
    assert predict(server, [0.0] * 4).status_code == 200


def test_metrics(server):
    assert predict(server, [0.0] * 4).status_code == 200  # (alone on an xdist worker too)
    text = httpx.get(server.url("metrics", "/metrics")).text
    assert 'ts_inference_requests_total{model_name="tiny",model_version="1.0"}' in text
    assert "ember_serve_batch_size_bucket" in text
    assert 'ember_serve_workers{model_name="tiny",model_version="1.0",status="READY"} 1.0' in text


def test_default_bind_and_no_key_file(server):
    assert not os.path.exists(server.folder / "key_file.json")  # loopback: no token needed


@pytest.mark.parametrize("fmt", ["default", "tgz"])
def test_serves_archive_made_by_torchserve_archiver(server, store, fmt):
    import shutil
    import subprocess

    exe = shutil.which("torch-model-archiver")
    if exe is None:
        pytest.skip("torch-model-archiver is not installed")
    src = store.parent / "src"
    name = f"tsmade_{fmt}"
    subprocess.run(
        [exe, "--model-name", name, "--version", "3.0", "--model-file", str(src / "model.py")]
        + ["--serialized-file", str(src / "tiny.pt"), "--handler", str(src / "handler.py")]
        + ["--export-path", str(store), "--archive-format", fmt, "-f"],
        check=True,
    )
    url = name + (".mar" if fmt == "default" else ".tar.gz")
    m = server.url("management", "/models")
    r = httpx.post(m, params={"url": url, "initial_workers": 1}, timeout=120)
    assert r.status_code == 200, r.text
    assert "Version: 3.0" in r.json()["status"]
    r = predict(server, [1.0, 2.0, 3.0, 4.0], f"/predictions/{name}")
    assert r.status_code == 200 and len(r.json()["y"]) == 2
    httpx.delete(f"{m}/{name}", timeout=60)
