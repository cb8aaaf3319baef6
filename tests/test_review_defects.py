"""Small defects of issue 19's review, each pinned: set_flush_denormal, the optimizer's type
names, the one data-pointer helper, the dead array module, jit.trace's strict/optimize/
check_tolerance options."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ember
from ember._core.storage import array_ptr

ROOT = Path(__file__).resolve().parent.parent


def test_set_flush_denormal_reports_unsupported():
    # ember keeps denormals (NumPy has no switch): False, as torch answers where it cannot
    assert ember.set_flush_denormal(True) is False
    assert ember.set_flush_denormal(False) is False
    tiny = ember.tensor([1e-320], dtype=ember.float64)
    assert tiny.item() != 0.0  # nothing was flushed


@pytest.mark.parametrize(
    "params",
    [
        lambda lib: lib.ones(2, dtype=lib.float64),
        lambda lib: lib.ones(2, dtype=lib.int64),
        lambda lib: lib.ones(2, dtype=lib.bfloat16),
        lambda lib: lib.ones(2),
        lambda lib: [1.0],
        lambda lib: [lib.ones(1), "x"],
    ],
)
def test_optimizer_type_names_as_torch(params):
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(TypeError) as e:
            lib.optim.SGD(params(lib), lr=0.1)
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]


def test_one_data_pointer_helper():
    a = np.arange(6.0)
    assert array_ptr(a[2:]) == array_ptr(a) + 16
    copies = []
    definition = re.compile(r"^\s*def (_ptr|array_ptr)\(", re.M)  # a text scan: parsing
    for path in (ROOT / "ember").rglob("*.py"):  # every file cost seconds
        copies += [str(path.relative_to(ROOT))] * len(definition.findall(path.read_text()))
    assert copies == ["ember/_core/storage.py"]


def test_no_array_module_indirection():
    # the `xp` promise had no caller: deleted (ops call NumPy directly)
    import ember._core.device as device

    assert not hasattr(device, "array_module")


def _dict_out(x):
    return {"a": x * 2}


def test_jit_trace_strict_dict_output_as_torch():
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (torch, ember):
        with pytest.warns(DeprecationWarning), pytest.raises(RuntimeError) as e:
            lib.jit.trace(_dict_out, (lib.ones(2),))
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]
    # strict=False: the dict is recorded (prim::DictConstruct) and the traced function returns it
    for lib in (torch, ember):
        with pytest.warns(DeprecationWarning):
            traced = lib.jit.trace(_dict_out, (lib.ones(2),), strict=False)
        got = traced(lib.arange(3.0))
        assert list(got) == ["a"] and got["a"].tolist() == [0.0, 2.0, 4.0]


def test_jit_trace_optimize_deprecated_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match="`optimize` is deprecated and has no effect"):
            with pytest.warns(DeprecationWarning):
                lib.jit.trace(lambda x: x * 2, (lib.ones(2),), optimize=True)


def _noisy(lib):
    class Noisy(lib.nn.Module):
        # the graph is the same on every trace (aten::rand is a node); the outputs of the
        # check's run differ from the Python module's by less than 1e-4
        def forward(self, x):
            return x + 1e-4 * lib.rand(2)

    return Noisy()


def _check_warnings(lib, tolerance):
    import warnings

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        lib.jit.trace(_noisy(lib), (lib.ones(2),), check_tolerance=tolerance)
    return [
        str(w.message).split(".")[0] for w in got if "TracerWarning" in type(w.message).__name__
    ]


def test_jit_trace_module_honours_check_tolerance():
    # (a module whose graph changes between traces raises "Graphs differed" whatever the
    # tolerance, as torch's; the tolerance decides whether differing outputs warn)
    torch = pytest.importorskip("torch")
    for tol in (1e-2, 1e-6):
        assert _check_warnings(ember, tol) == _check_warnings(torch, tol)
    assert not any(w.startswith("Output nr") for w in _check_warnings(ember, 1e-2))
    assert any(w.startswith("Output nr 1") for w in _check_warnings(ember, 1e-6))
