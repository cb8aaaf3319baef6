"""What the local transport puts on a socket, and who may talk to it.

ember's own transport (the TCP store and the mesh of :mod:`._mesh`) is for the processes of one
machine. Three rules keep a listening port from being a way into that machine:

* **Loopback only.** Every listener binds ``127.0.0.1``. :func:`loopback_host` maps a
  ``MASTER_ADDR`` naming this host to ``127.0.0.1`` and refuses any other host with an error
  pointing to the MPI launch, the way to run on several machines.
* **Nothing from a socket is unpickled.** Messages are fixed binary frames: :func:`pack_values`
  and :func:`unpack_values` encode a short list of ``None``, bool, int, float, str, bytes and
  lists of str (a tag byte, then a fixed-size number or a length and raw bytes).
* **A per-job secret.** A connection starts with a mutual HMAC-SHA256 challenge
  (:func:`server_handshake` / :func:`client_handshake`) over random nonces and the rank the
  client claims; a peer that does not hold the job's secret is dropped before anything else it
  sent is read. The secret comes from ``EMBER_DIST_SECRET`` (set by ``python -m
  ember.distributed.run``) or from a key file that the store's master writes with ``0600``
  permissions in a ``0700`` directory of the user's (:func:`publish_secret` /
  :func:`read_secret`).
"""

from __future__ import annotations

import _thread
import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
import stat
import struct
import tempfile

SECRET_ENV = "EMBER_DIST_SECRET"
MAX_FRAME = 1 << 30  # a store request or reply larger than 1 GiB is refused

_MAGIC = b"EMB1"
_NONCE = 16
_MAC = 32
_HELLO = struct.Struct("!4s16s")  # server -> client: magic, nonce
_ANSWER = struct.Struct("!4s16sqq32s")  # client -> server: magic, nonce, role, rank, mac

_MULTI_HOST = (
    "ember's built-in transport only connects processes of one machine (it listens on "
    "127.0.0.1), but MASTER_ADDR={host!r} is not this machine. Multi-host runs go through MPI: "
    "`pip install mpi4py mpich`, then start every rank with `mpiexec -hosts a,b -n N python "
    "train.py` (or `python -m ember.distributed.run --nnodes ...` on each host) and call "
    "init_process_group('mpi') (or 'gloo', which runs on MPI under an MPI launch)."
)


class AuthenticationError(ConnectionError):
    """The peer does not hold the job's secret (or claimed a rank it may not have)."""


# ------------------------------------------------------------------------------ addresses
def _is_local_address(ip: str) -> bool:
    if ipaddress.ip_address(ip).is_loopback:
        return True
    try:  # an address of this machine can be bound (no listen: nothing is exposed)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((ip, 0))
        return True
    except OSError:
        return False


def loopback_host(host: str) -> str:
    """Return the loopback address to use for ``host``, which must name this machine."""
    try:
        ip = socket.gethostbyname(host)
    except OSError:
        raise ValueError(_MULTI_HOST.format(host=host)) from None
    if not _is_local_address(ip):
        raise ValueError(_MULTI_HOST.format(host=host))
    return "127.0.0.1"


def listen_socket(port: int = 0, backlog: int = 128) -> socket.socket:
    """Return a TCP socket listening on ``127.0.0.1:port`` (``port=0``: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    """Read exactly ``n`` bytes from ``sock``."""
    buf = bytearray(n)
    recv_into_exact(sock, memoryview(buf))
    return buf


def recv_into_exact(sock: socket.socket, view: memoryview) -> None:
    """Fill ``view`` (bytes) from ``sock``."""
    got, n = 0, view.nbytes
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("connection closed")
        got += k


# -------------------------------------------------------------------------------- secret
def _key_dir() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    path = os.path.join(base, f"ember-dist-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(
            f"{path} must be a directory owned by this user with mode 0700 (it holds the keys "
            "of ember's distributed jobs)"
        )
    return path


def _key_file(port: int) -> str:
    return os.path.join(_key_dir(), f"store-{port}.key")


def new_secret() -> bytes:
    """Return a fresh random job secret."""
    return secrets.token_bytes(32)


def env_secret() -> bytes | None:
    """Return the secret given in ``EMBER_DIST_SECRET`` (hex), or None."""
    value = os.environ.get(SECRET_ENV)
    return bytes.fromhex(value) if value else None


def publish_secret(port: int, secret: bytes) -> str:
    """Write ``secret`` to the key file of the store on ``port`` (mode 0600); return its path."""
    path = _key_file(port)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret.hex())
    os.replace(tmp, path)
    return path


def read_secret(port: int) -> bytes | None:
    """Return the secret in the key file of the store on ``port`` (None if there is none)."""
    path = _key_file(port)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as fh:
        st = os.fstat(fh.fileno())
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise PermissionError(f"{path} must be owned by this user with mode 0600")
        text = fh.read().strip()
    try:
        return bytes.fromhex(text) if text else None
    except ValueError:
        return None


def remove_secret(port: int, secret: bytes) -> None:
    """Remove the key file of ``port`` if it still holds ``secret``."""
    try:
        if read_secret(port) == secret:
            os.remove(_key_file(port))
    except OSError:
        pass


# ----------------------------------------------------------------------------- handshake
def _mac(secret: bytes, label: bytes, *parts) -> bytes:
    msg = label + b"".join(p if isinstance(p, bytes) else struct.pack("!q", p) for p in parts)
    return hmac.new(secret, msg, hashlib.sha256).digest()


def server_handshake(sock: socket.socket, secret: bytes, role: int, timeout: float) -> int:
    """Challenge the client on ``sock``; return the rank it claims (authenticated).

    Raises :class:`AuthenticationError` (or ``ConnectionError``/``OSError``) otherwise: the
    caller drops the connection without reading anything more from it."""
    sock.settimeout(timeout)
    nonce = secrets.token_bytes(_NONCE)
    sock.sendall(_HELLO.pack(_MAGIC, nonce))
    magic, cnonce, crole, rank, mac = _ANSWER.unpack(recv_exact(sock, _ANSWER.size))
    expected = _mac(secret, b"ember-client", nonce, cnonce, crole, rank)
    if magic != _MAGIC or crole != role or not hmac.compare_digest(mac, expected):
        raise AuthenticationError("peer failed to authenticate")
    sock.sendall(_mac(secret, b"ember-server", cnonce, nonce, role, rank))
    sock.settimeout(None)
    return rank


def client_handshake(sock: socket.socket, secret: bytes, role: int, rank: int, timeout: float):
    """Answer the server's challenge on ``sock`` as ``rank`` and check the server's answer."""
    sock.settimeout(timeout)
    magic, nonce = _HELLO.unpack(recv_exact(sock, _HELLO.size))
    if magic != _MAGIC:
        raise AuthenticationError("the server is not an ember store or rank")
    cnonce = secrets.token_bytes(_NONCE)
    mac = _mac(secret, b"ember-client", nonce, cnonce, role, rank)
    sock.sendall(_ANSWER.pack(_MAGIC, cnonce, role, rank, mac))
    reply = recv_exact(sock, _MAC)
    if not hmac.compare_digest(
        bytes(reply), _mac(secret, b"ember-server", cnonce, nonce, role, rank)
    ):
        raise AuthenticationError("the server does not hold this job's secret")
    sock.settimeout(None)


ROLE_STORE = 1
ROLE_MESH = 2


# ------------------------------------------------------------------------------- values
_T_NONE, _T_TRUE, _T_FALSE, _T_INT, _T_FLOAT, _T_STR, _T_BYTES, _T_STRS = range(8)
_Q = struct.Struct("!q")
_D = struct.Struct("!d")
_L = struct.Struct("!I")


def pack_values(values) -> bytes:
    """Encode ``values`` (None, bool, int, float, str, bytes, list of str) as bytes."""
    out = []
    for v in values:
        if v is None:
            out.append(bytes([_T_NONE]))
        elif v is True or v is False:
            out.append(bytes([_T_TRUE if v else _T_FALSE]))
        elif isinstance(v, int):
            out.append(bytes([_T_INT]) + _Q.pack(v))
        elif isinstance(v, float):
            out.append(bytes([_T_FLOAT]) + _D.pack(v))
        elif isinstance(v, str):
            b = v.encode()
            out.append(bytes([_T_STR]) + _L.pack(len(b)) + b)
        elif isinstance(v, (bytes, bytearray, memoryview)):
            b = bytes(v)
            out.append(bytes([_T_BYTES]) + _L.pack(len(b)) + b)
        elif isinstance(v, list):
            out.append(bytes([_T_STRS]) + _L.pack(len(v)))
            for s in v:
                b = str(s).encode()
                out.append(_L.pack(len(b)) + b)
        else:
            raise TypeError(f"cannot send a {type(v).__name__} to the store")
    return b"".join(out)


def unpack_values(data) -> list:
    """Decode what :func:`pack_values` encoded (raises ``ValueError`` on malformed input)."""
    view, pos, out = memoryview(data), 0, []

    def take(n: int) -> memoryview:
        nonlocal pos
        if pos + n > len(view):
            raise ValueError("truncated frame")
        pos += n
        return view[pos - n : pos]

    while pos < len(view):
        tag = take(1)[0]
        if tag == _T_NONE:
            out.append(None)
        elif tag in (_T_TRUE, _T_FALSE):
            out.append(tag == _T_TRUE)
        elif tag == _T_INT:
            out.append(_Q.unpack(take(8))[0])
        elif tag == _T_FLOAT:
            out.append(_D.unpack(take(8))[0])
        elif tag in (_T_STR, _T_BYTES):
            b = bytes(take(_L.unpack(take(4))[0]))
            out.append(b.decode() if tag == _T_STR else b)
        elif tag == _T_STRS:
            n = _L.unpack(take(4))[0]
            out.append([bytes(take(_L.unpack(take(4))[0])).decode() for _ in range(n)])
        else:
            raise ValueError(f"bad tag {tag}")
    return out


def send_frame(sock: socket.socket, payload: bytes) -> None:
    """Send ``payload`` behind its 4-byte length."""
    sock.sendall(_L.pack(len(payload)) + payload)


def recv_frame(sock: socket.socket) -> bytearray:
    """Receive one frame sent by :func:`send_frame` (at most :data:`MAX_FRAME` bytes)."""
    (n,) = _L.unpack(recv_exact(sock, 4))
    if n > MAX_FRAME:
        raise ValueError(f"frame of {n} bytes refused")
    return recv_exact(sock, n)


def start_service_thread(target, *args) -> None:
    """Run ``target(*args)`` on a background thread that is not a ``threading.Thread``: the
    store's and the transport's threads are, as c10d's C++ threads in torch, invisible to
    ``threading.enumerate()`` (test suites that fail on leftover Python threads see none while
    a process group is alive). The thread ends with the process, as a daemon thread does."""
    _thread.start_new_thread(target, args)
