"""Oracle tests for convolutions, transposed convolutions, unfold and fold (functional)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.nn._functional import conv as EF
from tests.oracle.helper import check, check_double_backward, check_raises, rand, torch

TF = torch.nn.functional


def F(lib):
    return TF if lib is torch else EF


CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
    dict(padding="same", dilation=2),
    dict(padding="valid"),
    dict(padding=2, dilation=3, stride=3),
]


@pytest.mark.parametrize("kw", CONV2D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(kw, bias):
    ins = [rand(2, 4, 11, 10), rand(6, 4, 3, 2), rand(6) if bias else None]
    check(lambda lib, x, w, b: F(lib).conv2d(x, w, b, **kw), ins, grad_atol=1e-4)


@pytest.mark.parametrize("groups,cin,cout", [(2, 4, 6), (4, 4, 4), (4, 4, 8)])
def test_conv2d_groups(groups, cin, cout):
    ins = [rand(2, cin, 9, 8), rand(cout, cin // groups, 3, 3), rand(cout)]
    check(
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, stride=2, padding=1, groups=groups),
        ins,
        grad_atol=1e-4,
    )


def test_conv2d_1x1_and_unbatched():
    check(lambda lib, x, w: F(lib).conv2d(x, w), [rand(2, 5, 6, 7), rand(3, 5, 1, 1)])
    check(lambda lib, x, w: F(lib).conv2d(x, w, padding=1), [rand(5, 6, 7), rand(3, 5, 3, 3)])


def test_output_sizes_from_issue():
    x = rand(1, 1, 38, 38)
    check(lambda lib, x, w: F(lib).conv2d(x, w, stride=2, padding=1), [x, rand(1, 1, 3, 3)])
    check(lambda lib, x, w: F(lib).conv2d(x, w, padding=6, dilation=6), [x, rand(1, 1, 3, 3)])


@pytest.mark.parametrize(
    "kw", [dict(), dict(stride=3, padding=2, dilation=2), dict(padding="same"), dict(groups=2)]
)
def test_conv1d(kw):
    ins = [rand(3, 4, 17), rand(6, 4 // kw.get("groups", 1), 4), rand(6)]
    check(lambda lib, x, w, b: F(lib).conv1d(x, w, b, **kw), ins, grad_atol=1e-4)


@pytest.mark.parametrize("kw", [dict(), dict(stride=(1, 2, 2), padding=1), dict(groups=2)])
def test_conv3d(kw):
    ins = [rand(2, 4, 5, 6, 7), rand(4, 4 // kw.get("groups", 1), 2, 3, 3), rand(4)]
    check(lambda lib, x, w, b: F(lib).conv3d(x, w, b, **kw), ins, grad_atol=1e-4)


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(stride=2, padding=1, output_padding=1),
        dict(stride=3, padding=2, output_padding=(2, 1), dilation=(1, 2)),
        dict(groups=2, stride=2),
    ],
)
def test_conv_transpose2d(kw):
    ins = [rand(2, 4, 6, 5), rand(4, 3, 3, 2), rand(3 * kw.get("groups", 1))]
    check(lambda lib, x, w, b: F(lib).conv_transpose2d(x, w, b, **kw), ins, grad_atol=1e-4)


def test_conv_transpose1d_3d():
    check(
        lambda lib, x, w, b: F(lib).conv_transpose1d(x, w, b, stride=2, output_padding=1),
        [rand(2, 3, 7), rand(3, 5, 3), rand(5)],
    )
    check(
        lambda lib, x, w: F(lib).conv_transpose3d(x, w, stride=2, padding=1),
        [rand(1, 2, 3, 4, 3), rand(2, 3, 3, 3, 2)],
        grad_atol=1e-4,
    )
    check(lambda lib, x, w: F(lib).conv_transpose2d(x, w), [rand(2, 4, 5), rand(2, 3, 2, 2)])


@pytest.mark.parametrize(
    "kw", [dict(stride=2, padding=1), dict(padding="same", dilation=2), dict(groups=2)]
)
def test_conv2d_double_backward(kw):
    ins = [
        rand(2, 4, 6, 5, dtype="float64"),
        rand(4, 2 if kw.get("groups") else 4, 3, 3, dtype="float64"),
        rand(4, dtype="float64"),
    ]
    check_double_backward(lambda lib, x, w, b: F(lib).conv2d(x, w, b, **kw), ins)


def test_conv_transpose_double_backward():
    ins = [rand(2, 4, 4, 3, dtype="float64"), rand(4, 3, 3, 3, dtype="float64")]
    fn = lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=2, output_padding=1)  # noqa: E731
    check_double_backward(fn, ins)


def test_conv_float64():
    check(
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, padding=1),
        [
            rand(2, 3, 5, 5, dtype="float64"),
            rand(2, 3, 3, 3, dtype="float64"),
            rand(2, dtype="float64"),
        ],
    )


@pytest.mark.parametrize(
    "fn,ins",
    [
        (lambda lib, x, w: F(lib).conv2d(x, w), [rand(2, 5, 10, 10), rand(4, 3, 3, 3)]),
        (lambda lib, x, w: F(lib).conv2d(x, w), [rand(2, 3), rand(4, 3, 3, 3)]),
        (lambda lib, x, w: F(lib).conv2d(x, w), [rand(2, 3, 2, 2), rand(4, 3, 3, 3)]),
        (
            lambda lib, x, w: F(lib).conv2d(x, w, padding="same", stride=2),
            [rand(1, 3, 8, 8), rand(4, 3, 3, 3)],
        ),
        (lambda lib, x, w: F(lib).conv2d(x, w, groups=2), [rand(1, 3, 8, 8), rand(4, 3, 3, 3)]),
        (
            lambda lib, x, w: F(lib).conv2d(x, w, padding="foo"),
            [rand(1, 3, 8, 8), rand(4, 3, 3, 3)],
        ),
        (
            lambda lib, x, w: F(lib).conv2d(x, w),
            [rand(1, 3, 8, 8, dtype="float64"), rand(4, 3, 3, 3)],
        ),
        (
            lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=2, output_padding=2),
            [rand(1, 4, 8, 8), rand(4, 3, 3, 3)],
        ),
    ],
)
def test_conv_errors(fn, ins):
    check_raises(fn, ins, match_message=True)


@pytest.mark.parametrize(
    "kw", [dict(kernel_size=2), dict(kernel_size=(3, 2), dilation=2, padding=1, stride=(2, 1))]
)
def test_unfold_fold(kw):
    check(lambda lib, x: F(lib).unfold(x, **kw), [rand(2, 3, 8, 7)])
    blocks = TF.unfold(torch.zeros(2, 3, 8, 7), **kw).shape[-1]
    k = kw["kernel_size"]
    kk = k * k if isinstance(k, int) else k[0] * k[1]
    check(lambda lib, x: F(lib).fold(x, (8, 7), **kw), [rand(2, 3 * kk, blocks)])
    check_double_backward(
        lambda lib, x: F(lib).fold(x, (8, 7), **kw), [rand(1, 3 * kk, blocks, dtype="float64")]
    )


def test_fold_errors():
    check_raises(lambda lib, x: F(lib).fold(x, (4, 4), 2), [rand(1, 5, 9)])
    check_raises(lambda lib, x: F(lib).fold(x, (4, 4), 2), [rand(1, 4, 8)])


def test_conv_non_contiguous_input():
    check(
        lambda lib, x, w: F(lib).conv2d(x.transpose(2, 3), w, padding=1),
        [rand(2, 3, 7, 6), rand(4, 3, 3, 3)],
    )
    check(
        lambda lib, x, w: F(lib).conv_transpose2d(x.transpose(2, 3), w, stride=2),
        [rand(2, 3, 7, 6), rand(3, 4, 3, 3)],
    )


def test_depthwise_double_backward():
    ins = [rand(2, 4, 5, 5, dtype="float64"), rand(8, 1, 3, 3, dtype="float64")]
    check_double_backward(lambda lib, x, w: F(lib).conv2d(x, w, groups=4, padding=1), ins)


def test_conv3d_double_backward():
    ins = [rand(1, 2, 4, 4, 3, dtype="float64"), rand(3, 2, 2, 2, 2, dtype="float64")]
    check_double_backward(lambda lib, x, w: F(lib).conv3d(x, w, stride=(1, 2, 1)), ins)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 3),  # stride
    st.integers(0, 2),  # padding
    st.integers(1, 2),  # dilation
    st.sampled_from([1, 2]),  # groups
    st.integers(1, 3),  # kernel
    st.integers(5, 9),  # size
    st.booleans(),  # transposed
)
def test_conv2d_hypothesis(stride, padding, dilation, groups, k, size, transposed):
    if transposed:
        op_ = stride - 1 if stride > 1 else 0
        ins = [rand(2, 4, size, size - 1), rand(4, 6 // groups, k, k), rand(6)]
        fn = lambda lib, x, w, b: F(lib).conv_transpose2d(  # noqa: E731
            x, w, b, stride, padding, op_, groups, dilation
        )
    else:
        ins = [rand(2, 4, size, size - 1), rand(6, 4 // groups, k, k), rand(6)]
        fn = lambda lib, x, w, b: F(lib).conv2d(  # noqa: E731
            x, w, b, stride, padding, dilation, groups
        )
    try:
        fn(torch, *[torch.from_numpy(a) for a in ins])
    except RuntimeError:  # an invalid combination: ember must raise the same
        check_raises(fn, ins, match_message=True)
        return
    check(fn, ins, grad_atol=1e-4)


# unit-stride 2-D convolutions with enough channels take the row-shift implicit GEMM
# (``_conv2d_rows``); its forward, input gradient (a flipped-kernel convolution) and weight
# gradient must agree with torch for every padding shape, including asymmetric 'same' padding
ROWS = [
    dict(),
    dict(padding=1),
    dict(padding=(2, 0)),
    dict(padding="same"),
    dict(padding=(0, 3)),
]


@pytest.mark.parametrize("kw", ROWS)
@pytest.mark.parametrize("kernel", [(3, 3), (2, 4), (5, 1), (1, 6)])
def test_conv2d_unit_stride_rows_path(kw, kernel):
    x, w = rand(3, 8, 17, 18), rand(32, 8, *kernel)
    assert EF._rows_apply(x, kernel[1], 32, ((0, 0), (0, 0)), (1, 1), (1, 1), 1) or kernel[1] == 1
    check(lambda lib, x, w, b: F(lib).conv2d(x, w, b, **kw), [x, w, rand(32)], grad_atol=1e-3)


@pytest.mark.parametrize("kw", [dict(), dict(padding=1), dict(padding=(2, 1))])
def test_conv_transpose2d_unit_stride_rows_path(kw):
    ins = [rand(2, 6, 7, 8), rand(6, 32, 3, 4), rand(32)]
    check(lambda lib, x, w, b: F(lib).conv_transpose2d(x, w, b, **kw), ins, grad_atol=1e-4)


def test_conv2d_rows_path_double_backward():
    check_double_backward(
        lambda lib, x, w: F(lib).conv2d(x, w, padding=1),
        [rand(2, 6, 17, 16, dtype="float64"), rand(32, 6, 3, 3, dtype="float64")],
    )


# a kernel tall against its padded input (LeNet's conv2: 5 rows on 14) takes the height-major
# row shifts (``_conv2d_hrows``, kh GEMMs on column blocks), and the input gradient of such
# convolutions the width-major col2im (``_col2im_wmajor``)
TALL = [dict(), dict(padding=1), dict(padding=(2, 0)), dict(padding="same"), dict(padding=(0, 3))]


@pytest.mark.parametrize("kw", TALL)
@pytest.mark.parametrize("kernel", [(5, 5), (5, 3), (4, 2), (3, 6)])
def test_conv2d_tall_kernel_path(kw, kernel):
    h = kernel[0] + 1
    x, w = rand(3, 8, h, 11), rand(32, 8, *kernel)
    pads = {(): 0, (1,): 2, ((2, 0),): 4, ("same",): kernel[0] - 1, ((0, 3),): 0}
    hp = h + pads[tuple(kw.values())]
    assert EF._rows_apply(x, kernel[1], 32, ((0, 0), (0, 0)), (1, 1), (1, 1), 1)
    assert EF._tall_kernel(kernel[0], hp)
    check(lambda lib, x, w, b: F(lib).conv2d(x, w, b, **kw), [x, w, rand(32)], grad_atol=1e-3)


@pytest.mark.parametrize("kernel,padding", [((3, 3), (1, 1)), ((5, 3), (3, 1))])
def test_conv_transpose2d_tall_kernel_path(kernel, padding):
    # unit stride, 32 output channels, output no larger than the input: the flipped-kernel
    # convolution, here tall against its padded input (height-major)
    x, w = rand(2, 6, 4, 9), rand(6, 32, *kernel)
    assert EF._tall_kernel(kernel[0], 4 + 2 * (kernel[0] - 1 - padding[0]))
    fn = lambda lib, x, w, b: F(lib).conv_transpose2d(x, w, b, padding=padding)  # noqa: E731
    check(fn, [x, w, rand(32)], grad_atol=1e-4)


def test_conv2d_tall_kernel_path_double_backward():
    check_double_backward(
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, padding=(1, 2)),
        [
            rand(2, 4, 6, 7, dtype="float64"),
            rand(32, 4, 5, 3, dtype="float64"),
            rand(32, dtype="float64"),
        ],
    )


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("kw", [dict(), dict(padding=1), dict(padding=(2, 0))])
@pytest.mark.parametrize("kernel", [(5, 5), (3, 2), (1, 4)])
def test_conv_transpose2d_wmajor_col2im(groups, kw, kernel):
    # unit stride, the output much larger than the input or few output channels: col2im
    ins = [rand(3, 6, 5, 7), rand(6, 8 // groups, *kernel), rand(8)]
    check(
        lambda lib, x, w, b: F(lib).conv_transpose2d(x, w, b, groups=groups, **kw),
        ins,
        grad_atol=1e-4,
    )


def test_conv_transpose2d_wmajor_col2im_double_backward():
    check_double_backward(
        lambda lib, x, w: F(lib).conv_transpose2d(x, w, padding=1, groups=2),
        [rand(2, 4, 5, 6, dtype="float64"), rand(4, 3, 4, 3, dtype="float64")],
    )


@pytest.mark.parametrize(
    "kw", [dict(padding=2), dict(stride=2, padding=1), dict(dilation=2), dict(padding="same")]
)
def test_conv2d_per_sample_path(kw):
    # few input channels, many output positions: one GEMM per sample straight into NCHW
    x, w = rand(3, 1, 20, 19), rand(16, 1, 5, 5)
    assert EF._per_sample(x, (5, 5), (8, 8), 1)
    check(lambda lib, x, w, b: F(lib).conv2d(x, w, b, **kw), [x, w, rand(16)], grad_atol=1e-4)


def test_conv_per_sample_path_double_backward():
    check_double_backward(
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, stride=(1, 2), padding=1),
        [
            rand(2, 3, 12, 14, dtype="float64"),
            rand(4, 3, 3, 3, dtype="float64"),
            rand(4, dtype="float64"),
        ],
    )
    check_double_backward(
        lambda lib, x, w: F(lib).conv1d(x, w, padding=3),
        [rand(2, 2, 70, dtype="float64"), rand(3, 2, 7, dtype="float64")],
    )
