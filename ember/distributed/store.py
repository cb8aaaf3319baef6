"""Key-value stores for rendezvous, as ``torch.distributed``'s ``Store`` family.

:class:`TCPStore` is a server (a thread of the process created with ``is_master=True``) holding a
dict of byte strings, and clients that talk to it over one TCP connection each. ``get`` and
``wait`` block until the keys exist or the store's timeout passes (torch's ``DistStoreError``
"wait timeout after ...ms, keys: ..."); ``add`` is an atomic counter. :class:`HashStore` is the
same dict in-process; :class:`PrefixStore` puts every key under ``prefix/``.

Wire format (client -> server and back): a 4-byte big-endian length, then a pickled tuple.
"""

from __future__ import annotations

import math
import pickle
import socket
import struct
import threading
import time
from datetime import timedelta

__all__ = [
    "DistError",
    "DistBackendError",
    "DistNetworkError",
    "DistStoreError",
    "Store",
    "FileStore",
    "HashStore",
    "PrefixStore",
    "TCPStore",
]

_DEFAULT_TIMEOUT = timedelta(seconds=300)


class DistError(RuntimeError):
    """Exception raised when an error occurs in the distributed library."""


class DistBackendError(DistError):
    """Exception raised when a backend error occurs in distributed."""


class DistNetworkError(DistError):
    """Exception raised when a network error occurs in distributed."""


class DistStoreError(DistError):
    """Exception raised when an error occurs in the distributed store."""


def _as_bytes(value) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _ms(td: timedelta) -> int:
    return int(round(td.total_seconds() * 1000))


class _Table:
    """The dict behind a store, with a condition to wait for keys."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.cond = threading.Condition()

    def set(self, key, value):
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def get(self, key, timeout: float):
        self.wait([key], timeout)
        with self.cond:
            return self.data[key]

    def wait(self, keys, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not all(k in self.data for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DistStoreError(
                        f"wait timeout after {int(round(timeout * 1000))}ms, keys: "
                        + ", ".join("/" + k for k in keys)
                    )
                self.cond.wait(left)

    def add(self, key, amount: int) -> int:
        with self.cond:
            value = int(self.data.get(key, b"0")) + amount
            self.data[key] = str(value).encode()
            self.cond.notify_all()
            return value

    def compare_set(self, key, expected, desired):
        with self.cond:
            cur = self.data.get(key)
            if (cur is None and expected == b"") or cur == expected:
                self.data[key] = desired
                self.cond.notify_all()
                return desired
            return expected if cur is None else cur

    def check(self, keys) -> bool:
        with self.cond:
            return all(k in self.data for k in keys)

    def delete_key(self, key) -> bool:
        with self.cond:
            return self.data.pop(key, None) is not None

    def num_keys(self) -> int:
        with self.cond:
            return len(self.data)

    def call(self, name, args):
        return getattr(self, name)(*args)


class Store:
    """Base class of the key-value stores used for rendezvous."""

    def __init__(self, timeout: timedelta = _DEFAULT_TIMEOUT) -> None:
        self._timeout = timeout

    @property
    def timeout(self) -> timedelta:
        """Return the timeout of ``get`` and ``wait``."""
        return self._timeout

    def set_timeout(self, timeout: timedelta) -> None:
        """Set the timeout of ``get`` and ``wait``."""
        self._timeout = timeout

    def _call(self, name: str, *args):
        raise NotImplementedError

    def set(self, key: str, value) -> None:
        """Set ``key`` to ``value`` (str or bytes)."""
        self._call("set", key, _as_bytes(value))

    def get(self, key: str) -> bytes:
        """Return the value of ``key``, waiting up to the store's timeout for it to be set."""
        return self._call("get", key, self._timeout.total_seconds())

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer counter ``key`` (created at 0) and return its value."""
        return self._call("add", key, int(amount))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value``; return its value."""
        return self._call("compare_set", key, _as_bytes(expected_value), _as_bytes(desired_value))

    def wait(self, keys: list[str], timeout: timedelta | None = None) -> None:
        """Wait until every key in ``keys`` is set, up to ``timeout`` (the store's default)."""
        t = self._timeout if timeout is None else timeout
        self._call("wait", list(keys), t.total_seconds())

    def check(self, keys: list[str]) -> bool:
        """Return whether every key in ``keys`` is set, without waiting."""
        return self._call("check", list(keys))

    def delete_key(self, key: str) -> bool:
        """Delete ``key``; return whether it existed."""
        return self._call("delete_key", key)

    def num_keys(self) -> int:
        """Return the number of keys set."""
        return self._call("num_keys")


class HashStore(Store):
    """A store held in this process (for threads sharing it)."""

    def __init__(self) -> None:
        super().__init__()
        self._table = _Table()

    def _call(self, name, *args):
        return self._table.call(name, args)


class PrefixStore(Store):
    """A store that puts every key of ``store`` under ``prefix + "/"``."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self._prefix = prefix
        self.underlying_store = store

    def _key(self, key: str) -> str:
        return f"{self._prefix}/{key}"

    def set(self, key, value):
        self.underlying_store.set(self._key(key), value)

    def get(self, key):
        return self.underlying_store.get(self._key(key))

    def add(self, key, amount):
        return self.underlying_store.add(self._key(key), amount)

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._key(key), expected_value, desired_value)

    def wait(self, keys, timeout=None):
        self.underlying_store.wait([self._key(k) for k in keys], timeout)

    def check(self, keys):
        return self.underlying_store.check([self._key(k) for k in keys])

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._key(key))

    def num_keys(self):
        return self.underlying_store.num_keys()

    @property
    def timeout(self):
        return self.underlying_store.timeout

    def set_timeout(self, timeout):
        self.underlying_store.set_timeout(timeout)


class FileStore(Store):
    """A store kept in a file that every process of one machine (or of a shared file system)
    opens; the file is removed when the last of them closes. Each operation reads and writes
    the whole table under an exclusive ``flock``."""

    def __init__(self, file_name: str, world_size: int = -1) -> None:
        super().__init__()
        self.path = file_name
        self._closed = False
        open(file_name, "ab").close()
        self.add("__ember_filestore_refs__", 1)

    def _locked(self, name, args):
        import fcntl

        with open(self.path, "r+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            raw = fh.read()
            table = _Table()
            if raw:
                table.data = pickle.loads(raw)
            before = dict(table.data)
            value = table.call(name, args)
            if table.data != before:
                fh.seek(0)
                fh.truncate()
                fh.write(pickle.dumps(table.data))
            return value

    def _call(self, name, *args):
        if name not in ("get", "wait"):
            return self._locked(name, args)
        keys = [args[0]] if name == "get" else args[0]
        deadline = time.monotonic() + args[1]
        while not self._locked("check", (keys,)):
            if time.monotonic() >= deadline:
                if name == "wait":
                    raise RuntimeError("Wait timeout")
                ms = int(round(args[1] * 1000))
                raise RuntimeError(f"Timeout waiting for key: {keys[0]} after {ms} ms")
            time.sleep(0.01)
        return self._locked(name, (args[0], 0.0))

    def close(self) -> None:
        """Leave the store; the last process to leave removes the file."""
        if self._closed:
            return
        self._closed = True
        import os

        if self.add("__ember_filestore_refs__", -1) <= 0:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass


# ------------------------------------------------------------------------------------ TCP
def send_msg(sock: socket.socket, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(struct.pack("!I", len(data)) + data)


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("connection closed")
        got += k
    return buf


def recv_msg(sock: socket.socket):
    (n,) = struct.unpack("!I", recv_exact(sock, 4))
    return pickle.loads(recv_exact(sock, n))


class _StoreServer:
    """The master's thread accepting clients, one handler thread per connection."""

    def __init__(self, host: str, port: int) -> None:
        self.table = _Table()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError as e:
            sock.close()
            raise DistNetworkError(
                "The server socket has failed to listen on any local network address. "
                f"port: {port}, useIpv6: false, code: -{e.errno}, name: "
                f"{_errno_name(e.errno)}, message: {(e.strerror or '').lower()}"
            ) from None
        sock.listen(128)
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name="ember-store").start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    name, args = recv_msg(conn)
                except (ConnectionError, OSError, EOFError):
                    return
                try:
                    reply = (True, self.table.call(name, args))
                except Exception as e:  # sent back and raised by the client
                    reply = (False, e)
                try:
                    send_msg(conn, reply)
                except OSError:
                    return

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _errno_name(errno: int | None) -> str:
    import errno as errno_mod

    return errno_mod.errorcode.get(errno or 0, "UNKNOWN")


def connect(host: str, port: int, timeout: float) -> socket.socket:
    """Return a socket connected to ``host:port``, retrying until ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=max(0.1, timeout))
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError:
            if time.monotonic() + delay > deadline:
                raise DistNetworkError(
                    f"The client socket has timed out after {_ms(timedelta(seconds=timeout))}ms"
                    f" while trying to connect to ({host}, {port})."
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


class TCPStore(Store):
    """A store served over TCP by the process created with ``is_master=True``; the others are
    clients connecting to ``host_name:port``. ``port=0`` on the master picks a free port
    (read it back from :attr:`port`)."""

    def __init__(
        self,
        host_name: str,
        port: int,
        world_size: int | None = None,
        is_master: bool = False,
        timeout: timedelta = _DEFAULT_TIMEOUT,
        wait_for_workers: bool = True,
        multi_tenant: bool = False,
        master_listen_fd: int | None = None,
        use_libuv: bool = True,
    ) -> None:
        super().__init__(timeout)
        self.host = host_name
        self._server = _StoreServer(host_name, port) if is_master else None
        self.port = self._server.port if is_master else port
        self.libuvBackend = use_libuv
        self._lock = threading.Lock()
        addr = "127.0.0.1" if is_master else host_name
        self._sock = connect(addr, self.port, timeout.total_seconds())
        if world_size is not None and wait_for_workers:
            # every client checks in; the master waits for all of them (torch's behaviour)
            self.add("init/", 1)
            if is_master:
                self._wait_count("init/", world_size)

    def _wait_count(self, key: str, n: int) -> None:
        deadline = time.monotonic() + self._timeout.total_seconds()
        while (joined := int(self._call("get", key, self._timeout.total_seconds()))) < n:
            if time.monotonic() > deadline:
                seconds = max(1, math.ceil(self._timeout.total_seconds()))
                raise DistStoreError(
                    f"Timed out after {seconds} seconds waiting for clients. {joined}/{n} "
                    "clients joined."
                )
            time.sleep(0.005)

    def local_address(self) -> str:
        """Return this process's address as the master sees it."""
        return self._sock.getsockname()[0]

    def _call(self, name, *args):
        with self._lock:
            try:
                send_msg(self._sock, (name, args))
                ok, value = recv_msg(self._sock)
            except (ConnectionError, OSError) as e:
                raise DistNetworkError(f"TCPStore connection to the master failed: {e}") from None
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Close the connection (and stop the server on the master)."""
        try:
            self._sock.close()
        finally:
            if self._server is not None:
                self._server.close()
                self._server = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
