"""benchmarks/run.py: discovery, subprocess per script, FAILED rows, JSON, table, README rewrite.

Fake benchmark scripts in a temporary folder stand in for the real ones (which take minutes).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_ember_bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


run = _load("run")
timing = _load("_timing")

GOOD = """
import argparse, json
ap = argparse.ArgumentParser()
ap.add_argument("--quick", action="store_true")
ap.add_argument("--json")
a = ap.parse_args()
print("good: human table")
recs = [
    {"workload": "good", "case": "quick" if a.quick else "full", "unit": "ms", "ember": 4.0,
     "torch": 2.0, "numpy": 8.0, "target": "ember/torch <= 2.5", "status": "PASS"},
    {"workload": "good", "case": "a|b", "unit": "us/op", "ember": 30.0, "torch": None,
     "numpy": None, "target": None, "status": None},
]
json.dump(recs, open(a.json, "w"))
"""
BAD = """
import sys
print("bad: started")
print("some detail", file=sys.stderr)
raise RuntimeError("boom")
"""
SILENT = 'print("I ignore --json")\n'
SLOW = "import time\ntime.sleep(30)\n"
README = """# project

intro

## Performance

<!-- perf:start -->
old table
<!-- perf:end -->

## After
kept
"""


@pytest.fixture
def bench_dir(tmp_path):
    d = tmp_path / "benchmarks"
    d.mkdir()
    for name, src in (("good", GOOD), ("bad", BAD), ("silent", SILENT)):
        (d / f"bench_{name}.py").write_text(textwrap.dedent(src))
    (d / "_helper.py").write_text("raise SystemExit('not a workload')\n")
    (tmp_path / "README.md").write_text(README)
    return d


def _main(bench_dir, *args):
    out = bench_dir.parent / "latest.json"
    base = ["--bench-dir", str(bench_dir), "--out", str(out), "--readme"]
    return run.main([*base, str(bench_dir.parent / "README.md"), *args]), out


def test_discover_globs_bench_scripts(bench_dir):
    assert list(run.discover(bench_dir)) == ["bad", "good", "silent"]
    real = run.discover()
    assert {"foundation", "ops", "nn", "optim", "dataloader"} <= set(real)


def test_full_run_json_table_and_failures(bench_dir, capsys):
    rc, out = _main(bench_dir, "--quick")
    assert rc == 1  # two scripts failed
    results = json.loads(out.read_text())
    assert set(results) == {"date", "quick", "machine", "scripts", "records", "failed"}
    assert results["quick"] is True
    m = results["machine"]
    assert m["cores"] >= 1 and m["numpy"] and "numpy_build" in m["blas"] and m["cpu"]
    # --quick reached the script; records are kept as written, in the contract's fields
    assert [r["case"] for r in results["records"]] == ["quick", "a|b"]
    assert results["records"][0] == {
        "workload": "good",
        "case": "quick",
        "unit": "ms",
        "ember": 4.0,
        "torch": 2.0,
        "numpy": 8.0,
        "target": "ember/torch <= 2.5",
        "status": "PASS",
    }
    failed = {f["workload"]: f for f in results["failed"]}
    assert set(failed) == {"bad", "silent"}
    assert failed["bad"]["summary"] == "exit status 1: RuntimeError: boom"
    assert "some detail" in failed["bad"]["error"]  # the stderr tail
    assert failed["silent"]["summary"] == "no --json records written"
    assert "I ignore --json" in failed["silent"]["error"]  # stdout tail when stderr is empty
    assert [s["workload"] for s in results["scripts"]] == ["bad", "good", "silent"]

    text = capsys.readouterr().out
    table = text[text.index("workload") :]
    good = next(line for line in table.splitlines() if line.startswith("good") and "quick" in line)
    assert good.split() == [
        "good",
        "quick",
        "ms",
        "4.00",
        "2.00",
        "8.00",
        "2.00x",
        "0.50x",
        "ember/torch",
        "<=",
        "2.5",
        "PASS",
    ]
    assert "exit status 1: RuntimeError: boom" in table and "FAILED bad:" in table
    assert "no --json records written" in table


def test_only_and_unknown_workload(bench_dir):
    rc, out = _main(bench_dir, "--only", "good")
    assert rc == 0
    results = json.loads(out.read_text())
    assert results["quick"] is False and results["failed"] == []
    assert [r["case"] for r in results["records"]] == ["full", "a|b"]
    with pytest.raises(SystemExit, match="unknown workload"):
        _main(bench_dir, "--only", "good,nope")


def test_timeout_is_a_failed_row(bench_dir):
    (bench_dir / "bench_slow.py").write_text(SLOW)
    rc, out = _main(bench_dir, "--only", "slow", "--timeout", "0.5")
    assert rc == 1
    (failed,) = json.loads(out.read_text())["failed"]
    assert failed["summary"] == "timed out after 0.5 s"


def test_update_readme_between_markers(bench_dir, capsys):
    readme = bench_dir.parent / "README.md"
    rc, out = _main(bench_dir, "--quick", "--update-readme")
    assert rc == 1
    text = readme.read_text()
    before, rest = text.split("<!-- perf:start -->\n")
    section, after = rest.split("<!-- perf:end -->")
    assert before == README.split("<!-- perf:start -->")[0]
    assert after == README.split("<!-- perf:end -->")[1]
    assert "old table" not in section
    results = json.loads(out.read_text())
    assert (
        results["date"] in section
        and "`python benchmarks/run.py --quick` (a short smoke" in section
    )
    assert "| workload | case | unit | ember | torch | NumPy |" in section
    assert (
        "| good | quick | ms | 4.00 | 2.00 | 8.00 | 2.00x | 0.50x | ember/torch <= 2.5 | PASS |"
        in (section)
    )
    assert "| good | a\\|b | us/op | 30.0 | - | - | - | - | - | - |" in section  # pipes escaped
    assert "| bad | exit status 1: RuntimeError: boom |" in section
    # --from-json re-renders the same section without running anything
    readme.write_text(README)
    rc = run.main(["--from-json", str(out), "--update-readme", "--readme", str(readme)])
    assert rc == 1 and readme.read_text() == text


def test_update_readme_needs_markers(tmp_path, bench_dir):
    rc, out = _main(bench_dir, "--only", "good")
    readme = tmp_path / "NOMARK.md"
    readme.write_text("# no markers\n")
    with pytest.raises(SystemExit, match="markers"):
        run.main(["--from-json", str(out), "--update-readme", "--readme", str(readme)])


def test_bench_record_status():
    rec = timing.bench_record("ops", "arith", 1.3, 1.0, 1.0, target=("numpy", 1.2))
    assert rec["target"] == "ember/numpy <= 1.2" and rec["status"] == "MISS"
    assert timing.bench_record("ops", "x", 1.0, 1.0, target=("torch", 1.0))["status"] == "PASS"
    assert timing.bench_record("ops", "x", None, 1.0, target=("torch", 1.0))["status"] is None
    assert timing.bench_record("ops", "x", 1.0, target=("torch", 1.0))["status"] is None
    free = timing.bench_record(
        "s", "mmap", 3.0, float("nan"), target="ember < 50 ms", status="PASS"
    )
    assert free["torch"] is None and free["status"] == "PASS" and free["target"] == "ember < 50 ms"
    assert list(free) == list(run.FIELDS)


@pytest.mark.parametrize("workload", sorted(run.discover()))
def test_real_scripts_follow_the_contract(workload):
    # static: the real scripts take minutes, so only their declarations are checked here
    src = run.discover()[workload].read_text()
    assert "def main(argv=None) -> int:" in src
    assert '"--json"' in src and '"--quick"' in src


def test_only_run_never_replaces_the_full_results(bench_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(run, "RESULTS", tmp_path / "results" / "latest.json")
    assert run.main(["--bench-dir", str(bench_dir), "--only", "good"]) == 0
    assert (tmp_path / "results" / "only-good.json").exists()
    assert not (tmp_path / "results" / "latest.json").exists()
    with pytest.raises(SystemExit, match="drop --only"):
        run.main(["--bench-dir", str(bench_dir), "--only", "good", "--update-readme"])


# A fake workload that counts the runner's busy processes (its siblings running run.BUSY):
# ember = 1 + that count, torch = 1, so quiet runs report 1 and contended ones 1 + N.
COUNTING = """
import argparse, json, os
ap = argparse.ArgumentParser()
ap.add_argument("--quick", action="store_true")
ap.add_argument("--json")
a = ap.parse_args()
busy = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
        ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        continue
    if ppid == os.getppid() and "time.monotonic() < end" in cmd:
        busy += 1
json.dump([{"workload": "count", "case": "c", "unit": "ms", "ember": 1.0 + busy, "torch": 1.0,
            "numpy": None, "target": "ember/torch <= 1.5", "status": None}], open(a.json, "w"))
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_contend_runs_quiet_and_busy_alternately(bench_dir, capsys):
    (bench_dir / "bench_count.py").write_text(textwrap.dedent(COUNTING))
    rc, out = _main(bench_dir, "--only", "count", "--contend", "2", "--contend-repeats", "2")
    assert rc == 0
    results = json.loads(out.read_text())
    runs = results["scripts"]
    assert [r["contended"] for r in runs] == [False, True, True, False]
    assert all(r["load_average"] is not None for r in runs)
    con = results["contention"]
    assert con["busy"] == 2 and con["repeats"] == 2
    (case,) = con["cases"]
    e, t = case["ember"], case["torch"]
    assert e["quiet"]["values"] == [1.0, 1.0] and e["contended"]["values"] == [3.0, 3.0]
    assert e["slowdown"] == 3.0 and e["worst_over_median"] == 1.0
    assert t["slowdown"] == 1.0
    # the main table holds the quiet medians, with the ratio target judged again
    (rec,) = results["records"]
    assert rec["ember"] == 1.0 and rec["status"] == "PASS"
    text = capsys.readouterr().out
    assert "Contention: 2 busy processes" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("count") and " ember " in ln)
    assert line.split()[3:] == [
        "ember",
        "1.00",
        "[1.00-1.00]",
        "3.00",
        "[3.00-3.00]",
        "3.00x",
        "1.00x",
    ]
    # no busy process outlives the run
    time.sleep(0.1)
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _is_busy_child(p)]


def _is_busy_child(p: Path) -> bool:
    import os

    try:
        cmd = (p / "cmdline").read_bytes().decode(errors="replace")
        ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return ppid == os.getpid() and "time.monotonic() < end" in cmd


def test_busy_process_ends_by_itself():
    with run.busy_processes(1, 0.2) as (proc,):
        assert proc.wait(timeout=10) == 0  # bounded in time even if nobody kills it


def test_summarize_contention_spread_and_missing_runs():
    def rec(e, t):
        return {
            "workload": "w",
            "case": "c",
            "unit": "ms",
            "ember": e,
            "torch": t,
            "numpy": None,
            "target": "ember/torch <= 1.1",
            "status": None,
        }

    runs = [
        {"contended": False, "records": [rec(1.0, 1.0)]},
        {"contended": True, "records": [rec(2.0, 3.0)]},
        {"contended": True, "records": []},  # a failed run
        {"contended": False, "records": [rec(1.4, 1.0)]},
        {"contended": True, "records": [rec(6.0, 3.0)]},
        {"contended": False, "records": [rec(1.2, 1.2)]},
    ]
    (quiet,), (case,) = run.summarize_contention(runs)
    assert quiet["ember"] == 1.2 and quiet["torch"] == 1.0 and quiet["status"] == "MISS"
    e = case["ember"]
    assert e["quiet"] == {"median": 1.2, "min": 1.0, "max": 1.4, "n": 3, "values": [1.0, 1.4, 1.2]}
    assert e["contended"]["values"] == [2.0, None, 6.0] and e["contended"]["n"] == 2
    assert e["slowdown"] == pytest.approx(4.0 / 1.2) and e["worst_over_median"] == 1.5
    assert case["torch"]["slowdown"] == 3.0


def test_contend_refuses_readme_and_bad_counts(bench_dir):
    with pytest.raises(SystemExit, match="drop --contend"):
        _main(bench_dir, "--contend", "2", "--update-readme")
    with pytest.raises(SystemExit, match=">= 1"):
        _main(bench_dir, "--contend", "0")
