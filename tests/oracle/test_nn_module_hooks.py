"""nn.Module hooks against torch: forward pre/post (with_kwargs, always_call, prepend),
full backward hooks and pre-hooks, global forward hooks, handle removal."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def to_np(t):
    return None if t is None else t.detach().numpy() if hasattr(t, "detach") else t


def summarize(x):
    """Hook arguments in a library-neutral form: arrays, None, tuples, dicts."""
    if isinstance(x, (tuple, list)):
        return tuple(summarize(v) for v in x)
    if isinstance(x, dict):
        return {k: summarize(v) for k, v in x.items()}
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        a = x.detach().numpy() if isinstance(x, torch.Tensor) else x.detach()._data
        return ("T", a.shape, tuple(np.round(a.ravel().astype(np.float64), 4)))
    return x


def run_forward_hooks(lib):
    log = []
    lin = lib.nn.Linear(2, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        lin.bias.fill_(0.5)

    def pre(m, args):
        log.append(("pre", summarize(args)))
        return (args[0] * 2,)

    def pre_kw(m, args, kwargs):
        log.append(("pre_kw", summarize(args), summarize(kwargs)))
        return None

    def post(m, args, out):
        log.append(("post", summarize(args), summarize(out)))
        return out + 1

    def post_kw(m, args, kwargs, out):
        log.append(("post_kw", summarize(out)))

    def first(m, args, out):
        log.append(("first",))

    handles = [
        lin.register_forward_pre_hook(pre),
        lin.register_forward_pre_hook(pre_kw, with_kwargs=True),
        lin.register_forward_hook(post),
        lin.register_forward_hook(post_kw, with_kwargs=True),
        lin.register_forward_hook(first, prepend=True),
    ]
    y = lin(lib.ones(1, 2))
    log.append(("y", summarize(y)))
    handles[0].remove()
    handles[2].remove()
    y = lin(lib.ones(1, 2))
    log.append(("y2", summarize(y)))
    return log


def test_forward_hooks_match_torch():
    assert run_forward_hooks(ember) == run_forward_hooks(torch)


def run_always_call(lib):
    log = []

    class Bad(lib.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Bad()
    m.register_forward_hook(lambda mod, a, o: log.append(("always", o)), always_call=True)
    m.register_forward_hook(lambda mod, a, o: log.append(("never", o)))
    with pytest.raises(ValueError):
        m(lib.ones(1))
    return log


def test_always_call_hook_matches_torch():
    assert run_always_call(ember) == run_always_call(torch) == [("always", None)]


def run_backward_hooks(lib):
    log = []
    lin = lib.nn.Linear(2, 3)
    with lib.no_grad():
        lin.weight.copy_(lib.arange(6.0).reshape(3, 2))
        lin.bias.zero_()

    def bpre(m, grad_output):
        log.append(("bpre", summarize(grad_output)))
        return (grad_output[0] * 2,)

    def bhook(m, grad_input, grad_output):
        log.append(("bhook", summarize(grad_input), summarize(grad_output)))
        if grad_input[0] is not None:
            return (grad_input[0] + 1,)
        return None

    lin.register_full_backward_pre_hook(bpre)
    lin.register_full_backward_hook(bhook)
    x = lib.ones(2, 2, requires_grad=True)
    y = lin(x)
    y.sum().backward()
    log.append(("x.grad", summarize(x.grad)))
    log.append(("w.grad", summarize(lin.weight.grad)))
    # input without grad: the hook gets grad_input (None,)
    z = lin(lib.ones(1, 2))
    with pytest.warns(UserWarning, match="Full backward hook is firing"):
        z.sum().backward()
    return log


def test_full_backward_hooks_match_torch():
    assert run_backward_hooks(ember) == run_backward_hooks(torch)


def test_backward_hook_on_container_multiple_inputs():
    def run(lib):
        log = []

        class Two(lib.nn.Module):
            def forward(self, a, k, b):
                return a * b * k, a + b

        m = Two()
        m.register_full_backward_hook(
            lambda mod, gi, go: log.append((summarize(gi), summarize(go)))
        )
        a = lib.ones(2, requires_grad=True)
        b = lib.full((2,), 3.0, requires_grad=True)
        u, v = m(a, 2.0, b)
        (u.sum() + 2 * v.sum()).backward()
        log.append(summarize((a.grad, b.grad)))
        return log

    assert run(ember) == run(torch)


def test_global_forward_hooks():
    from ember.nn.modules import module as M

    log = []
    h1 = M.register_module_forward_pre_hook(lambda m, a: log.append("pre"))
    h2 = M.register_module_forward_hook(lambda m, a, o: log.append("post"))
    try:
        ember.nn.Sequential(ember.nn.Identity())(ember.ones(1))
    finally:
        h1.remove()
        h2.remove()
    assert log == ["pre", "pre", "post", "post"]
    ember.nn.Identity()(ember.ones(1))
    assert len(log) == 4


def test_hook_handle_context_manager():
    m = ember.nn.Identity()
    log = []
    with m.register_forward_hook(lambda *a: log.append(1)):
        m(ember.ones(1))
    m(ember.ones(1))
    assert log == [1]


def test_global_backward_hooks_match_torch():
    def run(lib):
        M = lib.nn.modules.module
        log = []
        h1 = M.register_module_full_backward_pre_hook(
            lambda m, go: log.append(("gpre", type(m).__name__, summarize(go)))
        )
        h2 = M.register_module_full_backward_hook(
            lambda m, gi, go: log.append(("ghook", type(m).__name__, summarize(gi)))
        )
        try:
            lin = lib.nn.Linear(2, 1)
            with lib.no_grad():
                lin.weight.fill_(2.0)
            lin.register_full_backward_hook(lambda m, gi, go: log.append(("own",)))
            x = lib.ones(1, 2, requires_grad=True)
            lin(x).sum().backward()
        finally:
            h1.remove()
            h2.remove()
        lin(x).sum().backward()
        return log

    assert run(ember) == run(torch)


def test_state_dict_post_hook_must_return_none():
    # the public post-hook edits in place (returning a dict is an error); the private one
    # may replace the state dict
    out = []
    for lib in (torch, ember):
        m = lib.nn.Linear(1, 1)
        m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {"x": 1})
        with pytest.raises(RuntimeError) as info:
            m.state_dict()
        m2 = lib.nn.Linear(1, 1)
        m2._register_state_dict_hook(lambda mod, sd, prefix, meta: {"x": 1})
        out.append((str(info.value), dict(m2.state_dict())))
    assert out[0] == out[1]
