"""``ember.nn.attention`` (``SDPBackend``, ``sdpa_kernel``) and its backend choice against torch.

ember has one attention kernel; what must match is the enum, the flags the context manager sets
and restores (read back through ``torch.backends.cuda``), and which calls torch's CPU dispatcher
accepts (``torch._fused_sdp_choice``) or refuses with its warnings and RuntimeError.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.attention as eatt

torch = pytest.importorskip("torch")
import torch.nn.attention as tatt  # noqa: E402

_rng = np.random.default_rng(0)

_LIBS = ((torch, tatt), (ember, eatt))


def _names(backends) -> list[str]:
    return [b.name for b in backends]


# ------------------------------------------------------------------------------ SDPBackend


def test_sdpbackend_enum_like_torch():
    tb, eb = tatt.SDPBackend, eatt.SDPBackend
    assert list(eb.__members__) == list(tb.__members__)
    for name in tb.__members__:
        t, e = getattr(tb, name), getattr(eb, name)
        assert (e.name, e.value, int(e)) == (t.name, t.value, int(t))
        assert (repr(e), str(e), f"{e}") == (repr(t), str(t), f"{t}")
        assert (e == e.value) == (t == t.value) is False
        assert [10, 11, 12, 13, 14, 15][e] == [10, 11, 12, 13, 14, 15][t]
        assert eb(t.value) is e
        assert hash(e) == hash(getattr(eb, name))
    assert eb.__name__ == tb.__name__ == "SDPBackend"
    assert eb.__module__.replace("ember", "torch") == tb.__module__
    with pytest.raises(TypeError):
        eb.MATH < eb.FLASH_ATTENTION  # noqa: B015
    with pytest.raises(TypeError):
        tb.MATH < tb.FLASH_ATTENTION  # noqa: B015
    assert {eb.MATH: 1}[eb.MATH] == 1


def test_public_names():
    for name in ("SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"):
        assert name in eatt.__all__ and hasattr(eatt, name)
    assert eatt.WARN_FOR_UNFUSED_KERNELS is tatt.WARN_FOR_UNFUSED_KERNELS is False
    seen = []
    for lib, mod in _LIBS:
        with mod._sdpa_kernel_variadic(mod.SDPBackend.MATH, mod.SDPBackend.CUDNN_ATTENTION):
            seen.append(_flags(lib))
        seen.append(mod._backend_from_string("FLASH_ATTENTION").name)
    assert seen[2:] == seen[:2]
    assert eatt._get_flash_version() == tatt._get_flash_version()


# ------------------------------------------------------------------------------ sdpa_kernel


def _flags(lib) -> tuple:
    c = lib.backends.cuda
    return (
        c.flash_sdp_enabled(),
        c.mem_efficient_sdp_enabled(),
        c.math_sdp_enabled(),
        c.cudnn_sdp_enabled(),
    )


_CHOICES = [
    "MATH",
    "FLASH_ATTENTION",
    "ERROR",
    ["EFFICIENT_ATTENTION"],
    ["CUDNN_ATTENTION", "MATH", "MATH"],
    ["OVERRIDEABLE", "FLASH_ATTENTION"],
    [],
]


def _as_backends(mod, choice):
    if isinstance(choice, str):
        return getattr(mod.SDPBackend, choice)
    return [getattr(mod.SDPBackend, c) for c in choice]


@pytest.mark.parametrize("choice", _CHOICES, ids=str)
@pytest.mark.parametrize("set_priority", [False, True])
def test_flags_inside_and_after(choice, set_priority):
    if choice == "ERROR" and set_priority:
        pytest.skip("torch's fixed-length priority table garbles ERROR (-1) as a priority")
    seen = []
    for lib, mod in _LIBS:
        before = (_flags(lib), _names(mod._cur_sdpa_kernel_backends(with_priority=True)))
        with mod.sdpa_kernel(_as_backends(mod, choice), set_priority=set_priority) as got:
            inside = (
                got,
                _flags(lib),
                _names(mod._cur_sdpa_kernel_backends()),
                _names(mod._cur_sdpa_kernel_backends(with_priority=True)),
            )
        after = (_flags(lib), _names(mod._cur_sdpa_kernel_backends(with_priority=True)))
        assert after == before
        seen.append(inside)
    assert seen[1] == seen[0]


def test_nested_decorator_and_exception_restore():
    seen = []
    for lib, mod in _LIBS:
        B = mod.SDPBackend
        out = []

        @mod.sdpa_kernel(B.EFFICIENT_ATTENTION)
        def f(lib=lib):
            return _flags(lib)

        out.append(f())
        with mod.sdpa_kernel([B.MATH, B.FLASH_ATTENTION]):
            out.append(_flags(lib))
            with mod.sdpa_kernel(B.CUDNN_ATTENTION):
                out.append(_flags(lib))
            out.append(_flags(lib))
        with pytest.raises(ZeroDivisionError):
            with mod.sdpa_kernel(B.MATH, set_priority=True):
                1 / 0  # noqa: B018
        out.append(_flags(lib))
        out.append(_names(mod._cur_sdpa_kernel_backends(with_priority=True)))
        lib.backends.cuda.enable_flash_sdp(False)
        with mod.sdpa_kernel(B.MATH):
            pass
        out.append(_flags(lib))
        lib.backends.cuda.enable_flash_sdp(True)
        seen.append(out)
    assert seen[1] == seen[0]


@pytest.mark.parametrize("bad", ["math", 0, ("MATH",), {"MATH"}, None], ids=repr)
def test_bad_backends_raise_like_torch(bad):
    msgs = []
    for _, mod in _LIBS:
        arg = bad
        if isinstance(bad, (tuple, set)):
            arg = type(bad)(getattr(mod.SDPBackend, b) for b in bad)
        with pytest.raises(AssertionError) as exc:
            with mod.sdpa_kernel(arg):
                pass
        msgs.append(str(exc.value))
    assert msgs[1] == msgs[0]


def test_deprecated_cuda_sdp_kernel_warning_and_flags():
    seen = []
    for lib, _ in _LIBS:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with lib.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
                inside = _flags(lib)
        seen.append((inside, _flags(lib), [(x.category, str(x.message)) for x in w]))
    assert seen[1] == seen[0]


def test_deprecated_cuda_sdp_kernel_delegates_to_sdpa_kernel():
    seen = []
    for lib, mod in _LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.backends.cuda.sdp_kernel(enable_flash=False) as ctx:
                seen.append((ctx, _names(mod._cur_sdpa_kernel_backends())))
    assert seen[1] == seen[0]


# ------------------------------------------------------------------------------ backend choice


def _t(lib, a):
    return lib.from_numpy(np.array(a, copy=True))


def _cases():
    r = _rng.standard_normal
    q4 = r((2, 2, 4, 8)).astype("float32")
    q3 = r((2, 4, 8)).astype("float32")
    bool_mask = r((4, 4)) > 0
    return {
        "4d": ((q4, q4, q4), {}),
        "f64": ((q4.astype("float64"),) * 3, {}),
        "3d": ((q3, q3, q3), {}),
        "5d": ((q4[None],) * 3, {}),
        "bool_mask": ((q4, q4, q4), {"attn_mask": bool_mask}),
        "float_mask": ((q4, q4, q4), {"attn_mask": r((4, 4)).astype("float32")}),
        "mask_4d": ((q4, q4, q4), {"attn_mask": np.zeros((2, 1, 4, 4), "float32")}),
        "mask_3d": ((q4, q4, q4), {"attn_mask": np.zeros((2, 4, 4), "float32")}),
        "causal": ((q4, q4, q4), {"is_causal": True}),
        "dropout": ((q4, q4, q4), {"dropout_p": 0.5}),
        "batch": ((q4[:1], q4, q4), {}),
        "heads": ((r((2, 4, 4, 8)).astype("float32"), q4, q4), {}),
        "gqa": ((r((2, 4, 4, 8)).astype("float32"), q4, q4), {"enable_gqa": True}),
        "v_dim": ((q4, q4, r((2, 2, 4, 6)).astype("float32")), {}),
        "k_len": ((q4, r((2, 2, 5, 8)).astype("float32"), r((2, 2, 5, 8)).astype("float32")), {}),
        "int": ((q4.astype("int64"),) * 3, {}),
    }


_CASES = _cases()


def _torch_outcome(args, kwargs, backends):
    tin = [_t(torch, a) for a in args]
    kw = {k: _t(torch, v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with tatt.sdpa_kernel(backends):
            try:
                result = ("ok", torch._fused_sdp_choice(*tin, **kw))
            except RuntimeError as e:
                result = ("RuntimeError", str(e))
    return result, [str(x.message).split(" (Triggered internally")[0] for x in w]


def _ember_outcome(args, kwargs, backends):
    ein = [_t(ember, a) for a in args]
    kw = {k: _t(ember, v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with eatt.sdpa_kernel(backends):
            try:
                result = ("ok", int(eatt._select_sdp_backend(*ein, **kw)))
            except RuntimeError as e:
                result = ("RuntimeError", str(e))
    return result, [str(x.message) for x in w]


@pytest.mark.parametrize("case", list(_CASES))
@pytest.mark.parametrize(
    "choice", [["FLASH_ATTENTION"], ["MATH"], ["MATH", "FLASH_ATTENTION"], ["EFFICIENT_ATTENTION"]]
)
def test_backend_choice_like_torch(case, choice):
    args, kwargs = _CASES[case]
    if case in ("heads", "int", "k_len") and "MATH" in choice:
        pytest.skip("torch's math kernel itself rejects these inputs (not a backend choice)")
    want = _torch_outcome(args, kwargs, _as_backends(tatt, choice))
    got = _ember_outcome(args, kwargs, _as_backends(eatt, choice))
    assert got == want


def test_strided_inputs_refused_by_flash():
    q = _rng.standard_normal((1, 2, 8, 4)).astype("float32")
    tq = _t(torch, q).transpose(2, 3)
    eq = _t(ember, q).transpose(2, 3)
    k = _rng.standard_normal((1, 2, 4, 8)).astype("float32")
    tk, ek = _t(torch, k), _t(ember, k)
    for args_t, args_e in (((tq, tk, tk), (eq, ek, ek)), ((tk, tq, tk), (ek, eq, ek))):
        outs = []
        for lib_args, mod, fused in ((args_t, tatt, True), (args_e, eatt, False)):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with mod.sdpa_kernel(mod.SDPBackend.FLASH_ATTENTION):
                    with pytest.raises(RuntimeError) as exc:
                        if fused:
                            torch._fused_sdp_choice(*lib_args)
                        else:
                            mod._select_sdp_backend(*lib_args)
            outs.append((str(exc.value), [str(x.message).split(" (Triggered")[0] for x in w]))
        assert outs[1] == outs[0]


# ------------------------------------------------------------------------------ F.sdpa inside


@pytest.mark.parametrize("choice", ["MATH", "FLASH_ATTENTION", ["MATH", "EFFICIENT_ATTENTION"]])
def test_functional_sdpa_runs_inside_allowed_kernels(choice):
    q = _rng.standard_normal((2, 2, 5, 8)).astype("float32")
    k = _rng.standard_normal((2, 2, 6, 8)).astype("float32")
    outs = []
    for lib, mod in _LIBS:
        with mod.sdpa_kernel(_as_backends(mod, choice)):
            out = lib.nn.functional.scaled_dot_product_attention(
                _t(lib, q), _t(lib, k), _t(lib, k), is_causal=True
            )
        outs.append(out.detach().numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("choice", ["EFFICIENT_ATTENTION", "FLASH_ATTENTION"])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_functional_sdpa_refused_like_torch(choice):
    q = _rng.standard_normal((2, 4, 8)).astype("float32")  # 3-D: flash refuses
    msgs = []
    for lib, mod in _LIBS:
        with mod.sdpa_kernel(_as_backends(mod, choice)):
            with pytest.raises(RuntimeError) as exc:
                lib.nn.functional.scaled_dot_product_attention(_t(lib, q), _t(lib, q), _t(lib, q))
        msgs.append(str(exc.value))
    assert msgs[1] == msgs[0]


# ------------------------------------------------------------------------------ bias


@pytest.mark.parametrize("sizes", [(3, 5), (5, 3), (4, 4), (1, 6)])
@pytest.mark.parametrize("variant", ["causal_upper_left", "causal_lower_right"])
def test_causal_bias_attention_like_torch(sizes, variant):
    import torch.nn.attention.bias as tbias

    import ember.nn.attention.bias as ebias

    L, S = sizes
    q = _rng.standard_normal((2, 2, L, 8))
    k = _rng.standard_normal((2, 2, S, 8))
    v = _rng.standard_normal((2, 2, S, 4))
    res = []
    for lib, mod in ((torch, tbias), (ember, ebias)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            bias = getattr(mod, variant)(L, S)
        tq, tk, tv = (_t(lib, a).requires_grad_() for a in (q, k, v))
        out = lib.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=bias)
        out.backward(_t(lib, np.ones(out.shape)))
        res.append(
            (
                out.detach().numpy(),
                [t.grad.numpy() for t in (tq, tk, tv)],
                bias._materialize().numpy().tolist(),
                repr(bias),
                (int(bias.variant), bias.seq_len_q, bias.seq_len_kv),
                [(x.category, str(x.message)) for x in w],
            )
        )
    (t_out, t_grads, *t_rest), (e_out, e_grads, *e_rest) = res
    np.testing.assert_allclose(e_out, t_out, rtol=1e-10, atol=1e-12)
    for eg, tg in zip(e_grads, t_grads, strict=True):
        np.testing.assert_allclose(eg, tg, rtol=1e-9, atol=1e-12)
    assert e_rest == t_rest


def test_causal_bias_dispatch_and_errors():
    import torch.nn.attention.bias as tbias

    import ember.nn.attention.bias as ebias

    q = _rng.standard_normal((1, 2, 3, 8)).astype("float32")
    k = _rng.standard_normal((1, 2, 5, 8)).astype("float32")
    outs = []
    for lib, mod in ((torch, tbias), (ember, ebias)):
        with pytest.raises(AssertionError, match="variant must be a CausalVariant, got int"):
            mod.CausalBias(1, 2, 3)
        for fn in ("causal_upper_left", "causal_lower_right"):
            with pytest.raises(AssertionError, match=f"{fn} only supports 2D tensors"):
                getattr(mod, fn)(2)
        bias = mod.causal_lower_right(3, 5)
        for b in (bias, mod.causal_upper_left(3, 5)):
            assert (
                b._upper_left(lib.device("cpu")).numpy().tolist()
                == np.tri(3, 5, 0, dtype=bool).tolist()
            )
            assert (
                b._lower_right(lib.device("cpu")).numpy().tolist()
                == np.tri(3, 5, 2, dtype=bool).tolist()
            )
        tq, tk = _t(lib, q), _t(lib, k)
        with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
            mod.CausalBias._dispatch(tq, tk, tk, bias, is_causal=True)
        outs.append(
            (
                mod.CausalBias._dispatch(tq, tk, tk, bias).numpy(),
                mod.CausalBias._dispatch(tq, tk, tk, mod.causal_upper_left(3, 5)).numpy(),
                [(m.name, int(m)) for m in mod.CausalVariant],
            )
        )
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-5, atol=1e-6)
    assert outs[1][2] == outs[0][2]
