"""Third-party libraries under the stand-in: each installed library's README example
(tests/ecosystem/smoke/) under ``python -m ember run``, and examples/inspect_model.py.

Libraries not installed are skipped; tests/ecosystem/run_ecosystem.py runs their own test
suites in throwaway venvs (not part of this run: it downloads packages).
"""

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "ecosystem" / "smoke"

# smoke check -> the modules it needs
LIBRARIES = {
    "einops": ("einops",),
    "torchinfo": ("torchinfo",),
    "thop": ("thop",),
    "torchsummary": ("torchsummary",),
    "torchviz": ("torchviz", "graphviz"),
    "ptflops": ("ptflops",),
    "skorch": ("skorch", "sklearn"),
    "lightning": ("pytorch_lightning",),
    "safetensors": ("safetensors",),
}
# README examples that do not run on ember yet (docs/guide/ecosystem.md says why)
NOT_YET: dict[str, str] = {}


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "EMBER_AS_TORCH"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _installed(modules) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_readme_example_under_the_stand_in(lib):
    if not _installed(LIBRARIES[lib]):
        pytest.skip(f"{lib} is not installed")
    if lib in NOT_YET:
        pytest.xfail(NOT_YET[lib])
    r = subprocess.run(
        [sys.executable, "-m", "ember", "run", str(SMOKE / f"{lib}_smoke.py")],
        cwd=SMOKE,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]


def test_inspect_model_example(tmp_path):
    if not _installed(("torchinfo", "thop", "torchviz", "graphviz")):
        pytest.skip("torchinfo, thop and torchviz are not installed")
    out = tmp_path / "graph"
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "inspect_model.py"), "--out", str(out)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "torch here is ember" in r.stdout
    assert "Total params: 61,706" in r.stdout and "Conv2d: 2-1" in r.stdout
    assert "416.520K MACs, 61.706K parameters" in r.stdout
    if shutil.which("dot"):
        assert (tmp_path / "graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert "`dot` program is not installed" in r.stdout and (tmp_path / "graph.gv").exists()
