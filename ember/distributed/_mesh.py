"""The local transport under ember's "gloo" backend: one TCP connection between every pair of
ranks of one machine.

At start-up each rank listens on a free port of ``127.0.0.1`` and publishes the port in the
rendezvous store; rank ``r`` then connects to every lower rank and accepts a connection from
every higher one. Each connection starts with the job-secret handshake of :mod:`._wire`, in
which the connector proves it holds the secret and names its rank; the acceptor drops a
connection that fails it, claims a rank that is not one of the higher ranks or that already
connected. Nothing read from a socket is unpickled.

Every connection has a receiving thread that reads whole messages, so a sender never blocks on
a receiver that is busy elsewhere and messages of different collectives or tags never mix. A
message is a fixed header ``struct("!bqqqQ")`` -- the key (kind, group id, sequence number or
tag, part) and the number of payload bytes -- then the payload: an array's raw bytes. The
receiver knows the dtype and shape from its own tensor, as gloo does. A receiver that posted a
buffer for a key (:meth:`Mesh.recv_into`) gets the payload written straight into it with
``recv_into``; other messages wait in an inbox, whose size per peer is bounded: the receiving
thread stops reading a peer (which then waits in ``send``) until the inbox drains.
"""

from __future__ import annotations

import collections
import os
import socket
import struct
import threading
import time

from ember.distributed import _wire
from ember.distributed.store import DistBackendError, connect_authenticated

_HEADER = struct.Struct("!bqqqQ")
_INBOX_BYTES = int(os.environ.get("EMBER_DIST_INBOX_MB", "1024")) * 1024**2


class _Posted:
    """A buffer a receiver posted for the next message under one key."""

    __slots__ = ("view", "done", "error")

    def __init__(self, view: memoryview) -> None:
        self.view = view
        self.done = False
        self.error: str | None = None


class Mesh:
    """Authenticated connections from this rank to every other rank, with their inboxes."""

    def __init__(self, store, rank: int, world_size: int, timeout: float) -> None:
        self.rank = rank
        self.world_size = world_size
        self.timeout = timeout
        self.cond = threading.Condition()
        self.inbox: dict[tuple, collections.deque] = {}
        self.posted: dict[tuple, collections.deque] = {}
        self.queued = collections.Counter()  # bytes waiting in the inbox, per peer
        self.inflight: dict[int, tuple] = {}  # key of the message being read into the inbox
        self.socks: dict[int, socket.socket] = {}
        self.addrs: dict[int, str] = {}
        self.closed_peers: set[int] = set()
        self.send_locks = {p: threading.Lock() for p in range(world_size)}
        if world_size == 1:
            return
        # one secret per group, shared through the (authenticated or 0600) store
        secret = bytes.fromhex(
            store.compare_set("ember_mesh/secret", "", _wire.new_secret().hex()).decode()
        )
        listener = _wire.listen_socket(0, world_size)
        port = listener.getsockname()[1]
        store.set(f"ember_mesh/{rank}", str(port))
        # read every address before connecting: once rank 0 accepted everyone, nobody needs
        # the store (which rank 0 hosts) any more
        ports = [int(store.get(f"ember_mesh/{peer}")) for peer in range(rank)]
        try:
            for peer, peer_port in enumerate(ports):
                sock = connect_authenticated(
                    "127.0.0.1", peer_port, timeout, lambda: secret, _wire.ROLE_MESH, rank
                )
                self._add(peer, sock, f"[127.0.0.1]:{peer_port}")
            self._accept_higher(listener, secret, timeout)
        finally:
            listener.close()

    def _accept_higher(self, listener: socket.socket, secret: bytes, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        waiting = set(range(self.rank + 1, self.world_size))
        while waiting:
            left = deadline - time.monotonic()
            listener.settimeout(max(0.001, left))
            try:
                sock, addr = listener.accept()
            except TimeoutError:
                raise DistBackendError(
                    f"Timed out after {int(timeout * 1000)}ms waiting for the other ranks "
                    "to connect"
                ) from None
            try:
                peer = _wire.server_handshake(
                    sock, secret, _wire.ROLE_MESH, min(max(left, 0.1), 10.0)
                )
                if peer not in waiting:
                    raise _wire.AuthenticationError(f"unexpected rank {peer}")
            except (OSError, ValueError, struct.error):
                sock.close()  # not a rank of this job (or a duplicate): dropped
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            waiting.discard(peer)
            self._add(peer, sock, f"[{addr[0]}]:{addr[1]}")

    def _add(self, peer: int, sock: socket.socket, addr: str) -> None:
        self.socks[peer] = sock
        self.addrs[peer] = addr
        _wire.start_service_thread(self._receive, peer, sock)

    def _receive(self, peer: int, sock: socket.socket) -> None:
        try:
            while True:
                kind, gid, a, b, nbytes = _HEADER.unpack(_wire.recv_exact(sock, _HEADER.size))
                key = (kind, gid, a, b)
                with self.cond:
                    slots = self.posted.get((peer, key))
                    slot = slots.popleft() if slots else None
                    if slots is not None and not slots:
                        del self.posted[(peer, key)]
                    while slot is None and self.queued[peer] + nbytes > _INBOX_BYTES:
                        if self.queued[peer] == 0:
                            break  # one message larger than the bound still goes through
                        self.cond.wait()
                    if slot is None:
                        self.inflight[peer] = key
                if slot is not None:
                    if slot.view.nbytes == nbytes:
                        _wire.recv_into_exact(sock, slot.view)
                    else:
                        _wire.recv_exact(sock, nbytes)
                        slot.error = (
                            f"rank {peer} sent {nbytes} bytes where {slot.view.nbytes} were "
                            "expected: the tensors' shapes or dtypes differ between ranks"
                        )
                    with self.cond:
                        slot.done = True
                        self.cond.notify_all()
                    continue
                payload = _wire.recv_exact(sock, nbytes) if nbytes else bytearray()
                with self.cond:
                    self.inbox.setdefault((peer, key), collections.deque()).append(payload)
                    self.queued[peer] += nbytes
                    del self.inflight[peer]
                    self.cond.notify_all()
        except (ConnectionError, OSError, EOFError):
            with self.cond:
                self.closed_peers.add(peer)
                self.cond.notify_all()

    def send(self, peer: int, key: tuple, payload) -> None:
        """Send ``payload`` (bytes-like, e.g. a contiguous array) to ``peer`` under ``key``
        (four ints: kind, group id, sequence number or tag, part)."""
        view = memoryview(payload).cast("B")
        sock = self.socks.get(peer)
        if sock is None or peer in self.closed_peers:
            raise DistBackendError(f"Connection closed by peer {self.addrs.get(peer, peer)}")
        try:
            with self.send_locks[peer]:
                sock.sendall(_HEADER.pack(*key, view.nbytes))
                if view.nbytes:
                    sock.sendall(view)
        except OSError:
            raise DistBackendError(f"Connection closed by peer {self.addrs[peer]}") from None

    def poll(self, peers, key: tuple) -> bool:
        """Return whether a message under ``key`` from one of ``peers`` has arrived."""
        with self.cond:
            return any(self.inbox.get((peer, key)) for peer in peers)

    def _take(self, peer: int, key: tuple):
        q = self.inbox.get((peer, key))
        if not q:
            return None
        payload = q.popleft()
        if not q:
            del self.inbox[(peer, key)]
        self.queued[peer] -= len(payload)
        self.cond.notify_all()
        return payload

    def _wait(self, peers, deadline: float, timeout: float) -> None:
        for peer in peers:
            if peer in self.closed_peers:
                raise RuntimeError(f"Connection closed by peer {self.addrs.get(peer, peer)}")
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(
                f"Timed out waiting {int(round(timeout * 1000))}ms for recv operation to complete"
            )
        self.cond.wait(left)

    def recv(self, peers, key: tuple, timeout: float | None = None) -> tuple[int, bytearray]:
        """Return ``(peer, payload)`` of the first message under ``key`` from one of ``peers``,
        waiting up to ``timeout`` seconds (the group's timeout)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for peer in peers:
                    payload = self._take(peer, key)
                    if payload is not None:
                        return peer, payload
                self._wait(peers, deadline, timeout)

    def recv_into(self, peer: int, key: tuple, out, timeout: float | None = None) -> None:
        """Receive the next message under ``key`` from ``peer`` into the writable buffer
        ``out`` (straight from the socket when it had not arrived yet)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        view = memoryview(out).cast("B")
        with self.cond:
            # a message already read (or being read) into the inbox comes first
            while (payload := self._take(peer, key)) is None and self.inflight.get(peer) == key:
                self._wait((peer,), deadline, timeout)
            if payload is not None:
                if len(payload) != view.nbytes:
                    raise RuntimeError(
                        f"rank {peer} sent {len(payload)} bytes where {view.nbytes} were "
                        "expected: the tensors' shapes or dtypes differ between ranks"
                    )
                view[:] = payload
                return
            slot = _Posted(view)
            self.posted.setdefault((peer, key), collections.deque()).append(slot)
            try:
                while not slot.done:
                    self._wait((peer,), deadline, timeout)
            except BaseException:
                q = self.posted.get((peer, key))
                if q is not None and slot in q:
                    q.remove(slot)
                raise
        if slot.error is not None:
            raise RuntimeError(slot.error)

    def close(self) -> None:
        # half-close only: what was sent still arrives, and no unread input turns the close
        # into a reset; each receiving thread drops its socket at the peer's end of stream
        for sock in self.socks.values():
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        self.socks.clear()
