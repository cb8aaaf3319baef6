"""One ``RemovableHandle`` class (``torch.utils.hooks``) for every ``register_*_hook``."""

from __future__ import annotations

import pickle
from collections import OrderedDict

import pytest

import ember
from ember.utils.hooks import RemovableHandle


def _handles(lib):
    t = lib.ones(2, requires_grad=True)
    m = lib.nn.Linear(2, 2)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    y = (t * 2).sum()
    return {
        "tensor": t.register_hook(lambda g: g),
        "post_accumulate": t.register_post_accumulate_grad_hook(lambda p: None),
        "node": y.grad_fn.register_hook(lambda gi, go: None),
        "node_pre": y.grad_fn.register_prehook(lambda go: None),
        "module_forward": m.register_forward_hook(lambda *a: None),
        "module_backward": m.register_full_backward_hook(lambda *a: None),
        "global_forward": lib.nn.modules.module.register_module_forward_hook(lambda *a: None),
        "optimizer_step": opt.register_step_pre_hook(lambda *a: None),
    }


def test_every_hook_handle_is_utils_hooks_removable_handle():
    handles = _handles(ember)
    for kind, h in handles.items():
        assert isinstance(h, ember.utils.hooks.RemovableHandle), kind
        h.remove()
    assert ember.nn.modules._hooks.RemovableHandle is RemovableHandle
    assert ember._core.node.RemovableHandle is RemovableHandle


def test_same_as_torch():
    torch = pytest.importorskip("torch")
    theirs = _handles(torch)
    for kind, h in theirs.items():
        assert isinstance(h, torch.utils.hooks.RemovableHandle), kind
        h.remove()
    assert sorted(vars(RemovableHandle(OrderedDict()))) == sorted(
        vars(torch.utils.hooks.RemovableHandle(OrderedDict()))
    )


def test_remove_extra_dicts_and_context_manager():
    hooks, extra = OrderedDict(), OrderedDict()
    with RemovableHandle(hooks, extra_dict=extra) as h:
        hooks[h.id] = extra[h.id] = "f"
    assert not hooks and not extra
    h.remove()  # again: nothing left, no error
    h2 = RemovableHandle(hooks)
    assert h2.id > h.id  # one counter for all handles, as torch's


def test_plain_dict_and_pickle_as_torch():
    with pytest.raises(TypeError, match="weak reference"):
        RemovableHandle({})
    hooks = OrderedDict()
    h = RemovableHandle(hooks, extra_dict=[OrderedDict()])
    h2 = pickle.loads(pickle.dumps(h))
    assert h2.id == h.id and h2.hooks_dict_ref() is None and len(h2.extra_dict_ref) == 1
