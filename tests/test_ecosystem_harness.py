"""tests/ecosystem/run_ecosystem.py's table writer (the harness itself downloads packages and
is not part of this run)."""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "run_ecosystem", ROOT / "tests/ecosystem/run_ecosystem.py"
)
harness = importlib.util.module_from_spec(spec)
sys.modules.setdefault("run_ecosystem", harness)  # its dataclasses look their module up
spec.loader.exec_module(harness)


def test_write_fills_empty_markers_once_and_keeps_other_rows(tmp_path, monkeypatch):
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "docs" / "guide" / "ecosystem.md").write_text("no table here\n")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{harness.START}\n{harness.END}\noutro\n")
    monkeypatch.setattr(harness, "ROOT", tmp_path)
    row = {"name": "einops", "suite": "60/61", "torch_suite": "61/61", "smoke": "ok"}
    harness._write([{**row, "torch_smoke": "ok"}])
    text = readme.read_text()
    assert text.count("| einops |") == 1 and text.startswith("intro\n") and text.endswith("outro\n")
    harness._write([{**row, "name": "torchviz", "suite": "3/3", "torch_suite": "3/3",
                     "torch_smoke": "ok"}])  # fmt: skip
    text = readme.read_text()
    assert text.count("| einops |") == 1 and text.count("| torchviz |") == 1
    assert text.index("| einops |") < text.index("| torchviz |")  # the harness's order
