"""``jit.script`` of einops' torch layers (``Rearrange``, ``Reduce``, ``EinMix``): a layer
holding a dict of recipe objects (a TorchScript class) whose forward calls a module-level
function with keywords, static methods of a class, list/dict methods, ``isinstance`` and a
raise in a loop. ember compiles them (no eager fallback: every call node has its callee) and
returns torch's values; the graphs hold torch's node kinds. einops imports ``torch``, so the
ember side runs under ``python -m ember run`` in a subprocess."""

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("einops")

_LAYERS = textwrap.dedent(
    """
    import json, sys, warnings
    import numpy as np
    import torch
    from einops.layers.torch import EinMix, Rearrange, Reduce
    warnings.simplefilter("ignore")

    def model(scripted_child):
        torch.manual_seed(0)
        r = Rearrange("b c h w -> b (c h w)")
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 6, kernel_size=(5, 5)),
            Reduce("b c (h h2) (w w2) -> b c h w", "max", h2=2, w2=2),
            torch.jit.script(r) if scripted_child else r,
            torch.nn.Linear(6 * 14 * 14, 20),
            EinMix("b c1 -> (b c2)", weight_shape="c1 c2", bias_shape="c2", c1=20, c2=20),
            EinMix("(b c2) -> b c3", weight_shape="c2 c3", bias_shape="c3", c2=20, c3=4),
        )

    def kinds(g):
        return sorted({n.kind() for n in g.nodes()})

    out = {}
    x = torch.tensor(np.load(sys.argv[1]))
    for child in (False, True):
        m = model(child)
        s = torch.jit.script(m)
        out[f"y{int(child)}"] = s(x).tolist()
        out[f"eager{int(child)}"] = m(x).tolist()
    for name, layer in [
        ("reduce", Reduce("b c (h h2) (w w2) -> b c h w", "mean", h2=2, w2=2)),
        ("rearrange", Rearrange("b c h w -> b h w c")),
        ("repeat", Reduce("b c h w -> b c", "sum")),
    ]:
        s = torch.jit.script(layer)
        out[name + "_kinds"] = kinds(s.graph)
        out[name] = s(x).tolist()
    IS_EMBER = sys.argv[2] == "ember"
    if IS_EMBER:
        from ember.jit._compiler import compile_module

        def all_calls_compiled(g):
            for n in g.nodes():
                if n.kind() in ("prim::CallMethod", "prim::CallFunction"):
                    callee = getattr(n, "_callee", None)
                    if callee is None or not all_calls_compiled(callee):
                        return False
                for b in n.blocks():
                    if not all_calls_compiled(b):
                        return False
            return True

        out["compiled"] = all_calls_compiled(compile_module(model(True)))
    print(json.dumps(out))
    """
)


def _run(tmp_path, lib: str) -> dict:
    script = tmp_path / "einops_layers.py"
    script.write_text(_LAYERS)
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    runner = [sys.executable, "-m", "ember", "run"] if lib == "ember" else [sys.executable]
    r = subprocess.run(
        [*runner, str(script), str(tmp_path / "x.npy"), lib],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("einops")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _run(d, "ember"), _run(d, "torch")


def test_einops_layers_compile_without_fallback(results):
    ours, _ = results
    assert ours["compiled"] is True


def test_scripted_einops_model_matches_eager_and_torch(results):
    ours, theirs = results
    for k in ("y0", "y1"):
        np.testing.assert_allclose(ours[k], ours[k.replace("y", "eager")], rtol=1e-6, atol=1e-6)
        # the same seeded weights: torch's model gives the same numbers
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["reduce", "rearrange", "repeat"])
def test_scripted_einops_layer_graph_and_values(results, name):
    ours, theirs = results
    np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, atol=1e-6)
    assert ours[name + "_kinds"] == theirs[name + "_kinds"]
