"""The fused path's flat parameters: parameters and gradients re-pointed at one flat buffer per
group, without breaking tensor semantics (storage, offsets, versions, aliases, saving, rebuilds)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.optim as eoptim
from ember import nn

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), (2, 3, 2), ()]


def _ws(seed=0, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _gs(seed, steps, shapes=SHAPES):
    rng = np.random.default_rng(seed + 1000)
    return [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]


def _pair(ws, make=None):
    ep = [ember.tensor(w, requires_grad=True) for w in ws] if make is None else make(ws)
    tp = [torch.tensor(w, requires_grad=True) for w in ws]
    return ep, tp


def _step(opts, params, grads):
    for (lib, ps), opt in zip(params, opts):
        for p, g in zip(ps, grads):
            p.grad = lib.tensor(g)
        opt.step()


def _same(eps, tps, rtol=1e-5, atol=1e-6):
    for e, t in zip(eps, tps):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def _flat_of(opt, index=0):
    return opt._flat[index]


def _storage_ptr(t):
    return t.untyped_storage().data_ptr()


def test_parameters_become_views_of_one_flat_buffer_with_torch_metadata():
    ws = _ws()
    ep, tp = _pair(ws)
    eo, to = eoptim.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1, foreach=True)
    ptrs = [p.data_ptr() for p in ep]
    v0e, v0t = [p._version for p in ep], [p._version for p in tp]
    for g in _gs(0, 5):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    _same(ep, tp)
    fg = _flat_of(eo)
    assert fg.unbound == [] and len(fg.bound_params) == len(ep)
    # one storage for the group; each parameter at its element offset in it
    assert len({_storage_ptr(p) for p in ep}) == 1
    assert [p.storage_offset() for p in ep] == [0, 12, 17, 29]
    assert all(p.untyped_storage().nbytes() == 30 * 4 for p in ep)
    assert [p.data_ptr() for p in ep] != ptrs
    assert [p.data_ptr() for p in ep] == [fg.p.ctypes.data + 4 * o for o in (0, 12, 17, 29)]
    for e, t in zip(ep, tp):
        assert e.is_contiguous() and e.stride() == t.stride() and e.shape == t.shape
        assert e.is_leaf and e.requires_grad and e.grad_fn is None
    # one version bump per step, as torch's foreach update
    assert [p._version - v for p, v in zip(ep, v0e)] == [p._version - v for p, v in zip(tp, v0t)]


def test_version_counter_guards_a_graph_saved_before_the_step():
    ws = _ws(1)
    msgs = []
    for lib, optim in ((ember, eoptim), (torch, torch.optim)):
        p = lib.tensor(ws[0], requires_grad=True)
        opt = optim.SGD([p], lr=0.1)
        p.grad = lib.ones(p.shape)
        opt.step()  # re-points p in ember
        loss = (p * p).sum()
        p.grad = lib.ones(p.shape)
        opt.step()
        with pytest.raises(RuntimeError) as info:
            loss.backward()
        msgs.append(str(info.value).split(";")[0])
    assert "modified by an inplace operation" in msgs[0]
    assert msgs[0].replace("torch.", "") == msgs[1].replace("torch.", "")


def test_views_taken_before_the_first_step_keep_seeing_updates():
    """A parameter with live aliases is never re-pointed: it takes the copy path."""
    ws = _ws(2)
    ep, tp = _pair(ws)
    row, det, arr = ep[0][1], ep[1].detach(), ep[2].detach().numpy()
    ptrs = [p.data_ptr() for p in ep]
    eo, to = eoptim.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1)
    for g in _gs(2, 4):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    _same(ep, tp)
    assert [p.data_ptr() for p in ep][:3] == ptrs[:3]  # aliased: still in their own memory
    assert ep[3].data_ptr() != ptrs[3]  # the 0-d one had no alias: re-pointed
    np.testing.assert_array_equal(row.detach().numpy(), ep[0][1].detach().numpy())
    np.testing.assert_array_equal(det.numpy(), ep[1].detach().numpy())
    np.testing.assert_array_equal(arr, ep[2].detach().numpy())
    assert sorted(_flat_of(eo).unbound) == [0, 1, 2]
    # once the aliases are gone, the next step re-points them
    del row, det, arr
    _step((eo, to), ((ember, ep), (torch, tp)), _gs(3, 1)[0])
    assert _flat_of(eo).unbound == [] and len({_storage_ptr(p) for p in ep}) == 1
    for g in _gs(4, 3):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    _same(ep, tp)


def test_views_taken_after_the_rebind_alias_the_flat_buffer():
    ws = _ws(3)
    ep, tp = _pair(ws)
    eo, to = eoptim.SGD(ep, lr=0.1, momentum=0.9), torch.optim.SGD(tp, lr=0.1, momentum=0.9)
    _step((eo, to), ((ember, ep), (torch, tp)), _gs(5, 1)[0])
    flat_views = [p.view(-1) for p in ep]
    col = ep[0][:, 1]
    for g in _gs(6, 4):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    _same(ep, tp)
    assert _flat_of(eo).unbound == []
    for v, p in zip(flat_views, ep):
        np.testing.assert_array_equal(v.detach().numpy(), p.detach().reshape(-1).numpy())
    np.testing.assert_array_equal(col.detach().numpy(), ep[0][:, 1].detach().numpy())
    with ember.no_grad(), torch.no_grad():  # writes through a view reach the parameter
        col.mul_(0)
        tp[0][:, 1].mul_(0)
    _step((eo, to), ((ember, ep), (torch, tp)), _gs(7, 1)[0])
    _same(ep, tp)


def test_parameter_sharing_a_live_tensor_keeps_sharing_it():
    ws = _ws(4)
    et, tt = ember.tensor(ws[0]), torch.tensor(ws[0])
    ep, tp = [nn.Parameter(et)], [torch.nn.Parameter(tt)]
    eo, to = eoptim.AdamW(ep, lr=0.1), torch.optim.AdamW(tp, lr=0.1)
    for g in _gs(8, 3, SHAPES[:1]):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    _same(ep, tp)
    np.testing.assert_array_equal(et.numpy(), ep[0].detach().numpy())
    np.testing.assert_allclose(et.numpy(), tt.numpy(), rtol=1e-5, atol=1e-6)
    assert et.data_ptr() == ep[0].data_ptr()


def test_shared_memory_parameter_stays_shared():
    p = ember.tensor(_ws(5)[0], requires_grad=True)
    p.share_memory_()
    ref = p.detach().clone()
    opt = eoptim.SGD([p], lr=0.5)
    p.grad = ember.ones(p.shape)
    opt.step()
    assert p.is_shared()
    np.testing.assert_allclose(p.detach().numpy(), ref.numpy() - 0.5)


def test_set_to_none_false_makes_gradients_flat_views_and_matches_torch():
    ws = _ws(6)
    em = [ember.tensor(w, requires_grad=True) for w in ws]
    tm = [torch.tensor(w, requires_grad=True) for w in ws]
    eo, to = eoptim.Adam(em, lr=0.05), torch.optim.Adam(tm, lr=0.05)
    xs = _gs(9, 6)
    for i, x in enumerate(xs):
        set_to_none = i >= 4  # four steps keeping the gradients, then back to the default
        for lib, ps, opt in ((ember, em, eo), (torch, tm, to)):
            opt.zero_grad(set_to_none=set_to_none)
            loss = sum(((p * lib.tensor(xi)) ** 2).sum() for p, xi in zip(ps, x))
            loss.backward()
            opt.step()
        fg = _flat_of(eo)
        if i in (2, 3):  # the same .grad tensors at two steps: re-pointed at the flat gradient
            assert all(v is not None for v in fg.g_bound)
            assert all(p.grad._data is v for p, v in zip(em, fg.g_bound))
            assert {_storage_ptr(p.grad) for p in em} == {fg.g.ctypes.data}
        _same(em, tm)
        for e, t in zip(em, tm):
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_gradient_the_user_holds_is_not_replaced():
    p = ember.tensor(_ws(7)[0], requires_grad=True)
    opt = eoptim.SGD([p], lr=0.1, weight_decay=0.1, maximize=True)
    held = None
    for _ in range(4):
        opt.zero_grad(set_to_none=False)
        (p * 2.0).sum().backward()
        if held is None:
            held = p.grad
        opt.step()
        assert p.grad is held
    np.testing.assert_array_equal(held.numpy(), np.full(p.shape, 2.0, np.float32))


@pytest.mark.parametrize("maximize,wd", [(True, 0.0), (False, 0.1)])
def test_update_never_writes_into_flat_gradients(maximize, wd):
    ws = _ws(8)
    ep, tp = _pair(ws)
    eo = eoptim.Adam(ep, lr=0.1, maximize=maximize, weight_decay=wd)
    to = torch.optim.Adam(tp, lr=0.1, maximize=maximize, weight_decay=wd)
    for _ in range(4):
        for ps, opt in ((ep, eo), (tp, to)):
            opt.zero_grad(set_to_none=False)
            sum((p * 3.0).sum() for p in ps).backward()
            opt.step()
            for p in ps:
                np.testing.assert_array_equal(p.grad.numpy(), np.full(p.shape, 3.0, np.float32))
    assert all(v is not None for v in _flat_of(eo).g_bound)
    _same(ep, tp)


def _mlp(lib, seed=0):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(6, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3))


def _copy_weights(em, tm):
    with torch.no_grad():
        for e, t in zip(em.parameters(), tm.parameters()):
            t.copy_(torch.tensor(e.detach().numpy()))


def _train(model, opt, lib, steps, seed=0, set_to_none=True):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = lib.tensor(rng.standard_normal((4, 6)).astype(np.float32))
        opt.zero_grad(set_to_none=set_to_none)
        model(x).pow(2).mean().backward()
        opt.step()


def test_model_saved_after_fast_steps_loads_in_torch(tmp_path):
    em, tm = _mlp(ember), _mlp(torch)
    _copy_weights(em, tm)
    eo, to = eoptim.Adam(em.parameters(), lr=0.01), torch.optim.Adam(tm.parameters(), lr=0.01)
    _train(em, eo, ember, 5)
    _train(tm, to, torch, 5)
    assert len({_storage_ptr(p) for p in em.parameters()}) == 1
    path = tmp_path / "model.pt"
    ember.save(em.state_dict(), path)
    n_values = sum(p.numel() for p in em.parameters())
    assert path.stat().st_size < 4 * n_values + 2000  # the flat buffer once, not per parameter
    sd = torch.load(path, weights_only=True)
    fresh = _mlp(torch, seed=1)
    fresh.load_state_dict(sd)
    for (k, e), (k2, t) in zip(em.state_dict().items(), fresh.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    _same(list(em.parameters()), list(tm.parameters()))
    back = ember.load(path)
    for k, v in em.state_dict().items():
        np.testing.assert_array_equal(back[k].numpy(), v.numpy())
    # the optimizer too (its state is views of flat buffers as well)
    ember.save(eo.state_dict(), tmp_path / "opt.pt")
    to2 = torch.optim.Adam(fresh.parameters(), lr=0.01)
    to2.load_state_dict(torch.load(tmp_path / "opt.pt", weights_only=True))
    _train(fresh, to2, torch, 3, seed=1)
    _train(em, eo, ember, 3, seed=1)
    _same(list(em.parameters()), list(fresh.parameters()), rtol=1e-4, atol=1e-5)


def test_module_load_state_dict_after_rebind_writes_into_the_flat_buffer():
    em, tm = _mlp(ember), _mlp(torch)
    eo = eoptim.SGD(em.parameters(), lr=0.1, momentum=0.9)
    _train(em, eo, ember, 2)
    fg = _flat_of(eo)
    other = _mlp(ember, seed=5)
    em.load_state_dict(other.state_dict())
    assert _flat_of(eo).current() and all(p._data.base is fg.p for p in em.parameters())
    _copy_weights(em, tm)
    to = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    to.load_state_dict(
        {"state": {i: {"momentum_buffer": torch.tensor(eo.state[p]["momentum_buffer"].numpy())}
                   for i, p in enumerate(em.parameters())},
         "param_groups": to.state_dict()["param_groups"]}
    )  # fmt: skip
    _train(em, eo, ember, 3, seed=2)
    _train(tm, to, torch, 3, seed=2)
    assert _flat_of(eo) is fg
    _same(list(em.parameters()), list(tm.parameters()))


def test_module_to_double_after_rebind_rebuilds_the_buffers():
    """(SGD without state: torch's Adam refuses float32 state once the model is float64.)"""
    em, tm = _mlp(ember), _mlp(torch)
    _copy_weights(em, tm)
    eo, to = eoptim.SGD(em.parameters(), lr=0.1), torch.optim.SGD(tm.parameters(), lr=0.1)
    _train(em, eo, ember, 3)
    _train(tm, to, torch, 3)
    em.to(ember.float64)
    tm.to(torch.float64)
    old = _flat_of(eo)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.standard_normal((4, 6))
        for lib, m, o in ((ember, em, eo), (torch, tm, to)):
            o.zero_grad()
            m(lib.tensor(x)).pow(2).mean().backward()
            o.step()
    new = _flat_of(eo)
    assert new is not old and new.p.dtype == np.float64 and new.unbound == []
    assert all(p.dtype == ember.float64 for p in em.parameters())
    _same(list(em.parameters()), list(tm.parameters()))


def test_param_data_assignment_is_followed():
    ws = _ws(9)
    ep, tp = _pair(ws)
    eo, to = eoptim.SGD(ep, lr=0.1), torch.optim.SGD(tp, lr=0.1)
    _step((eo, to), ((ember, ep), (torch, tp)), _gs(10, 1)[0])
    new = np.arange(12, dtype=np.float32).reshape(3, 4)
    en, tn = ember.tensor(new), torch.tensor(new)
    ep[0].data, tp[0].data = en, tn  # the parameter now shares the user's tensor
    for g in _gs(11, 3):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    _same(ep, tp)
    np.testing.assert_allclose(en.numpy(), tn.numpy(), rtol=1e-6)
    assert _flat_of(eo).unbound == [0]


def test_optimizer_load_state_dict_moves_parameters_to_the_new_buffers():
    ws = _ws(10)
    ep, tp = _pair(ws)
    eo, to = eoptim.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1)
    for g in _gs(12, 3):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    old = _flat_of(eo)
    eo.load_state_dict(copy.deepcopy(eo.state_dict()))  # new state tensors: a rebuild
    to.load_state_dict(copy.deepcopy(to.state_dict()))
    for g in _gs(13, 3):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    new = _flat_of(eo)
    assert new is not old and new.unbound == [] and all(p._data.base is new.p for p in ep)
    _same(ep, tp)


def test_buffer_with_outside_views_is_not_moved_on_rebuild():
    ws = _ws(11)
    ep, tp = _pair(ws)
    eo, to = eoptim.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1)
    _step((eo, to), ((ember, ep), (torch, tp)), _gs(14, 1)[0])
    view = ep[1][2:]  # a view into the flat buffer: the params must stay in it
    eo.load_state_dict(copy.deepcopy(eo.state_dict()))  # new state tensors: a rebuild
    to.load_state_dict(copy.deepcopy(to.state_dict()))
    for g in _gs(15, 3):
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    assert sorted(_flat_of(eo).unbound) == [0, 1, 2, 3]
    np.testing.assert_array_equal(view.detach().numpy(), ep[1][2:].detach().numpy())
    _same(ep, tp)


def test_changing_set_of_params_with_grads_rebuilds_and_matches_torch():
    ws = _ws(12)
    ep, tp = _pair(ws)
    eo, to = eoptim.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1)
    for i, g in enumerate(_gs(16, 8)):
        n = 2 if i % 3 == 0 else 4
        for lib, ps in ((ember, ep), (torch, tp)):
            for p in ps:
                p.grad = None
            for p, gi in zip(ps[:n], g[:n]):
                p.grad = lib.tensor(gi)
        eo.step()
        to.step()
    _same(ep, tp)
    assert _flat_of(eo).unbound == []


def test_add_param_group_keeps_the_existing_group_buffers():
    ws = _ws(13)
    ep, tp = _pair(ws)
    eo, to = eoptim.SGD(ep[:2], lr=0.1), torch.optim.SGD(tp[:2], lr=0.1)
    gs = _gs(17, 4)
    _step((eo, to), ((ember, ep[:2]), (torch, tp[:2])), gs[0][:2])
    fg = _flat_of(eo)
    eo.add_param_group({"params": ep[2:], "lr": 0.5})
    to.add_param_group({"params": tp[2:], "lr": 0.5})
    for g in gs[1:]:
        _step((eo, to), ((ember, ep), (torch, tp)), g)
    assert _flat_of(eo, 0) is fg and _flat_of(eo, 1).unbound == []
    _same(ep, tp)


def test_an_old_flat_gradient_the_user_kept_is_never_aliased_by_a_new_one():
    p = ember.tensor(_ws(14)[0], requires_grad=True)
    opt = eoptim.SGD([p], lr=0.1)

    def backward(scale, set_to_none):
        opt.zero_grad(set_to_none=set_to_none)
        (p * scale).sum().backward()
        opt.step()

    for _ in range(3):
        backward(1.0, False)
    fg = _flat_of(opt)
    assert p.grad._data is fg.g_bound[0]
    old = p.grad  # a view of the flat gradient, kept by the user
    backward(2.0, True)  # a fresh gradient
    for _ in range(3):
        backward(3.0, False)  # kept across steps: re-pointed, but never over old's memory
        np.testing.assert_array_equal(old.numpy(), np.ones(p.shape, np.float32))
        np.testing.assert_array_equal(p.grad.numpy(), np.full(p.shape, 3.0, np.float32))
    assert p.grad._data is fg.g_bound[0] and not np.shares_memory(p.grad._data, old._data)
    np.testing.assert_allclose(p.detach().numpy(), _ws(14)[0] - 0.1 * (3 * 1 + 2 + 3 * 3), 1e-5)


def test_zero_grad_keeping_flat_gradients_is_one_fill_with_torch_versions():
    ws = _ws(15)
    ep, tp = _pair(ws)
    eo, to = eoptim.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1)
    for _ in range(3):
        for ps, opt in ((ep, eo), (tp, to)):
            opt.zero_grad(set_to_none=False)
            sum((p * p).sum() for p in ps).backward()
            opt.step()
    fg = _flat_of(eo)
    assert all(p.grad._data is v for p, v in zip(ep, fg.g_bound))
    assert fg.zero_grads(eo.param_groups[0]["params"])  # the one-call path applies
    ve, vt = [p.grad._version for p in ep], [p.grad._version for p in tp]
    eo.zero_grad(set_to_none=False)
    to.zero_grad(set_to_none=False)
    assert not fg.g.any() and all(p.grad._data is v for p, v in zip(ep, fg.g_bound))
    assert [p.grad._version - v for p, v in zip(ep, ve)] == [
        p.grad._version - v for p, v in zip(tp, vt)
    ]
    ep[0].grad.requires_grad_(True)  # not a plain gradient any more: the per-tensor path
    tp[0].grad.requires_grad_(True)
    assert not fg.zero_grads(eo.param_groups[0]["params"])
    eo.zero_grad(set_to_none=False)
    to.zero_grad(set_to_none=False)
    assert not ep[0].grad.requires_grad and not tp[0].grad.requires_grad
    eo.zero_grad()
    assert all(p.grad is None for p in ep)
    _same(ep, tp)


def test_vector_to_parameters_after_rebind_keeps_the_vector_aliased_like_torch():
    em, tm = _mlp(ember), _mlp(torch)
    _copy_weights(em, tm)
    eo, to = eoptim.SGD(em.parameters(), lr=0.1), torch.optim.SGD(tm.parameters(), lr=0.1)
    _train(em, eo, ember, 2)
    _train(tm, to, torch, 2)
    n = sum(p.numel() for p in em.parameters())
    values = np.linspace(-1, 1, n, dtype=np.float32)
    ev, tv = ember.tensor(values), torch.tensor(values)
    nn.utils.vector_to_parameters(ev, em.parameters())
    torch.nn.utils.vector_to_parameters(tv, tm.parameters())
    _train(em, eo, ember, 3, seed=4)
    _train(tm, to, torch, 3, seed=4)
    _same(list(em.parameters()), list(tm.parameters()))
    np.testing.assert_allclose(ev.numpy(), tv.numpy(), rtol=1e-5, atol=1e-6)  # updated in place
    assert not np.array_equal(ev.numpy(), values)


# groups bigger than PARALLEL_MIN elements gather a writable gradient as two halves on two
# threads and run the update over many blocks: same numbers as torch, for odd sizes and
# parameters that straddle the middle
BIG = [(801, 655), (7,), (129, 257), ()]


@pytest.mark.parametrize(
    "make",
    [
        lambda e, t: (
            eoptim.SGD(e, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
            torch.optim.SGD(t, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
        ),
        lambda e, t: (
            eoptim.Adam(e, lr=0.01, amsgrad=True),
            torch.optim.Adam(t, lr=0.01, amsgrad=True),
        ),
        lambda e, t: (eoptim.AdamW(e, lr=0.01), torch.optim.AdamW(t, lr=0.01)),
    ],
)
def test_large_groups_match_torch(make):
    from ember._core import threads

    ws = _ws(3, BIG)
    assert sum(w.size for w in ws) >= threads.PARALLEL_MIN and ember.get_num_threads() >= 1
    ep, tp = _pair(ws)
    eo, to = make(ep, tp)
    for grads in _gs(3, 4, BIG):
        _step([eo, to], [(ember, ep), (torch, tp)], grads)
    _same(ep, tp)


@pytest.mark.parametrize("momentum,dampening", [(0.9, 0.0), (0.9, 0.3), (0.0, 0.0)])
def test_blocked_update_reads_large_gradients_in_place_and_matches_torch(momentum, dampening):
    # large contiguous gradients are read where they are (never written), the small and the
    # strided ones gathered; the update runs block by block: same numbers as torch
    shapes = BIG + [(300, 40)]
    ws = _ws(5, shapes)
    ep, tp = _pair(ws)
    kw = dict(lr=0.05, momentum=momentum, dampening=dampening)
    eo, to = eoptim.SGD(ep, **kw), torch.optim.SGD(tp, **kw)
    for grads in _gs(5, 3, shapes):
        kept = []
        for p, q, g in zip(ep, tp, grads):
            if g.shape == (300, 40):  # a strided gradient, as a transposed product gives
                p.grad = ember.tensor(np.ascontiguousarray(g.T)).t()
            else:
                p.grad = ember.tensor(g)
            q.grad = torch.tensor(g)
            kept.append(p.grad.numpy().copy())
        eo.step()
        to.step()
        for p, k in zip(ep, kept):
            np.testing.assert_array_equal(p.grad.numpy(), k)
    _same(ep, tp)
    assert eo._flat[0].g.size == sum(w.size for w in ws)


def test_flat_blocks_cover_the_range_once():
    ws = _ws(6, BIG)
    ep = [ember.tensor(w, requires_grad=True) for w in ws]
    opt = eoptim.SGD(ep, lr=0.1, momentum=0.9)
    for p, g in zip(ep, _gs(6, 1, BIG)[0]):
        p.grad = ember.tensor(g)
    opt.step()
    fg = _flat_of(opt)
    blocks = list(fg.blocks())
    assert all(g.size == hi - lo for lo, hi, g in blocks)
    spans = [(lo, hi) for lo, hi, _ in blocks]
    assert spans[0][0] == 0 and spans[-1][1] == fg.g.size
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert len(spans) > len(ws)  # the large parameters span several blocks
