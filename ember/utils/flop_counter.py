"""``torch.utils.flop_counter``: count the floating-point operations a program runs.

``FlopCounterMode`` watches the op table (``ember._ops.registry.add_observer``) while it is
entered: each matrix product and convolution adds torch's count for it (two per multiply-add),
keyed by the aten operator torch would run (``aten.addmm``, ``aten.mm``, ``aten.bmm``,
``aten.convolution``). Backward work is counted when backward runs: a pre-hook on the op's
``grad_fn`` adds the products its gradients take (``aten.mm`` for the gradients of a matrix
product, ``aten.convolution_backward`` for a convolution), for the inputs that need them.
Counts are attributed to the module whose ``forward`` made the op and to its parents
(``"Global"`` holds them all), as torch's table shows them.
"""

from __future__ import annotations

import math
from collections import defaultdict

from ember.autograd import engine as _engine

__all__ = ["FlopCounterMode"]


def _mm_flops(a_shape, b_shape) -> int:
    # (.., m, k) @ (.., k, n): m * n * k multiply-adds per batch element
    *batch, m, k = a_shape
    n = b_shape[-1]
    return 2 * math.prod(batch) * m * n * k


def _conv_flops(x_shape, w_shape, out_shape, transposed: bool) -> int:
    # every output position of every output channel takes prod(w_shape[1:]) multiply-adds;
    # a transposed convolution does that per input position instead
    spatial = x_shape[2:] if transposed else out_shape[2:]
    return 2 * x_shape[0] * math.prod(w_shape) * math.prod(spatial)


def _product_kind(a_shape, b_shape) -> str | None:
    """The aten op torch's matmul becomes for these shapes (None: mv/dot, not counted)."""
    if len(a_shape) < 2 or len(b_shape) < 2:
        return None
    return "mm" if len(b_shape) == 2 else "bmm"


class _Counted:
    """What one forward op contributes: its forward count and its backward formula."""

    __slots__ = ("key", "flops", "backward")

    def __init__(self, key: str, flops: int, backward):
        self.key, self.flops, self.backward = key, flops, backward


def _count(op, inputs, params, result) -> _Counted | None:
    name = op.name
    shapes = [tuple(getattr(t, "shape", ())) for t in inputs]
    if name in ("mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm"):
        a, b = shapes[-2:]
        kind = {"addmm": "addmm", "baddbmm": "baddbmm", "mm": "mm", "bmm": "bmm"}.get(name)
        kind = kind or _product_kind(a, b)
        if kind is None:
            return None
        flops = _mm_flops(a, b)
        grad_kind = "bmm" if kind in ("bmm", "baddbmm") else "mm"

        def backward(needs):  # one product per needed operand gradient
            return grad_kind, flops * sum(needs[-2:])

        return _Counted(kind, flops, backward)
    if name == "convolution":
        x, w = shapes[0], shapes[1]
        flops = _conv_flops(x, w, tuple(result.shape), params["transposed"])

        def backward(needs):  # the input and the weight gradients cost a forward each
            return "convolution_backward", flops * sum(needs[:2])

        return _Counted("convolution", flops, backward)
    return None


class _Observer:
    def __init__(self, mode: FlopCounterMode):
        self.mode = mode

    def enter(self, op, inputs, params, self_):
        return op, inputs, params

    def exit(self, token, result):
        # ops a backward formula runs are counted by the node's pre-hook, not as forward work
        if result is None or not self.mode._active or _engine.GRAPH_TASKS:
            return
        op, inputs, params = token
        out = result[0] if isinstance(result, tuple) else result
        counted = _count(op, inputs, params, out)
        if counted is None:
            return
        mode = self.mode
        parents = tuple(dict.fromkeys(mode._parents))
        mode._add(parents, counted.key, counted.flops)
        node = getattr(out, "grad_fn", None)
        if node is not None:
            needs = [getattr(t, "requires_grad", False) for t in inputs]

            def prehook(grad_outputs, counted=counted, needs=needs, parents=parents):
                if mode._active:
                    key, flops = counted.backward(needs)
                    if flops:
                        mode._add(parents, key, flops)

            node.register_prehook(prehook)


class FlopCounterMode:
    """Context manager counting FLOPs of the ops run inside it (``get_total_flops()``,
    ``get_flop_counts()``), printing a table per module on exit when ``display``."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping=None):
        self.depth = depth
        self.display = display
        self.flop_counts: dict[str, dict] = defaultdict(lambda: defaultdict(int))
        self._parents: list[str] = ["Global"]
        self._active = False
        self._handles: list = []
        if mods is not None:
            import warnings

            warnings.warn(
                "mods argument is not needed anymore, you can stop passing it", stacklevel=2
            )

    def _add(self, parents, key: str, flops: int) -> None:
        from ember._op_namespace import ops

        packet = getattr(ops.aten, key)
        for p in parents:
            self.flop_counts[p][packet] += flops

    def get_total_flops(self) -> int:
        """Return the FLOPs counted so far."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict]:
        """Return ``{module name: {aten op packet: flops}}`` (``"Global"``: everything)."""
        return {name: dict(counts) for name, counts in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """Return the counts as a text table, modules nested down to ``depth``."""
        depth = self.depth if depth is None else depth
        total = self.get_total_flops() or 1
        rows = []
        for module, counts in self.flop_counts.items():
            level = 0 if module == "Global" else module.count(".") + 1
            if level > depth:
                continue
            flops = sum(counts.values())
            rows.append((" " * level + module, _human(flops), f"{100 * flops / total:.2f}%"))
            for packet, n in counts.items():
                rows.append((" " * (level + 1) + str(packet), _human(n), f"{100 * n / total:.2f}%"))
        widths = [max(len(r[i]) for r in rows + [("Module", "FLOP", "% Total")]) for i in range(3)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(("Module", "FLOP", "% Total"), widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        return "\n".join(lines)

    def __enter__(self):
        from ember._ops import registry
        from ember.nn.modules import module as _module

        self.flop_counts.clear()
        self._observer = _Observer(self)
        registry.add_observer(self._observer)
        names = {}

        def pre(mod, args):
            name = names.get(id(mod))
            if name is None:  # torch's names: the outermost module's class, then the path
                parent = self._parents[-1]
                root = (
                    type(mod).__name__ if parent == "Global" else f"{parent}.{type(mod).__name__}"
                )
                for n, m in mod.named_modules():
                    names.setdefault(id(m), f"{root}.{n}" if n else root)
                name = names[id(mod)]
            self._parents.append(name)

        def post(mod, args, out):
            if len(self._parents) > 1:
                self._parents.pop()

        self._handles = [
            _module.register_module_forward_pre_hook(pre),
            _module.register_module_forward_hook(post),
        ]
        self._active = True
        return self

    def __exit__(self, *exc) -> None:
        from ember._ops import registry

        self._active = False
        registry.remove_observer(self._observer)
        for h in self._handles:
            h.remove()
        self._parents = ["Global"]
        if self.display:
            print(self.get_table(self.depth))


def _human(n: int) -> str:
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.3f}{unit}"
    return str(n)
