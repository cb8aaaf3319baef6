"""ember's allocator settings (ember/_core/malloc.py): applied once on glibc, opt-out honoured."""

import os
import subprocess
import sys

import pytest

import ember  # noqa: F401  (importing ember applies the settings)
from ember._core import malloc

GLIBC = malloc._glibc() is not None


def _tuned_in_child(**env) -> str:
    code = "import ember; from ember._core import malloc; print(malloc._state['tuned'])"
    full = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    full.pop("EMBER_MALLOC_TUNE", None)
    full.update(env)
    out = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_import_tunes_glibc_once():
    assert _tuned_in_child() == "True"
    assert malloc.tune() is malloc._state["tuned"]


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
@pytest.mark.parametrize(
    "env", [{"EMBER_MALLOC_TUNE": "0"}, {"MALLOC_TRIM_THRESHOLD_": str(1 << 20)}]
)
def test_opt_out_and_user_settings_are_left_alone(env):
    assert _tuned_in_child(**env) == "False"
