"""``import ember`` stays cheap: subpackages and ml_dtypes load on first use (no timing here:
the figures live in benchmarks/bench_import.py), and everything stays reachable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("EMBER_AS_TORCH", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


LAZY = ("distributions", "distributed", "jit", "onnx", "fx", "sparse", "hub", "quasirandom")


def test_import_loads_neither_ml_dtypes_nor_lazy_subpackages():
    out = _run(
        "import sys, ember\n"
        f"print([m for m in ('ml_dtypes',) + tuple('ember.' + n for n in {LAZY!r})"
        " if m in sys.modules])\n"
        "print('ember.utils.tensorboard' in sys.modules, 'ember.profiler' in sys.modules)"
    )
    assert out.splitlines() == ["[]", "False False"]


def test_lazy_subpackages_and_names_resolve():
    out = _run(
        "import ember\n"
        "print(ember.distributions.Normal.__name__, ember.jit.trace.__name__)\n"
        "from ember import vmap, spmm, sparse_coo_tensor\n"
        "print(vmap is ember.vmap, ember.spmm is spmm, callable(sparse_coo_tensor))\n"
        "print(all(n in dir(ember) for n in ('distributions', 'vmap', 'fx')))\n"
        "import ember.utils\nprint(ember.utils.data.DataLoader.__name__)\n"
        "print(hasattr(ember, 'no_such_thing'), hasattr(ember.utils, 'no_such_thing'))"
    )
    assert out.splitlines() == [
        "Normal trace",
        "True True True",
        "True",
        "DataLoader",
        "False False",
    ]


def test_bfloat16_resolves_on_first_use():
    out = _run(
        "import sys, ember\n"
        "print(type(ember.bfloat16), ember.bfloat16, 'ml_dtypes' in sys.modules)\n"
        "t = ember.ones(2, dtype=ember.bfloat16)\n"
        "print(t.dtype is ember.bfloat16, type(ember.bfloat16) is ember.dtype,"
        " 'ml_dtypes' in sys.modules)"
    )
    assert out.splitlines() == ["<class 'ember.dtype'> torch.bfloat16 False", "True True True"]


def test_bfloat16_array_made_by_the_user():
    # the user imports ml_dtypes first: the first lookup of its dtype resolves ember's
    out = _run(
        "import ml_dtypes, numpy as np, ember\n"
        "t = ember.from_numpy(np.ones(3, ml_dtypes.bfloat16))\n"
        "print(t.dtype, ember.finfo(ember.bfloat16).eps)"
    )
    assert out == "torch.bfloat16 0.0078125"


def test_standin_imports_lazy_subpackages():
    out = _run(
        "import ember; ember.install_as_torch()\n"
        "import torch.distributions\nimport torch.utils.tensorboard\n"
        "from torch.distributions import Normal\nimport torch\n"
        "print(torch.distributions is ember.distributions, Normal.__module__)\n"
        "print(torch.utils.hooks.RemovableHandle.__module__)"
    )
    assert out.splitlines() == [  # (torch's module names under the stand-in)
        "True torch.distributions.normal",
        "torch.utils.hooks",
    ]


ALONE = LAZY + ("profiler", "func", "signal", "testing")

# One child imports ember, then forks once per subpackage: each fork imports that subpackage
# alone (as a fresh ``import ember.<name>`` would, ember itself being imported first) and
# reports ok or its traceback's last line. One interpreter start and one ember import in all.
_FORK_EACH = """
import os, sys, traceback
import ember
for name in sys.argv[1:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            __import__("ember." + name)
            msg = "ok"
        except BaseException:
            msg = traceback.format_exc().strip().splitlines()[-1]
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        print(name, f.read())
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def imported_alone() -> dict[str, str]:
    if not hasattr(os, "fork"):
        return {n: _run(f"import ember.{n}; print('ok')") for n in ALONE}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("EMBER_AS_TORCH", None)
    r = subprocess.run(
        [sys.executable, "-c", _FORK_EACH, *ALONE], env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    return dict(line.split(" ", 1) for line in r.stdout.splitlines())


@pytest.mark.parametrize("name", ALONE)
def test_each_lazy_subpackage_imports_alone(name, imported_alone):
    assert imported_alone[name] == "ok"


def test_lazy_names_survive_their_submodule_being_imported():
    out = _run(
        "import ember.autograd.gradcheck, ember.autograd.forward_ad\n"
        "import ember\n"
        "print(callable(ember.autograd.gradcheck), callable(ember.autograd.gradgradcheck))\n"
        "from ember.nn.parallel import DistributedDataParallel, distributed\n"
        "print(DistributedDataParallel is distributed.DistributedDataParallel)\n"
        "print(ember.nn.parallel.DistributedDataParallel.__name__)"
    )
    assert out.splitlines() == ["True True", "True", "DistributedDataParallel"]
