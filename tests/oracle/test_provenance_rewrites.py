"""Differential checks (ember against torch) for behaviour the provenance rewrites of issue 21
touched and the older oracle tests did not pin down: each scenario is written once as
``fn(lib)`` and run with ``lib=torch`` and ``lib=ember``."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import ember
import ember.fx

torch = pytest.importorskip("torch")
pytest.importorskip("torch.fx")

LIBS = (torch, ember)


def _both(fn):
    return [fn(lib) for lib in LIBS]


def _raises(fn):
    """The exception class (and rendered message) ``fn(lib)`` raises in each library."""
    out = []
    for lib in LIBS:
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            out.append((type(e), str(e).replace("ember", "torch")))
        else:
            out.append(None)
    return out


# ---------------------------------------------------------------------------------------------
# fx


def test_fx_wrap_rejects_non_callables():
    t, e = _raises(lambda lib: lib.fx.wrap(3))
    assert t == e and t[0] is RuntimeError


def _square_plus(x, y):
    return x * x + y


def test_fx_symbolic_trace_names_the_graph_module():
    def run(lib):
        class Net(lib.nn.Module):
            def forward(self, x):
                return x + 1

        return (
            type(lib.fx.symbolic_trace(Net())).__name__,
            type(lib.fx.symbolic_trace(_square_plus)).__name__,
        )

    t, e = _both(run)
    assert t == e == ("Net", "_square_plus")


def test_fx_concrete_args_and_replace_input_with():
    def run(lib):
        def f(x, flag, *rest, scale=2.0, **extra):
            return x * scale if flag else x

        gm = lib.fx.symbolic_trace(f, concrete_args={"flag": True})
        ops = [(n.op, getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes]
        x = next(n for n in gm.graph.nodes if n.op == "placeholder")
        mul = next(n for n in gm.graph.nodes if n.target is operator.mul)
        with gm.graph.inserting_before(mul):
            neg = gm.graph.call_function(operator_neg, (x,))
        mul.replace_input_with(x, neg)
        gm.recompile()
        out = gm(lib.ones(2), True, scale=3.0)
        return ops, [str(a) for a in mul.args], out.tolist()

    t, e = _both(run)
    assert t == e


def operator_neg(a):
    return -a


def test_fx_delete_all_unused_submodules_keeps_paths_and_insides():
    def run(lib):
        nn = lib.nn

        class Inner(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)
                self.unused = nn.Linear(2, 2)

            def forward(self, x):
                return self.lin(x)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = nn.Sequential(Inner(), nn.ReLU())
                self.side = nn.Linear(2, 2)
                self.holder = nn.Module()
                self.holder.weight = nn.Parameter(lib.ones(2))
                self.dead = nn.Linear(2, 2)

            def forward(self, x):
                return self.block(x) + self.side(x) + self.holder.weight

        gm = lib.fx.symbolic_trace(Net())
        for node in list(gm.graph.nodes):
            if node.op == "call_module" and node.target == "side":
                node.replace_all_uses_with(node.args[0])
                gm.graph.erase_node(node)
        gm.delete_all_unused_submodules()
        return sorted(name for name, _ in gm.named_modules())

    t, e = _both(run)
    assert t == e


# ---------------------------------------------------------------------------------------------
# the deprecated interpolate aliases


@pytest.mark.parametrize(
    "call",
    [
        lambda F, x: F.upsample(x, scale_factor=2, mode="bilinear", align_corners=False),
        lambda F, x: F.upsample(x, size=(3, 5)),
        lambda F, x: F.upsample_nearest(x, size=3),
        lambda F, x: F.upsample_bilinear(x, scale_factor=(2, 1.5)),
    ],
)
def test_deprecated_upsample_aliases_warn_at_the_caller(call):
    data = np.random.default_rng(1).random((1, 2, 3, 4), dtype=np.float32)
    outs = []
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = call(lib.nn.functional, lib.from_numpy(data.copy()))
        w = [c for c in caught if "deprecated" in str(c.message)]
        assert len(w) == 1 and w[0].filename == __file__
        outs.append((y.detach().numpy(), str(w[0].message), w[0].category))
    (ty, tm, tc), (ey, em, ec) = outs
    np.testing.assert_allclose(ey, ty, rtol=1e-5, atol=1e-6)
    assert (tm, tc) == (em, ec)


# ---------------------------------------------------------------------------------------------
# nn: layers, utils, optimizers


def test_consume_prefix_strips_keys_and_metadata():
    from collections import OrderedDict

    def run(lib):
        sd = OrderedDict([("module.0.weight", 1), ("module.0.bias", 2), ("other", 3)])
        sd._metadata = OrderedDict([("", {"r": 0}), ("module", {"v": 1}), ("module.0", {})])
        sd._metadata["x"] = {}
        lib.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")
        return list(sd.items()), list(sd._metadata.items())

    t, e = _both(run)
    assert t == e


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.FractionalMaxPool2d(2),
        lambda nn: nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
        lambda nn: nn.FractionalMaxPool3d(0, output_size=2),
        lambda nn: nn.FractionalMaxPool3d((2, 0, 2), output_size=2),
        lambda nn: nn.FractionalMaxPool3d([2, 2, 2], output_ratio=(0.5, 0.5, 0.5)),
    ],
)
def test_fractional_pool_argument_checks(make):
    t, e = _raises(lambda lib: make(lib.nn))
    assert t == e


def test_upsample_repr_and_lazy_conv_unbatched():
    def run(lib):
        nn = lib.nn
        reprs = [
            repr(nn.Upsample(scale_factor=2)),
            repr(nn.Upsample(size=(3, 4), mode="bilinear")),
            repr(nn.UpsamplingNearest2d(scale_factor=(2.0, 3.0))),
        ]
        lib.manual_seed(0)
        conv = nn.LazyConv2d(4, 3)
        conv(lib.ones(3, 5, 5))  # unbatched: the channels are dim 0
        lin = nn.LazyLinear(2)
        lin(lib.ones(4, 6))
        return reprs, conv.weight.shape, conv.in_channels, lin.weight.shape, lin.bias.shape

    t, e = _both(run)
    assert t == e


def test_sparse_adam_rejects_complex_parameters_by_position():
    def run(lib):
        dense = lib.nn.Parameter(lib.ones(2))
        cplx = lib.nn.Parameter(lib.ones(2, dtype=lib.complex64))
        groups = [{"params": [dense]}, {"params": [dense.detach().clone(), cplx]}]
        return lib.optim.SparseAdam(groups)

    t, e = _raises(run)
    assert t == e and t[0] is ValueError


def test_stack_module_state_checks_modes_and_classes():
    def mixed_modes(lib):
        a, b = lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)
        b.eval()
        return lib.func.stack_module_state([a, b])

    def mixed_classes(lib):
        return lib.func.stack_module_state([lib.nn.Linear(2, 2), lib.nn.Identity()])

    for case in (mixed_modes, mixed_classes):
        t, e = _raises(case)
        assert t == e and t[0] is RuntimeError


def test_custom_function_with_backward_and_vjp_is_refused():
    def run(lib):
        class Both(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def vjp(ctx, g):
                return g * 2

        Both.apply(lib.ones(2, requires_grad=True)).sum().backward()

    t, e = _raises(run)
    assert t == e and t[0] is RuntimeError


@pytest.mark.parametrize("which", ["spectral_norm", "weight_norm"])
def test_hook_reparametrizations_refuse_lazy_and_doubled(which):
    def lazy(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(lib.nn.utils, which)(lib.nn.LazyLinear(3))

    def doubled(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = getattr(lib.nn.utils, which)(lib.nn.Linear(2, 3))
            getattr(lib.nn.utils, which)(m)

    for case in (lazy, doubled):
        t, e = _raises(case)
        assert t == e and t is not None


def test_spectral_norm_state_dict_hooks_come_and_go():
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.utils.spectral_norm(lib.nn.Linear(3, 2))
        sd = m.state_dict()
        with_hooks = (sorted(sd), dict(sd._metadata[""]))
        lib.nn.utils.remove_spectral_norm(m)
        sd = m.state_dict()
        return with_hooks, sorted(sd), dict(sd._metadata[""])

    t, e = _both(run)
    assert t == e


@pytest.mark.parametrize("size_average", [None, True, False])
@pytest.mark.parametrize("reduce", [None, True, False])
def test_legacy_reduction_flags(size_average, reduce):
    def run(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer = lib.nn.MSELoss(size_average=size_average, reduce=reduce)
            x = lib.arange(4.0).reshape(2, 2)
            value = lib.nn.functional.l1_loss(x, x * 2, size_average=size_average, reduce=reduce)
        return layer.reduction, value.tolist(), [str(w.message) for w in caught]

    t, e = _both(run)
    assert t == e


@pytest.mark.parametrize("epochs", [-1, 2.0, "3"])
def test_swalr_anneal_epochs_check(epochs):
    def run(lib):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)
        return lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=epochs)

    t, e = _raises(run)
    assert t == e and t[0] is ValueError


def test_cyclic_lr_writes_base_lrs_only_on_a_fresh_start():
    def run(lib):
        out = []
        for last_epoch in (-1, 0):
            p = lib.nn.Parameter(lib.ones(1))
            opt = lib.optim.SGD([{"params": [p]}, {"params": [p.detach().clone()]}], lr=1.0)
            for g in opt.param_groups:
                g["initial_lr"] = 1.0
            sched = lib.optim.lr_scheduler.CyclicLR(
                opt, base_lr=[0.1, 0.2], max_lr=1.0, last_epoch=last_epoch, cycle_momentum=False
            )
            out.append(([g["lr"] for g in opt.param_groups], sched.base_lrs))
        return out

    t, e = _both(run)
    assert t == e


def test_fx_plain_tensor_attributes_become_get_attr_nodes():
    def run(lib):
        nn = lib.nn

        class Leaf(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = lib.arange(3.0)

            def forward(self, x):
                return x + self.table

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Leaf()
                self.b = self.a  # the same module under a second path
                self.top = lib.ones(3)

            def forward(self, x):
                return self.b(x) * self.top

        gm = lib.fx.symbolic_trace(Net())
        targets = [n.target for n in gm.graph.nodes if n.op in ("get_attr", "call_module")]
        return targets, gm(lib.ones(3)).tolist()

    t, e = _both(run)
    assert t == e
