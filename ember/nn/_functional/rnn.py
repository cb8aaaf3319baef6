"""Fused recurrent layers: one op runs a whole layer (one direction) over all timesteps.

The input projection ``x @ W_ih^T + b_ih`` of every timestep is one GEMM done by the caller
(with ember ops, so its gradients come from the op table). ``rnn_layer`` then runs the
recurrence in NumPy, one GEMM per step (computed transposed, ``(W h^T)^T``: OpenBLAS is faster
that way round for small batches), the LSTM's sigmoid gates through ``exp`` and ``tanh`` by
NumPy's own, and keeps the gates for backward. Its backward is
explicit BPTT in NumPy (the op ``rnn_layer_backward``, not differentiable) when grad mode is off
during backward (the usual ``loss.backward()``); under ``create_graph=True`` it recomputes the
layer with composite ember ops and differentiates that, so double backward stays correct.

Modes: ``"LSTM"`` (gates i, f, g, o; optional projection ``W_hr``), ``"GRU"`` (r, z, n),
``"RNN_TANH"``, ``"RNN_RELU"``. ``batch_sizes`` (a packed sequence's, sorted longest first)
limits step ``t`` to the first ``batch_sizes[t]`` rows; the other rows keep their state.
"""

from __future__ import annotations

import numpy as np

import ember
from ember._core.tensor import Tensor
from ember._core.threads import run_halves, split_work
from ember._ops.registry import dispatch, op

__all__: list[str] = []  # private: used by nn.modules.rnn


def _steps(T: int, reverse: bool):
    return range(T - 1, -1, -1) if reverse else range(T)


def _rows(batch_sizes, t: int, B: int) -> int:
    return B if batch_sizes is None else int(batch_sizes[t])


def _buffer(batch_sizes):
    # a packed batch leaves the rows of finished sequences unwritten: zero them, as backward
    # reads whole arrays (garbage there could be inf or nan, and nan * 0 is nan)
    return np.empty if batch_sizes is None else np.zeros


def _over_rows(run, B: int, work: int, batch_sizes, split: bool = True) -> None:
    """Call ``run(lo, hi)`` over the batch rows: as two halves on two threads when that pays
    (``threads.split_work``; a packed batch runs whole, its rows finish at different steps)."""
    if split and batch_sizes is None and split_work(work, B):
        run_halves(run, B)
    else:
        run(0, B)


# ------------------------------------------------------------------------------ forward


@op(
    "rnn_layer",
    grad_fn="RnnLayerBackward0",
    args=("input", "hx", "cx", "w_hh", "b_hh", "w_hr"),
    save=("_input", "_hx", "_cx", "_w_hh", "_b_hh", "_w_hr"),
)
def _rnn_layer(xp, h0, c0, w_hh, b_hh, w_hr, *, mode, reverse, batch_sizes, cache):
    if mode == "LSTM":
        out, hn, cn, saved = _lstm_forward(xp, h0, c0, w_hh, b_hh, w_hr, reverse, batch_sizes)
    elif mode == "GRU":
        out, hn, saved = _gru_forward(xp, h0, w_hh, b_hh, reverse, batch_sizes)
    else:
        out, hn, saved = _simple_forward(xp, h0, w_hh, b_hh, mode, reverse, batch_sizes)
    if cache is not None:
        cache.clear()
        cache.update(saved)
    return (out, hn, cn) if mode == "LSTM" else (out, hn)


def _lstm_forward(xp, h0, c0, w_hh, b_hh, w_hr, reverse, batch_sizes):
    T, B, G = xp.shape
    H = G // 4
    dt = xp.dtype
    # sigmoid(a) = 1 / (1 + exp(-a)) for i, f, o, np.tanh for g (vectorised in NumPy 2, and
    # exact near 0 where 2 sigmoid(2a) - 1 is not). The pre-activations of i, f, o are kept
    # negated: the sign goes into the input projection and into W_hh once, not into every
    # step. (exp overflows to inf for large -a, which gives the exact limit 0.)
    neg = np.full(G, -1.0, dt)
    neg[2 * H : 3 * H] = 1.0
    gates = np.multiply(xp, neg)
    if b_hh is not None:
        gates += b_hh * neg
    # The step's product is computed transposed, (W h^T)^T: OpenBLAS runs the small-batch
    # shape (G, H) @ (H, B) clearly faster than (B, H) @ (H, G) (0.55 against 0.82 ms per step
    # single-threaded for B=32, H=256, G=1024), more than the strided add of the result costs.
    w_s = w_hh * neg[:, None]  # (G, H), C-contiguous
    Hout = h0.shape[-1]
    new = _buffer(batch_sizes)
    out = np.zeros((T, B, Hout), dt)
    hprev = new((T, B, Hout), dt)
    cprev = new((T, B, H), dt)
    tanh_c = new((T, B, H), dt)
    hpre = new((T, B, H), dt) if w_hr is not None else None
    w_rt = w_hr.T if w_hr is not None else None
    h, c = h0.copy(), c0.copy()
    # the usual zero initial state: the first step's product is 0 (unless W_hh holds inf or
    # nan, whose product with 0 is nan)
    zero_first = not h.any() and bool(np.isfinite(w_hh).all())

    def run(lo, hi):
        # the rows [lo, hi) over all steps: each batch row's recurrence is its own
        hh_buf = np.empty((G, hi - lo), dt)
        zero_h = zero_first
        with np.errstate(over="ignore"):  # (per thread)
            steps(lo, hi, hh_buf, zero_h)

    def steps(lo, hi, hh_buf, zero_h):
        for t in _steps(T, reverse):
            n = min(_rows(batch_sizes, t, B), hi) - lo
            hp, cp = h[lo : lo + n], c[lo : lo + n]
            hprev[t, lo : lo + n] = hp
            cprev[t, lo : lo + n] = cp
            g, hh = gates[t, lo : lo + n], hh_buf[:, :n]
            if zero_h:
                zero_h = False
            else:
                np.matmul(w_s, hp.T, out=hh)
                g += hh.T
            for s in (g[:, : 2 * H], g[:, 3 * H :]):
                np.exp(s, out=s)
                s += 1
                np.reciprocal(s, out=s)
            gg = g[:, 2 * H : 3 * H]
            np.tanh(gg, out=gg)
            i, f, o = g[:, :H], g[:, H : 2 * H], g[:, 3 * H :]
            cp *= f
            ig = hh.T[:, :H]  # the product is spent: reuse its buffer
            np.multiply(i, gg, out=ig)
            cp += ig
            tc = tanh_c[t, lo : lo + n]
            np.tanh(cp, out=tc)
            if w_hr is None:
                np.multiply(o, tc, out=hp)
            else:
                hq = hpre[t, lo : lo + n]
                np.multiply(o, tc, out=hq)
                np.matmul(hq, w_rt, out=hp)
            out[t, lo : lo + n] = hp

    _over_rows(run, B, gates.size, batch_sizes)
    saved = {"gates": gates, "hprev": hprev, "cprev": cprev, "tanh_c": tanh_c, "hpre": hpre}
    return out, h, c, saved


def _gru_forward(xp, h0, w_hh, b_hh, reverse, batch_sizes):
    T, B, G = xp.shape
    H = G // 3
    new = _buffer(batch_sizes)
    out = np.zeros((T, B, H), xp.dtype)
    hprev = new((T, B, H), xp.dtype)
    gates = new((T, B, G), xp.dtype)  # r, z, n after activation
    ghn = new((T, B, H), xp.dtype)  # W_hn h + b_hn (r multiplies it)
    h = h0.copy()
    for t in _steps(T, reverse):
        n = _rows(batch_sizes, t, B)
        hp = h[:n]
        hprev[t, :n] = hp
        gh = np.matmul(w_hh, hp.T).T  # transposed product, as in the LSTM (faster in OpenBLAS)
        if b_hh is not None:
            gh += b_hh
        g = gates[t, :n]
        rz = g[:, : 2 * H]
        np.add(xp[t, :n, : 2 * H], gh[:, : 2 * H], out=rz)
        rz *= 0.5
        np.tanh(rz, out=rz)
        rz *= 0.5
        rz += 0.5
        ghn[t, :n] = gh[:, 2 * H :]
        nn = g[:, 2 * H :]
        np.multiply(g[:, :H], gh[:, 2 * H :], out=nn)
        nn += xp[t, :n, 2 * H :]
        np.tanh(nn, out=nn)
        # h' = n + z * (h - n)
        hp -= nn
        hp *= g[:, H : 2 * H]
        hp += nn
        out[t, :n] = hp
    return out, h, {"gates": gates, "hprev": hprev, "ghn": ghn}


def _simple_forward(xp, h0, w_hh, b_hh, mode, reverse, batch_sizes):
    T, B, H = xp.shape
    new = _buffer(batch_sizes)
    out = np.zeros((T, B, H), xp.dtype)
    hprev = new((T, B, H), xp.dtype)
    w_t = w_hh.T
    h = h0.copy()
    for t in _steps(T, reverse):
        n = _rows(batch_sizes, t, B)
        hp = h[:n]
        hprev[t, :n] = hp
        a = hp @ w_t
        a += xp[t, :n]
        if b_hh is not None:
            a += b_hh
        if mode == "RNN_TANH":
            np.tanh(a, out=hp)
        else:
            np.maximum(a, 0, out=hp)
        out[t, :n] = hp
    return out, h, {"hprev": hprev, "h_after": out.copy()}


# ------------------------------------------------------------------------------ backward


@_rnn_layer.backward
def _(ctx, g_out, g_h, *rest, mode, reverse, batch_sizes, cache):
    g_c = rest[0] if rest else None
    saved = ctx.saved_tensors
    needs = ctx.needs_input_grad
    if ember.is_grad_enabled():
        return _composite_backward(saved, needs, (g_out, g_h, g_c), mode, reverse, batch_sizes)
    if not cache:
        raise RuntimeError("rnn_layer: the forward's saved gates are missing")
    grads = (g_out, g_h, g_c)
    want = tuple(i for i in range(6) if needs[i])
    params = {
        "mode": mode,
        "reverse": reverse,
        "batch_sizes": batch_sizes,
        "cache": cache,
        "want": want,
    }
    res = dispatch(_rnn_layer_backward, (*saved, *grads), params)
    out = [None] * 6
    for i, r in zip(want, res):
        out[i] = r
    return tuple(out)


@op("rnn_layer_backward", differentiable=False)
def _rnn_layer_backward(
    xp, h0, c0, w_hh, b_hh, w_hr, g_out, g_h, g_c, *, mode, reverse, batch_sizes, cache, want
):
    T, B = xp.shape[:2]
    Hout = h0.shape[-1]
    dt = xp.dtype
    dout = g_out if g_out is not None else np.zeros((T, B, Hout), dt)
    dh = g_h.copy() if g_h is not None else np.zeros((B, Hout), dt)
    if mode == "LSTM":
        dc = g_c.copy() if g_c is not None else np.zeros(c0.shape, dt)
        dG, dh, dc, dw_hr = _lstm_backward(
            cache, w_hh, w_hr, dout, dh, dc, reverse, batch_sizes, 1 in want
        )
    elif mode == "GRU":
        dG, dGh, dh = _gru_backward(cache, w_hh, dout, dh, reverse, batch_sizes, 1 in want)
    else:
        dG, dh = _simple_backward(cache, w_hh, dout, dh, mode, reverse, batch_sizes, 1 in want)
    if mode != "GRU":
        dGh = dG
    hprev = cache["hprev"]
    res = []
    for i in want:
        if i == 0:
            res.append(dG)
        elif i == 1:
            res.append(dh)
        elif i == 2:
            res.append(dc)
        elif i == 3:
            d, hp = dGh, hprev
            if T and not h0.any() and np.isfinite(d[_last_step(T, reverse)]).all():
                # the first step's state is 0 and so is its part: leave its rows out
                first = slice(0, T - 1) if reverse else slice(1, T)
                d, hp = d[first], hp[first]
            res.append(d.reshape(-1, d.shape[-1]).T @ hp.reshape(-1, Hout))
        elif i == 4:
            res.append(dGh.sum((0, 1)))
        else:
            res.append(dw_hr)
    return tuple(res)


def _last_step(T: int, reverse: bool) -> int:
    # the step backward reaches last: its product with W_hh only feeds the gradient of h0
    return T - 1 if reverse else 0


def _lstm_backward(cache, w_hh, w_hr, dout, dh, dc, reverse, batch_sizes, h0_grad):
    gates, cprev, tanh_c, hpre = cache["gates"], cache["cprev"], cache["tanh_c"], cache["hpre"]
    T, B, G = gates.shape
    H = G // 4
    # the activations' derivatives for all steps at once (few large NumPy calls rather than
    # many small ones per step): sigmoid' = s (1 - s), tanh' = (1 - y)(1 + y); dG holds them
    # until step t overwrites its slice with the gradient of the pre-activations
    dG = np.empty_like(gates)
    k = np.empty_like(tanh_c)  # d c / d h = o (1 - tanh(c)^2)
    w_hh_t = w_hh.T
    dw_hr = np.zeros(w_hr.shape, w_hr.dtype) if w_hr is not None else None
    last = _last_step(T, reverse)

    def run(lo, hi):
        # the rows [lo, hi) over all steps (each row's gradient flows through its own row)
        rows = slice(lo, hi)
        ga, da = gates[:, rows], dG[:, rows]
        np.subtract(1, ga, out=da)
        da[..., : 2 * H] *= ga[..., : 2 * H]
        da[..., 3 * H :] *= ga[..., 3 * H :]
        da[..., 2 * H : 3 * H] *= 1 + ga[..., 2 * H : 3 * H]
        ka = k[:, rows]
        np.multiply(tanh_c[:, rows], tanh_c[:, rows], out=ka)
        np.subtract(1, ka, out=ka)
        ka *= ga[..., 3 * H :]
        buf = np.empty((hi - lo, G), gates.dtype)
        for t in _steps(T, not reverse):
            end = min(_rows(batch_sizes, t, B), hi)
            n = end - lo
            r = slice(lo, end)
            g = gates[t, r]
            d_h = dh[r]
            d_h += dout[t, r]
            if w_hr is not None:
                np.add(dw_hr, d_h.T @ hpre[t, r], out=dw_hr)
                d_h = d_h @ w_hr
            d, tmp, d_c = dG[t, r], buf[:n], dc[r]
            np.multiply(d_h, tanh_c[t, r], out=tmp[:, 3 * H :])  # d o
            d_h *= k[t, r]
            d_c += d_h
            np.multiply(d_c, g[:, 2 * H : 3 * H], out=tmp[:, :H])  # d i
            np.multiply(d_c, cprev[t, r], out=tmp[:, H : 2 * H])  # d f
            np.multiply(d_c, g[:, :H], out=tmp[:, 2 * H : 3 * H])  # d g
            d_c *= g[:, H : 2 * H]
            d *= tmp
            if end < hi:
                dG[t, end:hi] = 0
            if t == last and not h0_grad:
                break
            np.matmul(w_hh_t, d.T, out=dh[r].T)  # transposed, as in the forward

    # (with a projection, dW_hr sums over the rows: run whole)
    _over_rows(run, B, gates.size, batch_sizes, split=w_hr is None)
    return dG, dh, dc, dw_hr


def _gru_backward(cache, w_hh, dout, dh, reverse, batch_sizes, h0_grad):
    gates, hprev, ghn = cache["gates"], cache["hprev"], cache["ghn"]
    T, B, G = gates.shape
    H = G // 3
    dG = np.zeros_like(gates)  # d(input projection)
    dGh = np.zeros_like(gates)  # d(W_hh h + b_hh)
    last = _last_step(T, reverse)
    for t in _steps(T, not reverse):
        n = _rows(batch_sizes, t, B)
        g = gates[t, :n]
        r, z, nn = g[:, :H], g[:, H : 2 * H], g[:, 2 * H :]
        d_h = dh[:n]
        d_h += dout[t, :n]
        d = dG[t, :n]
        dh_ = dGh[t, :n]
        dr, dz, dn = d[:, :H], d[:, H : 2 * H], d[:, 2 * H :]
        np.subtract(hprev[t, :n], nn, out=dz)
        dz *= d_h
        dz *= z * (1 - z)
        np.multiply(d_h, 1 - z, out=dn)
        dn *= 1 - nn * nn
        np.multiply(dn, ghn[t, :n], out=dr)
        dr *= r * (1 - r)
        dh_[:, : 2 * H] = d[:, : 2 * H]
        np.multiply(dn, r, out=dh_[:, 2 * H :])
        if t == last and not h0_grad:
            break
        d_h *= z
        d_h += np.matmul(w_hh.T, dh_.T).T
    return dG, dGh, dh


def _simple_backward(cache, w_hh, dout, dh, mode, reverse, batch_sizes, h0_grad):
    hprev = cache["hprev"]
    T, B, H = hprev.shape
    dG = np.zeros_like(hprev)
    # the output of step t is the input state of the next step (or the final state)
    last = _last_step(T, reverse)
    for t in _steps(T, not reverse):
        n = _rows(batch_sizes, t, B)
        d_h = dh[:n]
        d_h += dout[t, :n]
        d = dG[t, :n]
        h_t = cache["h_after"][t, :n]
        if mode == "RNN_TANH":
            np.multiply(d_h, 1 - h_t * h_t, out=d)
        else:
            np.multiply(d_h, h_t > 0, out=d)
        if t == last and not h0_grad:
            break
        dh[:n] = d @ w_hh
    return dG, dh


# ------------------------------------------------------------------------------ composite


def cell_step(mode: str, x: Tensor, h: Tensor, c, w_hh: Tensor, b_hh, w_hr=None) -> tuple:
    """Return ``(h', c')`` (``c'`` None but for LSTM) of one step written with ember ops.

    ``x`` is the step's input projection ``input @ W_ih^T + b_ih``. The formulas and the order
    of operations are torch's CPU cells (``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``).
    """
    gh = ember.matmul(h, w_hh.t())
    if b_hh is not None:
        gh = gh + b_hh
    if mode == "LSTM":
        i, f, g, o = (x + gh).chunk(4, 1)
        c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
        h = ember.sigmoid(o) * ember.tanh(c)
        return (h if w_hr is None else ember.matmul(h, w_hr.t())), c
    if mode == "GRU":
        xr, xz, xn = x.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r = ember.sigmoid(xr + hr)
        z = ember.sigmoid(xz + hz)
        n = ember.tanh(xn + r * hn)
        return n + z * (h - n), None
    a = x + gh
    return (ember.tanh(a) if mode == "RNN_TANH" else ember.relu(a)), None


def _composite_layer(xp, h0, c0, w_hh, b_hh, w_hr, mode, reverse, batch_sizes):
    """The same layer written with ember ops (differentiable to any order)."""
    T, B = xp.shape[0], xp.shape[1]
    h, c = h0, c0
    outs = [None] * T
    for t in _steps(T, reverse):
        n = _rows(batch_sizes, t, B)
        if n == B:
            h, c = cell_step(mode, xp[t], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
            continue
        # a packed batch: only the first n sequences are still running
        hn, cn = cell_step(
            mode, xp[t, :n], h[:n], c[:n] if c is not None else None, w_hh, b_hh, w_hr
        )
        h = ember.cat([hn, h[n:]])
        if c is not None:
            c = ember.cat([cn, c[n:]])
        outs[t] = ember.cat([hn, hn.new_zeros((B - n, hn.shape[1]))])
    out = ember.stack(outs) if T else xp.new_zeros((0, B, h0.shape[-1]))
    return (out, h, c) if mode == "LSTM" else (out, h)


def _composite_backward(saved, needs, grads, mode, reverse, batch_sizes):
    outs = _composite_layer(*saved, mode, reverse, batch_sizes)
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
    inputs = [x for x, need in zip(saved, needs) if need]
    res = iter(
        ember.autograd.grad(
            [o for o, _ in pairs],
            inputs,
            [g for _, g in pairs],
            create_graph=True,
            allow_unused=True,
        )
    )
    return tuple(next(res) if need else None for need in needs)


def rnn_layer(
    xp: Tensor,
    h0: Tensor,
    c0: Tensor | None,
    w_hh: Tensor,
    b_hh: Tensor | None,
    w_hr: Tensor | None,
    mode: str,
    reverse: bool = False,
    batch_sizes=None,
) -> tuple:
    """Return ``(output, h_n)`` (``(output, h_n, c_n)`` for LSTM) of one layer and direction.

    ``xp`` is the input projection ``x @ W_ih^T + b_ih`` of shape (T, B, gates * hidden).
    """
    params = {"mode": mode, "reverse": reverse, "batch_sizes": batch_sizes, "cache": {}}
    return dispatch(_rnn_layer, (xp, h0, c0, w_hh, b_hh, w_hr), params)
