"""Smoke test for examples/transformer_classifier.py: a tiny run beats chance, and the same
script run on real torch loads the saved checkpoint and gives the same predictions."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import ember

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "transformer_classifier.py"


def _load(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(SCRIPT)
    sys.modules[name] = module  # dataclass/annotation lookups need the module registered
    try:
        exec(compile(source, str(SCRIPT), "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


def _load_example():
    spec = importlib.util.spec_from_file_location("ember_example_transformer", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("transformer") / "classifier.pt"
    example = _load_example()
    argv = ["--epochs", "2", "--train-size", "512", "--test-size", "256", "--out", str(out)]
    metrics = example.main(argv)
    return example, metrics, out


def test_beats_chance(trained):
    _, metrics, out = trained
    assert metrics["accuracy"] > 0.35  # chance is ~1/6
    assert out.exists()


def test_help():
    with pytest.raises(SystemExit) as exc:
        _load_example().main(["--help"])
    assert exc.value.code == 0


def test_same_script_on_torch_reads_the_checkpoint(trained):
    torch = pytest.importorskip("torch")
    example, _, out = trained
    source = SCRIPT.read_text()
    for a, b in [
        ("import ember as torch", "import torch"),
        ("import ember.nn as nn", "import torch.nn as nn"),
        ("from ember.utils.data", "from torch.utils.data"),
    ]:
        assert a in source
        source = source.replace(a, b)
    torch_example = _load("torch_example_transformer", source)
    tmodel = torch_example.TransformerClassifier(example.VOCAB, example.VOCAB)
    tmodel.load_state_dict(torch.load(out))
    emodel = example.TransformerClassifier(example.VOCAB, example.VOCAB)
    emodel.load_state_dict(ember.load(out))
    assert repr(emodel) == repr(tmodel)
    tokens = np.random.default_rng(0).integers(0, example.VOCAB, (8, example.SEQ_LEN))
    tmodel.eval()
    emodel.eval()
    with torch.no_grad(), ember.no_grad():
        want = tmodel(torch.from_numpy(tokens)).numpy()
        got = emodel(ember.from_numpy(tokens)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
