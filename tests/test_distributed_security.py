"""The local transport is safe to run on a shared machine: it listens on loopback only, never
unpickles what arrives on a socket, and serves only peers holding the job's secret (with the
rank they claim checked). No torch needed."""

from __future__ import annotations

import os
import pickle
import socket
import stat
import struct
import threading
import time
from datetime import timedelta

import numpy as np
import pytest

import ember.distributed as dist
from ember.distributed import _wire
from ember.distributed._mesh import Mesh

TD = timedelta(seconds=5)


class _Canary:
    """Unpickling this creates ``path`` (what an attacker's payload would do)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _attack(port: int, canary: str) -> bytes:
    """Connect to ``port`` without the secret and send pickles the old protocols accepted."""
    payload = pickle.dumps(("set", (_Canary(canary), b"x")))
    got = b""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.settimeout(2)
        for frame in (struct.pack("!I", len(payload)) + payload, struct.pack("!i", 1)):
            try:
                s.sendall(frame)
                s.sendall(struct.pack("!IQ", len(payload), 0) + payload)
            except OSError:
                break
        try:
            while chunk := s.recv(4096):
                got += chunk
        except OSError:
            pass
    return got


def _listening(inodes: set) -> list[tuple[str, int]]:
    """Return (address hex, port) of the listening TCP sockets among ``inodes``."""
    out = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(name):
            continue
        with open(name) as fh:
            next(fh)
            for line in fh:
                f = line.split()
                addr, port = f[1].split(":")
                if f[3] == "0A" and f[9] in inodes:
                    out.append((addr, int(port, 16)))
    return out


def _my_socket_inodes() -> set:
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


@pytest.fixture
def keydir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv(_wire.SECRET_ENV, raising=False)
    return tmp_path


def test_store_refuses_an_unauthenticated_pickle(keydir):
    canary = str(keydir / "canary")
    master = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=TD)
    try:
        reply = _attack(master.port, canary)
        time.sleep(0.1)
        assert not os.path.exists(canary)
        assert b"x" not in reply[20:]  # only the server's challenge came back
        master.set("k", "v")  # the store still serves its own clients
        assert master.get("k") == b"v"
        assert master.num_keys() == 2  # "init/" and "k": nothing the attacker sent
    finally:
        master.close()


def test_store_client_with_the_wrong_secret_is_refused(keydir, monkeypatch):
    master = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=TD)
    try:
        path = keydir / f"ember-dist-{os.getuid()}" / f"store-{master.port}.key"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        # the same user finds the secret in the key file
        client = dist.TCPStore("127.0.0.1", master.port, timeout=TD)
        client.set("a", b"1")
        assert master.get("a") == b"1"
        client.close()
        monkeypatch.setenv(_wire.SECRET_ENV, "00" * 32)
        with pytest.raises(dist.DistNetworkError, match="does not hold the job's secret"):
            dist.TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=0.3))
    finally:
        master.close()
    assert not path.exists()  # the master removes its key file


def test_mesh_refuses_unauthenticated_and_wrong_rank_peers(keydir):
    canary = str(keydir / "canary")
    store = dist.HashStore()
    meshes: dict = {}
    t0 = threading.Thread(target=lambda: meshes.__setitem__(0, Mesh(store, 0, 2, 10.0)))
    t0.start()
    port = int(store.get("ember_mesh/0"))
    secret = bytes.fromhex(store.get("ember_mesh/secret").decode())
    _attack(port, canary)
    # a peer with the secret may still only claim a rank the listener waits for
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        _wire.client_handshake(s, secret, _wire.ROLE_MESH, 7, 2)
        s.settimeout(2)
        assert s.recv(1) == b""  # dropped
    meshes[1] = Mesh(store, 1, 2, 10.0)
    t0.join(10)
    assert not os.path.exists(canary)
    a = np.arange(10.0)
    meshes[1].send(0, (1, 0, 1, 0), a)
    assert meshes[0].recv((1,), (1, 0, 1, 0))[1] == a.tobytes()
    for m in meshes.values():
        m.close()


def test_nothing_listens_beyond_loopback(keydir):
    store = dist.TCPStore("127.0.0.1", 0, None, True, timeout=TD)
    clients = [dist.TCPStore("127.0.0.1", store.port, timeout=TD) for _ in range(3)]
    meshes: dict = {}

    def make(rank):
        meshes[rank] = Mesh(clients[rank], rank, 3, 10.0)

    threads = [threading.Thread(target=make, args=(r,)) for r in range(3)]
    threads[0].start()
    store.wait(["ember_mesh/0"])
    ours = {store.port, int(store.get("ember_mesh/0"))}
    # (other tests in this process may hold torch's stores, which listen everywhere)
    listening = [(a, p) for a, p in _listening(_my_socket_inodes()) if p in ours]
    assert {p for _, p in listening} == ours
    assert all(addr == "0100007F" for addr, _ in listening), listening
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(10)
    assert len(meshes) == 3
    for m in meshes.values():
        m.close()
    for c in [*clients, store]:
        c.close()


def test_a_remote_master_addr_points_to_mpi(keydir, monkeypatch):
    with pytest.raises(ValueError, match="Multi-host runs go through MPI"):
        dist.TCPStore("192.0.2.1", 29500, 2, False, timeout=TD)
    monkeypatch.setenv("MASTER_ADDR", "192.0.2.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(ValueError, match="mpiexec"):
        dist.init_process_group("gloo", rank=1, world_size=2)
    assert not dist.is_initialized()
    assert _wire.loopback_host("localhost") == "127.0.0.1"


def test_frames_round_trip_and_reject_garbage():
    values = [None, True, False, -3, 2.5, "k/é", b"\x00\xff", ["a", "b"]]
    assert _wire.unpack_values(_wire.pack_values(values)) == values
    for bad in (b"\x63", b"\x05\x00\x00\x00\x09ab", pickle.dumps(("set", ()))):
        with pytest.raises(ValueError):
            _wire.unpack_values(bad)


def test_file_store_is_private_and_not_pickled(tmp_path):
    path = tmp_path / "fs"
    store = dist.FileStore(str(path), 1)
    store.set("key", b"value")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert b"value" in path.read_bytes() and not path.read_bytes().startswith(b"\x80")
    assert store.get("key") == b"value"
    store.close()


def _thread_groups(n: int) -> list:
    from ember.distributed.distributed_c10d import ProcessGroup

    store, meshes = dist.HashStore(), {}

    def make(rank):
        meshes[rank] = Mesh(store, rank, n, 10.0)

    threads = [threading.Thread(target=make, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return [ProcessGroup(meshes[r], list(range(n)), 0, "gloo", 10.0) for r in range(n)]


@pytest.mark.parametrize("n", [2, 3])
def test_ring_all_reduce_of_large_tensors(n):
    import ember

    groups = _thread_groups(n)
    size = 100_003  # not a multiple of n
    base = np.random.default_rng(0).standard_normal((n, size)).astype(np.float32)
    cases = [("SUM", np.float32), ("AVG", np.float32), ("MAX", np.float32), ("SUM", "bf16")]
    results: dict = {}

    def work(rank):
        for op, dt in cases:
            a = base[rank].astype(ember.bfloat16.np) if dt == "bf16" else base[rank].copy()
            t = ember.from_numpy(a)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=groups[rank])
            results[rank, op, str(dt)] = t._data.astype(np.float32)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    for op, dt in cases:
        got = [results[r, op, str(dt)] for r in range(n)]
        assert all((g == got[0]).all() for g in got)  # the same bits on every rank
        want = {"SUM": base.sum(0), "AVG": base.mean(0), "MAX": base.max(0)}[op]
        tol = 0.05 if dt == "bf16" else 1e-5
        np.testing.assert_allclose(got[0], want, rtol=tol, atol=tol)
    for g in groups:
        g._mesh.close()


def test_inbox_is_bounded(keydir, monkeypatch):
    """Messages nobody asked for yet wait in the receiver's inbox up to its bound; past it the
    receiving thread stops reading that peer (which waits in the socket) until the inbox
    drains, and every message still arrives, in order."""
    import threading
    import time

    import numpy as np

    import ember
    import ember.distributed as dist
    from ember.distributed import _mesh
    from ember.distributed._mesh import Mesh
    from ember.distributed.distributed_c10d import ProcessGroup

    monkeypatch.setattr(_mesh, "_INBOX_BYTES", 2500)
    store, results, errors = dist.HashStore(), [None, None], []

    def main(rank):
        try:
            mesh = Mesh(store, rank, 2, 10.0)
            group = ProcessGroup(mesh, [0, 1], 51, "gloo", 10.0)
            try:
                if rank == 0:
                    works = [
                        dist.isend(ember.full((250,), float(tag)), 1, group=group, tag=tag)
                        for tag in range(1, 5)
                    ]
                    for w in works:
                        w.wait()
                    results[0] = True
                else:
                    time.sleep(0.5)  # the four 1000-byte messages arrive unasked
                    queued = mesh.queued[0]
                    got = []
                    for tag in range(1, 5):
                        t = ember.zeros(250)
                        dist.recv(t, 0, group=group, tag=tag)
                        got.append(np.unique(t.numpy()).tolist())
                    results[1] = (queued, got)
            finally:
                mesh.close()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=main, args=(r,), daemon=True) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    if errors:
        raise errors[0]
    queued, got = results[1]
    assert 0 < queued <= 2500  # two messages at most, not four
    assert got == [[1.0], [2.0], [3.0], [4.0]]
