"""The op table command and the members the declarations publish.

``python -m ember._ops.table`` prints every declared op (name, grad_fn, saves, published
members, where declared); ``--hand`` lists the public names still wired by hand. Each member a
declaration publishes must exist in torch under the same name (differential check).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember
from ember._core.tensor import Tensor
from ember._ops import registry, table
from ember._ops.registry import MEMBERS, OPS

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "ember._ops.table", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def test_table_command_prints_every_op():
    done = _run()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["name", "grad_fn", "saves", "declared"]
    # every op declared at import (ops made on first use, einsum's per operand count, come on
    # top in a process that used them)
    assert 450 < len(lines) - 1 <= len(table.rows())
    addmm = [ln for ln in lines if ln.startswith("addmm ")]
    assert addmm and "mat1,mat2" in addmm[0] and "ember/_ops/linalg.py:" in addmm[0]
    mul = [ln for ln in lines if ln.startswith("mul ") and "Tensor.__mul__" in ln]
    assert mul and "ember.mul" in mul[0] and "Tensor.mul_" in mul[0]
    # an in-place copy names its base
    assert any(ln.startswith("mul ") and "<- mul" in ln for ln in lines)


def test_table_grep_and_hand(capsys):
    # in this process (the command itself runs in a fresh one above)
    assert table.main(["--grep", "AddmmBackward0"]) == 0
    head, *found = capsys.readouterr().out.splitlines()
    # addmm, and in a process that used sparse ops (declared on first use) their addmm too
    assert head.split()[0] == "name" and found[0].split()[0] == "addmm"
    assert all("AddmmBackward0" in row for row in found)
    assert table.main(["--hand"]) == 0
    hand = set(capsys.readouterr().out.split())
    assert "Tensor.mul" not in hand and "ember.add" not in hand
    assert hand == set(table.hand_wired())
    # every public function and method goes through ``publish`` (or is defined in ``class
    # Tensor``'s body, as register_post_accumulate_grad_hook): nothing is wired by hand
    assert hand == set()
    assert not hasattr(registry, "expose")  # one way to publish


def test_declared_at_points_at_the_declaration():
    for o in OPS:
        path, _, line = table._where(o.where).rpartition(":")
        if path.startswith("ember/"):
            src = (ROOT / path).read_text().splitlines()
            assert 1 <= int(line) <= len(src)


def test_members_are_set():
    for qualname, (op_, _, _declared) in MEMBERS.items():
        owner, _, name = qualname.partition(".")
        if owner == "Tensor":
            assert name in vars(Tensor), qualname
        else:
            assert name in ember._ops.API, qualname
        if op_ is not None:
            assert qualname in op_.members


def test_published_members_exist_in_torch():
    torch = pytest.importorskip("torch")
    declared = [k for k, (_, _, d) in MEMBERS.items() if d]
    assert len(declared) > 100
    for qualname in declared:
        owner, _, name = qualname.partition(".")
        if owner == "Tensor":
            assert hasattr(torch.Tensor, name), qualname
        else:
            assert hasattr(torch, name), qualname
            assert getattr(ember, name) is not None
