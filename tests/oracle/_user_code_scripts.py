"""Run the tutorial-style scripts of ``tests/oracle/user_code_scripts/`` through torch and
ember (``import torch`` in them imports ember in the ember run) and compare what they print.

The scripts are written as PyTorch's tutorials write them, downloads replaced by generated
data; ``_common.py`` gives them deterministic weights (``det_init``) and data (``det_data``), so
that values, not only shapes, compare. ``__TMP__`` in a script is a fresh directory.
"""

from __future__ import annotations

from pathlib import Path

import ember
from tests.oracle._user_code import run_snippet
from tests.oracle.helper import torch
from tests.printed import assert_same_printed

SCRIPTS = Path(__file__).parent / "user_code_scripts"


def script_source(name: str, tmp: Path) -> str:
    """Return the script ``name`` with its helper module inlined and ``__TMP__`` set."""
    common = (SCRIPTS / "_common.py").read_text()
    src = (SCRIPTS / f"{name}.py").read_text()
    src = src.replace(
        "from _common import det_init, det_data\n", common.replace("import torch\n", "")
    )
    return f"__TMP__ = {str(tmp)!r}\n" + src


def check_script(name: str, tmp: Path) -> None:
    """Assert that script ``name`` prints the same under torch and ember (floats within
    rounding: ``tests/printed.py``)."""
    (tmp / "torch").mkdir()
    (tmp / "ember").mkdir()
    want = run_snippet(torch, script_source(name, tmp / "torch"))
    got = run_snippet(ember, script_source(name, tmp / "ember"))
    assert_same_printed(got, want)
