"""Oracle tests: TransformerEncoderLayer/DecoderLayer, TransformerEncoder/Decoder, Transformer.

Modules are built in both libraries, torch's randomised state_dict is loaded into ember, and
outputs and the gradients of inputs and parameters are compared (dropout 0 in training mode),
together with printing, state_dict keys, masks, the eval-mode nested-tensor padding of
``TransformerEncoder`` and torch's warnings and errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.oracle.helper import check_double_backward
from tests.oracle.test_nn_attention import compare, pair, rand, torch

pytestmark = pytest.mark.filterwarnings(
    "ignore:Support for mismatched",
    "ignore:enable_nested_tensor",
    "ignore:The PyTorch API of nested",
)
D, H, FF = 8, 2, 16


def enc_layer(**kw):
    kw = {"dropout": 0.0, **kw}
    return lambda lib: lib.nn.TransformerEncoderLayer(D, H, FF, **kw)


def dec_layer(**kw):
    kw = {"dropout": 0.0, **kw}
    return lambda lib: lib.nn.TransformerDecoderLayer(D, H, FF, **kw)


def _x(n, s, batch_first):
    return rand(*((n, s, D) if batch_first else (s, n, D)), dtype="float64")


def _masks(lib, src_mask=None, kpm=None):
    cv = lambda a: None if a is None else lib.from_numpy(a.copy())  # noqa: E731
    return cv(src_mask), cv(kpm)


_causal = np.triu(np.full((5, 5), -np.inf), 1)
_kpm = np.zeros((3, 5), dtype=bool)
_kpm[0, -2:] = _kpm[2, -1] = True


# ------------------------------------------------------------------------------ encoder layer


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(
    "kw",
    [{}, {"norm_first": True}, {"activation": "gelu"}, {"bias": False, "layer_norm_eps": 1e-3}],
    ids=lambda d: "-".join(sorted(d)) or "default",
)
@pytest.mark.parametrize("masks", ["none", "causal", "bool", "kpm", "both"])
def test_encoder_layer(batch_first, kw, masks):
    tm, em = pair(enc_layer(batch_first=batch_first, **kw))
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    sm = {"causal": _causal, "bool": _causal < 0, "both": _causal}.get(masks)
    kpm = _kpm if masks in ("kpm", "both") else None

    def fn(m, lib, x):
        a, b = _masks(lib, sm, kpm)
        return m(x, src_mask=a, src_key_padding_mask=b, is_causal=masks == "causal")

    compare(tm, em, fn, [_x(3, 5, batch_first)])


@pytest.mark.parametrize("mode", ["train", "eval", "eval_no_grad"])
def test_encoder_layer_modes_and_unbatched(mode):
    tm, em = pair(enc_layer(batch_first=True))
    if mode != "train":
        tm.eval()
        em.eval()
    grad = mode != "eval_no_grad"
    with torch.set_grad_enabled(grad), ember.set_grad_enabled(grad):
        compare(tm, em, lambda m, lib, x: m(x), [_x(2, 5, True)], grad=grad)
        compare(tm, em, lambda m, lib, x: m(x), [rand(5, D, dtype="float64")], grad=grad)


def test_encoder_layer_callable_activation():
    tm, em = pair(
        lambda lib: lib.nn.TransformerEncoderLayer(
            D, H, FF, dropout=0.0, activation=lib.nn.functional.silu
        )
    )
    assert em.activation_relu_or_gelu == tm.activation_relu_or_gelu == 0
    compare(tm, em, lambda m, lib, x: m(x), [_x(2, 5, False)])
    tm, em = pair(lambda lib: lib.nn.TransformerEncoderLayer(D, H, activation=lib.nn.GELU()))
    assert em.activation_relu_or_gelu == tm.activation_relu_or_gelu == 2
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        ember.nn.TransformerEncoderLayer(D, H, activation="tanh")


def test_encoder_layer_dropout():
    m = ember.nn.TransformerEncoderLayer(D, H, FF, dropout=0.5).double()
    x = ember.from_numpy(_x(2, 5, False))
    assert not np.allclose(m(x).detach().numpy(), m(x).detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x).detach().numpy(), m(x).detach().numpy())


# ------------------------------------------------------------------------------ stacks


def encoder(norm=True, **kw):
    def make(lib):
        layer = enc_layer(**kw)(lib)
        return lib.nn.TransformerEncoder(layer, 2, lib.nn.LayerNorm(D) if norm else None)

    return make


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("masks", ["none", "causal", "kpm"])
def test_encoder(norm, masks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_nested_tensor with batch_first=False
        tm, em = pair(encoder(norm))
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    sm = _causal if masks == "causal" else None
    kpm = _kpm if masks == "kpm" else None

    def fn(m, lib, x):
        a, b = _masks(lib, sm, kpm)
        return m(x, mask=a, src_key_padding_mask=b)

    compare(tm, em, fn, [_x(3, 5, False)])


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("aligned", [True, False])
def test_encoder_eval_nested_tensor_padding(grad, aligned):
    """torch's inference path for a key padding mask zeroes the padded outputs (before the
    final norm) when the mask is left-aligned and nothing requires grad."""
    tm, em = pair(encoder(batch_first=True))
    tm.eval()
    em.eval()
    kpm = _kpm.copy()
    if not aligned:
        kpm[1, 0] = True
    fn = lambda m, lib, x: m(x, src_key_padding_mask=lib.from_numpy(kpm.copy()))  # noqa: E731
    with torch.set_grad_enabled(grad), ember.set_grad_enabled(grad):
        eout, tout = compare(tm, em, fn, [_x(3, 5, True)], grad=grad)
    zeroed = np.allclose(tout[0].detach().numpy()[0, -1], tm.norm.bias.detach().numpy())
    assert zeroed == (aligned and not grad)


def test_encoder_nested_tensor_warnings():
    for kw in ({}, {"norm_first": True, "batch_first": True}, {"batch_first": True}):
        got = {}
        for lib in (torch, ember):
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                m = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(D, H, **kw), 2)
            got[lib] = ([str(w.message) for w in rec], m.use_nested_tensor)
        assert got[ember] == got[torch], kw
    m = ember.nn.TransformerEncoder(ember.nn.TransformerEncoderLayer(D, H), 2, mask_check=False,
                                    enable_nested_tensor=False)  # fmt: skip
    assert m.enable_nested_tensor is False and m.mask_check is False and m.num_layers == 2


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer(batch_first, norm_first):
    tm, em = pair(dec_layer(batch_first=batch_first, norm_first=norm_first))
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    mem_mask = rand(5, 4, dtype="float64")
    mkpm = np.zeros((3, 4), dtype=bool)
    mkpm[1, -1] = True

    def fn(m, lib, t, mem):
        tm_, tk = _masks(lib, _causal, _kpm)
        mm, mk = _masks(lib, mem_mask, mkpm)
        return m(t, mem, tgt_mask=tm_, memory_mask=mm, tgt_key_padding_mask=tk,
                 memory_key_padding_mask=mk, tgt_is_causal=True)  # fmt: skip

    compare(tm, em, fn, [_x(3, 5, batch_first), _x(3, 4, batch_first)])


def test_decoder_stack_and_causal_detection():
    def make(lib):
        return lib.nn.TransformerDecoder(dec_layer()(lib), 2, lib.nn.LayerNorm(D))

    tm, em = pair(make)
    assert repr(em) == repr(tm)

    def fn(m, lib, t, mem):
        mask = lib.nn.Transformer.generate_square_subsequent_mask(5, dtype=lib.float64)
        return m(t, mem, tgt_mask=mask)

    compare(tm, em, fn, [_x(2, 5, False), _x(2, 6, False)])
    compare(tm, em, lambda m, lib, t, mem: m(t, mem), [_x(2, 5, False), _x(2, 6, False)])


def test_transformer():
    def make(lib):
        return lib.nn.Transformer(D, H, 2, 1, FF, dropout=0.0, batch_first=True)

    tm, em = pair(make)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())

    def fn(m, lib, s, t):
        mask = m.generate_square_subsequent_mask(4, dtype=lib.float64)
        kpm = lib.from_numpy(_kpm.copy())
        return m(s, t, tgt_mask=mask, src_key_padding_mask=kpm, memory_key_padding_mask=kpm,
                 tgt_is_causal=True)  # fmt: skip

    compare(tm, em, fn, [_x(3, 5, True), _x(3, 4, True)])
    compare(tm, em, lambda m, lib, s, t: m(s, t), [_x(3, 5, True), _x(3, 4, True)])
    # unbatched
    compare(tm, em, lambda m, lib, s, t: m(s, t), [rand(5, D, dtype="float64"),
                                                   rand(4, D, dtype="float64")])  # fmt: skip


def test_transformer_init_and_mask():
    m = ember.nn.Transformer(16, 2, 1, 1, 32)
    w = m.encoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 32))  # xavier-uniform over every matrix
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    got = ember.nn.Transformer.generate_square_subsequent_mask(4)
    want = torch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.dtype is ember.float32


def test_transformer_errors():
    for lib in (torch, ember):
        m = lib.nn.Transformer(D, H, 1, 1, FF)
        with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
            m(lib.zeros(5, 2, D), lib.zeros(4, 3, D))
        with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal"):
            m(lib.zeros(5, 2, D), lib.zeros(4, 2, D + 1))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_double_backward_gradgradcheck(norm_first):
    """torch's flash-attention path has no double backward; ember's attention is made of
    differentiable ops, checked here against finite differences (float64)."""
    ember.manual_seed(0)
    m = ember.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, norm_first=norm_first)
    m = m.double()
    mask = ember.nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64)
    x = ember.from_numpy(rand(3, 2, 4, dtype="float64")).requires_grad_()

    def fn(x_):
        return m(x_, src_mask=mask, is_causal=True)

    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_double_backward_vs_torch_math(norm_first):
    """Second derivatives against torch's math attention backend (its default flash kernel
    has no double backward)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    tm, em = pair(enc_layer(norm_first=norm_first, activation="gelu"))
    mods = {torch: tm, ember: em}
    kpm = np.array([[False, False, True], [False, False, False]])

    def fn(lib, x):
        pm = lib.from_numpy(kpm.copy())
        if lib is torch:
            with sdpa_kernel(SDPBackend.MATH):
                return tm(x, src_key_padding_mask=pm)
        return mods[lib](x, src_key_padding_mask=pm)

    check_double_backward(fn, [rand(3, 2, D, dtype="float64")])


def test_transformer_inference_with_padding():
    """Eval + no_grad: torch's encoder takes its nested-tensor path (zeros at padded source
    positions before the final norm); the decoder's output must still match."""
    tm, em = pair(lambda lib: lib.nn.Transformer(D, H, 2, 1, FF, dropout=0.1, batch_first=True))
    tm.eval()
    em.eval()

    def fn(m, lib, s, t):
        kpm = lib.from_numpy(_kpm.copy())
        return m(s, t, src_key_padding_mask=kpm, memory_key_padding_mask=kpm)

    with torch.no_grad(), ember.no_grad():
        compare(tm, em, fn, [_x(3, 5, True), _x(3, 4, True)], grad=False)
