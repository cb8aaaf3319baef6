"""Run third-party PyTorch libraries on ember, each in a throwaway venv without torch.

    python tests/ecosystem/run_ecosystem.py [--only einops,torchinfo] [--write]
        [--suite LIB=DIR] [--workdir DIR] [--timeout SECONDS]

For each library: a venv without torch gets the library (``pip install --no-deps``, so its
``torch`` requirement pulls nothing), its other dependencies, numpy/ml_dtypes/pytest and this
checkout of ember (``pip install -e . --no-deps``, which also installs the ember-as-torch.pth
hook). Then, under ``python -m ember run``:

- the library's own test suite, where its sdist (or wheel) ships one, or where ``--suite``
  points at a checkout's test folder: ``python -m ember run -m pytest SUITE``. A folder
  written from the library's repository holds a ``SOURCE`` file naming where each file came
  from; the table then says "repository's tests". Per library: ``suite_deps`` (what those
  tests import), ``in_package`` (tests that import themselves through the installed package
  run from inside it) and ``regen`` (options with which a first run on real torch writes the
  expected outputs the suite compares with);
- the smoke check ``smoke/<lib>_smoke.py`` (the library's README example, with assertions).

The baseline is the same suite and check with real torch, in a second venv that sees this
interpreter's site-packages (torch 2.13 there). It prints ``library: passed/total (torch:
passed/total)`` and, with ``--write``, puts the table into README.md and
docs/guide/ecosystem.md between the ``ecosystem-table`` markers.

Not part of the default test run: it downloads packages and takes minutes
(tests/test_standin_ecosystem.py runs the smoke checks of the libraries installed).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
BASE = ["numpy>=2", "ml_dtypes", "pytest", "packaging"]
START, END = "<!-- ecosystem-table:start -->", "<!-- ecosystem-table:end -->"


@dataclasses.dataclass
class Library:
    name: str  # the PyPI name
    smoke: str  # smoke/<smoke>_smoke.py
    deps: tuple = ()  # its dependencies other than torch (installed normally)
    no_deps: tuple = ()  # more torch-dependent packages it needs, installed --no-deps
    suite: str | None = None  # the tests' folder inside its sdist, when it ships them
    pytest_args: tuple = ()
    env: tuple = ()  # (NAME, value) pairs its suite needs
    # a suite from its repository (``--suite LIB=DIR``, DIR written from the repository):
    suite_deps: tuple = ()  # what those tests import besides the library
    # where the tests live inside the installed package when they import themselves through
    # it (``from torchsummary.tests... import``): DIR is copied there in each venv
    in_package: str | None = None
    # pytest options with which a first run on real torch writes the suite's expected outputs
    # (the repository's stored ones are of mixed library versions): ember is then compared
    # with what torch prints for the installed version
    regen: tuple = ()


LIBRARIES = [
    # its sdist needs a Rust toolchain and ships no tests for torch: the README example only
    Library("safetensors", "safetensors"),
    # its tests pick the frameworks to test from an environment variable
    Library("einops", "einops", suite="einops/tests", env=(("EINOPS_TEST_BACKENDS", "torch"),)),
    # no sdist tests: run from a repository checkout with --suite (docs/guide/ecosystem.md)
    Library("torchinfo", "torchinfo", regen=("--overwrite",)),
    Library("thop", "thop", suite_deps=("jinja2",)),  # test_conv2d.py imports jinja2
    Library("torchsummary", "torchsummary", in_package="torchsummary/tests"),
    Library("torchviz", "torchviz", deps=("graphviz",), suite="test/test.py"),
    Library("ptflops", "ptflops"),
    Library(
        "skorch",
        "skorch",
        deps=(
            *("scikit-learn", "scipy", "tabulate", "tqdm", "pandas", "flaky"),
            # its save/load, TensorBoard callback and doctor (plots) tests
            *("safetensors", "tensorboard", "matplotlib"),
        ),
        suite="skorch/tests",
        # its Hugging Face and LLM tests need transformers/tokenizers and the network
        pytest_args=(
            "--ignore=tests/test_hf.py",
            "--ignore=tests/llm",
            "--continue-on-collection-errors",
            "-k",
            "not cuda",
        ),
    ),
    Library(
        "pytorch-lightning",
        "lightning",
        deps=(
            *("lightning-utilities", "fsspec", "pyyaml", "tqdm", "typing-extensions"),
            # its test suite: the TensorBoard logger, cloudpickle'd checkpoints, pandas'd CSVs
            *("tensorboard", "cloudpickle", "pandas", "psutil", "scikit-learn", "jsonargparse"),
            *("aiohttp", "requests"),  # fsspec's http:// (checkpoints from a loopback server)
        ),
        # `lightning` is the same code under `lightning.pytorch`/`lightning.fabric`, the names
        # its repository's tests import (its sdists ship no tests: --suite gives a checkout's)
        no_deps=("torchmetrics", "lightning"),
    ),
]


def _run(cmd, timeout=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def _venv(path: pathlib.Path, with_torch: bool, lib: Library) -> pathlib.Path:
    """A venv for ``lib``; with_torch: it sees this interpreter's site-packages (real torch)."""
    python = path / "bin" / "python"
    if python.exists():
        return python
    cmd = [sys.executable, "-m", "venv", str(path)]
    if with_torch:
        cmd.insert(3, "--system-site-packages")
    subprocess.run(cmd, check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *BASE, *lib.deps, *lib.suite_deps], check=True)
    subprocess.run([*pip, "--no-deps", lib.name, *lib.no_deps], check=True)
    if not with_torch:
        subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
    return python


def _suite(lib: Library, workdir: pathlib.Path, override: dict) -> pathlib.Path | None:
    """The library's test folder: --suite's, else the one its sdist or wheel ships."""
    if lib.name in override:
        return pathlib.Path(override[lib.name]).resolve()
    if lib.suite is None:
        return None
    dest = workdir / "src" / lib.name
    if not dest.exists():
        dl = workdir / "dl" / lib.name
        r = _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                lib.name,
                "-d",
                str(dl),
            ]
        )
        if r.returncode != 0:
            _run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    lib.name,
                    "-d",
                    str(dl),
                ]
            )
        (archive,) = list(dl.iterdir())
        dest.mkdir(parents=True)
        if archive.suffix == ".whl":
            zipfile.ZipFile(archive).extractall(dest)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(dest, filter="data")
            (top,) = list(dest.iterdir())
            for item in top.iterdir():
                item.rename(dest / item.name)
            top.rmdir()
    folder = dest / lib.suite
    return folder if folder.exists() else None


def _placed(python, suite: pathlib.Path, lib: Library) -> tuple[pathlib.Path, pathlib.Path]:
    """(the suite where it runs, the folder pytest starts in).

    As a checkout has it: pytest starts in the suite's parent (the repository's root, so
    ``tests/...`` paths resolve), or for ``in_package`` the suite is copied into the venv's
    installed package and pytest starts in site-packages (the package, not a same-named
    module beside the tests, is what ``import torchsummary`` finds).
    """
    if lib.in_package is None:
        return suite, suite.parent
    r = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    purelib = pathlib.Path(r.stdout.strip())
    dest = purelib / lib.in_package
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(suite, dest)
    return dest, purelib


def _pytest(python, suite: pathlib.Path, lib: Library, ember: bool, timeout: int, extra=()):
    """(passed, failed+errors, skipped) of the suite, from its JUnit XML report."""
    suite, cwd = _placed(python, suite, lib)
    report = cwd / f".report-{'ember' if ember else 'torch'}.xml"
    runner = ["-m", "ember", "run", "-m", "pytest"] if ember else ["-m", "pytest"]
    cmd = [
        str(python),
        *runner,
        str(suite),
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={report}",
        "-o",
        "addopts=",  # a suite's own options may name plugins (coverage) not installed here
        *lib.pytest_args,
        *extra,
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EMBER_AS_TORCH")}
    env.update(lib.env)
    try:
        r = _run(cmd, timeout=timeout, cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        return None
    report.with_suffix(".log").write_text(r.stdout + r.stderr)
    if not report.exists():
        print(f"  {lib.name}: no report; pytest said:\n{r.stdout[-2000:]}", file=sys.stderr)
        return None
    # a test that fails and then errors in teardown has two entries: it counts once, failed
    outcome: dict = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        kind = (
            "failed"
            if tags & {"failure", "error"}
            else ("skipped" if "skipped" in tags else "passed")
        )
        key = (case.get("classname"), case.get("name"))
        if outcome.get(key) != "failed":
            outcome[key] = kind
    kinds = list(outcome.values())
    return kinds.count("passed"), kinds.count("failed"), kinds.count("skipped")


def _smoke(python, lib: Library, ember: bool) -> bool:
    script = HERE / "smoke" / f"{lib.smoke}_smoke.py"
    runner = ["-m", "ember", "run"] if ember else []
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EMBER_AS_TORCH")}
    r = _run([str(python), *runner, str(script)], timeout=600, cwd=script.parent, env=env)
    if r.returncode != 0:
        print(
            f"  {lib.name} smoke ({'ember' if ember else 'torch'}) failed:\n"
            + "\n".join(r.stderr.strip().splitlines()[-6:]),
            file=sys.stderr,
        )
    return r.returncode == 0


def _fmt(result) -> str:
    if result is None:
        return "did not finish"
    passed, failed, skipped = result
    note = f", {skipped} skipped" if skipped else ""
    return f"{passed}/{passed + failed}{note}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated PyPI names")
    ap.add_argument("--write", action="store_true", help="update README.md and the guide")
    ap.add_argument("--suite", action="append", default=[], help="LIB=DIR: a test folder")
    ap.add_argument("--workdir", help="keep venvs and sources here (default: a temp dir)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per suite run")
    ap.add_argument("--no-torch", action="store_true", help="skip the real-torch baseline")
    args = ap.parse_args(argv)
    override = dict(s.split("=", 1) for s in args.suite)
    wanted = set(args.only.split(",")) if args.only else None
    libs = [lib for lib in LIBRARIES if wanted is None or lib.name in wanted]
    workdir = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ember-eco-"))
    has_torch = not args.no_torch and _run([sys.executable, "-c", "import torch"]).returncode == 0
    rows = []
    for lib in libs:
        print(f"== {lib.name}", file=sys.stderr)
        ember_py = _venv(workdir / "venv" / lib.name / "ember", False, lib)
        torch_py = _venv(workdir / "venv" / lib.name / "torch", True, lib) if has_torch else None
        suite = _suite(lib, workdir, override)
        row = {"name": lib.name, "suite": "not shipped", "torch_suite": "-"}
        if suite is not None:
            # a repository's tests say so in the table: SOURCE in DIR names repository/commit
            tag = " (repository's tests" if (suite / "SOURCE").exists() else ""
            if tag and lib.regen and torch_py is not None:
                _pytest(torch_py, suite, lib, False, args.timeout, extra=lib.regen)
                tag += "; expected outputs printed by torch"
            tag += ")" if tag else ""
            row["suite"] = _fmt(_pytest(ember_py, suite, lib, True, args.timeout)) + tag
            if torch_py is not None:
                row["torch_suite"] = _fmt(_pytest(torch_py, suite, lib, False, args.timeout))
        row["smoke"] = "ok" if _smoke(ember_py, lib, True) else "FAIL"
        row["torch_smoke"] = (
            "-" if torch_py is None else ("ok" if _smoke(torch_py, lib, False) else "FAIL")
        )
        print(
            f"{lib.name}: {row['suite']} (torch: {row['torch_suite']}); "
            f"README example: {row['smoke']} (torch: {row['torch_smoke']})"
        )
        rows.append(row)
    if args.write:
        _write(rows)
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _row(r: dict) -> str:
    return (
        f"| {r['name']} | {r['suite']} | {r['torch_suite']} | {r['smoke']} | {r['torch_smoke']} |"
    )


def _write(rows) -> None:
    """Put the table between the markers; libraries not in this run keep their old rows."""
    header = [
        "| library | its test suite on ember | on torch 2.13 | README example on ember "
        "| on torch |",
        "| --- | --- | --- | --- | --- |",
    ]
    fresh = {r["name"]: _row(r) for r in rows}
    for path in (ROOT / "README.md", ROOT / "docs" / "guide" / "ecosystem.md"):
        text = path.read_text()
        if START not in text:
            continue
        start, end = text.index(START) + len(START), text.index(END)
        old = text[start:end]
        kept = {}
        for line in old.strip().splitlines()[2:]:
            name = line.strip("| ").split(" |")[0]
            kept[name] = line
        order = [lib.name for lib in LIBRARIES]
        merged = {**kept, **fresh}
        body = [merged[n] for n in order if n in merged]
        table = "\n".join(header + body)
        path.write_text(text[:start] + f"\n{table}\n" + text[end:])  # (old may be empty)


if __name__ == "__main__":
    raise SystemExit(main())
