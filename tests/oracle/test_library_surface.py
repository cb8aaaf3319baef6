"""Names third-party libraries import from torch (Lightning, torchmetrics, safetensors' tools):
present in ember and behaving as torch's."""

import collections

import pytest

import ember

torch = pytest.importorskip("torch")


def test_file_reader_reads_torch_archives_and_writer_writes_them(tmp_path):
    path = tmp_path / "ck.pt"
    torch.save({"a": torch.ones(3)}, path)
    ours, theirs = ember.PyTorchFileReader(str(path)), torch.PyTorchFileReader(str(path))
    assert sorted(ours.get_all_records()) == sorted(theirs.get_all_records())
    for name in theirs.get_all_records():
        assert ours.get_record(name) == theirs.get_record(name)
        assert ours.get_record_offset(name) == theirs.get_record_offset(name)
    assert ours.has_record("data/0") and not ours.has_record("nope")
    assert ours.serialization_id() == theirs.serialization_id()
    with pytest.raises(RuntimeError, match="failed locating file nope"):
        ours.get_record("nope")

    out = tmp_path / "w.pt"
    writer = ember.PyTorchFileWriter(str(out))
    writer.write_record("x", b"abcdef", 3)
    assert writer.archive_name() == "w" and writer.get_all_written_records() == {"x"}
    writer.write_end_of_file()
    back = torch.PyTorchFileReader(str(out))
    assert back.get_record("x") == b"abc"
    assert sorted(back.get_all_records()) == [".data/serialization_id", "byteorder", "version", "x"]


@pytest.mark.parametrize(
    "args,kwargs",
    [
        (("cpu",), {}),
        (("float16",), {}),
        (("cpu", "float16", True), {}),
        (("tensor64", True), {}),
        (("cpu",), {"dtype": "float16"}),
        ((), {"memory_format": "channels_last"}),
        ((), {"device": "cpu", "non_blocking": True}),
    ],
)
def test_parse_to(args, kwargs):
    def spell(lib, x):
        if x == "tensor64":
            return lib.ones(1, dtype=lib.float64)
        return getattr(lib, x) if x in ("float16", "channels_last") else x

    def parsed(lib):
        a = tuple(spell(lib, x) for x in args)
        k = {n: spell(lib, v) for n, v in kwargs.items()}
        return tuple(str(v) for v in lib._C._nn._parse_to(*a, **k))

    assert parsed(ember) == parsed(torch)


@pytest.mark.parametrize(
    "args,kwargs,error",
    [((["x"],), {}, TypeError), (("float16",), {"device": "cpu"}, TypeError),
     ((), {"copy": True}, RuntimeError)],
)  # fmt: skip
def test_parse_to_errors(args, kwargs, error):
    messages = []
    for lib in (ember, torch):
        a = tuple(getattr(lib, x) if x == "float16" else x for x in args)
        with pytest.raises(error) as info:
            lib._C._nn._parse_to(*a, **kwargs)
        messages.append(str(info.value).splitlines()[0])
    assert messages[0] == messages[1]


def test_pytree_node_table():
    from torch.utils import _pytree as theirs

    from ember.utils import _pytree as ours

    Point = collections.namedtuple("Point", "x y")
    for tree in ([1, 2], (1,), {"a": 1}, Point(1, 2), 3):
        kind = ours._get_node_type(tree)
        assert kind is theirs._get_node_type(tree)
        assert (kind in ours.SUPPORTED_NODES) == (kind in theirs.SUPPORTED_NODES)
        if kind in ours.SUPPORTED_NODES:
            assert ours.SUPPORTED_NODES[kind].flatten_fn(tree) == (
                theirs.SUPPORTED_NODES[kind].flatten_fn(tree)
            )
    # a spec built by hand from the table (Lightning's _tree_flatten does) unflattens
    spec = ours.TreeSpec(
        collections.namedtuple, Point, [ours.LeafSpec(), ours.TreeSpec(list, None, [])]
    )
    assert ours.tree_unflatten([5], spec) == Point(5, [])
    assert repr(spec).startswith("TreeSpec(namedtuple, ")


def test_small_names():
    from ember._dynamo import OptimizedModule
    from ember.distributed.constants import default_pg_nccl_timeout, default_pg_timeout

    assert OptimizedModule is ember._dynamo.eval_frame.OptimizedModule
    assert default_pg_timeout == torch.distributed.constants.default_pg_timeout
    assert default_pg_nccl_timeout is torch.distributed.constants.default_pg_nccl_timeout
    assert isinstance(ember.Tensor, ember._C._TensorMeta)
    assert isinstance(ember.nn.Parameter, ember._C._TensorMeta)
    assert ember.ScriptModule is ember.jit.ScriptModule
    assert ember._C._log_api_usage_once("library.event") is None
    assert ember.cuda.get_rng_state_all() == torch.cuda.get_rng_state_all() == []
    assert ember.cuda.set_rng_state_all([]) is None


def _storage_bytes(s) -> list:
    return [s[i] for i in range(s.nbytes())]


@pytest.mark.parametrize("shared", [False, True])
def test_untyped_storage_from_file(tmp_path, shared):
    for lib, name in ((torch, "t"), (ember, "e")):
        path = tmp_path / f"{name}.bin"
        path.write_bytes(bytes(range(10)))
        s = lib.UntypedStorage.from_file(str(path), shared, 10)
        assert s.nbytes() == 10 and _storage_bytes(s) == list(range(10))
        s[0] = 99
        assert path.read_bytes()[0] == (99 if shared else 0)  # private: the file is untouched
        assert lib.UntypedStorage.from_file(str(path), shared).nbytes() == 0
        t = lib.tensor([], dtype=lib.uint8).set_(lib.UntypedStorage.from_file(str(path), False, 10))
        assert t.tolist() == list(path.read_bytes())
    # shared=True creates the file at the size asked
    for lib, name in ((torch, "t"), (ember, "e")):
        fresh = tmp_path / f"new-{name}.bin"
        s = lib.UntypedStorage.from_file(str(fresh), True, 8)
        assert fresh.stat().st_size == 8 and _storage_bytes(s) == [0] * 8


@pytest.mark.parametrize(
    "args",
    [
        lambda p: (str(p / "small.bin"), False, 100),  # file too small
        lambda p: (str(p / "absent.bin"), False, 10),  # no such file
    ],
)
def test_untyped_storage_from_file_errors(tmp_path, args):
    (tmp_path / "small.bin").write_bytes(b"0123456789")
    with pytest.raises(RuntimeError) as theirs:
        torch.UntypedStorage.from_file(*args(tmp_path))
    with pytest.raises(RuntimeError) as ours:
        ember.UntypedStorage.from_file(*args(tmp_path))
    assert str(ours.value) == str(theirs.value)


def test_view_takes_dtype_and_size_keywords():
    e, t = ember.arange(4.0), torch.arange(4.0)
    assert e.view(dtype=ember.int32).tolist() == t.view(dtype=torch.int32).tolist()
    assert e.view(size=(2, 2)).shape == t.view(size=(2, 2)).shape
    assert e.untyped_storage().untyped() is not None
    bad = [
        ((ember.int32,), {"dtype": ember.int32}, (torch.int32,), {"dtype": torch.int32}),
        ((), {}, (), {}),
        ((), {"size": ember.int32}, (), {"size": torch.int32}),
        ((), {"dtype": (2, 2)}, (), {"dtype": (2, 2)}),
    ]
    for ea, ek, ta, tk in bad:
        with pytest.raises(TypeError) as theirs:
            t.view(*ta, **tk)
        with pytest.raises(TypeError) as ours:
            e.view(*ea, **ek)
        # the first line and the signatures; torch's per-signature "didn't match because"
        # details are not reproduced
        theirs_lines = [ln for ln in str(theirs.value).splitlines() if "didn't match" not in ln]
        assert str(ours.value).splitlines() == theirs_lines
