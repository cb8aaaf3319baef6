#!/usr/bin/env python
"""Run every benchmark workload, one subprocess each, and print one table of the results.

    python benchmarks/run.py                      # every benchmarks/bench_*.py, full runs
    python benchmarks/run.py --quick              # CI smoke: --quick is passed to each script
    python benchmarks/run.py --only nn,optim      # a subset (script names without bench_)
    python benchmarks/run.py --update-readme      # also rewrite README.md's Performance section
    python benchmarks/run.py --from-json benchmarks/results/latest.json --update-readme
    python benchmarks/run.py --contend 2 --only nn  # quiet vs 2 busy processes, 5 runs each
    python -m benchmarks ...                      # the same

The workloads are discovered by glob (``bench_*.py`` next to this file), so a new script joins
automatically. Each runs in its own Python process as ``bench_X.py [--quick] --json TMP``
(the benchmark contract: one JSON record per timed case, see ``_timing.bench_record``). The
records are collected into one table -- workload, case, ember / torch / NumPy medians, the ratios
ember/torch and ember/NumPy, the target and PASS/MISS -- and written with the date and machine
facts (CPU, cores, NumPy/torch versions, BLAS) to ``benchmarks/results/latest.json``. A script
that exits non-zero, times out or writes no records gets a FAILED row with the tail of its
output; the others carry on. Exit status: 1 if any script FAILED, else 0 (PASS/MISS never
affects it). ``--update-readme`` rewrites the part of README.md between ``<!-- perf:start -->``
and ``<!-- perf:end -->`` from the JSON, so that table is never edited by hand.

``--contend N`` measures behaviour on a busy machine: every selected script runs
``--contend-repeats`` times (default 5) quiet and as often with N busy processes started by the
runner beside it (pure-Python spin loops, each bounded in time by itself and killed when the run
ends), quiet and contended runs alternating. Per case and library it reports the median of the
scripts' medians over the quiet runs and over the contended runs with their spread (min-max),
the slowdown factor (contended median / quiet median) and the worst contended run over its
median, and writes them under ``"contention"`` in ``results/contend-N[-only-NAMES].json``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results" / "latest.json"
README = REPO / "README.md"
START, END = "<!-- perf:start -->", "<!-- perf:end -->"
FIELDS = ("workload", "case", "unit", "ember", "torch", "numpy", "target", "status")


@dataclass
class ScriptResult:
    """The outcome of one benchmark script: its records, or why it failed."""

    workload: str
    returncode: int | None  # None: timed out
    seconds: float
    records: list[dict] = field(default_factory=list)
    error: str | None = None  # set when the script FAILED: summary + the tail of its output
    summary: str | None = None  # one line: why it FAILED


def discover(bench_dir: Path = HERE) -> dict[str, Path]:
    """Return ``{workload: path}`` for every ``bench_*.py`` in ``bench_dir``, sorted by name."""
    return {p.stem.removeprefix("bench_"): p for p in sorted(bench_dir.glob("bench_*.py"))}


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _valid(record) -> bool:
    return isinstance(record, dict) and all(k in record for k in ("workload", "case", "ember"))


def run_script(
    workload: str, path: Path, *, quick: bool, timeout: float, echo: bool = False
) -> ScriptResult:
    """Run one benchmark script in a fresh Python process and collect its ``--json`` records."""
    with tempfile.TemporaryDirectory(prefix="ember-bench-") as tmp:
        out = Path(tmp) / "records.json"
        cmd = [sys.executable, str(path), "--json", str(out)] + (["--quick"] if quick else [])
        # Benchmark the working copy: the repository root goes first on the scripts' path.
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as e:
            text = e.stderr or e.stdout or ""
            if isinstance(text, bytes):
                text = text.decode(errors="replace")
            summary = f"timed out after {timeout:g} s"
            return ScriptResult(
                workload,
                None,
                time.perf_counter() - t0,
                error=f"{summary}\n{_tail(text, 10)}".strip(),
                summary=summary,
            )
        seconds = time.perf_counter() - t0
        if echo:
            print(proc.stdout, end="", flush=True)
            print(proc.stderr, end="", file=sys.stderr, flush=True)
        result = ScriptResult(workload, proc.returncode, seconds)
        try:
            data = json.loads(out.read_text()) if out.exists() else None
        except (OSError, ValueError) as e:
            data, result.error = None, f"unreadable --json output ({e})"
        if isinstance(data, list):
            result.records = [{k: r.get(k) for k in FIELDS} for r in data if _valid(r)]
    tail = _tail(proc.stderr, 10) or _tail(proc.stdout, 10)
    last_err = _tail(proc.stderr, 1)  # e.g. the exception line of a traceback
    if proc.returncode != 0:
        result.summary = f"exit status {proc.returncode}" + (f": {last_err}" if last_err else "")
    elif result.error is None and not result.records:
        result.summary = "no --json records written"
    elif result.error is not None:
        result.summary = result.error
    if result.summary is not None:
        result.error = f"{result.summary}\n{tail}".strip()
    return result


# ---------------------------------------------------------------------------------------------
# Machine facts
# ---------------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "?"


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _blas() -> dict:
    info: dict = {}
    try:
        import numpy as np

        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["numpy_build"] = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 -- unusual NumPy builds report differently
        info["numpy_build"] = "?"
    try:
        import threadpoolctl

        info["threadpools"] = [
            {k: d.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
            for d in threadpoolctl.threadpool_info()
            if d.get("user_api") == "blas"
        ]
    except ImportError:
        info["threadpools"] = None
    return info


def machine_facts() -> dict:
    """Return what a reader needs to judge the figures: CPU, cores, versions, BLAS, load."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": affinity,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "ember": _version("ember"),
        "blas": _blas(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


# ---------------------------------------------------------------------------------------------
# Table (terminal) and Markdown (README)
# ---------------------------------------------------------------------------------------------


def _num(v) -> str:
    if v is None:
        return "-"
    a = abs(v)
    return (
        f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}" if a >= 1 else f"{v:.3g}"
    )


def _ratio(a, b) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def rows(results: dict) -> list[list[str]]:
    """Return the table rows (strings) of a results dict: records, then FAILED scripts."""
    out = []
    for r in results["records"]:
        e, t, n = r.get("ember"), r.get("torch"), r.get("numpy")
        out.append(
            [
                r["workload"],
                str(r["case"]),
                r.get("unit") or "ms",
                _num(e),
                _num(t),
                _num(n),
                _ratio(e, t),
                _ratio(e, n),
                r.get("target") or "-",
                r.get("status") or "-",
            ]
        )
    for f in results["failed"]:
        summary = f.get("summary") or (f.get("error") or "?").splitlines()[0]
        out.append([f["workload"], summary[:90], "", "", "", "", "", "", "", "FAILED"])
    return out


HEADER = [
    "workload",
    "case",
    "unit",
    "ember",
    "torch",
    "NumPy",
    "ember/torch",
    "ember/NumPy",
    "target",
    "status",
]
RIGHT = {3, 4, 5, 6, 7}  # right-aligned numeric columns


def format_table(results: dict) -> str:
    """Return the plain-text table printed at the end of a run."""
    body = rows(results)
    widths = [max(len(row[i]) for row in [HEADER, *body]) for i in range(len(HEADER))]

    def line(row):
        cells = [
            c.rjust(w) if i in RIGHT else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ]
        return "  ".join(cells).rstrip()

    out = [line(HEADER), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in body]
    for f in results["failed"]:
        out += ["", f"FAILED {f['workload']}:", *("  " + s for s in f["error"].splitlines())]
    return "\n".join(out)


def describe_machine(m: dict) -> str:
    """Return a one-line description of the machine facts for the README."""
    cores = f"{m.get('cores')} cores"
    if m.get("usable_cores") and m["usable_cores"] != m.get("cores"):
        cores += f" ({m['usable_cores']} usable)"
    blas = m.get("blas") or {}
    pools = blas.get("threadpools") or []
    blas_txt = blas.get("numpy_build", "?")
    if pools:
        pools_txt = ", ".join(f"{p['internal_api']} {p['num_threads']} threads" for p in pools)
        blas_txt += f" ({pools_txt})"
    return (
        f"{m.get('cpu', '?')}, {cores}; Python {m.get('python')}, NumPy {m.get('numpy')} "
        f"with {blas_txt}, torch {m.get('torch') or 'not installed'}"
    )


def markdown(results: dict) -> str:
    """Return the README's Performance section body (between the markers) for ``results``."""
    m = results["machine"]
    command = "python benchmarks/run.py" + (" --quick" if results.get("quick") else "")
    smoke = " (a short smoke run: noisy figures)" if results.get("quick") else ""
    load = m.get("load_average")
    lines = [
        f"Measured {results['date']} by `{command}`{smoke} on "
        + describe_machine(m)
        + (f"; load average {load[0]:.2f} at the start." if load else "."),
        "Times are medians over the repeats (unit per row); the ratios divide ember's figure by "
        "torch's and NumPy's. Generated from `benchmarks/results/latest.json` by "
        "`python benchmarks/run.py --update-readme`: do not edit by hand. "
        "[benchmarks/README.md](benchmarks/README.md) explains each workload.",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---:" if i in RIGHT else "---" for i in range(len(HEADER))) + "|",
    ]
    for row in rows(results):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines)


def update_readme(readme: Path, results: dict) -> None:
    """Replace the text between the perf markers in ``readme`` with the table of ``results``."""
    text = readme.read_text()
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{readme}: no '{START}' ... '{END}' markers to rewrite between")
    new = text[: start + len(START)] + "\n" + markdown(results) + "\n" + text[end:]
    readme.write_text(new)


# ---------------------------------------------------------------------------------------------
# Contention mode (--contend N)
# ---------------------------------------------------------------------------------------------

# One busy process: a pure-Python spin loop that ends by itself after argv[1] seconds, so a
# runner that dies cannot leave it spinning for long.
BUSY = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "n = 0\n"
    "while time.monotonic() < end:\n"
    "    n += 1\n"
)


@contextlib.contextmanager
def busy_processes(n: int, seconds: float):
    """Start ``n`` busy processes (each ends by itself after ``seconds``); kill them on exit."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUSY, f"{seconds:g}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(n)
    ]
    try:
        yield procs
    finally:
        for p in procs:  # only the processes started here, by their handles
            p.kill()
        for p in procs:
            p.wait()


def _spread(values: list) -> dict:
    """Return median, min, max and the values themselves (None entries: failed runs)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0, "values": values}
    return {
        "median": statistics.median(vals),
        "min": min(vals),
        "max": max(vals),
        "n": len(vals),
        "values": values,
    }


_RATIO_TARGET = re.compile(r"ember/(torch|numpy) <= ([0-9.]+)$")


def _restatus(record: dict) -> dict:
    """Judge a ratio target again from the record's (median) figures."""
    m = _RATIO_TARGET.match(record.get("target") or "")
    if m:
        ember, ref = record.get("ember"), record.get(m.group(1))
        record["status"] = (
            None if ember is None or not ref else "PASS" if ember / ref <= float(m[2]) else "MISS"
        )
    return record


def summarize_contention(runs: list[dict]) -> tuple[list[dict], list[dict]]:
    """Fold the runs' records into (quiet median records, contention cases).

    ``runs`` are ``{"contended": bool, "records": [...]}``; a case's figure from a run that
    failed or lacks the case counts as missing (None) in its values.
    """
    keys: list[tuple] = []
    for run in runs:
        for r in run["records"]:
            if (r["workload"], r["case"]) not in keys:
                keys.append((r["workload"], r["case"]))
    records, cases = [], []
    for key in keys:
        found = [
            (
                run["contended"],
                next((r for r in run["records"] if (r["workload"], r["case"]) == key), None),
            )
            for run in runs
        ]
        first = next(r for _, r in found if r is not None)
        case = {"workload": key[0], "case": key[1], "unit": first.get("unit")}
        quiet_rec = dict(first)
        for lib in ("ember", "torch", "numpy"):
            quiet = _spread([r.get(lib) if r else None for c, r in found if not c])
            busy = _spread([r.get(lib) if r else None for c, r in found if c])
            quiet_rec[lib] = quiet["median"]
            if lib == "numpy":
                continue
            qm, bm = quiet["median"], busy["median"]
            case[lib] = {
                "quiet": quiet,
                "contended": busy,
                "slowdown": bm / qm if qm and bm is not None else None,
                "worst_over_median": busy["max"] / bm if bm else None,
            }
        records.append(_restatus(quiet_rec))
        cases.append(case)
    return records, cases


def run_contended(opts, scripts: dict[str, Path]) -> tuple[list, list, list, list]:
    """Run each script quiet and beside ``opts.contend`` busy processes, alternating."""
    n, repeats = opts.contend, opts.contend_repeats
    records, failed, scripts_run, cases = [], [], [], []
    for workload, path in scripts.items():
        runs = []
        for i in range(2 * repeats):
            contended = (i % 2 == 1) if (i // 2) % 2 == 0 else (i % 2 == 0)  # qc, cq, qc, ...
            label = f"contended x{n}" if contended else "quiet"
            print(f"[{workload}] run {i // 2 + 1}/{repeats} {label} ...", end="", flush=True)
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            if contended:
                with busy_processes(n, opts.timeout + 60):
                    time.sleep(0.2)  # let the busy processes start spinning
                    res = run_script(workload, path, quick=opts.quick, timeout=opts.timeout)
            else:
                res = run_script(workload, path, quick=opts.quick, timeout=opts.timeout)
            verdict = "FAILED" if res.error else "ok"
            print(f" {verdict} ({res.seconds:.1f} s, load {load:.2f})", flush=True)
            runs.append({"contended": contended, "records": res.records if not res.error else []})
            scripts_run.append(
                {
                    "workload": workload,
                    "contended": contended,
                    "seconds": round(res.seconds, 2),
                    "returncode": res.returncode,
                    "load_average": load,
                }
            )
            if res.error:
                failed.append({"workload": workload, "summary": res.summary, "error": res.error})
        if any(r["records"] for r in runs):
            recs, cs = summarize_contention(runs)
            records += recs
            cases += cs
    return records, failed, scripts_run, cases


def _fig(s: dict) -> str:
    if s["median"] is None:
        return "-"
    return f"{_num(s['median'])} [{_num(s['min'])}-{_num(s['max'])}]"


CONTEND_HEADER = [
    "workload",
    "case",
    "unit",
    "lib",
    "quiet median [min-max]",
    "contended median [min-max]",
    "slowdown",
    "worst/median",
]


def format_contention(contention: dict) -> str:
    """Return the contention table: per case and library, quiet vs contended figures."""
    body = []
    for c in contention["cases"]:
        for lib in ("ember", "torch"):
            d = c.get(lib)
            if not d or d["quiet"]["median"] is None:
                continue
            sd, wm = d["slowdown"], d["worst_over_median"]
            body.append(
                [
                    c["workload"],
                    str(c["case"]),
                    c.get("unit") or "ms",
                    lib,
                    _fig(d["quiet"]),
                    _fig(d["contended"]),
                    "-" if sd is None else f"{sd:.2f}x",
                    "-" if wm is None else f"{wm:.2f}x",
                ]
            )
    rows_ = [CONTEND_HEADER, *body]
    widths = [max(len(r[i]) for r in rows_) for i in range(len(CONTEND_HEADER))]
    right = {4, 5, 6, 7}

    def line(row):
        cells = [
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ]
        return "  ".join(cells).rstrip()

    head = (
        f"Contention: {contention['busy']} busy processes, {contention['repeats']} quiet and "
        f"{contention['repeats']} contended runs per script (alternating)"
    )
    return "\n".join(
        [head, line(CONTEND_HEADER), "  ".join("-" * w for w in widths)] + [line(r) for r in body]
    )


# ---------------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description="Run every benchmarks/bench_*.py in its own process; print one table; "
        "write benchmarks/results/latest.json.",
    )
    p.add_argument("--quick", action="store_true", help="pass --quick to every script (CI smoke)")
    p.add_argument("--only", metavar="LIST", help="comma-separated workloads, e.g. nn,optim")
    p.add_argument(
        "--out",
        type=Path,
        help="results JSON (default: results/latest.json; with --only, results/only-NAMES.json, "
        "so a partial run never replaces the full one)",
    )
    p.add_argument(
        "--update-readme", action="store_true", help="rewrite README.md's Performance section"
    )
    p.add_argument("--readme", type=Path, default=README, help="the README to rewrite")
    p.add_argument(
        "--from-json",
        type=Path,
        metavar="PATH",
        help="run nothing: load results from PATH (with --update-readme: just rewrite the README)",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per script (default 900)")
    p.add_argument(
        "--contend",
        type=int,
        metavar="N",
        help="also run every script beside N busy processes started by the runner; report quiet "
        "and contended medians, spread and slowdown (results/contend-N.json)",
    )
    p.add_argument(
        "--contend-repeats",
        type=int,
        default=5,
        metavar="R",
        help="with --contend: quiet and contended runs of each script (default 5)",
    )
    p.add_argument("--bench-dir", type=Path, default=HERE, help=argparse.SUPPRESS)
    p.add_argument("-v", "--verbose", action="store_true", help="show each script's own output")
    return p.parse_args(argv)


def run_all(opts) -> dict:
    """Run the selected scripts and return the results dict written to the JSON file."""
    scripts = discover(opts.bench_dir)
    if opts.only:
        wanted = [w.strip().removeprefix("bench_") for w in opts.only.split(",") if w.strip()]
        unknown = [w for w in wanted if w not in scripts]
        if unknown:
            raise SystemExit(f"--only: unknown workload(s) {unknown}; choose from {list(scripts)}")
        scripts = {w: scripts[w] for w in scripts if w in wanted}
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = machine_facts()
    contention = None
    if opts.contend:
        records, failed, scripts_run, cases = run_contended(opts, scripts)
        contention = {
            "busy": opts.contend,
            "repeats": opts.contend_repeats,
            "load_average_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "cases": cases,
        }
    else:
        records, failed, scripts_run = [], [], []
        for workload, path in scripts.items():
            print(f"[{workload}] {path.name} ...", end="" if not opts.verbose else "\n", flush=True)
            res = run_script(
                workload, path, quick=opts.quick, timeout=opts.timeout, echo=opts.verbose
            )
            verdict = "FAILED" if res.error else "ok"
            print(f" {verdict} ({res.seconds:.1f} s, {len(res.records)} records)", flush=True)
            records += res.records
            scripts_run.append(
                {
                    "workload": workload,
                    "seconds": round(res.seconds, 2),
                    "returncode": res.returncode,
                }
            )
            if res.error:
                failed.append({"workload": workload, "summary": res.summary, "error": res.error})
    result = {
        "date": date,
        "quick": opts.quick,
        "machine": machine,
        "scripts": scripts_run,
        "records": records,
        "failed": failed,
    }
    if contention is not None:
        result["contention"] = contention
    return result


def main(argv=None) -> int:
    opts = parse_args(argv)
    if opts.only and opts.update_readme:
        raise SystemExit("--update-readme needs a run of every workload: drop --only")
    if opts.contend is not None:
        if opts.contend < 1 or opts.contend_repeats < 1:
            raise SystemExit("--contend and --contend-repeats take a count >= 1")
        if opts.update_readme:
            raise SystemExit("--update-readme renders a quiet run: drop --contend")
    if opts.out is None:
        names = "-".join(w.strip() for w in (opts.only or "").split(",") if w.strip())
        stem = f"only-{names}" if names else "latest"
        if opts.contend:
            stem = f"contend-{opts.contend}" + (f"-only-{names}" if names else "")
        opts.out = RESULTS.with_name(f"{stem}.json")
    if opts.from_json is not None:
        results = json.loads(opts.from_json.read_text())
    else:
        results = run_all(opts)
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(results, indent=1) + "\n")
    print()
    print(f"{results['date']} | {describe_machine(results['machine'])}")
    print(format_table(results))
    if results.get("contention"):
        print()
        print(format_contention(results["contention"]))
    if opts.from_json is None:
        print(f"\nwrote {opts.out}")
    if opts.update_readme:
        update_readme(opts.readme, results)
        print(f"rewrote the Performance section of {opts.readme}")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
