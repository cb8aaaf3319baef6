"""``torch._utils``: the functions pickles of tensors and parameters name to rebuild them.

They are the checkpoint loader's rebuild functions (``ember/serialization/_rebuild.py``),
published here under torch's names so that ``pickle`` writes and finds them where torch's are.
"""

from __future__ import annotations

from ember.serialization import _rebuild as _R


def _publish(fn, name: str, module: str = __name__):
    fn.__module__, fn.__name__, fn.__qualname__ = module, name, name
    return fn


_rebuild_tensor_v2 = _publish(_R.rebuild_tensor_v2, "_rebuild_tensor_v2")
_rebuild_parameter = _publish(_R.rebuild_parameter, "_rebuild_parameter")
_rebuild_parameter_with_state = _publish(
    _R.rebuild_parameter_with_state, "_rebuild_parameter_with_state"
)
