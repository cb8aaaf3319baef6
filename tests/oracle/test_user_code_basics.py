# ruff: noqa: E501  (user code quoted verbatim)
"""User code: the tutorials' tensor basics, device selection and the legacy typed constructors."""

from __future__ import annotations

import pytest

from tests.oracle._user_code import check_snippet

SNIPPETS = {
    "accelerator_device_idiom": """
        device = (torch.accelerator.current_accelerator().type
                  if torch.accelerator.is_available() else "cpu")
        print(f"Using {device} device")
        print(torch.accelerator.device_count(), torch.accelerator.current_accelerator())
        model = nn.Linear(2, 3).to(device)
        print(model.weight.device, torch.ones(2, device=device).device)
    """,
    "accelerator_needs_a_device": """
        for name in ["current_device_index", "synchronize", "empty_cache", "memory_allocated"]:
            try:
                getattr(torch.accelerator, name)()
            except RuntimeError as e:
                print(name, "RuntimeError", e)
    """,
    "legacy_constructors": """
        for cls in [torch.FloatTensor, torch.DoubleTensor, torch.LongTensor, torch.IntTensor,
                    torch.ByteTensor, torch.BoolTensor, torch.HalfTensor, torch.CharTensor,
                    torch.ShortTensor]:
            print(cls, cls.dtype, cls([1, 0, 1]), cls(2).shape, cls(2, 3).shape, cls().shape)
        print(torch.FloatTensor(torch.Size([4])).shape, torch.LongTensor([[1, 2], [3, 4]]))
        t = torch.FloatTensor([1.0, 2.0])
        print(type(t) is torch.Tensor, torch.FloatTensor(t) is t, torch.FloatTensor(t).dtype)
    """,
    "legacy_isinstance": """
        x = torch.ones(2)
        print(isinstance(x, torch.FloatTensor), isinstance(x, torch.LongTensor),
              isinstance(x.long(), torch.LongTensor), isinstance(x.double(), torch.DoubleTensor),
              isinstance(x, torch.cuda.FloatTensor), isinstance([1.0], torch.FloatTensor))
        print(issubclass(torch.FloatTensor, torch.Tensor))
    """,
    "legacy_type_casts": """
        x = torch.tensor([1.5, -2.5])
        print(x.type(torch.LongTensor), x.type(torch.DoubleTensor), x.type(torch.FloatTensor))
        print(x.type("torch.IntTensor"), x.type(), x.long().type(), x.type(torch.float16))
        m = nn.Linear(2, 2).type(torch.DoubleTensor)
        print(m.weight.dtype, m.bias.type())
    """,
    "legacy_cuda_types": """
        print(torch.cuda.FloatTensor, torch.cuda.LongTensor)
        try:
            torch.cuda.FloatTensor(2)
        except TypeError as e:
            print("TypeError", e)
    """,
    "legacy_wrong_dtype_tensor": """
        try:
            torch.FloatTensor(torch.tensor([1, 2]))
        except TypeError:
            print("TypeError")
        print(torch.Tensor(torch.tensor([1, 2])))
    """,
    "legacy_constructors_more": """
        print(torch.FloatTensor(np.array([1, 2], dtype=np.int64)), torch.DoubleTensor([[1, 2], [3, 4]]))
        print(torch.FloatTensor(3).fill_(1), torch.LongTensor(2, 2).zero_(), torch.BoolTensor([True, 0]))
        print(torch.FloatTensor([1.5]).type(), torch.LongTensor([1]).type(), torch.ByteTensor([1]).type())
        print(torch.FloatTensor((1, 2)), torch.IntTensor(range(3)))
        t = torch.Tensor([[1, 2]]); print(t.dtype, t.type())
        print(isinstance(torch.zeros(2, dtype=torch.float64), torch.DoubleTensor))
        x = torch.FloatTensor([1.0, 2.0]).requires_grad_(); (x * 2).sum().backward(); print(x.grad)
        try:
            torch.FloatTensor("abc")
        except TypeError as e:
            print("TypeError")
        try:
            torch.LongTensor(2.5)
        except TypeError as e:
            print("TypeError", e)
        print(torch.FloatTensor([]), torch.LongTensor([]).shape, torch.FloatTensor(0).shape)
        print(torch.cuda.FloatTensor is not torch.FloatTensor, torch.cuda.LongTensor.__name__)
    """,
    "subclass_repr": """
        class MyTensor(torch.Tensor):
            pass
        y = MyTensor([1.0, 2.0])
        print(y, repr(y), type(y).__name__)
        z = MyTensor([[1.5, 2.0], [3.0, 4.0]])
        print(z)
        p = torch.nn.Parameter(torch.ones(2))
        print(p)
        print(torch.nn.UninitializedParameter())
        print(torch.Tensor([1.0]))
    """,
    "as_subclass": """
        class C(torch.Tensor): pass
        x = torch.ones(2, requires_grad=True)
        y = x.as_subclass(C); print(type(y).__name__, y.grad_fn.name(), y.requires_grad, y.is_leaf, y._base is x, y.data_ptr()==x.data_ptr())
        (y * 2).sum().backward(); print(x.grad)
        z = (x*2).as_subclass(C); print(z.grad_fn.name())
        w = torch.ones(2).as_subclass(C); w.add_(1); print(w)
        try: x.as_subclass(int)
        except TypeError as e: print("TypeError", e)
    """,
}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippet(name):
    check_snippet(SNIPPETS[name])


def _warning_messages(lib, fn):
    import warnings

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        fn(lib)
    # torch appends where in its C++ sources the warning came from
    return [str(w.message).split(" (Triggered internally")[0] for w in got]


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib: lib.ones(2).new_tensor(lib.ones(2)),
        lambda lib: lib.zeros(3).scatter_(0, lib.tensor([1, 1]), 2.0, reduce="add"),
    ],
)
def test_warnings_users_see(fn):
    import ember
    from tests.oracle.helper import torch

    assert _warning_messages(ember, fn) == _warning_messages(torch, fn)


def _twice(call) -> list:
    import warnings

    seen = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            call()
        seen.append([str(w.message) for w in got])
    return seen


def test_once_per_process_warnings_in_torchs_words():
    # torch gives these once per process (TORCH_WARN_ONCE), so ember does too
    import ember
    from ember._ops import copying, gather_scatter

    gather_scatter._WARNED_REDUCE.clear()
    scatter = _twice(
        lambda: ember.zeros(3).scatter_(0, ember.tensor([1, 1]), ember.ones(2), reduce="add")
    )
    assert scatter == [[gather_scatter.SCATTER_REDUCE_DEPRECATED], []]
    assert gather_scatter.SCATTER_REDUCE_DEPRECATED.startswith(
        "The reduce argument of torch.scatter with Tensor src is deprecated"
    )
    copying._WARNED_COMPLEX_CAST.clear()
    cast = _twice(lambda: ember.tensor([1 + 2j]).float())
    assert cast == [["Casting complex values to real discards the imaginary part"], []]
