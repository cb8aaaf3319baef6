"""``ember.distributed``'s stores (``TCPStore``, ``FileStore``, ``HashStore``, ``PrefixStore``)
against torch's, ``file://`` rendezvous, and the transport between two ranks run as threads."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

import ember.distributed as edist
from tests.oracle.test_distributed import free_port, same_error

torch = pytest.importorskip("torch")
tdist = pytest.importorskip("torch.distributed")
if not tdist.is_available() or not tdist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is needed as the oracle", allow_module_level=True)


def test_tcp_store_same_as_torch():
    td = datetime.timedelta
    stores = {
        lib: mod.TCPStore("127.0.0.1", 0, 1, True, timeout=td(seconds=0.3))
        for lib, mod in (("ember", edist), ("torch", tdist))
    }
    seen = {}
    for lib, s in stores.items():
        assert s.port > 0 and s.timeout == td(seconds=0.3)
        s.set("a", "x")
        s.set("b", b"\x00y")
        seen[lib] = [
            s.get("a"),
            s.get("b"),
            s.add("n", 2),
            s.add("n", -5),
            s.get("n"),
            s.check(["a", "n"]),
            s.check(["a", "zz"]),
            s.compare_set("a", "x", "z"),
            s.compare_set("a", "x", "w"),
            s.compare_set("new", "", "v"),
            s.delete_key("a"),
            s.delete_key("a"),
        ]
        p = (edist if lib == "ember" else tdist).PrefixStore("pre", s)
        p.set("k", "v")
        seen[lib].append(s.get("pre/k"))
    assert seen["ember"] == seen["torch"]
    same_error(lambda: stores["ember"].get("zz"), lambda: stores["torch"].get("zz"))
    same_error(
        lambda: stores["ember"].wait(["zz"], td(seconds=0.1)),
        lambda: stores["torch"].wait(["zz"], td(seconds=0.1)),
    )
    for lib, mod in (("ember", edist), ("torch", tdist)):
        with pytest.raises(mod.DistNetworkError, match="EADDRINUSE"):
            mod.TCPStore("127.0.0.1", stores[lib].port, 1, True)
    stores["ember"].close()


def test_tcp_store_client_timeout_as_torch():
    port = free_port()  # nobody listens there
    message = (
        f"The client socket has timed out after 300ms while trying to connect to (127.0.0.1, "
        f"{port})."  # torch's, which takes 1.2 s here
    )
    with pytest.raises(edist.DistNetworkError) as info:
        edist.TCPStore("127.0.0.1", port, 2, False, timeout=datetime.timedelta(seconds=0.3))
    assert str(info.value) == message


def test_tcp_store_master_waits_for_workers_as_torch():
    td = datetime.timedelta(seconds=0.3)
    same_error(
        lambda: edist.TCPStore("127.0.0.1", 0, 2, True, timeout=td),
        lambda: tdist.TCPStore("127.0.0.1", 0, 2, True, timeout=td),
    )


def test_hash_store():
    for mod in (edist, tdist):
        h = mod.HashStore()
        h.set("a", "b")
        assert h.get("a") == b"b" and h.add("c", 3) == 3 and h.check(["a", "c"])


@pytest.mark.parametrize("kind", ["hash", "file"])
def test_two_ranks_in_threads_share_a_store(kind, tmp_path):
    """Two ranks' meshes over one store: the transport without process start-up."""
    import threading

    from ember.distributed._mesh import Mesh

    hash_store = edist.HashStore()
    meshes = {}

    def make(rank):
        store = hash_store if kind == "hash" else edist.FileStore(str(tmp_path / "s"), 2)
        meshes[rank] = Mesh(store, rank, 2, 5.0)

    threads = [threading.Thread(target=make, args=(r,), daemon=True) for r in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    a = np.arange(1_000_000, dtype=np.float64)
    meshes[0].send(1, (9, 0, 1, 0), a)
    meshes[1].send(0, (9, 0, 2, 0), a[:3])
    assert meshes[1].recv((0,), (9, 0, 1, 0))[1] == a.tobytes()
    assert meshes[0].recv((1,), (9, 0, 2, 0))[1] == a[:3].tobytes()
    out = np.empty_like(a)  # posted before the message arrives: received in place
    threading.Timer(0.05, meshes[0].send, (1, (9, 0, 4, 0), a)).start()
    meshes[1].recv_into(0, (9, 0, 4, 0), out.view(np.uint8))
    assert (out == a).all()
    with pytest.raises(RuntimeError, match="Timed out waiting 50ms for recv operation"):
        meshes[0].recv((1,), (9, 0, 3, 0), 0.05)
    meshes[1].close()
    with pytest.raises(RuntimeError, match="Connection closed by peer"):
        meshes[0].recv((1,), (9, 0, 3, 0), 5.0)
    meshes[0].close()


def test_file_store_same_as_torch(tmp_path):
    seen = {}
    for lib, mod in (("ember", edist), ("torch", tdist)):
        s = mod.FileStore(str(tmp_path / f"{lib}.store"), 1)
        s.set_timeout(datetime.timedelta(seconds=0.2))
        s.set("a", "x")
        seen[lib] = [s.get("a"), s.add("n", 4), s.add("n", 1), s.check(["a"]), s.check(["b"])]
        seen[lib].append(s.compare_set("a", "x", "y"))
    assert seen["ember"] == seen["torch"]
    e, t = (
        mod.FileStore(str(tmp_path / f"{lib}.2"), 1) for lib, mod in (("e", edist), ("t", tdist))
    )
    for s in (e, t):
        s.set_timeout(datetime.timedelta(seconds=0.1))
    same_error(lambda: e.get("missing"), lambda: t.get("missing"))
    with pytest.raises(RuntimeError, match="^Wait timeout$"):  # torch's (it takes 1 s there)
        e.wait(["a", "b"])


def test_file_init_method(tmp_path):
    for d in (edist, tdist):
        path = tmp_path / f"{d.__name__}.rdzv"
        d.init_process_group("gloo", init_method=f"file://{path}", rank=0, world_size=1)
        assert d.get_world_size() == 1
        d.destroy_process_group()
    assert not (tmp_path / "ember.distributed.rdzv").exists()  # the last one out removes it
    same_error(
        lambda: edist.init_process_group("gloo", init_method=f"file://{tmp_path}/x", rank=0),
        lambda: tdist.init_process_group("gloo", init_method=f"file://{tmp_path}/x", rank=0),
    )
