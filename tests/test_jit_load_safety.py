"""ember.jit.load never runs what a TorchScript archive smuggles in: crafted archives (pickles
naming os.system/eval/subprocess, code calling __import__/exec/eval/open, dunder attributes,
unknown ops, Python syntax outside TorchScript) are refused at load time, with an error naming
what was refused, and a canary file the payload would create never appears.

The archives are built by hand (no torch needed): a zip with ``version``, ``code/__torch__.py``
and pickles written opcode by opcode."""

import io
import os
import pickle
import subprocess
import sys
import types
import zipfile

import numpy as np
import pytest

import ember
from ember.jit._load import UnsafeArchiveError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_GOOD_CODE = """class M(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  def forward(self: __torch__.M,
    x: Tensor) -> Tensor:
    return torch.relu(x)
"""


def _str(s: str) -> bytes:
    b = s.encode()
    return b"X" + len(b).to_bytes(4, "little") + b


def _module_pickle(cls: str = "__torch__\nM", state: bytes | None = None) -> bytes:
    """``GLOBAL cls; () NEWOBJ; {state} BUILD; STOP`` (protocol 2), as torch writes modules."""
    if state is None:
        state = b"}" + _str("training") + b"\x88s"
    return b"\x80\x02c" + cls.encode() + b"\n)\x81" + state + b"b."


def _reduce_pickle(module: str, name: str, *args: str) -> bytes:
    """``GLOBAL module.name`` called (REDUCE) on string arguments: a pickle's way to run code."""
    body = b"".join(_str(a) for a in args)
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"(" + body + b"tR."


def _archive(code: str = _GOOD_CODE, data: bytes | None = None, constants: bytes | None = None,
             extra: dict | None = None) -> io.BytesIO:  # fmt: skip
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", _module_pickle() if data is None else data)
        z.writestr("archive/code/__torch__.py", code)
        z.writestr("archive/constants.pkl", b"\x80\x02)." if constants is None else constants)
        z.writestr("archive/version", "3\n")
        z.writestr("archive/byteorder", "little")
        for k, v in (extra or {}).items():
            z.writestr(k, v)
    buf.seek(0)
    return buf


@pytest.fixture
def canary(tmp_path):
    path = tmp_path / "canary"
    yield str(path)
    assert not path.exists(), "the archive's payload ran"


def test_hand_made_archive_loads_and_runs():
    m = ember.jit.load(_archive())
    assert m(ember.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    assert "aten::relu" in str(m.graph)


# ------------------------------------------------------------------------------ pickles
@pytest.mark.parametrize(
    "module, name",
    [
        ("os", "system"),
        ("posix", "system"),
        ("builtins", "eval"),
        ("builtins", "exec"),
        ("__builtin__", "eval"),  # Python 2 spelling, mapped by pickle
        ("subprocess", "call"),
        ("subprocess", "Popen"),
        ("builtins", "__import__"),
        ("shutil", "rmtree"),
        ("torch.serialization", "load"),
    ],
)
def test_data_pkl_global_refused(canary, module, name):
    payload = f"open({canary!r}, 'w')" if name in ("eval", "exec") else f"touch {canary}"
    with pytest.raises(UnsafeArchiveError) as e:
        ember.jit.load(_archive(data=_reduce_pickle(module, name, payload)))
    assert "refused" in str(e.value)
    assert name in str(e.value) or module in str(e.value)


def test_stack_global_refused(canary):
    body = _str("os") + _str("system") + b"\x93" + b"(" + _str(f"touch {canary}") + b"tR."
    with pytest.raises(UnsafeArchiveError, match="os.system"):
        ember.jit.load(_archive(data=b"\x80\x04" + body))


def test_constants_pkl_global_refused(canary):
    bad = _reduce_pickle("os", "system", f"touch {canary}")
    with pytest.raises(UnsafeArchiveError, match="os.system"):
        ember.jit.load(_archive(constants=bad))


def test_class_the_code_does_not_define_refused():
    with pytest.raises(UnsafeArchiveError, match="__torch__.Evil"):
        ember.jit.load(_archive(data=_module_pickle("__torch__\nEvil")))


def test_dunder_state_refused():
    state = b"}" + _str("__class__") + b"\x88s"
    with pytest.raises(UnsafeArchiveError, match="__class__"):
        ember.jit.load(_archive(data=_module_pickle(state=state)))


def test_reduce_on_archive_class_refused():
    data = b"\x80\x02c__torch__\nM\n(" + _str("x") + b"tR."
    with pytest.raises(UnsafeArchiveError):
        ember.jit.load(_archive(data=data))


def test_python_pickle_of_a_callable_refused(canary):
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {canary}",))

    with pytest.raises(UnsafeArchiveError, match="system"):
        ember.jit.load(_archive(data=pickle.dumps(Payload(), protocol=2)))


# ------------------------------------------------------------------------------ code
def _forward(body: str) -> str:
    return _GOOD_CODE.replace("    return torch.relu(x)\n", body)


@pytest.mark.parametrize(
    "body, refused",
    [
        ("    _0 = __import__('os').system('touch {c}')\n    return x\n", "__import__"),
        ("    _0 = exec(\"open('{c}', 'w')\")\n    return x\n", "exec"),
        ("    _0 = eval(\"open('{c}', 'w')\")\n    return x\n", "eval"),
        ("    _0 = open('{c}', 'w')\n    return x\n", "open"),
        ("    _0 = self.__class__\n    return x\n", "__class__"),
        ("    _0 = (x).__reduce_ex__(2)\n    return x\n", "__reduce_ex__"),
        ("    _0 = getattr(self, '__dict__')\n    return x\n", "__dict__"),
        ("    _0 = [i for i in range(3)]\n    return x\n", "ListComp"),
        ("    _0 = (lambda: 0)()\n    return x\n", "Lambda"),
        ("    import os\n    return x\n", "Import"),
        ("    with x:\n      pass\n    return x\n", "With"),
        ("    _0 = f'{{x}}'\n    return x\n", "JoinedStr"),
        ("    _0 = globals()\n    return x\n", "globals"),
        ("    _0 = os.system('touch {c}')\n    return x\n", "os"),
    ],
)
def test_code_refused(canary, body, refused):
    code = _forward(body.format(c=canary))
    with pytest.raises(UnsafeArchiveError) as e:
        ember.jit.load(_archive(code=code))
    assert refused in str(e.value)
    assert "code/__torch__.py:" in str(e.value)  # names the line


def test_format_field_cannot_reach_attributes():
    code = _forward(
        '    _0 = torch.format("{0.__class__}", x)\n    _1 = ops.prim.RaiseException(_0)\n'
        "    return x\n"
    )
    with pytest.raises(UnsafeArchiveError, match="format field"):
        ember.jit.load(_archive(code=code))


def test_top_level_statement_refused(canary):
    code = _GOOD_CODE + f"open({canary!r}, 'w')\n"
    with pytest.raises(UnsafeArchiveError, match="open"):
        ember.jit.load(_archive(code=code))


def test_class_base_refused():
    code = _GOOD_CODE.replace("class M(Module):", "class M(os.system):")
    with pytest.raises(UnsafeArchiveError, match="os"):
        ember.jit.load(_archive(code=code))


def test_undeclared_attribute_refused():
    code = _forward("    _0 = self.weights\n    return x\n")
    with pytest.raises(UnsafeArchiveError, match="'weights' is not an attribute"):
        ember.jit.load(_archive(code=code))


def test_unknown_op_names_op_and_line():
    code = _forward("    _0 = torch.frobnicate(x, 3)\n    return _0\n")
    with pytest.raises(RuntimeError) as e:
        ember.jit.load(_archive(code=code))
    msg = str(e.value)
    assert "aten::frobnicate" in msg and "code/__torch__.py:7" in msg
    assert "torch.frobnicate(x, 3)" in msg


def test_unknown_op_in_unused_method_fails_at_load():
    code = _GOOD_CODE + "  def other(self: __torch__.M) -> Tensor:\n    return ops.prim.nope()\n"
    with pytest.raises(RuntimeError, match="prim::nope"):
        ember.jit.load(_archive(code=code))


def test_old_ember_format_refused(canary, tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {canary}",))

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("ember_jit/version", "1")
        z.writestr("ember_jit/module.pt", pickle.dumps(Payload()))
    buf.seek(0)
    with pytest.raises(RuntimeError, match="old format"):
        ember.jit.load(buf)


def test_not_an_archive():
    with pytest.raises(RuntimeError, match="not a TorchScript archive"):
        ember.jit.load(io.BytesIO(b"abc"))


def test_good_archive_still_computes_after_refusals():
    m = ember.jit.load(_archive())
    x = np.array([-3.0, 4.0], dtype=np.float32)
    np.testing.assert_array_equal(m(ember.tensor(x)).numpy(), np.maximum(x, 0))


# ------------------------------------------------------------------------------ the CLI
def _cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ember.__file__)))
    return subprocess.run(
        [sys.executable, "-m", "ember.jit", *args], capture_output=True, text=True, env=env,
        cwd=cwd, timeout=120,
    )  # fmt: skip


def _cli_here(capsys, *args):
    """The command's ``main`` in this process (``_cli`` runs the real command in a child)."""
    from ember.jit.__main__ import main

    code = main(list(args))
    out = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


def test_cli_refuses_malicious_with_exit_code_2(tmp_path, canary, capsys):
    path = tmp_path / "evil.pt"
    path.write_bytes(_archive(data=_reduce_pickle("os", "system", f"touch {canary}")).getvalue())
    for cmd in ("inspect", "run"):
        args = [cmd, str(path)] + (["--input", "2"] if cmd == "run" else [])
        r = _cli_here(capsys, *args)
        assert r.returncode == 2, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "os.system" in r.stderr


def test_cli_inspect_and_run(tmp_path, capsys):
    path = tmp_path / "good.pt"
    path.write_bytes(_archive(extra={"archive/extra/meta.txt": "hi"}).getvalue())
    r = _cli_here(capsys, "inspect", str(path))
    assert r.returncode == 0, r.stderr
    assert "forward" in r.stdout and "aten::relu" in r.stdout and "meta.txt" in r.stdout
    np.save(tmp_path / "x.npy", np.array([[-1.0, 2.0]], dtype=np.float32))
    r = _cli("run", str(path), "--input", str(tmp_path / "x.npy"))
    assert r.returncode == 0, r.stderr
    assert "[[0. 2.]]" in r.stdout.replace(",", "")


def test_computed_format_field_checked_when_run():
    code = _GOOD_CODE.replace(
        "    x: Tensor) -> Tensor:\n    return torch.relu(x)\n",
        '    x: Tensor,\n    msg: str="{}") -> Tensor:\n'
        "    _0 = torch.format(msg, x)\n    return x\n",
    )
    m = ember.jit.load(_archive(code=code))
    assert m(ember.tensor([1.0])).tolist() == [1.0]
    with pytest.raises(RuntimeError, match="format field"):
        m(ember.tensor([1.0]), "{0.__class__}")


def test_new_only_builds_archive_classes():
    code = _forward("    _0 = __torch__.M.__new__(os)\n    return x\n")
    with pytest.raises(UnsafeArchiveError):
        ember.jit.load(_archive(code=code))
    code = _forward("    _0 = __torch__.M.__new__(__torch__.M)\n    return x\n")
    with pytest.raises(UnsafeArchiveError, match="not a class"):  # a module, not a class
        ember.jit.load(_archive(code=code))


def test_torch_save_checkpoint_is_not_a_module():
    data = b"\x80\x02ccollections\nOrderedDict\n)R."
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", data)
        z.writestr("archive/version", "3\n")
    buf.seek(0)
    with pytest.raises(RuntimeError, match="does not hold a module"):
        ember.jit.load(buf)
