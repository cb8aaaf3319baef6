"""Anomaly detection's switches (``torch.autograd.detect_anomaly``), read by the op table, the
graph nodes and the engine; ``ember.autograd.anomaly_mode`` sets them."""


class _Flags:
    enabled = False
    check_nan = True


FLAGS = _Flags()
