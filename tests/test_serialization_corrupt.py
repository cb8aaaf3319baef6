"""Corrupt checkpoints get a clear RuntimeError or UnpicklingError, never a hang, a crash, another
exception or a memory blow-up: hand-made damage first, then hypothesis-mutated valid files."""

from __future__ import annotations

import io
import pickle
import struct
import tarfile
import tracemalloc
import zipfile
from collections import OrderedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.serialization._zip import ZipWriter

ALLOWED = (RuntimeError, pickle.UnpicklingError)


def saved(obj=None, **kwargs) -> bytes:
    if obj is None:
        base = ember.arange(12.0).reshape(3, 4)
        obj = OrderedDict(w=base, v=base[:, 1:], b=ember.ones(2, dtype=ember.bfloat16), n=[1, "x"])
    buf = io.BytesIO()
    ember.save(obj, buf, **kwargs)
    return buf.getvalue()


VALID_ZIP = saved()
VALID_LEGACY = saved(_use_new_zipfile_serialization=False)


def load(raw: bytes):
    return ember.load(io.BytesIO(raw))


def rebuilt(raw: bytes, drop=(), change=None) -> bytes:
    """Return the archive with records dropped or their bytes changed (name suffix -> fn)."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    w = ZipWriter(out, "archive")
    for info in src.infolist():
        name = info.filename.split("/", 1)[1]
        if name in drop:
            continue
        data = src.read(info)
        if change and name in change:
            data = change[name](data)
        w.write_record(name, data)
    w.close()
    return out.getvalue()


def test_the_valid_files_load():
    assert load(VALID_ZIP)["v"].tolist() == [[1.0, 2.0, 3.0], [5.0, 6.0, 7.0], [9.0, 10.0, 11.0]]
    assert load(VALID_LEGACY)["n"] == [1, "x"]
    assert load(rebuilt(VALID_ZIP))["n"] == [1, "x"]


@pytest.mark.parametrize("cut", [1, 3, 4, 30, 100, 500, -200, -23, -1])
def test_truncated_files(cut):
    for raw in (VALID_ZIP, VALID_LEGACY):
        with pytest.raises(ALLOWED):
            load(raw[:cut])


def test_truncated_zip_says_so():
    with pytest.raises(RuntimeError, match="failed finding central directory.*corrupted"):
        load(VALID_ZIP[: len(VALID_ZIP) // 2])


def test_empty_file():
    with pytest.raises(RuntimeError, match="empty"):
        load(b"")


@pytest.mark.parametrize("raw", [b"hello world", b"\x00" * 100, b"XXXX" + VALID_ZIP[4:], b"\x80"])
def test_wrong_magic(raw):
    with pytest.raises(ALLOWED):
        load(raw)


@pytest.mark.parametrize(
    ("drop", "message"),
    [
        ("data.pkl", "failed locating file data.pkl"),
        ("data/0", "failed locating file data/0"),
        ("version", "no 'version' record"),
    ],
)
def test_missing_records(drop, message):
    with pytest.raises(RuntimeError, match=message):
        load(rebuilt(VALID_ZIP, drop=(drop,)))


def test_storage_shorter_than_its_tensors():
    raw = rebuilt(VALID_ZIP, change={"data/0": lambda d: d[:8]})
    with pytest.raises(RuntimeError, match=r"record size \(8 bytes\) does not match expected size"):
        load(raw)


def test_tensor_reaching_past_its_storage():
    # the pickle says 12 elements, the tensor wants 3 x 4 from offset 1
    raw = rebuilt(
        VALID_ZIP, change={"data.pkl": lambda d: d.replace(b"K\x00K\x03K\x04", b"K\x01K\x03K\x04")}
    )
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        load(raw)


@pytest.mark.parametrize("version", [b"99\n", b"0\n", b"x\n", b""])
def test_bad_versions(version):
    with pytest.raises(RuntimeError, match="version"):
        load(rebuilt(VALID_ZIP, change={"version": lambda d: version}))


def test_bad_byteorder():
    with pytest.raises(RuntimeError, match="endianness"):
        load(rebuilt(VALID_ZIP, change={"byteorder": lambda d: b"middle"}))


def test_big_endian_files_are_swapped():
    big = rebuilt(
        saved({"f": ember.tensor([1.5, -2.0]), "i": ember.tensor([1, 256], dtype=ember.int16)}),
        change={
            "byteorder": lambda d: b"big",
            "data/0": lambda d: struct.pack(">2f", 1.5, -2.0),
            "data/1": lambda d: struct.pack(">2h", 1, 256),
        },
    )
    out = load(big)
    assert out["f"].tolist() == [1.5, -2.0] and out["i"].tolist() == [1, 256]


def test_torchscript_archives_are_refused():
    buf = io.BytesIO()
    w = ZipWriter(buf, "archive")
    for name in ("data.pkl", "constants.pkl", "version"):
        w.write_record(name, b"3\n")
    w.close()
    with pytest.raises(RuntimeError, match="TorchScript"):
        load(buf.getvalue())


def test_legacy_tar_format_is_refused():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("storages")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"\x80"))
    with pytest.raises(RuntimeError, match="legacy .tar format"):
        load(buf.getvalue())


def test_deflated_records_load_and_bad_deflate_is_caught():
    src = zipfile.ZipFile(io.BytesIO(VALID_ZIP))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    raw = out.getvalue()
    assert load(raw)["n"] == [1, "x"]
    i = raw.index(b"archive/data/0") + len("archive/data/0")
    with pytest.raises(ALLOWED):
        load(raw[:i] + bytes(b ^ 0x55 for b in raw[i : i + 20]) + raw[i + 20 :])


def test_huge_size_claims_allocate_nothing():
    # a central directory claiming a 2**40-byte data.pkl, a pickle claiming a 2**40-byte string
    i = VALID_ZIP.index(b"PK\x01\x02")  # the central directory entry of data.pkl
    central = bytearray(VALID_ZIP)
    struct.pack_into("<II", central, i + 20, 0xFFFFFFFE, 0xFFFFFFFE)
    huge_string = rebuilt(
        VALID_ZIP, change={"data.pkl": lambda d: d[:2] + b"X\xff\xff\xff\x7f" + d[2:]}
    )
    tracemalloc.start()
    try:
        for raw in (bytes(central), huge_string):
            with pytest.raises(ALLOWED):
                load(raw)
        assert tracemalloc.get_traced_memory()[1] < 20 * 2**20
    finally:
        tracemalloc.stop()


# ------------------------------------------------------------------------------ fuzzing
def mutate(raw: bytes, edits) -> bytes:
    data = bytearray(raw)
    for kind, pos, value in edits:
        if not data:
            break
        pos %= len(data)
        if kind == "flip":
            data[pos] ^= 1 << (value % 8)
        elif kind == "set":
            data[pos] = value % 256
        elif kind == "insert":
            data[pos:pos] = bytes([value % 256]) * (1 + value % 5)
        elif kind == "delete":
            del data[pos : pos + 1 + value % 16]
        else:
            del data[pos:]
    return bytes(data)


edits = st.lists(
    st.tuples(
        st.sampled_from(["flip", "set", "insert", "delete", "truncate"]),
        st.integers(0, 1 << 20),
        st.integers(0, 255),
    ),
    min_size=1,
    max_size=6,
)


def check_fuzzed(raw: bytes) -> None:
    tracemalloc.start()
    try:
        try:
            load(raw)
        except ALLOWED:
            pass
        assert tracemalloc.get_traced_memory()[1] < 20 * 2**20
    finally:
        tracemalloc.stop()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits)
def test_fuzz_zip(edits):
    check_fuzzed(mutate(VALID_ZIP, edits))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits)
def test_fuzz_legacy(edits):
    check_fuzzed(mutate(VALID_LEGACY, edits))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64), st.integers(0, 600))
def test_fuzz_pickle_bytes(junk, at):
    # random bytes spliced into data.pkl: the unpickler proper, behind a valid container
    raw = rebuilt(VALID_ZIP, change={"data.pkl": lambda d: d[:at] + junk + d[at:]})
    check_fuzzed(raw)
