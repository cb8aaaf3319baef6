"""Key-value stores for rendezvous, as ``torch.distributed``'s ``Store`` family.

:class:`TCPStore` is a server (a thread of the process created with ``is_master=True``) holding a
dict of byte strings, and clients that talk to it over one TCP connection each. ``get`` and
``wait`` block until the keys exist or the store's timeout passes (torch's ``DistStoreError``
"wait timeout after ...ms, keys: ..."); ``add`` is an atomic counter. :class:`HashStore` is the
same dict in-process; :class:`PrefixStore` puts every key under ``prefix/``.

Wire format (client -> server and back): a 4-byte big-endian length, then the operation's name
and arguments as :func:`._wire.pack_values` frames -- never pickles. The TCP store listens on
127.0.0.1 only and serves a client only after the job-secret handshake of :mod:`._wire`.
:class:`FileStore` keeps the same encoding in a file created with mode 0600.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import threading
import time
from datetime import timedelta

from ember.distributed import _wire

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
        # only this user may read the file: it holds the job's secret
        os.close(os.open(file_name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        self.add("__ember_filestore_refs__", 1)

    def _locked(self, name, args):
        import fcntl

        with open(self.path, "r+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            raw = fh.read()
            table = _Table()
            if raw:
                items = _wire.unpack_values(raw)
                table.data = dict(zip(items[::2], items[1::2], strict=True))
            before = dict(table.data)
            value = table.call(name, args)
            if table.data != before:
                fh.seek(0)
                fh.truncate()
                fh.write(_wire.pack_values([x for kv in table.data.items() for x in kv]))
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
        if self.add("__ember_filestore_refs__", -1) <= 0:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass


# ------------------------------------------------------------------------------------ TCP
_OPS = ("set", "get", "wait", "add", "compare_set", "check", "delete_key", "num_keys")
_ERRORS = {c.__name__: c for c in (DistError, DistStoreError, DistNetworkError, DistBackendError)}
_ERRORS.update(RuntimeError=RuntimeError, ValueError=ValueError, TypeError=TypeError)
_HANDSHAKE_SECONDS = 10.0


class _StoreServer:
    """The master's thread accepting clients, one handler thread per connection. A client is
    served only after proving it holds the job's secret; requests are binary frames
    (:mod:`._wire`), checked against the store's operations."""

    def __init__(self, port: int, secret: bytes) -> None:
        self.table = _Table()
        self.secret = secret
        try:
            sock = _wire.listen_socket(port)
        except OSError as e:
            raise DistNetworkError(
                "The server socket has failed to listen on any local network address. "
                f"port: {port}, useIpv6: false, code: -{e.errno}, name: "
                f"{_errno_name(e.errno)}, message: {(e.strerror or '').lower()}"
            ) from None
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.closed = False
        _wire.start_service_thread(self._accept)

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _wire.start_service_thread(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                _wire.server_handshake(conn, self.secret, _wire.ROLE_STORE, _HANDSHAKE_SECONDS)
            except (OSError, ValueError, struct.error):
                return  # not one of ours: dropped before anything it sent is interpreted
            while True:
                try:
                    request = _wire.unpack_values(_wire.recv_frame(conn))
                except (OSError, ValueError):
                    return
                try:
                    if not request or request[0] not in _OPS:
                        raise ValueError(f"unknown store operation {request[:1]}")
                    reply = [True, self.table.call(request[0], request[1:])]
                except Exception as e:  # sent back and raised by the client
                    name = type(e).__name__ if type(e).__name__ in _ERRORS else "RuntimeError"
                    reply = [False, name, str(e)]
                try:
                    _wire.send_frame(conn, _wire.pack_values(reply))
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


def connect_authenticated(
    host: str, port: int, timeout: float, secret_of, role: int, rank: int
) -> socket.socket:
    """Return a socket to ``host:port`` that passed the job-secret handshake as ``rank``.

    ``secret_of()`` returns the secret (None while it is not known yet, e.g. before the master
    wrote its key file); a refused handshake (a stale key file) is retried until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        sock = connect(host, port, max(0.0, deadline - time.monotonic()))
        secret = secret_of()
        if secret is not None:
            try:
                _wire.client_handshake(sock, secret, role, rank, _HANDSHAKE_SECONDS)
                return sock
            except (OSError, ValueError, struct.error):
                pass
        sock.close()
        if time.monotonic() >= deadline:
            raise DistNetworkError(
                f"Connection to ({host}, {port}) was refused after {int(timeout * 1000)}ms: "
                "this process does not hold the job's secret. Start every rank with the same "
                f"{_wire.SECRET_ENV} (python -m ember.distributed.run sets it) or as the same "
                "user on the same machine as the master, which publishes it in a 0600 key file."
            )
        time.sleep(0.02)


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
        addr = _wire.loopback_host(host_name)  # ember's own transport stays on this machine
        secret = _wire.env_secret()
        published = secret is None and is_master
        if published:
            secret = _wire.new_secret()
        self._server = _StoreServer(port, secret) if is_master else None
        self.port = self._server.port if is_master else port
        self._published = secret if published else None
        if published:
            _wire.publish_secret(self.port, secret)
        self.libuvBackend = use_libuv
        self._lock = threading.Lock()
        port_ = self.port
        self._sock = connect_authenticated(
            addr,
            port_,
            timeout.total_seconds(),
            (lambda: secret) if secret is not None else (lambda: _wire.read_secret(port_)),
            _wire.ROLE_STORE,
            -1,
        )
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
        """Return this process's address as the master sees it (always loopback)."""
        return self._sock.getsockname()[0]

    def _call(self, name, *args):
        with self._lock:
            try:
                _wire.send_frame(self._sock, _wire.pack_values([name, *args]))
                reply = _wire.unpack_values(_wire.recv_frame(self._sock))
            except (ConnectionError, OSError, ValueError) as e:
                raise DistNetworkError(f"TCPStore connection to the master failed: {e}") from None
        if not reply[0]:
            raise _ERRORS.get(reply[1], RuntimeError)(reply[2])
        return reply[1]

    def close(self) -> None:
        """Close the connection (and stop the server on the master)."""
        try:
            self._sock.close()
        finally:
            if self._server is not None:
                self._server.close()
                self._server = None
                if self._published is not None:
                    _wire.remove_secret(self.port, self._published)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
