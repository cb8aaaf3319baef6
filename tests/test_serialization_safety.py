"""ember.load(weights_only=True) on malicious checkpoints: it loads nothing and runs nothing.

Each payload would run a command (touch a marker file) under plain ``pickle.loads``; the test
asserts that ember refuses the file with ``pickle.UnpicklingError`` (or, for a refused tensor
rebuild, ``RuntimeError``) and that the marker never appears. Payloads sit at the top level, in
nested containers, inside storage persistent ids, in both the zip format and the legacy stream,
and use every opcode route to a callable: GLOBAL, STACK_GLOBAL, INST, OBJ, EXT, NEWOBJ, BUILD.
"""

from __future__ import annotations

import builtins
import copyreg
import io
import os
import pickle
import subprocess
import tracemalloc
from collections import OrderedDict

import pytest

import ember
from ember.serialization._pickler import TorchGlobal as StandIn
from ember.serialization._pickler import TorchPickler
from ember.serialization._save import MAGIC_NUMBER, PROTOCOL_VERSION
from ember.serialization._zip import ZipWriter


class Call:
    """Pickles as a call of ``fn(*args)``: what an attacker's object does."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def archive(data_pkl: bytes, storages: dict | None = None) -> bytes:
    buf = io.BytesIO()
    w = ZipWriter(buf, "archive")
    w.write_record("data.pkl", data_pkl)
    for key, data in (storages or {}).items():
        w.write_record(f"data/{key}", data)
    w.write_record("version", b"3\n")
    w.close()
    return buf.getvalue()


def legacy(data_pkl: bytes) -> bytes:
    head = b"".join(
        pickle.dumps(x, protocol=2)
        for x in (MAGIC_NUMBER, PROTOCOL_VERSION, {"protocol_version": 1001})
    )
    return head + data_pkl + pickle.dumps([], protocol=2)


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "PWNED"
    yield path
    assert not path.exists(), "a payload ran"


def payloads(marker):
    m = str(marker)
    touch = f"open({m!r}, 'w').close()"
    return {
        "os.system": Call(os.system, f"touch {m}"),
        "eval": Call(builtins.eval, touch),
        "exec": Call(builtins.exec, touch),
        "subprocess": Call(subprocess.check_call, ["touch", m]),
        "subprocess.Popen": Call(subprocess.Popen, ["touch", m]),
        "__import__": Call(builtins.__import__, "os"),
        "getattr": Call(builtins.getattr, Call(builtins.__import__, "os"), "system"),
        "open": Call(builtins.open, m, "w"),
        "nested pickle.loads": Call(pickle.loads, pickle.dumps(Call(os.system, f"touch {m}"))),
        "copyreg._reconstructor": Call(copyreg._reconstructor, object, object, None),
    }


def load_bytes(raw: bytes):
    return ember.load(io.BytesIO(raw))


def test_the_payloads_are_live(marker):
    pickle.loads(pickle.dumps(Call(os.system, f"touch {marker}")))
    assert marker.exists()
    marker.unlink()


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_top_level_payloads_run_nothing(marker, fmt):
    for name, payload in payloads(marker).items():
        data = pickle.dumps(payload, protocol=2)
        raw = archive(data) if fmt == "zip" else legacy(data)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            load_bytes(raw)
        assert not marker.exists(), name


def test_payloads_hidden_in_a_real_checkpoint(marker):
    for name, payload in payloads(marker).items():
        buf = io.BytesIO()
        state = OrderedDict(w=ember.ones(3), b=ember.zeros(2))
        ember.save({"model": state, "optim": {"state": {0: {"step": [1, {"x": (payload,)}]}}}}, buf)
        with pytest.raises(pickle.UnpicklingError, match="Unsupported global|blocked"):
            load_bytes(buf.getvalue())
        assert not marker.exists(), name


def test_the_offending_global_is_named(marker):
    with pytest.raises(pickle.UnpicklingError) as info:
        load_bytes(archive(pickle.dumps(Call(builtins.eval, "1"), protocol=2)))
    assert "GLOBAL eval was not an allowed global" in str(info.value)
    with pytest.raises(pickle.UnpicklingError) as info:
        load_bytes(archive(pickle.dumps(Call(os.system, "true"), protocol=2)))
    assert "whose module posix is blocked" in str(info.value)


class PidPickler(TorchPickler):
    """Writes torch globals from stand-ins, and the object ``STORAGE`` as a chosen persistent
    id."""

    def __init__(self, file, pid):
        super().__init__(file, protocol=2)
        self.pid = pid

    def persistent_id(self, obj):
        return self.pid if obj is STORAGE else None


STORAGE = object()


def pid_archive(pid) -> bytes:
    buf = io.BytesIO()
    rebuild = StandIn("torch._utils", "_rebuild_tensor_v2")
    tensor = Call(rebuild, STORAGE, 0, (1,), (1,), False, OrderedDict())
    PidPickler(buf, pid).dump({"w": tensor})
    return archive(buf.getvalue(), {"0": b"\0\0\0\0"})


def test_payloads_hidden_in_storage_persistent_ids(marker):
    float_storage = StandIn("torch", "FloatStorage")
    for payload in payloads(marker).values():
        for pid in (
            ("storage", payload, "0", "cpu", 1),
            ("storage", float_storage, payload, "cpu", 1),
            ("storage", float_storage, "0", payload, 1),
            ("storage", float_storage, "0", "cpu", payload),
            ("module", payload, "0", "cpu", 1),
            payload,
        ):
            with pytest.raises(pickle.UnpicklingError):
                load_bytes(pid_archive(pid))
            assert not marker.exists()


def test_non_storage_persistent_ids_are_refused():
    for pid in (("module", "os", "x"), "0", 7, ("storage",), ("storage", 1, 2, 3, 4)):
        with pytest.raises(pickle.UnpicklingError):
            load_bytes(pid_archive(pid))
    assert load_bytes(pid_archive(("storage", StandIn("torch", "FloatStorage"), "0", "cpu", 1)))


def raw_pickle(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


@pytest.mark.parametrize(
    "body",
    [
        b"(S'touch PWNED'\nios\nsystem\n",  # INST
        b"cos\nsystem\n(S'touch PWNED'\no",  # OBJ
        b"\x8c\x08builtins\x8c\x04eval\x93\x8c\x011\x85R",  # STACK_GLOBAL
        b"\x8c\x02os\x8c\x06system\x93\x8c\x04true\x85R",  # STACK_GLOBAL, blocked module
        b"\x82\x01)R",  # EXT1
        b"c__builtin__\neval\n\x8c\x011\x85R",  # Python 2 name of builtins
        b"ctorch._utils\n_rebuild_tensor_v2.__globals__\n",  # attribute walk
        b"Pstorage\n",  # text persistent id
    ],
)
def test_every_opcode_route_to_a_callable_is_closed(body, marker):
    with pytest.raises(pickle.UnpicklingError):
        load_bytes(archive(raw_pickle(body)))


def test_allowlisted_classes_cannot_be_abused():
    tensor_cls = b"ctorch\nTensor\n"
    cases = [
        tensor_cls + b"J\x00\x00\x00\x40\x85R",  # torch.Tensor(2**30): would allocate
        tensor_cls + b")\x81",  # NEWOBJ of torch.Tensor
        b"cbuiltins\nbytearray\nJ\x00\x00\x00\x7f\x85R",  # bytearray(2 GiB)
        b"c_codecs\nencode\n\x8c\x01xX\x04\x00\x00\x00zlib\x86R",  # a non-text codec
        b"]}b",  # BUILD on a list
        b"ccollections\nOrderedDict\n)RNb",  # BUILD an OrderedDict with a non-dict
        b"}]a",  # APPEND to a dict
        b"]K\x01K\x02s",  # SETITEM on a list
        b"ctorch.nn.parameter\nParameter\n\x8c\x01x\x85\x81",  # Parameter of a str
    ]
    tracemalloc.start()
    try:
        for body in cases:
            with pytest.raises((pickle.UnpicklingError, RuntimeError)):
                load_bytes(archive(raw_pickle(body)))
        assert tracemalloc.get_traced_memory()[1] < 50 * 2**20
    finally:
        tracemalloc.stop()


def test_tensor_state_cannot_overwrite_ember_internals():
    rebuild = StandIn("torch._utils", "_rebuild_tensor_v2")
    from_type = StandIn("torch._tensor", "_rebuild_from_type_v2")
    tensor_type = StandIn("torch", "Tensor")
    storage = ("storage", StandIn("torch", "FloatStorage"), "0", "cpu", 1)
    for state in ({"_data": 1}, {"grad_fn": 1}, {"__class__": 1}, {"requires_grad": True}):
        args = (STORAGE, 0, (1,), (1,), False, OrderedDict())
        obj = Call(from_type, rebuild, tensor_type, args, state)
        buf = io.BytesIO()
        PidPickler(buf, storage).dump(obj)
        with pytest.raises(RuntimeError, match="tries to set attribute"):
            load_bytes(archive(buf.getvalue(), {"0": b"\0\0\0\0"}))


def test_blocked_modules_stay_blocked_when_allowlisted(marker):
    payload = pickle.dumps(Call(os.system, f"touch {marker}"), protocol=2)
    with ember.serialization.safe_globals([os.system, (os.system, "posix.system")]):
        with pytest.raises(pickle.UnpicklingError, match="blocked"):
            load_bytes(archive(payload))


def test_allowlisting_one_function_allows_only_it(marker):
    payload = pickle.dumps([Call(len, "abc"), Call(os.system, f"touch {marker}")], protocol=2)
    with ember.serialization.safe_globals([len]):
        with pytest.raises(pickle.UnpicklingError, match="blocked"):
            load_bytes(archive(payload))
        assert load_bytes(archive(pickle.dumps(Call(len, "abc"), protocol=2))) == 3


def test_get_unsafe_globals_lists_the_payloads(marker):
    buf = io.BytesIO()
    ember.save({"w": ember.ones(1), "x": payloads(marker)["eval"], "y": Call(len, "")}, buf)
    found = ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue()))
    assert found == ["builtins.eval", "builtins.len"]
    with pytest.raises(ValueError, match="Expected input to be a checkpoint"):
        ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(b"not a zip"))
