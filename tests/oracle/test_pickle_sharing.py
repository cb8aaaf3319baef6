"""pickle, copy.deepcopy and torch.save of structures holding tensors and views of them:
which results share storage, which keep requires_grad / grad / Parameter identity, as torch.
(Plain pickles copy each tensor's storage; deepcopy and torch.save keep views of one storage
together; tied Parameters stay tied.)"""

from __future__ import annotations

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
"""


def test_pickle_deepcopy_and_save_share_as_torch():
    check_snippet(SHARING)
