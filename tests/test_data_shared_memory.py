"""Tensor.share_memory_ / is_shared and ember.multiprocessing's tensor reductions."""

import multiprocessing
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import ember
import ember.multiprocessing as emp
from tests._data_helpers import child_fill_and_return, child_send_new, no_orphans  # noqa: F401

pytestmark = pytest.mark.usefixtures("no_orphans")


def test_share_memory_moves_storage_and_keeps_values():
    t = ember.arange(12.0).reshape(3, 4)
    assert not t.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared()
    np.testing.assert_array_equal(t.numpy(), np.arange(12.0).reshape(3, 4))
    ptr = t.data_ptr()
    t.share_memory_()  # already shared: nothing moves
    assert t.data_ptr() == ptr


def test_share_memory_keeps_view_geometry_and_base_alias():
    base = ember.arange(20.0)
    v = base.view(4, 5).t()[1:]  # a non-contiguous view with an offset
    shape, stride, offset = v.shape, v.stride(), v.storage_offset()
    v.share_memory_()
    assert (v.shape, v.stride(), v.storage_offset()) == (shape, stride, offset)
    assert v._base is base and base.is_shared()
    v[0, 0] = 100.0  # the view and its base still alias
    assert base[1].item() == 100.0
    assert v.untyped_storage().nbytes() == base.untyped_storage().nbytes() == 80


@pytest.mark.parametrize("dtype", [ember.float32, ember.bfloat16, ember.bool, ember.int64])
def test_share_memory_dtypes_and_empty(dtype):
    for shape in [(3,), (0,), (2, 0)]:
        t = ember.zeros(shape, dtype=dtype)
        t.share_memory_()
        assert t.is_shared() and t.shape == shape and t.dtype is dtype


def test_share_memory_keeps_autograd_leaf_state():
    w = ember.ones(3, requires_grad=True)
    w.share_memory_()
    assert w.requires_grad and w.is_leaf and w.is_shared()
    (w * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])


def test_forking_pickler_sends_a_descriptor_not_the_data():
    t = ember.zeros(1_000_000)
    payload = ForkingPickler.dumps(t)
    assert len(payload) < 1000
    assert t.is_shared()  # moved by the reduction, as torch
    back = pickle.loads(payload)
    assert back.is_shared() and back.data_ptr() == t.data_ptr()  # same process: same mapping


def test_plain_pickle_still_copies():
    t = ember.arange(1000.0)
    t.share_memory_()
    payload = pickle.dumps(t)
    assert len(payload) > 4000
    back = pickle.loads(payload)
    assert not back.is_shared()
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_views_of_one_storage_arrive_as_views_of_one_storage():
    base = ember.arange(10.0)
    a, b = base[:5], base[5:]
    a2, b2 = pickle.loads(ForkingPickler.dumps((a, b)))
    a2.numpy()[:] = -1
    np.testing.assert_array_equal(b2.numpy(), [5, 6, 7, 8, 9])
    assert b2.data_ptr() - a2.data_ptr() == 5 * 4


def test_non_leaf_requiring_grad_refuses():
    x = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(x)
    ForkingPickler.dumps(x.detach())


class MyTensor(ember.Tensor):
    pass


def test_leaf_parameter_like_subclass_keeps_class_and_requires_grad():
    emp.init_reductions()  # a subclass defined after import is registered on the next call
    t = ember.ones(3, requires_grad=True)
    t.__class__ = MyTensor
    back = pickle.loads(ForkingPickler.dumps(t))
    assert type(back) is MyTensor and back.requires_grad and back.is_shared()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_queue_round_trip_shares_memory_with_a_child(method):
    ctx = emp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    t = ember.zeros(4)
    p = ctx.Process(target=child_fill_and_return, args=(q_in, q_out, 7.0))
    p.start()
    try:
        q_in.put(t)
        back, shared_in_child = q_out.get(timeout=60)
        q_in.put("done")
    finally:
        p.join(30)
    assert p.exitcode == 0 and shared_in_child
    np.testing.assert_array_equal(t.numpy(), [7.0] * 4)  # the child wrote into our memory
    assert back.data_ptr() == t.data_ptr()  # and sent back the storage we already map


def test_tensor_created_in_child_is_received_shared():
    q_in, q_out = emp.Queue(), emp.Queue()
    p = emp.Process(target=child_send_new, args=(q_in, q_out, 5))
    p.start()
    try:
        t = q_out.get(timeout=30)
        q_in.put("done")
    finally:
        p.join(30)
    assert t.is_shared()
    np.testing.assert_array_equal(t.numpy(), np.arange(5.0))


def test_module_api():
    assert emp.get_sharing_strategy() == "file_descriptor"
    assert emp.get_all_sharing_strategies() == {"file_descriptor"}
    emp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError, match="invalid sharing strategy"):
        emp.set_sharing_strategy("file_system")
    for name in ["Queue", "Process", "get_context", "Event", "Pool", "cpu_count"]:
        assert getattr(emp, name) is getattr(multiprocessing, name)
    assert "set_sharing_strategy" in emp.__all__ and "Queue" in emp.__all__


def test_fd_channel_in_one_process():
    from ember.multiprocessing.reductions import fd_channel

    sender, receiver = fd_channel("test-channel")
    try:
        base = ember.arange(6.0)
        p1 = sender.dumps({"a": base[:3], "b": base[3:], "n": 1})
        p2 = sender.dumps([ember.ones(2)])
        p3 = sender.dumps("no tensors")  # sends no descriptors
        p4 = sender.dumps([ember.full((2,), 4.0)])
        got = pickle.loads(p1)
        got["a"].numpy()[:] = -1  # two views of one storage arrive aliasing
        assert got["b"].tolist() == [3.0, 4.0, 5.0] and base.tolist()[:3] == [-1.0] * 3
        assert pickle.loads(p3) == "no tensors"
        assert pickle.loads(p4)[0].tolist() == [4.0, 4.0]  # p2 never read: skipped
        with pytest.raises(RuntimeError, match="out of step"):
            pickle.loads(p2)
    finally:
        sender.close()
        receiver.close()


def test_fd_channel_falls_back_beyond_one_message():
    from ember.multiprocessing.reductions import fd_channel

    sender, receiver = fd_channel("test-many")
    try:
        many = [ember.full((1,), float(i)) for i in range(300)]
        back = pickle.loads(sender.dumps(many))
        assert [t.item() for t in back] == list(range(300)) and all(t.is_shared() for t in back)
    finally:
        sender.close()
        receiver.close()
