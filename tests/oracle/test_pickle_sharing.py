"""pickle, copy.deepcopy and torch.save of structures holding tensors and views of them:
which results share storage, which keep requires_grad / grad / Parameter identity, as torch.
(Plain pickles copy each tensor's storage; deepcopy and torch.save keep views of one storage
together; tied Parameters stay tied.)"""

from __future__ import annotations

import pytest

from tests.oracle._user_code import check_snippet

SHARING = """
import pickle, copy, io
x = torch.arange(6.)
a, b = pickle.loads(pickle.dumps((x, x[1:])))
b[0] = 100; print(a, b, b._base is a if hasattr(b,'_base') else None, b.storage_offset())
a, b = copy.deepcopy((x, x[1:]))
b[0] = 100; print(a, b, b._base is a, b.storage_offset())
buf = io.BytesIO(); torch.save((x, x[1:]), buf); buf.seek(0); a, b = torch.load(buf)
b[0] = 100; print(a, b, b._base is a, b.storage_offset())
w = torch.randn(3, requires_grad=True)
w.grad = torch.ones(3)
v = pickle.loads(pickle.dumps(w)); print(v.requires_grad, v.grad, v.is_leaf)
v = copy.deepcopy(w); print(v.requires_grad, v.grad, v.is_leaf)
y = w * 2
try: pickle.dumps(y); print("pickled nonleaf")
except Exception as e: print(type(e).__name__, e)
try: copy.deepcopy(y); print("deepcopy nonleaf")
except Exception as e: print(type(e).__name__, e)
m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
m[1].weight = m[0].weight
m2 = copy.deepcopy(m); print(m2[1].weight is m2[0].weight, type(m2[0].weight).__name__)
m3 = pickle.loads(pickle.dumps(m)); print(m3[1].weight is m3[0].weight, len(list(m3.parameters())))
p = torch.nn.Parameter(torch.ones(2))
q = pickle.loads(pickle.dumps([p, p]))
print(q[0] is q[1], type(q[0]).__name__, q[0].requires_grad)
p2 = torch.nn.Parameter(torch.ones(2), requires_grad=False)
print(copy.deepcopy(p2).requires_grad, pickle.loads(pickle.dumps(p2)).requires_grad)
t = torch.ones(4); v1, v2 = t[:2], t[2:]
r = pickle.loads(pickle.dumps([v1, v2])); r[0][0] = 5; print(r[1], r[0].untyped_storage().nbytes())
r = copy.deepcopy([v1, v2]); r[0][0] = 5; print(r, r[0].untyped_storage().nbytes())
d = {"a": x, "b": x}; r = copy.deepcopy(d); print(r["a"] is r["b"])
tt = x.t() if x.dim()==2 else x.view(2,3).t()
r = pickle.loads(pickle.dumps(tt)); print(r.stride(), r.is_contiguous())
r = copy.deepcopy(tt); print(r.stride(), r.is_contiguous())
c = copy.copy(x); c[0] = 7; print(x[0], type(copy.copy(p)).__name__)
t2 = torch.ones(2); t2.tag = "a"; r = pickle.loads(pickle.dumps(t2)); print(r, r.tag)
h = torch.arange(4, dtype=torch.float16)[::2]; r = pickle.loads(pickle.dumps(h))
print(r, r.stride(), r.storage_offset(), r.untyped_storage().nbytes())
print(pickle.loads(pickle.dumps([torch.bfloat16, torch.strided, torch.channels_last,
      torch.device("cpu"), torch.Size([2, 3]), torch.zeros(0, 3)])))
"""


def test_pickle_deepcopy_and_save_share_as_torch():
    check_snippet(SHARING)


def test_a_pickle_names_torchs_rebuild_and_storage_loader():
    # pickle.dumps(tensor) is _rebuild_tensor_v2(storage._load_from_bytes(<legacy save bytes>),
    # ...) in both: the bytes torch writes load in ember's _load_from_bytes
    torch = pytest.importorskip("torch")
    import pickle
    import warnings

    import ember

    t = torch.arange(6.0).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (TypedStorage is deprecated)
        storage = t.storage()
    (b,) = storage.__reduce__()[1]
    s = ember.storage._load_from_bytes(b)
    assert s.dtype is ember.float32 and s.tolist() == storage.tolist()
    data = pickle.dumps(ember.arange(6.0).reshape(2, 3))
    assert b"ember._utils" in data and b"_rebuild_tensor_v2" in data
    assert b"ember.storage" in data and b"_load_from_bytes" in data
