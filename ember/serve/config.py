"""TorchServe's ``config.properties``: parsing and the server's settings.

The file is Java properties (``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\``
continuation lines). Keys are TorchServe's; unknown keys are kept in :attr:`ServeConfig.extra`.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from urllib.parse import urlsplit

__all__ = ["ServeConfig", "parse_address", "read_properties"]

DEFAULT_MAX_REQUEST_SIZE = 6553500  # TorchServe's default, in bytes


def read_properties(text: str) -> dict[str, str]:
    """Return the ``key -> value`` pairs of a Java properties text."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        key, value = (line[:cut], line[cut + 1 :]) if cut >= 0 else (line, "")
        out[key.strip()] = value.strip()
    return out


def parse_address(address: str) -> tuple[str, int]:
    """``http://127.0.0.1:8080`` -> ``("127.0.0.1", 8080)``."""
    parts = urlsplit(address if "://" in address else "http://" + address)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"invalid address {address!r}: expected http://HOST:PORT")
    if parts.hostname is None or parts.port is None:
        raise ValueError(f"invalid address {address!r}: expected http://HOST:PORT")
    return parts.hostname, parts.port


def is_loopback(host: str) -> bool:
    """Return True if ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bool(value: str) -> bool:
    return value.strip().lower() in ("true", "1", "yes")


@dataclasses.dataclass
class ServeConfig:
    """The server's settings, from ``config.properties`` and the command line."""

    inference_address: str = "http://127.0.0.1:8080"
    management_address: str = "http://127.0.0.1:8081"
    metrics_address: str = "http://127.0.0.1:8082"
    model_store: str | None = None
    load_models: list[str] = dataclasses.field(default_factory=list)
    default_workers_per_model: int = 1
    batch_size: int = 1
    max_batch_delay: int = 100  # ms
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE
    job_queue_size: int = 1000
    default_response_timeout: int = 120  # s
    allowed_urls: list[str] = dataclasses.field(default_factory=list)
    enable_token_auth: bool = False
    key_file: str = "key_file.json"
    extra: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_properties(cls, text: str) -> ServeConfig:
        """Return the settings of a ``config.properties`` text (TorchServe's keys)."""
        props = read_properties(text)
        cfg = cls()
        ints = {
            "default_workers_per_model",
            "batch_size",
            "max_batch_delay",
            "max_request_size",
            "job_queue_size",
            "default_response_timeout",
        }
        for key, value in props.items():
            if key in ints:
                try:
                    setattr(cfg, key, int(value))
                except ValueError:
                    raise ValueError(
                        f"config.properties: {key}={value!r} is not an integer"
                    ) from None
            elif key in ("inference_address", "management_address", "metrics_address"):
                parse_address(value)
                setattr(cfg, key, value)
            elif key == "model_store":
                cfg.model_store = value
            elif key == "load_models":
                cfg.load_models = [m.strip() for m in value.split(",") if m.strip()]
            elif key == "allowed_urls":
                cfg.allowed_urls = [u.strip() for u in value.split(",") if u.strip()]
            elif key == "enable_token_auth":
                cfg.enable_token_auth = _bool(value)
            elif key == "disable_token_authorization":
                cfg.enable_token_auth = not _bool(value)
            elif key == "key_file":
                cfg.key_file = value
            else:
                cfg.extra[key] = value
        return cfg

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> ServeConfig:
        """Read a ``config.properties`` file."""
        with open(path, encoding="utf-8") as f:
            return cls.from_properties(f.read())

    def addresses(self) -> dict[str, tuple[str, int]]:
        """The ``(host, port)`` of each API: inference, management, metrics."""
        return {
            "inference": parse_address(self.inference_address),
            "management": parse_address(self.management_address),
            "metrics": parse_address(self.metrics_address),
        }

    def token_auth_required(self) -> bool:
        """Token auth is on when asked for, and always when an API listens beyond loopback."""
        return self.enable_token_auth or any(
            not is_loopback(host) for host, _ in self.addresses().values()
        )
