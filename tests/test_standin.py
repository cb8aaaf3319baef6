"""ember standing in for torch: ``python -m ember run``, ``install_as_torch``, the .pth hook.

Every check runs in a child interpreter, since installing the stand-in changes what ``torch``
means for the rest of a process. The ``.pth`` hook is exercised from a temporary user site
(``PYTHONUSERBASE``), which every grandchild inherits as it would inherit an installed ember.
``torch_absent`` adds a second ``.pth`` there that makes real torch unimportable, as on a
machine without it.
"""

import os
import pathlib
import shutil
import site
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PTH = ROOT / "ember-as-torch.pth"

_BLOCK_TORCH = (
    'import sys; exec("class _NoTorch:\\n'
    "    def find_spec(self, name, path=None, target=None):\\n"
    "        if name == 'torch' or name.startswith('torch.'):\\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\\n"
    'sys.meta_path.insert(0, _NoTorch())")\n'
)

pytestmark = pytest.mark.skipif(not site.ENABLE_USER_SITE, reason="needs a user site for .pth")


def _user_site(base: pathlib.Path) -> pathlib.Path:
    v = sys.version_info
    return base / "lib" / f"python{v.major}.{v.minor}" / "site-packages"


def _env(tmp_path, torch_absent: bool) -> dict:
    """Environment of a child interpreter: this worktree's ember, the hook in its user site."""
    user = _user_site(tmp_path / "userbase")
    user.mkdir(parents=True)
    shutil.copy(PTH, user / PTH.name)
    if torch_absent:
        (user / "aa-block-torch.pth").write_text(_BLOCK_TORCH)  # sorts before the hook
    e = dict(os.environ)
    e.pop("EMBER_AS_TORCH", None)
    e["PYTHONUSERBASE"] = str(tmp_path / "userbase")
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


@pytest.fixture
def env(tmp_path):
    """A machine without real torch (most checks: nothing can fall back on it there)."""
    return _env(tmp_path, torch_absent=True)


@pytest.fixture(params=["torch_installed", "torch_absent"])
def both_env(request, tmp_path):
    return _env(tmp_path, torch_absent=request.param == "torch_absent")


def _run(args, env, cwd, check=True):
    r = subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    if check:
        assert r.returncode == 0, r.stderr
    return r


def _script(tmp_path, body: str) -> str:
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_torch_absent_really_is(env, tmp_path):
    r = _run(["-c", "import torch"], env, cwd=tmp_path, check=False)
    assert r.returncode != 0 and "No module named 'torch'" in r.stderr


def test_run_script_resolves_torch_to_ember(both_env, tmp_path):
    env = both_env
    prog = _script(
        tmp_path,
        """
        import importlib.metadata, sys
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        import ember
        import ember.utils.data
        assert torch is ember and F is ember.nn.functional, torch
        assert DataLoader is ember.utils.data.DataLoader
        assert torch.nn.__spec__.name == "ember.nn"  # ember's spec kept on the shared module
        assert torch.__version__.startswith("2.13.0+") and torch.__version__ >= (2, 1)
        assert torch.version.ember == ember.version.ember_version
        assert importlib.metadata.version("torch") == str(torch.__version__)
        assert importlib.util.find_spec("torch.nn") is not None
        print("ARGV", sys.argv[1:], sys.path[0] == __file__.rsplit("/", 1)[0])
        """,
    )
    r = _run(["-m", "ember", "run", prog, "--lr", "0.1"], env, cwd=ROOT)
    assert "ARGV ['--lr', '0.1'] True" in r.stdout


def test_version_is_a_pep440_release_libraries_accept(env, tmp_path):
    pytest.importorskip("packaging")
    prog = _script(
        tmp_path,
        """
        from packaging.version import Version
        import torch
        v = Version(torch.__version__)
        assert v.release == (2, 13, 0) and v.local.startswith("ember"), v
        assert v >= Version("2.1") and v.base_version == "2.13.0"
        """,
    )
    _run(["-m", "ember", "run", prog], env, cwd=tmp_path)


def test_run_module(env, tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text(
        "import sys, torch\nprint(torch.__name__, __name__, sys.argv[1:])\n"
    )
    r = _run(["-m", "ember", "run", "-m", "pkg.main", "x"], env, cwd=tmp_path)
    assert r.stdout.split() == ["ember", "__main__", "['x']"]


def test_missing_torch_module_says_ember_lacks_it(env, tmp_path):
    prog = _script(
        tmp_path,
        """
        import torch
        try:
            import torch.no_such_module
        except ModuleNotFoundError as e:
            assert e.name == "torch.no_such_module"
            print(e)
        """,
    )
    r = _run(["-m", "ember", "run", prog], env, cwd=tmp_path)
    assert "No module named 'torch.no_such_module'" in r.stdout
    assert "ember" in r.stdout and "does not provide" in r.stdout


def test_usage_errors(env, tmp_path):
    r = _run(["-m", "ember"], env, cwd=tmp_path, check=False)
    assert r.returncode == 2 and "python -m ember run" in r.stderr
    r = _run(["-m", "ember", "run", str(tmp_path / "nope.py")], env, cwd=tmp_path, check=False)
    assert r.returncode == 2 and "can't open file" in r.stderr


def test_install_as_torch_in_program_and_children(both_env, tmp_path):
    env = both_env
    # the .pth hook gives every child the stand-in: a plain subprocess of sys.executable and a
    # DataLoader worker under spawn (which re-imports this script as __mp_main__)
    prog = _script(
        tmp_path,
        """
        import subprocess, sys
        import ember
        ember.install_as_torch()
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Probe(Dataset):
            def __len__(self):
                return 2
            def __getitem__(self, i):
                import sys
                return torch.tensor(int(sys.modules["torch"] is sys.modules["ember"]))

        if __name__ == "__main__":
            out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__name__)"],
                                 capture_output=True, text=True, check=True).stdout
            assert out.strip() == "ember", out
            loader = DataLoader(Probe(), batch_size=2, num_workers=1,
                                multiprocessing_context="spawn")
            (batch,) = list(loader)
            assert batch.tolist() == [1, 1], batch
            print("CHILDREN OK")
        """,
    )
    r = _run([prog], env, cwd=tmp_path)
    assert "CHILDREN OK" in r.stdout


def test_hook_inert_without_the_variable(env, tmp_path):
    code = "import sys; print(any('Alias' in type(f).__name__ for f in sys.meta_path))"
    assert _run(["-c", code], env, cwd=tmp_path).stdout.strip() == "False"
    on = dict(env, EMBER_AS_TORCH="1")
    assert _run(["-c", code], on, cwd=tmp_path).stdout.strip() == "True"
    # the hook itself imports no ember: that waits for `import torch`
    lazy = "import sys; print('ember' in sys.modules); import torch; print(torch.__name__)"
    assert _run(["-c", lazy], on, cwd=tmp_path).stdout.split() == ["False", "ember"]


def test_install_after_real_torch_is_a_clear_error(tmp_path):
    pytest.importorskip("torch")
    env = _env(tmp_path, torch_absent=False)
    code = (
        "import torch, ember\n"
        "try:\n    ember.install_as_torch()\n"
        "except RuntimeError as e:\n    print(e)\n"
    )
    r = _run(["-c", code], env, cwd=tmp_path)
    assert "must run before anything imports torch" in r.stdout


def test_distributed_run_ranks_inherit_the_stand_in(env, tmp_path):
    # python -m torch.distributed.run under the stand-in is ember's launcher, run as __main__;
    # its rank processes start afresh and get ember through the hook
    prog = _script(
        tmp_path,
        """
        import os, sys, torch
        # (one write per line: the two ranks share the pipe and may print at the same time)
        line = f"RANK {os.environ['RANK']} {sys.modules['torch'] is sys.modules['ember']}\\n"
        os.write(1, line.encode())
        """,
    )
    args = ["-m", "ember", "run", "-m", "torch.distributed.run", "--nproc-per-node", "2", prog]
    r = _run(args, env, cwd=tmp_path)
    assert sorted(line for line in r.stdout.splitlines() if line.startswith("RANK")) == [
        "RANK 0 True",
        "RANK 1 True",
    ]
