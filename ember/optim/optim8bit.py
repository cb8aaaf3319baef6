"""8-bit optimizers: bitsandbytes' ``Adam8bit``, ``AdamW8bit``, ``Lion8bit``, ``SGD8bit`` and
``RMSprop8bit`` with the block-wise quantized states of Dettmers et al. (2022).

Each state tensor of a parameter with at least ``min_8bit_size`` elements is stored as uint8
codes of the dynamic map (signed for first moments, unsigned for second moments) with one
float32 absmax per block of 256 elements (bitsandbytes' size; 2048 in the paper), named
``state1``/``absmax1``, ``state2``/``absmax2`` as bitsandbytes names them; smaller tensors
keep float32 states. A step dequantizes a block,
updates it in float32, updates the parameter from the float32 state and requantizes, one
cache-sized chunk of blocks at a time, reading each parameter and gradient in place (no flat
gradient copy: that would cost the 4 bytes per parameter the 8-bit states save).

The update rules are bitsandbytes': Adam's weight decay is decoupled (``p *= 1 - lr * wd``) in
``Adam8bit`` as in ``AdamW8bit``; SGD and RMSprop add ``wd * p`` to the gradient; Lion decays
the parameter. One addition to the published algorithm, for Adam: where the second moment
dequantizes to exactly 0 (below ``3e-7 * absmax`` of its block) the first moment is read as 0 too,
since ``m / (0 + eps)`` would turn a decayed momentum into steps of ``lr * m / eps`` (seen on
the dead units of a ReLU network: weights running off to 3.0 within 40 MNIST steps).
``is_paged`` is accepted and does nothing (there is no GPU memory to page on CPU);
``PagedAdamW8bit`` and friends are aliases of the unpaged classes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

import numpy as np

from ember._core.grad_mode import enable_grad
from ember._core.tensor import Tensor, _wrap
from ember.optim import _quant8 as Q
from ember.optim.optimizer import Optimizer, _no_grad_step

__all__ = [
    "Adam8bit",
    "AdamW8bit",
    "Lion8bit",
    "Optimizer8bit",
    "PagedAdamW8bit",
    "RMSprop8bit",
    "SGD8bit",
    "dequantize_state_dict",
]

# bitsandbytes' block size for optimizer states (the paper's was 2048; on the char-LSTM benchmark
# 2048 ends 8.2% above 32-bit Adam's loss, 256 within 1.1%)
BLOCKSIZE = 256
_CHUNK = 32768  # elements updated together: p, g, states and scratch fit in L2


def _check_common(lr, eps, betas, weight_decay) -> None:
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    for i in range(len(betas)):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Optimizer8bit(Optimizer):
    """Base of the 8-bit optimizers (bitsandbytes' ``Optimizer8bit``)."""

    _kind = ""  # "adam", "momentum", "rmsprop", "lion"
    _unsigned1 = False  # first state is non-negative (RMSprop's square average)
    _loads_8bit = True

    def __init__(
        self,
        params: Iterable,
        defaults: dict,
        min_8bit_size: int = 4096,
        percentile_clipping: int = 100,
        block_wise: bool = True,
        is_paged: bool = False,
    ) -> None:
        if not block_wise:
            raise NotImplementedError(
                "ember: block_wise=False (one absmax per tensor) is not supported; "
                "the 8-bit optimizers quantize block-wise"
            )
        super().__init__(params, defaults)
        self.min_8bit_size = min_8bit_size
        self.percentile_clipping = percentile_clipping
        self.block_wise = block_wise
        self.is_paged = is_paged  # a no-op on CPU

    @property
    def _two(self) -> bool:
        return self._kind == "adam"

    # -- state -----------------------------------------------------------------------------------
    def _eight_bit(self, p: Tensor) -> bool:
        return p.numel() >= self.min_8bit_size and getattr(p, "_bnb_optim_bits", 8) == 8

    def _init_state(self, p: Tensor) -> dict:
        st = self.state[p]
        st["step"] = 0
        n = p.numel()
        shape = tuple(p.shape)
        names = ("state1", "state2") if self._two else ("state1",)
        if self._eight_bit(p):
            nb = -(-n // BLOCKSIZE)
            for j, name in enumerate(names, 1):
                st[name] = _wrap(np.zeros(shape, np.uint8))
                unsigned = j == 2 or self._unsigned1
                st[f"qmap{j}"] = _wrap((Q.UNSIGNED if unsigned else Q.SIGNED).copy())
                st[f"absmax{j}"] = _wrap(np.zeros(nb, np.float32))
        else:
            for name in names:
                st[name] = _wrap(np.zeros(shape, np.float32))
        if self.percentile_clipping < 100:
            st["gnorm_vec"] = _wrap(np.zeros(100, np.float32))
        return st

    @staticmethod
    def _cast_state_value(param, value, fused_or_capturable, key):
        return value.clone()  # codes stay uint8, absmax and maps float32

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state dict of this optimizer, or of the matching 32-bit torch optimizer (its
        float states are quantized, with a warning)."""
        states = state_dict.get("state", {})
        if any(isinstance(s, dict) and "state1" not in s and s for s in states.values()):
            state_dict = _from_32bit(state_dict, self)
        super().load_state_dict(state_dict)

    # -- step ------------------------------------------------------------------------------------
    @_no_grad_step
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimization step; ``closure`` re-evaluates the model, returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                pd, gd = p._data, p.grad._data
                flat = pd.dtype == np.float32 and pd.flags.c_contiguous
                pf = pd.reshape(-1) if flat else pd.astype(np.float32).reshape(-1)
                gf = np.ascontiguousarray(gd, np.float32).reshape(-1)
                self._update_one(group, p, pf, gf, write_back=not flat)
                if flat:
                    p._vc[0] += 1
        return loss

    def _update_one(self, group, p, pf, gf, write_back: bool = False) -> None:
        st = self.state[p]
        if len(st) == 0:
            self._init_state(p)
        st["step"] += 1
        step = st["step"]
        scale = 1.0
        if self.percentile_clipping < 100:
            scale = _percentile_scale(gf, st["gnorm_vec"]._data, step, self.percentile_clipping)
        s1, s2 = st["state1"]._data.reshape(-1), None
        if self._two:
            s2 = st["state2"]._data.reshape(-1)
        q = s1.dtype == np.uint8
        if q and self._fused_step(group, st, pf, gf, scale, step):
            if write_back:
                p._data[...] = pf.reshape(p.shape).astype(p._data.dtype)
                p._vc[0] += 1
            return
        n = pf.size
        w1 = np.empty(min(n, _CHUNK), np.float32)
        w2 = np.empty_like(w1) if self._two else None
        tmp = np.empty_like(w1)
        tmp2 = np.empty_like(w1)
        gs = np.empty_like(w1) if scale != 1.0 else None
        x2 = None
        for lo in range(0, n, _CHUNK):
            hi = min(lo + _CHUNK, n)
            m = hi - lo
            b0, b1 = lo // BLOCKSIZE, -(-hi // BLOCKSIZE)
            if q:
                a1 = st["absmax1"]._data[b0:b1]
                c1 = st["qmap1"]._data
                x1 = w1[:m]
                Q.decode_into(s1[lo:hi], a1, c1, x1, BLOCKSIZE)
                if self._two:
                    a2 = st["absmax2"]._data[b0:b1]
                    c2 = st["qmap2"]._data
                    x2 = w2[:m]
                    Q.decode_into(s2[lo:hi], a2, c2, x2, BLOCKSIZE)
                    # a second moment below the map's resolution (code 0) with a first moment
                    # above it would make the next update m / eps: such pairs restart at zero
                    np.copyto(x1, 0, where=s2[lo:hi] == 0)
            else:
                x1 = s1[lo:hi]
                x2 = s2[lo:hi] if self._two else None
            g = gf[lo:hi]
            if scale != 1.0:
                g = np.multiply(g, np.float32(scale), out=gs[:m])
            self._kernel(group, pf[lo:hi], g, x1, x2, tmp[:m], tmp2[:m], step)
            if q:
                Q.encode_into(x1, a1, s1[lo:hi], Q.coder(c1), BLOCKSIZE, tmp[:m])
                if self._two:
                    Q.encode_into(x2, a2, s2[lo:hi], Q.coder(c2), BLOCKSIZE, tmp[:m])
        if write_back:
            p._data[...] = pf.reshape(p.shape).astype(p._data.dtype)
            p._vc[0] += 1

    def _kernel(self, group, p, g, s1, s2, tmp, tmp2, step) -> None:
        raise NotImplementedError

    def _fused_step(self, group, st, pf, gf, scale, step) -> bool:
        """Run the whole 8-bit step of one parameter in one compiled pass, if this optimizer
        has such a kernel and numba is installed; return whether it ran."""
        return False


def _percentile_scale(g: np.ndarray, gnorm_vec: np.ndarray, step: int, percentile: int):
    """bitsandbytes' percentile clipping: the gradient's norm against the ``percentile``-th of
    the last 100 squared norms (zeros at first); return the scale to apply."""
    gnorm_vec[step % 100] = np.dot(g, g)
    current = float(np.sqrt(gnorm_vec[step % 100]))
    clip = float(np.sqrt(np.sort(gnorm_vec)[percentile]))
    return clip / current if current > clip else 1.0


def _l2(g, p, wd, tmp2):
    if wd > 0:
        g = np.add(g, np.multiply(p, np.float32(wd), out=tmp2), out=tmp2)
    return g


class Adam8bit(Optimizer8bit):
    """bitsandbytes' 8-bit Adam (decoupled weight decay, as bitsandbytes applies it)."""

    _kind = "adam"
    _name = "Adam8bit"

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        optim_bits: int = 32,
        args=None,
        min_8bit_size: int = 4096,
        is_paged: bool = False,
        percentile_clipping: int = 100,
        block_wise: bool = True,
    ) -> None:
        if amsgrad:
            raise ValueError(f"{self._name} does not support amsgrad=True")
        if optim_bits != 32:
            raise ValueError(
                f"{self._name} only supports optim_bits=32 (default value for compatibility)"
            )
        _check_common(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults, min_8bit_size, percentile_clipping, block_wise, is_paged)

    def _kernel(self, group, p, g, m, v, tmp, tmp2, step) -> None:
        lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
        b1, b2 = group["betas"][:2]
        m *= np.float32(b1)
        np.multiply(g, np.float32(1 - b1), out=tmp)
        m += tmp
        v *= np.float32(b2)
        np.multiply(g, g, out=tmp)
        tmp *= np.float32(1 - b2)
        v += tmp
        c1 = 1 - b1**step
        c2 = (1 - b2**step) ** 0.5
        if wd > 0:
            p *= np.float32(1 - lr * wd)
        np.sqrt(v, out=tmp)
        tmp += np.float32(eps * c2)
        np.divide(m, tmp, out=tmp)
        tmp *= np.float32(lr * c2 / c1)
        p -= tmp

    def _fused_step(self, group, st, pf, gf, scale, step) -> bool:
        jit = Q._jit()
        c1, c2 = Q.coder(st["qmap1"]._data), Q.coder(st["qmap2"]._data)
        if jit is None or not (c1.fast and c2.fast):
            return False
        lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
        b1, b2 = group["betas"][:2]
        if scale != 1.0:
            gf = gf * np.float32(scale)
        k1, k2 = 1 - b1**step, (1 - b2**step) ** 0.5
        f32 = np.float32
        jit.adam_step(
            pf, gf, st["state1"]._data.reshape(-1), st["state2"]._data.reshape(-1),
            st["absmax1"]._data, st["absmax2"]._data, c1.code, c2.code, c1.table, c2.table,
            BLOCKSIZE, f32(b1), f32(b2), f32(1 - b1), f32(1 - b2),
            f32(1 - lr * wd) if wd > 0 else f32(1), f32(eps * k2), f32(lr * k2 / k1),
        )  # fmt: skip
        return True


class AdamW8bit(Adam8bit):
    """bitsandbytes' 8-bit AdamW (``weight_decay=1e-2`` by default)."""

    _name = "AdamW8bit"

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        optim_bits: int = 32,
        args=None,
        min_8bit_size: int = 4096,
        is_paged: bool = False,
        percentile_clipping: int = 100,
        block_wise: bool = True,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            optim_bits,
            args,
            min_8bit_size,
            is_paged,
            percentile_clipping,
            block_wise,
        )


class PagedAdamW8bit(AdamW8bit):
    """``AdamW8bit``: paging (GPU memory spilled to the host) has no meaning on CPU."""

    _name = "PagedAdamW8bit"


class Lion8bit(Optimizer8bit):
    """bitsandbytes' 8-bit Lion."""

    _kind = "lion"

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.99),
        weight_decay: float = 0,
        args=None,
        min_8bit_size: int = 4096,
        is_paged: bool = False,
        percentile_clipping: int = 100,
        block_wise: bool = True,
    ) -> None:
        _check_common(lr, 0.0, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=0.0, weight_decay=weight_decay)
        super().__init__(params, defaults, min_8bit_size, percentile_clipping, block_wise, is_paged)

    def _kernel(self, group, p, g, m, _v, tmp, tmp2, step) -> None:
        lr, wd = group["lr"], group["weight_decay"]
        b1, b2 = group["betas"][:2]
        if wd > 0:
            p *= np.float32(1 - lr * wd)
        np.multiply(m, np.float32(b1), out=tmp)
        tmp2[...] = g
        tmp2 *= np.float32(1 - b1)
        tmp += tmp2
        np.sign(tmp, out=tmp)
        tmp *= np.float32(lr)
        p -= tmp
        m *= np.float32(b2)
        np.multiply(g, np.float32(1 - b2), out=tmp)
        m += tmp


class SGD8bit(Optimizer8bit):
    """bitsandbytes' 8-bit SGD with momentum (``dampening`` and ``nesterov`` are ignored, as
    bitsandbytes ignores them)."""

    _kind = "momentum"

    def __init__(
        self,
        params: Iterable,
        lr: float,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        args=None,
        min_8bit_size: int = 4096,
        percentile_clipping: int = 100,
        block_wise: bool = True,
    ) -> None:
        if momentum == 0:
            raise NotImplementedError("SGD without momentum is not supported!")
        _check_common(lr, 0.0, (momentum, dampening), weight_decay)
        defaults = dict(lr=lr, betas=(momentum, dampening), eps=0.0, weight_decay=weight_decay)
        super().__init__(params, defaults, min_8bit_size, percentile_clipping, block_wise)

    def _kernel(self, group, p, g, m, _v, tmp, tmp2, step) -> None:
        lr, wd, mom = group["lr"], group["weight_decay"], group["betas"][0]
        g = _l2(g, p, wd, tmp2)
        if step == 1:
            m[...] = g
        else:
            m *= np.float32(mom)
            m += g
        np.multiply(m, np.float32(lr), out=tmp)
        p -= tmp


class RMSprop8bit(Optimizer8bit):
    """bitsandbytes' 8-bit RMSprop (``momentum`` is ignored, as bitsandbytes ignores it). The
    square average is stored with the unsigned map, as the paper prescribes for non-negative
    states."""

    _kind = "rmsprop"
    _unsigned1 = True

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        args=None,
        min_8bit_size: int = 4096,
        percentile_clipping: int = 100,
        block_wise: bool = True,
    ) -> None:
        if alpha == 0:
            raise NotImplementedError("RMSprop with alpha==0.0 is not supported!")
        if centered:
            raise NotImplementedError("Centered RMSprop is not supported!")
        _check_common(lr, eps, (alpha, momentum), weight_decay)
        defaults = dict(lr=lr, betas=(alpha, momentum), eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults, min_8bit_size, percentile_clipping, block_wise)

    def _kernel(self, group, p, g, v, _v, tmp, tmp2, step) -> None:
        lr, eps, wd, alpha = group["lr"], group["eps"], group["weight_decay"], group["betas"][0]
        g = _l2(g, p, wd, tmp2)
        v *= np.float32(alpha)
        np.multiply(g, g, out=tmp)
        tmp *= np.float32(1 - alpha)
        v += tmp
        np.sqrt(v, out=tmp)
        tmp += np.float32(eps)
        np.divide(g, tmp, out=tmp)
        tmp *= np.float32(lr)
        p -= tmp


# -- 32-bit <-> 8-bit state dicts ---------------------------------------------------------------
# torch's state names of the matching 32-bit optimizer, per kind
_TORCH_KEYS = {
    "adam": ("exp_avg", "exp_avg_sq"),
    "momentum": ("momentum_buffer",),
    "rmsprop": ("square_avg",),
    "lion": ("exp_avg",),
}


def _from_32bit(state_dict: dict, opt: Optimizer8bit) -> dict:
    keys = _TORCH_KEYS[opt._kind]
    warnings.warn(
        f"{type(opt).__name__}.load_state_dict: loading 32-bit optimizer states "
        f"({', '.join(keys)}); they are quantized to 8 bits (block-wise, {BLOCKSIZE} per block)",
        stacklevel=3,
    )
    params = [p for g in opt.param_groups for p in g["params"]]
    saved = [i for g in state_dict["param_groups"] for i in g["params"]]
    by_index = dict(zip(saved, params))
    new_state = {}
    for k, s in state_dict["state"].items():
        missing = [key for key in keys if key not in s]
        if missing:
            raise ValueError(
                f"{type(opt).__name__}.load_state_dict: the state of parameter {k} has no "
                f"{missing[0]!r} (keys {sorted(s)}): not a state dict of the matching "
                "32-bit optimizer"
            )
        p = by_index[k]
        shell = type(opt).__new__(type(opt))
        shell.state, shell.min_8bit_size = {}, opt.min_8bit_size
        shell.percentile_clipping = opt.percentile_clipping
        from collections import defaultdict

        shell.state = defaultdict(dict)
        st = shell._init_state(p)
        step = s.get("step", 0)
        st["step"] = int(step.item() if isinstance(step, Tensor) else step)
        for j, key in enumerate(keys, 1):
            val = np.asarray(s[key]._data, np.float32).reshape(-1).copy()
            if st[f"state{j}"]._data.dtype == np.uint8:
                Q.encode_into(
                    val,
                    st[f"absmax{j}"]._data,
                    st[f"state{j}"]._data.reshape(-1),
                    Q.coder(st[f"qmap{j}"]._data),
                    BLOCKSIZE,
                )
            else:
                st[f"state{j}"]._data[...] = val.reshape(st[f"state{j}"].shape)
        new_state[k] = dict(st)
    return {"state": new_state, "param_groups": _own_groups(opt, state_dict)}


def _own_groups(opt, state_dict: dict) -> list:
    # the loading optimizer keeps its own hyper-parameters (the two families name them apart)
    return [
        {**{k: v for k, v in g.items() if k != "params"}, "params": s["params"]}
        for g, s in zip(opt.param_groups, state_dict["param_groups"])
    ]


def dequantize_state_dict(state_dict: dict, kind: str = "adam") -> dict:
    """Return the 8-bit optimizer ``state_dict`` with float32 states under torch's names
    (``exp_avg``/``exp_avg_sq`` for ``kind="adam"``, ``momentum_buffer``, ``square_avg``)."""
    keys = _TORCH_KEYS[kind]
    from ember._core.dtype import float32
    from ember._ops import API

    new_state = {}
    for k, s in state_dict["state"].items():
        out = {}
        if kind in ("adam", "rmsprop"):
            out["step"] = API["tensor"](float(s["step"]), dtype=float32)
        for j, key in enumerate(keys, 1):
            t = s[f"state{j}"]
            if t._data.dtype == np.uint8:
                x = np.empty(t._data.size, np.float32)
                Q.decode_into(
                    t._data.reshape(-1), s[f"absmax{j}"]._data, s[f"qmap{j}"]._data, x, BLOCKSIZE
                )
                out[key] = _wrap(x.reshape(t.shape))
            else:
                out[key] = t.clone()
        new_state[k] = out
    groups = []
    for g in state_dict["param_groups"]:
        g = dict(g)
        if kind == "momentum":
            g["momentum"] = g["betas"][0]
        elif kind == "rmsprop":
            g["alpha"] = g["betas"][0]
        groups.append(g)
    return {"state": new_state, "param_groups": groups}


def _kind_of(opt) -> str | None:
    name = type(opt).__name__
    return {"Adam": "adam", "AdamW": "adam", "SGD": "momentum", "RMSprop": "rmsprop"}.get(name)


def to_32bit(state_dict: dict, opt) -> dict:
    """``load_state_dict`` of a 32-bit optimizer given an 8-bit state dict: dequantize, warn."""
    kind = _kind_of(opt)
    if kind is None:
        raise ValueError(
            f"{type(opt).__name__}.load_state_dict: the state dict holds 8-bit optimizer states "
            "(state1/absmax1); only Adam, AdamW, SGD and RMSprop can load them"
        )
    warnings.warn(
        f"{type(opt).__name__}.load_state_dict: loading 8-bit optimizer states; they are "
        "dequantized to float32",
        stacklevel=3,
    )
    out = dequantize_state_dict(state_dict, kind)
    out["param_groups"] = _own_groups(opt, state_dict)
    return out
