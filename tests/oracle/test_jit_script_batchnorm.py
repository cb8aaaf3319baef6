"""Training BatchNorm inside scripted graphs: ``jit.script`` compiles ``BatchNormNd`` to
torch's structure (the batch count ``aten::add_`` under ``prim::If(training)``, then
``aten::batch_norm`` with the module's training flag), so a scripted model's training steps
update running statistics and the count exactly as eager ember does and as torch's scripted
model does; ``eval()`` switches the same graph to the running statistics."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _net(lib, d: int):
    lib.manual_seed(0)
    conv = {1: lib.nn.Conv1d, 2: lib.nn.Conv2d, 3: lib.nn.Conv3d}[d]
    bn = {1: lib.nn.BatchNorm1d, 2: lib.nn.BatchNorm2d, 3: lib.nn.BatchNorm3d}[d]
    return lib.nn.Sequential(conv(2, 3, 3), bn(3, momentum=0.3), lib.nn.ReLU())


def _script(lib, m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.script(m)


def _kinds(block) -> list:
    out = []
    for n in block.nodes():
        out.append(n.kind())
        for b in n.blocks():
            out += _kinds(b)
    return out


@pytest.mark.parametrize("d", [1, 2, 3])
def test_scripted_training_batch_norm_matches_eager_and_torch(d):
    rng = np.random.default_rng(d)
    xs = [rng.standard_normal((4, 2) + (6,) * d).astype(np.float32) for _ in range(3)]
    nets = {"ember": _net(ember, d), "eager": _net(ember, d), "torch": _net(torch, d)}
    scripted = {"ember": _script(ember, nets["ember"]), "torch": _script(torch, nets["torch"])}
    run = {"ember": scripted["ember"], "eager": nets["eager"], "torch": scripted["torch"]}
    for x in xs:
        outs = {}
        for k, f in run.items():
            lib = torch if k == "torch" else ember
            y = f(lib.tensor(x))
            y.square().sum().backward()
            outs[k] = y.detach().numpy()
        np.testing.assert_array_equal(outs["ember"], outs["eager"])  # the same kernels
        np.testing.assert_allclose(outs["ember"], outs["torch"], rtol=1e-5, atol=1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        got = getattr(nets["ember"][1], name).numpy()
        np.testing.assert_array_equal(got, getattr(nets["eager"][1], name).numpy())
        np.testing.assert_allclose(got, getattr(nets["torch"][1], name).numpy(), rtol=1e-5)
    assert int(nets["ember"][1].num_batches_tracked) == 3
    np.testing.assert_array_equal(
        nets["ember"][0].weight.grad.numpy(), nets["eager"][0].weight.grad.numpy()
    )
    # eval: the same graph reads the running statistics, the count stays
    scripted["ember"].eval()
    scripted["torch"].eval()
    x = xs[0]
    np.testing.assert_allclose(
        scripted["ember"](ember.tensor(x)).detach().numpy(),
        scripted["torch"](torch.tensor(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )
    assert int(nets["ember"][1].num_batches_tracked) == 3


def test_batch_norm_graph_has_torch_nodes():
    e = _script(ember, ember.nn.BatchNorm2d(3)).inlined_graph
    t = _script(torch, torch.nn.BatchNorm2d(3)).inlined_graph
    for kinds in (_kinds(e.block()), _kinds(t.block()) if hasattr(t, "block") else _kinds(t)):
        # torch's also holds _check_input_dim's and F.batch_norm's checks
        assert [k for k in kinds if k in ("aten::add_", "aten::batch_norm")] == [
            "aten::add_",
            "aten::batch_norm",
        ]
        assert "prim::If" in kinds[: kinds.index("aten::add_")]
    # the count is updated inside the training branch
    (if_node,) = [n for n in e.nodes() if n.kind() == "prim::If"]
    assert [n.kind() for n in if_node.blocks()[0].nodes()][-1] == "aten::add_"
    assert list(if_node.blocks()[1].nodes()) == []
