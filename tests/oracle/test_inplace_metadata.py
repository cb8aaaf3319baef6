"""Oracle tests: in-place metadata ops (t_, transpose_, squeeze_, unsqueeze_, as_strided_),
fill_diagonal_, resize_ and resize_as_."""

from __future__ import annotations

import pytest

import ember
from tests.oracle.helper import check, check_raises, rand, torch

VIEW_OPS = [
    ("t_", (3, 4), lambda x: x.t_()),
    ("transpose_", (2, 3, 4), lambda x: x.transpose_(0, 2)),
    ("swapdims_", (2, 3, 4), lambda x: x.swapdims_(-1, 0)),
    ("swapaxes_", (2, 3, 4), lambda x: x.swapaxes_(1, 2)),
    ("squeeze_", (2, 1, 3, 1), lambda x: x.squeeze_()),
    ("squeeze_dim", (2, 1, 3, 1), lambda x: x.squeeze_(1)),
    ("squeeze_dims", (2, 1, 3, 1), lambda x: x.squeeze_((1, 3))),
    ("unsqueeze_", (2, 3), lambda x: x.unsqueeze_(1)),
    ("as_strided_", (3, 4), lambda x: x.as_strided_((2, 3), (4, 1), 1)),
]


@pytest.mark.parametrize("name,shape,fn", VIEW_OPS, ids=[v[0] for v in VIEW_OPS])
def test_inplace_view_ops_take_the_view_and_its_history(name, shape, fn):
    def run(lib, x):
        y = x * 2  # a non-leaf: in-place ops are allowed on it
        r = fn(y)
        assert r is y
        return y * y

    check(run, [rand(*shape)])

    def result_itself(lib, x):
        y = x * 2
        fn(y)
        return y  # the grad_fn is torch's in-place node name (TBackward1...)

    check(result_itself, [rand(*shape)])


def test_inplace_view_op_on_a_view_and_without_grad():
    def on_view(lib, x):
        y = (x * 1)[1]
        y.unsqueeze_(0)
        return y

    check(on_view, [rand(3, 4)])
    check(lambda lib, x: x.t_(), [rand(2, 5)], grad=False)


def test_inplace_view_op_on_a_leaf_requiring_grad_raises():
    check_raises(lambda lib, x: x.t_(), [rand(2, 3)], grad=True)


@pytest.mark.parametrize(
    "shape,wrap",
    [((3, 3), False), ((4, 2), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False)],
)
def test_fill_diagonal(shape, wrap):
    def run(lib, x):
        y = x * 1
        y.fill_diagonal_(0.5, wrap=wrap)
        return y

    check(run, [rand(*shape)])


def test_fill_diagonal_errors():
    check_raises(lambda lib, x: x.fill_diagonal_(1), [rand(3)])
    check_raises(lambda lib, x: x.fill_diagonal_(1), [rand(2, 3, 4)])


@pytest.mark.parametrize("new", [(2, 2), (6,), (3, 3), (0,)])
def test_resize(new):
    def run(lib, x):
        y = x.clone()
        y.resize_(*new)
        if y.numel() <= x.numel():  # torch leaves new elements uninitialised: compare the kept
            return y
        return y.flatten()[: x.numel()]

    check(run, [rand(2, 3)], grad=False)
    check(lambda lib, x, t: x.clone().resize_as_(t), [rand(2, 3), rand(3, 2)], grad=False)
    check_raises(lambda lib, x: x.resize_(2), [rand(3)], grad=True)


def test_set_and_dim_order():
    out = []
    for lib in (torch, ember):
        a, b = lib.zeros(2), lib.arange(6.0).reshape(2, 3)
        a.set_(b)
        a[0, 0] = 7  # shares b's memory
        row = [a.tolist(), b[0, 0].item(), a._version, a.data_ptr() == b.data_ptr()]
        row.append(lib.zeros(3).set_(b.untyped_storage(), 2, (2,), (1,)).tolist())
        row.append(lib.zeros(1).set_(b.untyped_storage()).tolist())
        row.append(tuple(lib.ones(3).set_().shape))
        for target in (lib.ones(2, requires_grad=True), lib.ones(2, dtype=lib.int64)):
            with pytest.raises(RuntimeError) as info:
                target.set_(b)
            row.append(str(info.value))
        cl = lib.ones(2, 3, 4, 5).to(memory_format=lib.channels_last)
        row += [b.dim_order(), b.T.dim_order(), cl.dim_order(), lib.ones(2, 1, 3).dim_order()]
        out.append(row)
    assert out[0] == out[1]
