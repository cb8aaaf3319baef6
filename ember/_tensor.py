"""``torch._tensor``: how a tensor pickles, and the function that rebuilds a subclass.

``pickle.dumps(t)`` writes ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())`` with the storage as a ``TypedStorage`` (itself pickled through
``torch.storage._load_from_bytes``), a Parameter as ``_rebuild_parameter(data, ...)``, and a
subclass or a tensor with attributes as ``_rebuild_from_type_v2(...)`` -- torch's route, so
pickles cross between torch and ember. Each tensor pickles its own storage object: two views of
one storage unpickle apart (as in torch), while ``copy.copy`` shares it.
"""

from __future__ import annotations

from collections import OrderedDict

from ember._core import meta as _meta
from ember._core.layout import layout
from ember._core.storage import TypedStorage, UntypedStorage
from ember._core.storage import array_ptr as _ptr
from ember._core.tensor import ABOVE, Tensor, _rebuild_strided, owner_of
from ember._utils import (
    _publish,
    _rebuild_parameter,
    _rebuild_parameter_with_state,
    _rebuild_tensor_v2,
)
from ember.serialization import _get_layout
from ember.serialization import _rebuild as _R
from ember.serialization._pickler import _user_state, is_parameter, storage_geometry

_rebuild_from_type_v2 = _publish(_R.rebuild_from_type_v2, "_rebuild_from_type_v2", __name__)


def _reduce_tensor(t: Tensor):
    if _meta.LIVE and _meta.is_meta(t._data):  # no bytes to carry
        a = t._data
        owner = owner_of(a)
        args = (owner.view(), _ptr(a) - _ptr(owner), a.shape, a.strides, a.dtype)
        return (_rebuild_strided, (*args, t._requires_grad, type(t)), t._user_dict() or None)
    state = _user_state(t)
    if is_parameter(t):
        data = Tensor.detach(t)
        if state:
            return (_rebuild_parameter_with_state, (data, t._requires_grad, OrderedDict(), state))
        return (_rebuild_parameter, (data, t._requires_grad, OrderedDict()))
    owner, offset, stride = storage_geometry(t)
    storage = TypedStorage._of(UntypedStorage._of(owner), t.dtype)
    args = (storage, offset, tuple(t._data.shape), stride, t._requires_grad, OrderedDict())
    if type(t) is Tensor and not state:
        return (_rebuild_tensor_v2, args)
    return (_rebuild_from_type_v2, (_rebuild_tensor_v2, type(t), args, state))


def _reduce_layout(layout):
    return (_get_layout, (repr(layout),))


ABOVE.reduce = _reduce_tensor  # Tensor.__reduce_ex__ (the core imports nothing above it)
layout.__reduce__ = _reduce_layout  # torch.serialization._get_layout('torch.strided'), as torch
