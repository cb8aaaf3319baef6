"""The transport under ember's "gloo" backend: one TCP connection between every pair of ranks.

At start-up each rank listens on a free port and publishes ``host:port`` in the rendezvous
store; rank ``r`` then connects to every lower rank and accepts a connection from every higher
one (each connector first sends its rank). Every connection has a receiving thread that reads
whole messages into an inbox keyed by ``(peer, key)``, so a sender never blocks on a receiver
that is busy elsewhere and messages of different collectives or tags never mix: collectives use
the key ``("c", group id, sequence number)``, point-to-point messages ``("p", tag)``.

A message is a header ``struct("!IQ")`` (length of the pickled key, number of payload bytes),
the pickled key, then the payload: an array's raw bytes. The receiver knows the dtype and
shape from its own tensor, as gloo does.
"""

from __future__ import annotations

import collections
import pickle
import socket
import struct
import threading
import time

from ember.distributed.store import DistBackendError, connect, recv_exact

_HEADER = struct.Struct("!IQ")


class Mesh:
    """Connections from this rank to every other rank, with their inboxes."""

    def __init__(self, store, rank: int, world_size: int, timeout: float) -> None:
        self.rank = rank
        self.world_size = world_size
        self.timeout = timeout
        self.cond = threading.Condition()
        self.inbox: dict[tuple, collections.deque] = {}
        self.socks: dict[int, socket.socket] = {}
        self.addrs: dict[int, str] = {}
        self.closed_peers: set[int] = set()
        self.send_locks = {p: threading.Lock() for p in range(world_size)}
        self.shutting_down = False
        if world_size == 1:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("", 0))
        listener.listen(world_size)
        host = store.local_address() if hasattr(store, "local_address") else "127.0.0.1"
        port = listener.getsockname()[1]
        store.set(f"ember_mesh/{rank}", f"{host}:{port}")
        # read every address before connecting: once rank 0 accepted everyone, nobody needs
        # the store (which rank 0 hosts) any more
        peers = [store.get(f"ember_mesh/{peer}").decode().rsplit(":", 1) for peer in range(rank)]
        for peer, (peer_host, peer_port) in enumerate(peers):
            sock = connect(peer_host, int(peer_port), timeout)
            sock.sendall(struct.pack("!i", rank))
            self._add(peer, sock, f"[{peer_host}]:{peer_port}")
        listener.settimeout(timeout)
        try:
            for _ in range(world_size - 1 - rank):
                try:
                    sock, addr = listener.accept()
                except TimeoutError:
                    raise DistBackendError(
                        f"Timed out after {int(timeout * 1000)}ms waiting for the other ranks "
                        "to connect"
                    ) from None
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                (peer,) = struct.unpack("!i", recv_exact(sock, 4))
                self._add(peer, sock, f"[{addr[0]}]:{addr[1]}")
        finally:
            listener.close()

    def _add(self, peer: int, sock: socket.socket, addr: str) -> None:
        self.socks[peer] = sock
        self.addrs[peer] = addr
        threading.Thread(
            target=self._receive, args=(peer, sock), daemon=True, name=f"ember-recv-{peer}"
        ).start()

    def _receive(self, peer: int, sock: socket.socket) -> None:
        try:
            while True:
                klen, nbytes = _HEADER.unpack(recv_exact(sock, _HEADER.size))
                key = pickle.loads(recv_exact(sock, klen))
                payload = recv_exact(sock, nbytes) if nbytes else bytearray()
                with self.cond:
                    self.inbox.setdefault((peer, key), collections.deque()).append(payload)
                    self.cond.notify_all()
        except (ConnectionError, OSError, EOFError):
            with self.cond:
                self.closed_peers.add(peer)
                self.cond.notify_all()

    def send(self, peer: int, key: tuple, payload) -> None:
        """Send ``payload`` (bytes-like, e.g. a contiguous array) to ``peer`` under ``key``."""
        k = pickle.dumps(key)
        view = memoryview(payload).cast("B")
        sock = self.socks.get(peer)
        if sock is None or peer in self.closed_peers:
            raise DistBackendError(f"Connection closed by peer {self.addrs.get(peer, peer)}")
        try:
            with self.send_locks[peer]:
                sock.sendall(_HEADER.pack(len(k), view.nbytes) + k)
                if view.nbytes:
                    sock.sendall(view)
        except OSError:
            raise DistBackendError(f"Connection closed by peer {self.addrs[peer]}") from None

    def poll(self, peers, key: tuple) -> bool:
        """Return whether a message under ``key`` from one of ``peers`` has arrived."""
        with self.cond:
            return any(self.inbox.get((peer, key)) for peer in peers)

    def recv(self, peers, key: tuple, timeout: float | None = None) -> tuple[int, bytearray]:
        """Return ``(peer, payload)`` of the first message under ``key`` from one of ``peers``,
        waiting up to ``timeout`` seconds (the group's timeout)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for peer in peers:
                    q = self.inbox.get((peer, key))
                    if q:
                        payload = q.popleft()
                        if not q:
                            del self.inbox[(peer, key)]
                        return peer, payload
                for peer in peers:
                    if peer in self.closed_peers:
                        raise RuntimeError(
                            f"Connection closed by peer {self.addrs.get(peer, peer)}"
                        )
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(
                        f"Timed out waiting {int(round(timeout * 1000))}ms for recv operation "
                        "to complete"
                    )
                self.cond.wait(left)

    def close(self) -> None:
        # half-close only: what was sent still arrives, and no unread input turns the close
        # into a reset; each receiving thread drops its socket at the peer's end of stream
        for sock in self.socks.values():
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        self.socks.clear()
