"""Anomaly detection for the backward engine (``torch.autograd.detect_anomaly``).

When enabled, the engine raises as soon as a backward function returns NaN (with ``check_nan``),
and warns which node failed, with the traceback of the forward call that created it when the
node recorded one (``node.metadata["traceback_"]``). Global, not thread-local, as in torch.
"""

from __future__ import annotations

import warnings

from ember._core.anomaly import FLAGS

__all__ = ["detect_anomaly", "set_detect_anomaly"]


def is_anomaly_enabled() -> bool:
    """Return True if anomaly detection is on."""
    return FLAGS.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Return True if anomaly detection checks backward results for NaN."""
    return FLAGS.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off (and NaN checks with ``check_nan``)."""
    FLAGS.enabled = bool(enabled)
    FLAGS.check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager that turns anomaly detection on for its duration."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = FLAGS.enabled
        self.check_nan = check_nan
        self.prev_check_nan = FLAGS.check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Turn anomaly detection on or off: at once, and back on exit when used as a context."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = FLAGS.enabled
        self.prev_check_nan = FLAGS.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
