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


def test_pytest_counts_a_test_once_when_it_fails_and_errors_in_teardown(tmp_path, monkeypatch):
    # pytest's JUnit report has two entries for a test that fails and whose teardown errors
    # (torchinfo's output check is a teardown fixture); the harness counts the test once
    suite = tmp_path / "tests"
    suite.mkdir()
    report = tmp_path / ".report-torch.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="t" name="a"><failure message="x"/></testcase>'
        '<testcase classname="t" name="a"><error message="y"/></testcase>'
        '<testcase classname="t" name="b"/>'
        '<testcase classname="t" name="c"><skipped message="cuda"/></testcase>'
        "</testsuite></testsuites>"
    )

    class Done:
        stdout = stderr = ""

    monkeypatch.setattr(harness, "_run", lambda *a, **k: Done())
    lib = harness.Library("x", "x")
    assert harness._pytest(sys.executable, suite, lib, False, 60) == (1, 1, 1)


def test_in_package_suite_is_copied_into_the_installed_package(tmp_path, monkeypatch):
    # torchsummary's tests import themselves as torchsummary.tests.*: they run from inside
    # the venv's installed package, pytest starting in site-packages
    suite = tmp_path / "src"
    (suite / "unit").mkdir(parents=True)
    (suite / "unit" / "x_test.py").write_text("def test_x():\n    assert True\n")
    purelib = tmp_path / "site"
    (purelib / "pkg").mkdir(parents=True)

    class Out:
        stdout = f"{purelib}\n"

    monkeypatch.setattr(harness, "_run", lambda *a, **k: Out())
    lib = harness.Library("pkg", "pkg", in_package="pkg/tests")
    placed, cwd = harness._placed(sys.executable, suite, lib)
    assert (placed, cwd) == (purelib / "pkg" / "tests", purelib)
    assert (placed / "unit" / "x_test.py").exists()
