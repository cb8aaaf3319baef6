"""Common user mistakes raise torch's exception class with torch's exact message.

Each case is written once as ``lambda lib: ...`` and run through torch and ember; both must
raise, ember's exception must be an instance of torch's class and carry the same message (user
code prints or matches it).
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _f(lib):
    return lib.nn.functional


def _saved(lib, obj):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return buf


CASES = {
    # -------------------------------------------------------------- matmul family shapes/dtypes
    "matmul_batch_broadcast": lambda t: t.matmul(t.ones(2, 2, 3), t.ones(3, 4, 5)),
    "matmul_batch_broadcast_inner_ok": lambda t: t.ones(2, 2, 3) @ t.ones(3, 3, 5),
    "matmul_batched_inner": lambda t: t.matmul(t.ones(5, 1, 2, 3), t.ones(4, 4, 5)),
    "matmul_batched_vs_size1": lambda t: t.matmul(t.ones(3, 2, 3), t.ones(1, 4, 5)),
    "matmul_3d_double_mm": lambda t: t.ones(4, 2, 3, dtype=t.float64) @ t.ones(3, 2),
    "matmul_3d_double_mv": lambda t: t.ones(4, 2, 3, dtype=t.float64) @ t.ones(3),
    "bmm_batch": lambda t: t.bmm(t.ones(2, 2, 3), t.ones(3, 3, 5)),
    "bmm_batch_and_inner": lambda t: t.bmm(t.ones(2, 2, 3), t.ones(3, 4, 5)),
    "mv_size": lambda t: t.mv(t.ones(2, 3), t.ones(4)),
    "addmm_mat1_double": lambda t: t.addmm(t.ones(2), t.ones(2, 3, dtype=t.float64), t.ones(3, 2)),
    "addmm_self_double": lambda t: t.addmm(t.ones(2, dtype=t.float64), t.ones(2, 3), t.ones(3, 2)),
    "addmm_mat2_double": lambda t: t.addmm(t.ones(2), t.ones(2, 3), t.ones(3, 2, dtype=t.float64)),
    "baddbmm_batch1_double": lambda t: t.baddbmm(
        t.ones(2), t.ones(1, 2, 3, dtype=t.float64), t.ones(1, 3, 2)
    ),
    "baddbmm_batch2_double": lambda t: t.baddbmm(
        t.ones(2), t.ones(1, 2, 3), t.ones(1, 3, 2, dtype=t.float64)
    ),
    "addbmm_batch1_double": lambda t: t.addbmm(
        t.ones(2), t.ones(1, 2, 3, dtype=t.float64), t.ones(1, 3, 2)
    ),
    # -------------------------------------------------------------- nn.Linear / F.linear
    "linear_double_input": lambda t: t.nn.Linear(3, 2)(t.ones(2, 3, dtype=t.float64)),
    "linear_long_input": lambda t: t.nn.Linear(3, 2)(t.ones(2, 3, dtype=t.long)),
    "linear_double_3d_input": lambda t: t.nn.Linear(3, 2)(t.ones(4, 2, 3, dtype=t.float64)),
    "linear_0d_input": lambda t: t.nn.Linear(4, 2)(t.tensor(1.0)),
    "linear_0d_weight": lambda t: _f(t).linear(t.ones(2, 3), t.tensor(1.0)),
    "linear_numpy_input": lambda t: t.nn.Linear(1, 1)(np.ones((2, 1), dtype=np.float32)),
    "linear_list_input": lambda t: t.nn.Linear(1, 1)([1.0]),
    # -------------------------------------------------------------- conv
    "conv2d_double_input": lambda t: t.nn.Conv2d(3, 2, 3)(t.ones(1, 3, 5, 5, dtype=t.float64)),
    "conv1d_long_input": lambda t: t.nn.Conv1d(3, 2, 3)(t.ones(1, 3, 5, dtype=t.long)),
    "conv2d_missing_kernel": lambda t: t.nn.Conv2d(3, 4),
    "conv_transpose2d_missing_kernel": lambda t: t.nn.ConvTranspose2d(3, 4),
    # -------------------------------------------------------------- broadcasting
    "where_broadcast": lambda t: t.where(t.ones(3) > 0, t.ones(3), t.ones(4)),
    "where_broadcast_cond": lambda t: t.where(t.ones(4) > 0, t.ones(3), t.ones(3)),
    "masked_fill_mask_shape": lambda t: t.ones(3).masked_fill(t.ones(4) > 0, 0.0),
    "masked_fill_tensor_value": lambda t: t.ones(2, 3).masked_fill(t.ones(4, 3) > 0, t.tensor(1.0)),
    "copy_shape": lambda t: t.zeros(3).copy_(t.ones(4)),
    "copy_shape_2d": lambda t: t.zeros(2, 3).copy_(t.ones(2)),
    "mul_inplace_shape": lambda t: t.zeros(3).mul_(t.ones(4)),
    "add_inplace_grows": lambda t: t.zeros(3).add_(t.ones(2, 3)),
    # -------------------------------------------------------------- losses
    "ce_prob_target_wrong_shape": lambda t: _f(t).cross_entropy(t.ones(4, 3), t.ones(4, 2)),
    "ce_float_target_1d": lambda t: _f(t).cross_entropy(t.ones(4, 3), t.ones(4)),
    "ce_target_list": lambda t: _f(t).cross_entropy(t.ones(2, 3), [1, 2]),
    "nll_float_target_2d": lambda t: _f(t).nll_loss(t.ones(4, 3), t.ones(4, 2)),
    "nll_batch_mismatch_float": lambda t: _f(t).nll_loss(t.ones(4, 3), t.ones(3)),
    "nll_long_target_2d": lambda t: _f(t).nll_loss(t.ones(4, 3), t.ones(4, 2, dtype=t.long)),
    "nll_3d_target_size": lambda t: _f(t).nll_loss(t.ones(4, 3, 5), t.ones(4, 6, dtype=t.long)),
    "nll_3d_target_1d": lambda t: _f(t).nll_loss(t.ones(4, 3, 5), t.ones(4, dtype=t.long)),
    "nll_4d_target_1d": lambda t: _f(t).nll_loss(t.ones(4, 3, 5, 5), t.ones(4, dtype=t.long)),
    "nll_4d_size": lambda t: _f(t).nll_loss(t.ones(4, 3, 5, 5), t.ones(4, 5, 6, dtype=t.long)),
    "nll_1d_input_target_2": lambda t: _f(t).nll_loss(t.ones(3), t.ones(2, dtype=t.long)),
    "nll_1d_input_float_target": lambda t: _f(t).nll_loss(t.ones(3), t.ones(2)),
    "nll_weight_size": lambda t: _f(t).nll_loss(
        t.ones(4, 3), t.ones(4, dtype=t.long), weight=t.ones(2)
    ),
    "nll_weight_size_float_target": lambda t: _f(t).nll_loss(
        t.ones(4, 3), t.ones(4), weight=t.ones(2)
    ),
    "nll_4d_weight_size": lambda t: _f(t).nll_loss(
        t.ones(4, 3, 5, 5), t.ones(4, 5, 5, dtype=t.long), weight=t.ones(2)
    ),
    "mse_long": lambda t: _f(t).mse_loss(t.tensor([1, 2]), t.tensor([1, 3])),
    "mse_bool": lambda t: _f(t).mse_loss(t.tensor([True]), t.tensor([False])),
    "mse_module_long": lambda t: t.nn.MSELoss()(t.tensor([1, 2]), t.tensor([1, 3])),
    "mse_list_target": lambda t: _f(t).mse_loss(t.ones(2, 3), [1, 2, 3]),
    "smooth_l1_long": lambda t: _f(t).smooth_l1_loss(t.tensor([1, 2]), t.tensor([1, 3])),
    "huber_long": lambda t: _f(t).huber_loss(t.tensor([1, 2]), t.tensor([1, 3])),
    "bce_long_target": lambda t: _f(t).binary_cross_entropy(
        t.ones(3) * 0.5, t.ones(3, dtype=t.long)
    ),
    "bce_double_target": lambda t: _f(t).binary_cross_entropy(
        t.ones(3) * 0.5, t.ones(3, dtype=t.float64)
    ),
    "bce_long_both": lambda t: _f(t).binary_cross_entropy(
        t.ones(3, dtype=t.long), t.ones(3, dtype=t.long)
    ),
    "bce_logits_long_target": lambda t: t.nn.BCEWithLogitsLoss()(
        t.ones(3), t.ones(3, dtype=t.long)
    ),
    "bce_logits_bool_target": lambda t: _f(t).binary_cross_entropy_with_logits(
        t.ones(3), t.ones(3, dtype=t.bool)
    ),
    "bce_logits_long_input": lambda t: _f(t).binary_cross_entropy_with_logits(
        t.ones(3, dtype=t.long), t.ones(3)
    ),
    # -------------------------------------------------------------- normalization
    "batchnorm_channels": lambda t: t.nn.BatchNorm1d(4)(t.ones(2, 3)),
    "batchnorm2d_channels_eval": lambda t: t.nn.BatchNorm2d(4).eval()(t.ones(2, 3, 5, 5)),
    "batchnorm_weight_only": lambda t: t.nn.BatchNorm1d(4, track_running_stats=False)(t.ones(2, 3)),
    "batch_norm_running_var": lambda t: _f(t).batch_norm(t.ones(2, 3), t.zeros(3), t.ones(4)),
    "batchnorm_double_input": lambda t: t.nn.BatchNorm2d(4)(t.ones(2, 4, 5, 5, dtype=t.float64)),
    "batchnorm_long_input": lambda t: t.nn.BatchNorm1d(4)(t.ones(2, 4, dtype=t.long)),
    "layernorm_shape": lambda t: t.nn.LayerNorm(4)(t.ones(2, 5)),
    "layernorm_shape_2": lambda t: t.nn.LayerNorm([3, 4])(t.ones(2, 4, 3)),
    "layernorm_double_input": lambda t: t.nn.LayerNorm(4)(t.ones(4, 4, dtype=t.float64)),
    "layer_norm_long": lambda t: _f(t).layer_norm(t.ones(2, 4, dtype=t.long), (4,)),
    "groupnorm_divisible": lambda t: t.nn.GroupNorm(3, 4),
    "groupnorm_channels": lambda t: t.nn.GroupNorm(2, 4)(t.ones(2, 6, 3)),
    "group_norm_groups": lambda t: _f(t).group_norm(t.ones(2, 6, 3), 4),
    "group_norm_long": lambda t: _f(t).group_norm(t.ones(2, 4, dtype=t.long), 2),
    "local_response_norm_1d": lambda t: t.nn.LocalResponseNorm(2)(t.ones(3)),
    # -------------------------------------------------------------- pooling
    "avgpool2d_2d_input": lambda t: t.nn.AvgPool2d(2)(t.ones(4, 4)),
    "avgpool2d_5d_input": lambda t: t.nn.AvgPool2d(2)(t.ones(1, 1, 1, 4, 4)),
    "avgpool1d_1d_input": lambda t: t.nn.AvgPool1d(2)(t.ones(4)),
    "maxpool1d_1d_input": lambda t: t.nn.MaxPool1d(2)(t.ones(4)),
    "maxpool1d_too_small": lambda t: t.nn.MaxPool1d(5)(t.ones(2, 4)),
    "maxpool1d_stride_0": lambda t: _f(t).max_pool1d(t.ones(2, 4), 2, stride=0),
    "maxpool2d_too_small": lambda t: t.nn.MaxPool2d(5)(t.ones(1, 4, 4)),
    "maxpool2d_too_small_batched": lambda t: t.nn.MaxPool2d(5)(t.ones(2, 1, 4, 4)),
    "avgpool2d_too_small": lambda t: t.nn.AvgPool2d(5)(t.ones(1, 4, 4)),
    "avgpool3d_too_small": lambda t: t.nn.AvgPool3d(5)(t.ones(2, 1, 4, 4, 4)),
    "maxpool2d_stride_0": lambda t: _f(t).max_pool2d(t.ones(1, 4, 4), 2, stride=0),
    "maxpool2d_stride_negative": lambda t: _f(t).max_pool2d(t.ones(1, 4, 4), 2, stride=-1),
    "maxpool2d_dilation_0": lambda t: _f(t).max_pool2d(t.ones(1, 4, 4), 2, dilation=0),
    "maxpool2d_kernel_0": lambda t: _f(t).max_pool2d(t.ones(1, 4, 4), 0, stride=1),
    "maxpool2d_zero_channels": lambda t: _f(t).max_pool2d(t.ones(1, 0, 4, 4), 2),
    "maxpool3d_zero_channels": lambda t: _f(t).max_pool3d(t.ones(1, 0, 4, 4, 4), 2),
    "adaptive_avg_negative": lambda t: t.nn.AdaptiveAvgPool2d((2, -1))(t.ones(1, 1, 4, 4)),
    "adaptive_max_negative": lambda t: t.nn.AdaptiveMaxPool2d(-1)(t.ones(1, 1, 4, 4)),
    "interpolate_2d_input": lambda t: _f(t).interpolate(t.ones(4, 4), scale_factor=2),
    "interpolate_bad_mode": lambda t: _f(t).interpolate(
        t.ones(1, 1, 4, 4), scale_factor=2, mode="x"
    ),
    # -------------------------------------------------------------- nn odds and ends
    "parameter_long": lambda t: t.nn.Parameter(t.ones(2, dtype=t.long)),
    "pad_sequence_trailing_dims": lambda t: t.nn.utils.rnn.pad_sequence(
        [t.ones(2, 3), t.ones(2, 4)]
    ),
    "ce_1d_input_target_size_2": lambda t: t.nn.CrossEntropyLoss()(t.ones(3), t.tensor([1, 2])),
    # -------------------------------------------------------------- operators with non-tensors
    "add_str": lambda t: t.ones(2) + "a",
    "radd_str": lambda t: "a" + t.ones(2),
    "mul_none": lambda t: t.ones(2) * None,
    "sub_list": lambda t: t.ones(2) - [1, 2],
    "rsub_list": lambda t: [1, 2] - t.ones(2),
    "div_str": lambda t: t.ones(2) / "a",
    "rdiv_str": lambda t: "a" / t.ones(2),
    "pow_str": lambda t: t.ones(2) ** "a",
    "floordiv_str": lambda t: t.ones(2) // "a",
    "mod_str": lambda t: t.ones(2) % "a",
    "add_dict": lambda t: t.ones(2) + {},
    # -------------------------------------------------------------- devices
    "device_cpu1": lambda t: t.device("cpu1"),
    "device_gpu": lambda t: t.device("gpu"),
    "device_upper": lambda t: t.device("CPU"),
    "device_empty": lambda t: t.device(""),
    "device_negative_index": lambda t: t.device("cuda:-1"),
    "device_space": lambda t: t.device("cpu "),
    "to_dtype_string": lambda t: t.ones(2).to("float64"),
    "to_mps": lambda t: t.ones(2).to("mps"),
    "load_map_location_cuda": lambda t: t.load(_saved(t, t.ones(2)), map_location="cuda"),
    # -------------------------------------------------------------- save / load
    "load_garbage": lambda t: t.load(io.BytesIO(b"not a checkpoint at all")),
    "load_garbage_unsafe": lambda t: t.load(io.BytesIO(b"not a checkpoint"), weights_only=False),
    "load_garbage_nul": lambda t: t.load(io.BytesIO(b"\x00\x01garbage"), weights_only=False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_error_as_torch(name):
    fn = CASES[name]
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(Exception) as got:
        fn(ember)
    assert isinstance(got.value, type(want.value)), (
        f"ember raised {type(got.value).__name__}, torch {type(want.value).__name__}"
    )
    assert str(got.value) == str(want.value)


def test_one_element_target_for_1d_input():
    # torch reads a 1-element target of a single (unbatched) sample as 0-d
    for reduction in ("mean", "none"):
        want = torch.nn.CrossEntropyLoss(reduction=reduction)(torch.arange(3.0), torch.tensor([1]))
        got = ember.nn.CrossEntropyLoss(reduction=reduction)(ember.arange(3.0), ember.tensor([1]))
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_failed_inplace_leaves_input_untouched():
    x = ember.zeros(3)
    for bad in (lambda: x.copy_(ember.ones(4)), lambda: x.mul_(ember.ones(4))):
        with pytest.raises(RuntimeError, match="must match the size"):
            bad()
        assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0


def test_valid_device_strings_still_parse():
    for s in ("cpu", "cpu:0", "cuda", "cuda:1", "meta", "mps"):
        assert str(ember.device(s)) == str(torch.device(s))
    assert ember.device("cuda", 1) == ember.device("cuda:1")


def test_conv_init_keeps_working():
    m = ember.nn.Conv2d(3, 4, 3, padding=1, bias=False)
    assert m.weight.shape == (4, 3, 3, 3) and m.bias is None

    class Sub(ember.nn.Conv2d):
        def __init__(self):
            super().__init__(2, 2, 1)

    assert Sub().weight.shape == (2, 2, 1, 1)


def test_numpy_of_a_grad_tensor_under_no_grad_and_zeros_negative_size():
    for lib in (ember, torch):
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            assert x.numpy().tolist() == [1.0, 1.0]
            assert np.asarray(x).tolist() == [1.0, 1.0]
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            x.numpy()
        with pytest.raises(RuntimeError, match=re.escape("zeros: Dimension size must be")):
            lib.zeros(-1)
        with pytest.raises(RuntimeError, match="negative dimension -1"):
            lib.ones(-1)


@pytest.mark.parametrize(
    "case",
    [
        lambda L, x, w: L.nn.functional.conv2d(x, w, stride=0),
        lambda L, x, w: L.nn.functional.conv2d(x, w, padding=-1),
        lambda L, x, w: L.nn.functional.conv2d(x, w, padding=(1, 1, 1)),
        lambda L, x, w: L.nn.functional.conv2d(x.double(), w, L.ones(1)),
        lambda L, x, w: L.nn.functional.conv2d(x, w, L.ones(1).double()),
        lambda L, x, w: L.nn.functional.conv2d(x.long(), w),
        lambda L, x, w: L.nn.Conv2d(1, 1, 3)(x.double()),
        lambda L, x, w: L.nn.functional.conv1d(x[0], w[0], stride=0),
        # torch's order: padding, output_padding, stride, negative dilation, then channels,
        # then zero dilation (named per dimension for transposed convolutions)
        lambda L, x, w: L.nn.functional.conv2d(x, w, padding=-1, stride=0),
        lambda L, x, w: L.nn.functional.conv2d(x, w, dilation=-1),
        lambda L, x, w: L.nn.functional.conv2d(x, w, dilation=(1, 0)),
        lambda L, x, w: L.nn.functional.conv2d(x[:, :1, :2, :2], w, dilation=0),
        lambda L, x, w: L.nn.functional.conv2d(L.ones(1, 2, 5, 5), w, dilation=0),
        lambda L, x, w: L.nn.functional.conv1d(x[0], w[0], dilation=0),
        lambda L, x, w: L.nn.functional.conv_transpose2d(x, w, padding=-1, stride=0),
        lambda L, x, w: L.nn.functional.conv_transpose2d(x, w, output_padding=-1, stride=0),
        lambda L, x, w: L.nn.functional.conv_transpose2d(x, w, dilation=-1),
        lambda L, x, w: L.nn.functional.conv_transpose2d(x, w, dilation=0),
        lambda L, x, w: L.nn.functional.conv_transpose1d(x[0], w[0], dilation=0),
        lambda L, x, w: L.nn.functional.conv_transpose3d(x[None], w[None], dilation=0),
    ],
)
def test_functional_conv_argument_errors(case):
    msgs = []
    for L in (torch, ember):
        with pytest.raises(RuntimeError) as info:
            case(L, L.ones(1, 1, 5, 5), L.ones(1, 1, 3, 3))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize(
    "case",
    [
        lambda t: t + np.ones(2),
        lambda t: t * np.ones(2, np.float32),
        lambda t: t - np.ones(2),
        lambda t: t / np.full(2, 2.0),
        lambda t: t ** np.ones(2),
        lambda t: t == np.ones(2),
        lambda t: t != np.zeros(2, np.int64),
        lambda t: t < np.ones(2),
    ],
)
def test_numpy_array_operands(case):
    # torch reads a NumPy array on the right of an arithmetic operator or == as a tensor (!=
    # falls back to Python's identity test, < raises)
    out = []
    for lib in (torch, ember):
        try:
            r = case(lib.ones(2))
            out.append((str(r.dtype), r.tolist()) if isinstance(r, lib.Tensor) else r)
        except TypeError as e:
            out.append(("TypeError", str(e)))
    assert out[0] == out[1]
