"""default_collate / default_convert / collate of ember.utils.data (no worker processes)."""

import collections

import numpy as np
import pytest

import ember
from ember.utils.data import default_collate, default_convert
from ember.utils.data._utils.collate import collate, default_collate_fn_map

Point = collections.namedtuple("Point", ["x", "y"])


def test_numbers_strings_and_arrays():
    t = default_collate([1, 2, 3])
    assert t.dtype is ember.int64 and t.tolist() == [1, 2, 3]
    f = default_collate([0.5, 1.5])
    assert f.dtype is ember.float64  # not the default dtype: as torch
    b = default_collate([True, False])
    assert b.dtype is ember.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]
    a = default_collate([np.zeros((2, 2), np.float32), np.ones((2, 2), np.float32)])
    assert a.shape == (2, 2, 2) and a.dtype is ember.float32
    s = default_collate([np.int32(1), np.int32(2)])
    assert s.dtype is ember.int32 and s.tolist() == [1, 2]


def test_tensors_are_stacked():
    out = default_collate([ember.full((3,), float(i)) for i in range(4)])
    assert out.shape == (4, 3) and out[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert not out.is_shared()  # only workers collate into shared memory


def test_containers():
    batch = [{"a": 1, "b": (2.0, "s")}, {"a": 3, "b": (4.0, "t")}]
    out = default_collate(batch)
    assert out["a"].tolist() == [1, 3]
    assert isinstance(out["b"], list)  # tuples become lists, as torch
    assert out["b"][0].tolist() == [2.0, 4.0] and out["b"][1] == ("s", "t")
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype is ember.float64
    lst = default_collate([[1, 2], [3, 4]])
    assert [t.tolist() for t in lst] == [[1, 3], [2, 4]]
    od = default_collate([collections.OrderedDict(z=1, a=2)] * 2)
    assert isinstance(od, collections.OrderedDict) and list(od) == ["z", "a"]


def test_errors():
    with pytest.raises(
        TypeError,
        match=r"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
        r"lists; found <class 'NoneType'>",
    ):
        default_collate([None, None])
    with pytest.raises(TypeError, match=r"found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size"):
        default_collate([ember.zeros(3), ember.zeros(2)])


def test_custom_collate_map():
    class Box:
        def __init__(self, v):
            self.v = v

    def collate_box(batch, *, collate_fn_map=None):
        return sum(b.v for b in batch)

    cmap = dict(default_collate_fn_map)
    cmap[Box] = collate_box
    out = collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=cmap)
    assert out[0] == 4 and out[1].tolist() == [2, 4]


def test_default_convert():
    arr = np.arange(3)
    t = default_convert(arr)
    assert isinstance(t, ember.Tensor) and np.shares_memory(t.numpy(), arr)
    assert default_convert(3) == 3 and default_convert("s") == "s"
    d = default_convert({"a": np.float32(1), "b": (np.zeros(2), 5)})
    assert d["a"].dtype is ember.float32 and isinstance(d["b"], list)
    assert isinstance(d["b"][0], ember.Tensor) and d["b"][1] == 5
    p = default_convert(Point(np.array(0), "y"))
    assert isinstance(p, Point) and isinstance(p.x, ember.Tensor)
    strs = np.array(["a", "b"])
    assert default_convert(strs) is strs


def test_worker_collates_into_shared_memory(monkeypatch):
    import ember.utils.data._utils.worker as worker

    monkeypatch.setattr(worker, "_worker_info", object())  # as inside a worker
    for dt in [ember.float32, ember.bfloat16, ember.bool, ember.int64]:
        out = default_collate([ember.ones(2, dtype=dt), ember.zeros(2, dtype=dt)])
        assert out.is_shared() and out.dtype is dt and out.shape == (2, 2)
    mixed = default_collate([ember.ones(2), ember.zeros(2, dtype=ember.float64)])
    assert mixed.dtype is ember.float64  # promoted by ember.stack, shared when sent
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([ember.zeros(3), ember.zeros(2)])
