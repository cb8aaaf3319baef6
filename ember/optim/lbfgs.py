"""L-BFGS with an optional strong-Wolfe line search (torch's algorithm, step for step)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ember._core.grad_mode import enable_grad, no_grad
from ember._ops import API
from ember.optim._single import check_lr_size
from ember.optim.optimizer import Optimizer

__all__ = ["LBFGS"]

_cat = API["cat"]
_zeros = API["zeros"]
_mul = API["mul"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Return the minimiser of the cubic through (x1, f1, g1), (x2, f2, g2), within bounds.

    The cubic that matches both values and slopes has its minimiser at (Nocedal & Wright,
    eq. 3.59, with ``a`` the left point and ``b`` the right one)
    ``b - (b - a) (g_b + d2 - d1) / (g_b - g_a + 2 d2)``, where
    ``d1 = g_a + g_b - 3 (f_a - f_b) / (a - b)`` and ``d2 = sqrt(d1^2 - g_a g_b)``.
    Without a real minimiser (``d1^2 < g_a g_b``) the midpoint of the bounds is used; the
    bounds default to the interval between the two points.
    """
    # (the formula is symmetric in the two points up to exact sign flips, so ordering them
    # changes no bits)
    if x1 > x2:
        (a, fa, ga), (b, fb, gb) = (x2, f2, g2), (x1, f1, g1)
    else:
        (a, fa, ga), (b, fb, gb) = (x1, f1, g1), (x2, f2, g2)
    low, high = (a, b) if bounds is None else bounds
    d1 = ga + gb - 3 * (fa - fb) / (a - b)
    discriminant = d1**2 - ga * gb
    if not discriminant >= 0:
        return (low + high) / 2.0
    d2 = discriminant.sqrt()
    step = b - (b - a) * ((gb + d2 - d1) / (gb - ga + 2 * d2))
    return min(max(step, low), high)


class _Trial:
    """One evaluated step length ``t`` along the search direction: loss ``f``, flat gradient
    ``g`` and directional derivative ``gtd``."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _keep_off_the_ends(t, ends: tuple, stalled: bool):
    """Zoom safeguard: a trial within 10% of the bracket's width from one of its ends is
    accepted once; if it happens again (or the trial is outside), it is moved to 10% from the
    nearer end. Returns the step and whether the next near-end trial counts as a repeat."""
    lo, hi = min(ends), max(ends)
    margin = 0.1 * (hi - lo)
    if not min(hi - t, t - lo) < margin:
        return t, False
    if not (stalled or t >= hi or t <= lo):
        return t, True
    return (hi - margin if abs(t - hi) < abs(t - lo) else lo + margin), False


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Return (loss, flat grad, step, evaluations) of a line search meeting the strong Wolfe
    conditions: bracket an acceptable step, then zoom into the bracket by cubic interpolation
    (Nocedal & Wright, algorithms 3.5 and 3.6). ``max_ls`` bounds the evaluations after the
    first."""
    evaluations = 0

    def evaluate(step) -> _Trial:
        nonlocal evaluations
        evaluations += 1
        f_step, g_step = obj_func(x, step, d)  # a freshly gathered gradient each time
        return _Trial(step, f_step, g_step, g_step.dot(d))

    def too_high(trial: _Trial) -> bool:  # the sufficient-decrease (Armijo) condition fails
        return trial.f > (f + c1 * trial.t * gtd)

    def flat_enough(trial: _Trial) -> bool:  # the strong curvature condition holds
        return abs(trial.gtd) <= -c2 * gtd

    d_norm = d.abs().max()
    origin = _Trial(0, f, g.clone(), gtd)
    previous, current = origin, evaluate(t)
    searched, bracket, done = 0, None, False
    # 1. grow the step until an interval must hold an acceptable one (or one is found)
    while searched < max_ls:
        if too_high(current) or (searched > 1 and current.f >= previous.f):
            bracket = [previous, current]
            break
        if flat_enough(current):
            bracket, done = [current], True
            break
        if current.gtd >= 0:  # the slope turned: a minimum lies behind
            bracket = [previous, current]
            break
        # extrapolate by a cubic step within [t + 0.01 (t - t_prev), 10 t]
        span = (current.t + 0.01 * (current.t - previous.t), current.t * 10)
        step = _cubic_interpolate(
            previous.t, previous.f, previous.gtd, current.t, current.f, current.gtd, span
        )
        previous, current = current, evaluate(step)
        searched += 1
    if searched == max_ls:  # out of evaluations while growing: the origin and the last trial
        bracket = [origin, current]

    # 2. zoom: shrink the bracket, keeping at ``best`` the trial with the lower loss
    def order():
        return (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)

    best, other = order()
    stalled = False
    while not done and searched < max_ls:
        left, right = bracket
        if abs(right.t - left.t) * d_norm < tolerance_change:
            break
        step = _cubic_interpolate(left.t, left.f, left.gtd, right.t, right.f, right.gtd)
        step, stalled = _keep_off_the_ends(step, (left.t, right.t), stalled)
        trial = evaluate(step)
        searched += 1
        if too_high(trial) or trial.f >= bracket[best].f:
            bracket[other] = trial
            best, other = order()
            continue
        if flat_enough(trial):
            done = True
        elif trial.gtd * (bracket[other].t - bracket[best].t) >= 0:
            bracket[other] = bracket[best]  # keep the minimum between the ends
        bracket[best] = trial
    found = bracket[best]
    return found.f, found.g, found.t, evaluations


class LBFGS(Optimizer):
    """Implements L-BFGS, as ``torch.optim.LBFGS``; ``step`` needs a closure returning the loss.

    One param group only; the state (directions, steps, history) lives with the first parameter.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        check_lr_size(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    # -- the parameters as one flat vector -------------------------------------------------
    def _flat_grad(self):
        # a fresh vector every call (missing gradients count as zeros)
        pieces = []
        for p in self._params:
            pieces.append(
                _zeros(p.numel(), dtype=p.dtype) if p.grad is None else p.grad.reshape(-1)
            )
        return _cat(pieces, 0)

    def _move(self, step, direction) -> None:
        """params += step * direction (``direction`` flat, in parameter order)."""
        start = 0
        for p in self._params:
            stop = start + p.numel()
            p.add_(direction[start:stop].view_as(p), alpha=float(step))
            start = stop

    def _loss_and_grad_at(self, closure, origin, step, direction):
        """Loss and flat gradient at ``origin + step * direction``; the parameters are put
        back to ``origin`` afterwards (the line search probes without moving)."""
        self._move(step, direction)
        loss = float(closure())
        grad = self._flat_grad()
        for p, saved in zip(self._params, origin):
            p.copy_(saved)
        return loss, grad

    def step(self, closure: Callable[[], float]) -> float:
        """Perform one L-BFGS step (up to ``max_iter`` iterations); return the first loss."""
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr = float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        search = group["line_search_fn"]
        user_closure = closure

        def closure():  # the closure runs backward: grad mode on inside step()'s no_grad
            with enable_grad():
                return user_closure()

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        first_loss = closure()
        loss = float(first_loss)
        evals = 1
        state["func_evals"] += 1
        grad = self._flat_grad()
        if grad.abs().max() <= tol_grad:  # already at a stationary point
            return first_loss
        memory = _History.restore(state, group["history_size"])

        for it in range(1, max_iter + 1):
            state["n_iter"] += 1
            fresh = state["n_iter"] == 1
            if fresh:
                memory.reset()
                d = grad.neg()
            else:
                memory.remember(grad.sub(memory.prev_grad), memory.d.mul(memory.t))
                d = memory.descent(grad, state)
            memory.d = d
            if memory.prev_grad is None:
                memory.prev_grad = grad.clone()
            else:
                memory.prev_grad.copy_(grad)
            memory.prev_loss = loss
            # the first step is scaled so that it moves by at most lr in the l1 sense
            t = min(1.0, 1.0 / grad.abs().sum()) * lr if fresh else lr
            memory.t = t
            gtd = grad.dot(d)
            if gtd > -tol_change:  # not a descent direction
                break

            used = 0
            if search is not None:
                if search != "strong_wolfe":  # checked where torch checks it: at first use
                    raise RuntimeError("only 'strong_wolfe' is supported")
                origin = [p.clone() for p in self._params]

                def probe(x, step, direction):
                    return self._loss_and_grad_at(closure, x, step, direction)

                loss, grad, t, used = _strong_wolfe(
                    probe, origin, t, d, loss, grad, gtd, max_ls=max_eval - evals
                )
                memory.t = t
                self._move(t, d)
                converged = grad.abs().max() <= tol_grad
            else:
                self._move(t, d)
                if it != max_iter:  # the last iteration's loss is never looked at
                    loss = float(closure())
                    grad = self._flat_grad()
                    converged = grad.abs().max() <= tol_grad
                    used = 1
            evals += used
            state["func_evals"] += used
            if it == max_iter or evals >= max_eval or converged:
                break
            if d.mul(t).abs().max() <= tol_change:  # the step no longer moves the parameters
                break
            if abs(loss - memory.prev_loss) < tol_change:  # nor the loss
                break
        memory.save(state)
        return first_loss


class _History:
    """L-BFGS's memory: the last ``size`` curvature pairs (y = grad change, s = step) with
    ``ro = 1 / y.s``, the initial Hessian scale ``H_diag``, the last direction ``d`` and step
    ``t``, and the previous gradient and loss. Kept in the optimizer state under torch's
    names."""

    _KEYS = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")

    def __init__(self, size: int) -> None:
        self.size = size

    @classmethod
    def restore(cls, state: dict, size: int) -> _History:
        memory = cls(size)
        memory.d, memory.t = state.get("d"), state.get("t")
        memory.ys, memory.ss, memory.ro = (
            state.get("old_dirs"),
            state.get("old_stps"),
            state.get("ro"),
        )
        memory.H_diag = state.get("H_diag")
        memory.prev_grad, memory.prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        return memory

    def save(self, state: dict) -> None:
        values = (self.d, self.t, self.ys, self.ss, self.ro, self.H_diag, self.prev_grad)
        state.update(zip(self._KEYS, (*values, self.prev_loss)))

    def reset(self) -> None:
        self.ys, self.ss, self.ro, self.H_diag = [], [], [], 1

    def remember(self, y, s) -> None:
        """Add a pair if it has positive curvature (y.s > 1e-10), dropping the oldest."""
        ys = y.dot(s)
        if not ys > 1e-10:
            return
        if len(self.ys) == self.size:
            for kept in (self.ys, self.ss, self.ro):
                del kept[0]
        self.ys.append(y)
        self.ss.append(s)
        self.ro.append(1.0 / ys)
        self.H_diag = ys / y.dot(y)

    def descent(self, grad, state: dict):
        """-H grad by the two-loop recursion (Nocedal & Wright, algorithm 7.4)."""
        alpha = state.setdefault("al", [None] * self.size)  # kept in the state, as torch's
        pairs = len(self.ys)
        q = grad.neg()
        for i in reversed(range(pairs)):
            alpha[i] = self.ss[i].dot(q) * self.ro[i]
            q.add_(self.ys[i], alpha=-alpha[i].item())
        r = _mul(q, self.H_diag)
        for i in range(pairs):
            beta = self.ys[i].dot(r) * self.ro[i]
            r.add_(self.ss[i], alpha=(alpha[i] - beta).item())
        return r
