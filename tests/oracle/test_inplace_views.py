"""In-place ops and the views around them: every live view sees its base's new history."""

import pytest

from tests.oracle.helper import check, check_raises, rand


def _views_after_base_inplace(lib, x):
    base = x * 1
    w = base[1:]
    base.mul_(2)  # w's history must now go through the MulBackward0 of the in-place op
    return w * 3


def _sibling_view_after_view_setitem(lib, x, v):
    base = x * 1
    w = base[1:]
    base[0, :2] = v  # a write through another view of the same base
    return w.sum(0), base


def _view_of_plain_base_gains_grad(lib, x):
    z = lib.zeros(3, 4, dtype=lib.float64)
    v = z[1:]
    z[0] = x[0]  # z now requires grad; so does its earlier view v
    return v * 2, z


def _chain_of_inplace_on_views(lib, x):
    y = x * 2
    y[0] += 1
    y[:, 1].mul_(3)
    y.relu_()
    return y


@pytest.mark.parametrize(
    "fn,shapes",
    [
        (_views_after_base_inplace, [(3, 4)]),
        (_sibling_view_after_view_setitem, [(3, 4), (2,)]),
        (_view_of_plain_base_gains_grad, [(3, 4)]),
        (_chain_of_inplace_on_views, [(3, 4)]),
    ],
)
def test_views_follow_base_history(fn, shapes):
    check(fn, [rand(*s, dtype="float64") for s in shapes])


def test_no_grad_view_modified_in_grad_mode_raises():
    def fn(lib, x):
        y = x * 1
        with lib.no_grad():
            v = y[0]
        v.mul_(2)

    check_raises(fn, [rand(3, 4)], grad=True, match_message=True)


def test_inplace_overlap_errors():
    check_raises(lambda lib, x: (x * 1).expand(3, 4).add_(1), [rand(4)], match_message=True)
    check_raises(lambda lib, x: x[1:].add_(x[:-1]), [rand(5)], match_message=True)
    check(lambda lib, x: x.add_(x), [rand(5)], grad=False)


def test_mul_by_scalar_does_not_pin_its_input():
    def fn(lib, x):
        y = x * 1
        y[1] = y[2] * 3  # saving y[2] would make this a version error at backward
        return y

    check(fn, [rand(3, 4, dtype="float64")])


def test_copy_slices_with_a_transposed_incoming_gradient():
    # the gradient reaching CopySlices is laid out as the base (C-contiguous), whatever the
    # layout of the gradient flowing in, so the view can be replayed on it
    def fn(lib, w, k):
        x = lib.zeros(4, 3).clone()
        x.view(12)[2:5] = w * 2
        return x.t() * k

    check(fn, [rand(3), rand(3, 4)], strides=False)  # (mixed-layout mul: see notes)
