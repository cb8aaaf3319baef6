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


_NET = """
import torch
import torch.nn.functional as F


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return F.relu(self.fc(x)).sum(1)
"""

_TORCH_PICKLES = """
import io, pickle, sys
import torch
import torch.nn.functional as F
import ember
from standin_net import Net

d = pickle.load(open("from_torch.pkl", "rb"))  # written by real torch
assert type(d["x"]) is ember.Tensor and type(d["p"]) is ember.nn.Parameter, d
print("LOADED", d["x"].tolist(), d["v"].stride(), d["v"].storage_offset(), d["h"].dtype,
      d["p"].requires_grad, d["t2"].tag, d["i"].tolist())
x = torch.arange(12.0).reshape(3, 4)
t2 = torch.ones(2)
t2.tag = "b"
out = {"x": x, "v": x.t()[1:], "p": torch.nn.Parameter(torch.full((2,), 3.0)), "t2": t2,
       "h": torch.ones(3, dtype=torch.float16), "fn": F.relu, "size": x.shape,
       "dtype": torch.bfloat16, "i": torch.arange(3)}
open("to_torch.pkl", "wb").write(pickle.dumps(out))

class Intercept(pickle.Unpickler):  # skorch's: torch.load arguments passed through
    def find_class(self, module, name):
        if (module, name) == ("torch.storage", "_load_from_bytes"):
            return lambda b: torch.load(io.BytesIO(b), weights_only=False, map_location="cpu")
        return super().find_class(module, name)

seen = Intercept(io.BytesIO(pickle.dumps(x))).load()
print("INTERCEPTED", seen.tolist() == x.tolist())
for f in (torch.nn.init.kaiming_uniform_, F.relu, torch.nn.Linear, torch.Tensor, torch.Size,
          torch.nn.Module, torch.utils.data.DataLoader):
    print("MODULE", getattr(f, "__qualname__", f), f.__module__)
seen = []

class Names(torch.overrides.TorchFunctionMode):  # Lightning's _EmptyInit reads func.__module__
    def __torch_function__(self, func, types, args=(), kwargs=None):
        seen.append(f"{func.__module__}.{func.__name__}")
        return func(*args, **(kwargs or {}))

with Names():
    torch.nn.init.normal_(torch.ones(2))
print("MODE", seen)
net = Net()
print("SCRIPT", torch.jit.script(net).code)
print("FX", torch.fx.symbolic_trace(net).code)
"""


def test_pickles_cross_torch_and_names_are_torchs(env, tmp_path):
    # a plain pickle of tensors written by torch loads under the stand-in and the other way
    # round; ember's functions and classes report torch's module names there (what pickle
    # writes and libraries compare), and jit/fx still tell ember's code from the user's
    torch = pytest.importorskip("torch")
    import importlib.util
    import pickle

    (tmp_path / "standin_net.py").write_text(_NET)
    x = torch.arange(12.0).reshape(3, 4)
    t2 = torch.ones(2)
    t2.tag = "a"
    ours = {"x": x, "v": x.t()[1:], "p": torch.nn.Parameter(torch.ones(2)), "t2": t2}
    ours.update(h=torch.ones(3, dtype=torch.float16), i=torch.arange(3))
    (tmp_path / "from_torch.pkl").write_bytes(pickle.dumps(ours))
    r = _run(["-m", "ember", "run", _script(tmp_path, _TORCH_PICKLES)], env, cwd=tmp_path)
    v = ours["v"]
    assert (
        f"LOADED {x.tolist()} {v.stride()} {v.storage_offset()} torch.float16 True a [0, 1, 2]"
        in r.stdout
    )
    assert "INTERCEPTED True" in r.stdout
    back = pickle.loads((tmp_path / "to_torch.pkl").read_bytes())
    assert type(back["x"]) is torch.Tensor and torch.equal(back["x"], x)
    assert back["v"].stride() == v.stride() and back["v"].storage_offset() == 1
    assert type(back["p"]) is torch.nn.Parameter and back["p"].tolist() == [3.0, 3.0]
    assert back["t2"].tag == "b" and back["h"].dtype is torch.float16
    assert back["fn"] is torch.nn.functional.relu and back["dtype"] is torch.bfloat16
    assert back["size"] == torch.Size([3, 4]) and type(back["size"]) is torch.Size
    assert back["i"].dtype is torch.int64
    for f in (torch.nn.init.kaiming_uniform_, torch.nn.functional.relu, torch.nn.Linear):
        assert f"MODULE {f.__qualname__} {f.__module__}" in r.stdout
    for f in (torch.Tensor, torch.Size, torch.nn.Module, torch.utils.data.DataLoader):
        assert f"MODULE {f.__qualname__} {f.__module__}" in r.stdout
    seen = []

    class Names(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(f"{func.__module__}.{func.__name__}")
            return func(*args, **(kwargs or {}))

    with Names():
        torch.nn.init.normal_(torch.ones(2))
    assert f"MODE {seen}" in r.stdout
    # the same model scripted by ember outside the stand-in: the same code (its layers and
    # F.relu compiled as ember's, not called as the user's); fx's code is torch's
    ember = pytest.importorskip("ember")
    text = _NET.replace("import torch\n", "import ember as torch\n")
    (tmp_path / "ember_net.py").write_text(
        text.replace("torch.nn.functional", "ember.nn.functional")
    )
    for name, lib in (("ember_net", ember), ("standin_net", torch)):
        spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if lib is ember:
            assert f"SCRIPT {ember.jit.script(module.Net()).code}" in r.stdout
        assert f"FX {lib.fx.symbolic_trace(module.Net()).code}" in r.stdout
