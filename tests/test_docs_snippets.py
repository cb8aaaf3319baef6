"""Every ```python block of README.md and docs/guide/*.md runs.

The blocks of one file run in order, in one namespace (a later block may use what an earlier one
defined), in a fresh Python process whose working directory is a temporary folder (snippets may
write files). A block that must not run (a fragment, an illustration of an error) is marked
```python no-run; other languages (```bash, ```text, plain ```) are never run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs" / "guide").glob("*.md"))]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.M | re.S)

# Runs the blocks of one Markdown file, saying which block failed.
# The blocks run in the real __main__ module, so classes they define can be pickled.
DRIVER = """
def _run_blocks():
    import json, sys, traceback

    ns = vars(sys.modules["__main__"])
    for line, code in json.loads(sys.stdin.read()):
        try:
            exec(compile(code, f"{sys.argv[1]}:block@line{line}", "exec"), ns)
        except BaseException:
            print(f"block at line {line} failed:", file=sys.stderr)
            traceback.print_exc()
            sys.exit(1)


_run_blocks()
"""


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """Return ``(line, code, runs)`` for each ```python block of ``text``."""
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 2  # first line of code
        out.append((line, m.group(2), "no-run" not in m.group(1).split()))
    return out


def test_python_blocks_parser():
    text = "x\n```python\na = 1\n```\n```python no-run\nboom\n```\n```bash\nls\n```\n"
    assert python_blocks(text) == [(3, "a = 1\n", True), (6, "boom\n", False)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_snippets_run(doc, tmp_path):
    import json

    blocks = [(line, code) for line, code, runs in python_blocks(doc.read_text()) if runs]
    if not blocks:
        pytest.skip("no runnable python blocks")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, doc.name],
        input=json.dumps(blocks),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, f"{doc.name}: {proc.stderr[-3000:]}"
