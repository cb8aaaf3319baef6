"""Oracle tests: ``ember.profiler`` / ``ember.autograd.profiler`` against torch's profiler.

The same small programs run under both libraries; we compare structure, never timings: event
names and their nesting, backward-node events, counts, self-time and memory invariants, the
table's header and footer, ``sort_by`` keys and errors, the schedule's step -> action sequence,
``on_trace_ready`` calls, and the Chrome trace's JSON schema.
"""

import json
import os
import re
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember._ops import registry
from ember.autograd import engine
from tests.oracle.helper import torch

# ------------------------------------------------------------------------------ programs


def _mlp_step(lib):
    """Forward and backward of a Linear-ReLU-Linear model under profile(); return the profile."""
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    x = lib.randn(3, 4)
    P = lib.profiler
    with P.profile(
        activities=[P.ProfilerActivity.CPU], record_shapes=True, profile_memory=True
    ) as prof:
        with P.record_function("model_inference"):
            y = model(x).sum()
        y.backward()
    return prof


def _engine_names(prof):
    """The backward-engine events, in order (the ones not named after an aten op)."""
    return [
        e.name for e in prof.events() if not e.name.startswith("aten::") and e.name != "[memory]"
    ]


@pytest.fixture(scope="module")
def mlp():
    return _mlp_step(ember), _mlp_step(torch)


def test_backward_node_events_match_torch(mlp):
    e, t = mlp
    en = [n for n in _engine_names(e) if n != "model_inference"]
    tn = [n for n in _engine_names(t) if n != "model_inference" and n != "detach"]
    assert en == tn
    assert en[:2] == ["autograd::engine::evaluate_function: SumBackward0", "SumBackward0"]


def test_forward_op_names_are_torch_names(mlp):
    e, t = mlp
    torch_names = {x.name for x in t.events()}
    (root,) = [x for x in e.events() if x.name == "model_inference"]
    children = [c.name for c in root.cpu_children]
    # the composite aten::linear around aten::t + aten::addmm, as torch's
    (troot,) = [x for x in t.events() if x.name == "model_inference"]
    assert children == [c.name for c in troot.cpu_children]
    assert children == ["aten::linear", "aten::relu", "aten::linear", "aten::sum"]
    linear = root.cpu_children[0]
    assert [c.name for c in linear.cpu_children] == ["aten::t", "aten::addmm"]
    assert set(children) <= torch_names


def test_backward_nesting_as_torch(mlp):
    for prof in mlp:
        for ev in prof.events():
            if ev.name.startswith("autograd::engine::evaluate_function: "):
                node = ev.name.split(": ", 1)[1]
                assert ev.cpu_parent is None
                assert ev.cpu_children[0].name == node
                assert ev.cpu_children[0].scope == 1 and ev.scope == 0
                assert ev.cpu_children[0].sequence_nr == ev.sequence_nr


def test_sequence_numbers_link_forward_and_backward(mlp):
    e, _ = mlp
    fwd = {x.sequence_nr: x.name for x in e.events() if x.name.startswith("aten::")}
    pairs = {
        x.name: fwd.get(x.sequence_nr) for x in e.events() if x.scope == 1 and x.sequence_nr >= 0
    }
    assert pairs == {
        "SumBackward0": "aten::sum",
        "AddmmBackward0": "aten::addmm",
        "ReluBackward0": "aten::relu",
        "TBackward0": "aten::t",
    }


def test_self_time_is_own_minus_children(mlp):
    e, _ = mlp
    events = e.events()
    for ev in events:
        kids = sum(c.cpu_time_total for c in ev.cpu_children)
        assert ev.self_cpu_time_total == pytest.approx(ev.cpu_time_total - kids)
        for c in ev.cpu_children:
            assert ev.time_range.start <= c.time_range.start <= c.time_range.end
            assert c.time_range.end <= ev.time_range.end
    top = sum(ev.cpu_time_total for ev in events if ev.cpu_parent is None)
    assert events.self_cpu_time_total == pytest.approx(top)
    avg = e.key_averages()
    assert sum(a.self_cpu_time_total for a in avg) == pytest.approx(top)
    assert e.events().total_average().key == "Total"


def test_key_averages_counts_and_fields(mlp):
    e, t = mlp
    ea = {a.key: a for a in e.key_averages()}
    ta = {a.key: a for a in t.key_averages()}
    for key in ("model_inference", "aten::addmm", "aten::relu", "SumBackward0", "TBackward0"):
        assert ea[key].count == ta[key].count, key
    assert ea["aten::t"].count == 2  # torch's 9 include the t's inside linear and backward
    a = ea["aten::addmm"]
    assert a.cpu_time == pytest.approx(a.cpu_time_total / a.count)
    assert a.cpu_time_total_str.endswith(("us", "ms", "s"))
    assert a.input_shapes == "" and ta["aten::addmm"].input_shapes == ""
    assert repr(a).startswith("<FunctionEventAvg key=aten::addmm self_cpu_time=")


def test_memory_matches_torch_for_fresh_results(mlp):
    e, t = mlp
    ea = {a.key: a for a in e.key_averages()}
    ta = {a.key: a for a in t.key_averages()}
    for key in ("aten::addmm", "aten::relu", "model_inference", "AddmmBackward0"):
        assert ea[key].cpu_memory_usage == ta[key].cpu_memory_usage, key
    for ev in e.events():
        kids = sum(c.cpu_memory_usage for c in ev.cpu_children)
        assert ev.self_cpu_memory_usage == ev.cpu_memory_usage - kids
    assert ea["aten::t"].cpu_memory_usage == 0  # a view allocates nothing


def test_group_by_input_shape(mlp):
    e, t = mlp
    rows = {}
    for lib, prof in (("ember", e), ("torch", t)):
        for a in prof.key_averages(group_by_input_shape=True):
            rows.setdefault(lib, {})[(a.key, str(a.input_shapes))] = a.count
    assert rows["torch"][("aten::relu", "[[3, 8]]")] == rows["ember"][("aten::relu", "[[3, 8]]")]
    # torch's addmm has two more (scalar) arguments: beta, alpha
    assert rows["torch"][("aten::addmm", "[[8], [3, 4], [4, 8], [], []]")] == 1
    assert rows["ember"][("aten::addmm", "[[8], [3, 4], [4, 8]]")] == 1
    assert rows["ember"][("aten::addmm", "[[2], [3, 8], [8, 2]]")] == 1


# ------------------------------------------------------------------------------ the table


def _columns(line):
    return [c for c in re.split(r"\s{2,}", line.strip()) if c]


@pytest.mark.parametrize(
    "kw, shapes",
    [({}, False), ({"profile_memory": True}, False), ({"record_shapes": True}, True)],
)
def test_table_layout_as_torch(kw, shapes):
    def run(lib):
        x = lib.ones(4, 4)
        with lib.profiler.profile(**kw) as p:
            with lib.profiler.record_function("block"):
                (x * 2).relu()
        return p.key_averages(group_by_input_shape=shapes).table(row_limit=20)

    et, tt = run(ember).splitlines(), run(torch).splitlines()
    assert _columns(et[1]) == _columns(tt[1])
    assert set(et[0]) == {"-", " "} and set(et[2]) == {"-", " "} and set(et[-2]) == {"-", " "}
    # the name column fits the longest name, the shapes column the longest shapes
    widths = slice(1, -1) if shapes else slice(1, None)
    assert [len(c) for c in et[0].split()][widths] == [len(c) for c in tt[0].split()][widths]
    assert re.fullmatch(r"Self CPU time total: \d+\.\d{3}(us|ms|s)", et[-1])
    assert et[3].split()[0] == "block"
    row = _columns(et[3])
    assert row[1].endswith("%") and row[-2 if shapes else -1] == "1"


def test_table_name_column_width_and_row_limit():
    t = ember.ones(3)
    with ember.profiler.profile() as p:
        with ember.profiler.record_function("x" * 80):
            t + 1
        t * 2
    table = p.key_averages().table(row_limit=1)
    lines = table.splitlines()
    assert len(lines) == 6  # sep, header, sep, one row, sep, footer
    assert lines[3].lstrip().startswith("x" * 52 + "...")
    assert len(lines[0].split()[0]) == 55


@pytest.mark.parametrize(
    "key",
    [
        "cpu_time_total",
        "self_cpu_time_total",
        "cpu_time",
        "count",
        "cpu_memory_usage",
        "self_cpu_memory_usage",
        "cuda_time_total",
        "self_cuda_time_total",
        "device_time_total",
    ],
)
def test_sort_by_keys(mlp, key):
    e, t = mlp
    t.key_averages().table(sort_by=key, row_limit=2)  # torch accepts the key
    table = e.key_averages().table(sort_by=key, row_limit=100)
    attr = key.replace("cuda", "device")
    values = [getattr(a, attr) for a in e.key_averages()]
    assert len(table.splitlines()) == 5 + len(values)
    if key == "count":
        counts = [int(_columns(line)[-1]) for line in table.splitlines()[3:-2]]
        assert counts == sorted(counts, reverse=True)


def test_sort_by_bad_key_raises_as_torch(mlp):
    e, t = mlp
    with pytest.raises(AttributeError) as te:
        t.key_averages().table(sort_by="bogus")
    with pytest.raises(AttributeError) as ee:
        e.key_averages().table(sort_by="bogus")
    assert str(ee.value) == str(te.value)


def test_empty_profile_table_is_empty():
    for lib in (ember, torch):
        with lib.profiler.profile() as p:
            pass
        assert p.key_averages().table() == ""


# ------------------------------------------------------------------------------ schedule


@settings(max_examples=40, deadline=None)
@given(
    wait=st.integers(0, 3),
    warmup=st.integers(0, 3),
    active=st.integers(1, 3),
    repeat=st.integers(0, 3),
    skip_first=st.integers(0, 3),
    skip_first_wait=st.integers(0, 1),
)
def test_schedule_actions_as_torch(wait, warmup, active, repeat, skip_first, skip_first_wait):
    kw = dict(
        wait=wait,
        warmup=warmup,
        active=active,
        repeat=repeat,
        skip_first=skip_first,
        skip_first_wait=skip_first_wait,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es, ts = ember.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    assert [es(i).name for i in range(30)] == [ts(i).name for i in range(30)]


def test_schedule_errors_and_warnings_as_torch():
    for lib in (ember, torch):
        with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
            lib.profiler.schedule(wait=0, warmup=0, active=0)
        with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
            lib.profiler.schedule(wait=1, warmup=0, active=1)
    assert [a.name for a in ember.profiler.ProfilerAction] == [
        a.name for a in torch.profiler.ProfilerAction
    ]


def _scheduled_loop(lib, n_steps=9, **sched):
    log = []

    def ready(prof):
        names = [e.name for e in prof.events()]
        steps = [e.trace_name for e in prof.events() if e.name == "ProfilerStep*"]
        log.append((prof.step_num, steps, names.count("aten::mul")))

    x = lib.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(
            schedule=lib.profiler.schedule(**sched), on_trace_ready=ready
        ) as prof:
            for _ in range(n_steps):
                x * 2
                prof.step()
    return log


@pytest.mark.parametrize(
    "sched",
    [
        dict(wait=1, warmup=1, active=2),
        dict(wait=1, warmup=1, active=2, repeat=1),
        dict(wait=0, warmup=0, active=1, repeat=2, skip_first=2),
        dict(wait=2, warmup=1, active=3, skip_first=1, skip_first_wait=1),
    ],
)
def test_schedule_trace_ready_as_torch(sched):
    assert _scheduled_loop(ember, **sched) == _scheduled_loop(torch, **sched)


def test_start_stop_step_api():
    x = ember.ones(2)
    prof = ember.profiler.profile()
    prof.start()
    x + 1
    prof.step()  # without a schedule: keeps recording, no ProfilerStep ranges
    x - 1
    prof.stop()
    names = [e.name for e in prof.events()]
    assert names == ["aten::add", "aten::sub"]
    assert registry._OBSERVERS == [] and engine.NODE_PROFILER == []


# ------------------------------------------------------------------------------ traces


def _trace(lib, path):
    x = lib.ones(2, 3, requires_grad=True)
    with lib.profiler.profile(record_shapes=True, profile_memory=True) as p:
        with lib.profiler.record_function("blk"):
            y = (x * 2).sum()
        y.backward()
    p.export_chrome_trace(str(path))
    with open(path) as f:
        return json.load(f)


def test_chrome_trace_schema_as_torch(tmp_path):
    e, t = _trace(ember, tmp_path / "e.json"), _trace(torch, tmp_path / "t.json")
    assert set(e) <= set(t) and {"traceEvents", "schemaVersion", "displayTimeUnit"} <= set(e)
    xs = [ev for ev in e["traceEvents"] if ev["ph"] == "X"]
    xs = [ev for ev in xs if ev["cat"] != "Trace"]
    txs = [ev for ev in t["traceEvents"] if ev["ph"] == "X" and ev["cat"] != "Trace"]
    for ev in xs:
        assert set(ev) == {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"}
        assert isinstance(ev["ts"], float) and ev["dur"] >= 0
    assert set(xs[0]) == set(txs[0])
    assert [ev["cat"] for ev in xs if ev["name"] == "blk"] == ["user_annotation"]
    names = [ev["name"] for ev in xs]
    tnames = [ev["name"] for ev in txs]
    assert [n for n in names if not n.startswith("aten::")] == [
        n for n in tnames if not n.startswith("aten::") and n != "detach"
    ]
    mul = next(ev for ev in xs if ev["name"] == "aten::mul")
    tmul = next(ev for ev in txs if ev["name"] == "aten::mul")
    for key in ("Input Dims", "Input type", "Input Strides"):
        assert mul["args"][key] == tmul["args"][key], key
    assert set(mul["args"]) <= set(tmul["args"])
    node = next(ev for ev in xs if ev["name"] == "MulBackward0")
    tnode = next(ev for ev in txs if ev["name"] == "MulBackward0")
    for key in ("Input Dims", "Input type", "Input Strides", "Fwd thread id"):
        assert node["args"][key] == tnode["args"][key], key
    flows = [(ev["ph"], ev["cat"]) for ev in e["traceEvents"] if ev.get("cat") == "fwdbwd"]
    tflows = [(ev["ph"], ev["cat"]) for ev in t["traceEvents"] if ev.get("cat") == "fwdbwd"]
    assert sorted(flows) == sorted(tflows)
    spans = [ev["name"] for ev in e["traceEvents"] if ev.get("cat") == "Trace"]
    assert spans == [ev["name"] for ev in t["traceEvents"] if ev.get("cat") == "Trace"]
    mem = [ev for ev in e["traceEvents"] if ev["ph"] == "i"]
    assert mem and set(mem[0]["args"]) <= set(
        next(ev for ev in t["traceEvents"] if ev["ph"] == "i")["args"]
    )


def test_event_list_export_chrome_trace(tmp_path):
    with ember.profiler.profile() as p:
        ember.ones(2) + 1
    path = tmp_path / "ev.json"
    p.events().export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    assert [d["name"] for d in data] == ["aten::add"]
    assert data[0]["ph"] == "X" and data[0]["pid"] == "CPU functions"


def test_tensorboard_trace_handler_writes_files(tmp_path):
    x = ember.ones(3)
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")
    with ember.profiler.profile(
        schedule=ember.profiler.schedule(wait=0, warmup=1, active=1, repeat=2),
        on_trace_ready=handler,
    ) as prof:
        for _ in range(5):
            x * 3
            prof.step()
    files = sorted(os.listdir(tmp_path / "tb"))
    assert len(files) == 2
    assert all(re.fullmatch(r"w0\.\d+\.pt\.trace\.json", f) for f in files)
    data = json.loads((tmp_path / "tb" / files[0]).read_text())
    names = [ev["name"] for ev in data["traceEvents"] if ev["ph"] == "X" and ev["cat"] != "Trace"]
    assert names == ["ProfilerStep#1", "aten::mul"]


def test_recording_options_kept_and_flags_in_metadata_as_torch(tmp_path):
    # every option is kept as the attribute of its name; the set flags reach the trace metadata
    opts = dict(record_shapes=True, with_stack=True, with_flops=True, acc_events=True)
    opts.update(experimental_config=None, custom_trace_id_callback=None)
    opts["post_processing_timeout_s"] = 2.5

    def run(lib, path):
        with lib.profiler.profile(**opts) as prof:
            lib.ones(2) * 2
        prof.export_chrome_trace(path)
        names = list(opts) + ["profile_memory", "with_modules", "execution_trace_observer"]
        data = json.loads(open(path).read())
        flags = {k: v for k, v in data.items() if k in names}
        return {n: getattr(prof, n) for n in names}, flags, sorted(map(str, prof.activities))

    assert run(ember, str(tmp_path / "e.json")) == run(torch, str(tmp_path / "t.json"))


def test_legacy_profile_keeps_its_options_as_torch():
    names = ["record_shapes", "with_flops", "profile_memory", "with_stack", "with_modules"]
    # (not experimental_config: torch fills in its C++ _ExperimentalConfig, ember keeps None)
    names += ["use_cpu", "acc_events", "post_processing_timeout_s"]
    names += ["custom_trace_id_callback", "use_device", "enabled"]

    def kept(lib):
        p = lib.autograd.profiler.profile(with_flops=True, with_stack=True, acc_events=True)
        return {n: getattr(p, n) for n in names}

    assert kept(ember) == kept(torch)


def test_function_event_keeps_its_arguments_as_torch():
    kw = dict(id=3, name="aten::mul", thread=7, start_us=10, end_us=25, overload_name="Tensor")
    kw.update(input_shapes=[[2, 3]], stack=["a.py(1): f"], scope=1, cpu_memory_usage=64)
    kw.update(is_async=False, sequence_nr=5, node_id=2, flops=12, trace_name="mul")
    fields = list(kw) + ["device_memory_usage", "is_remote", "device_index", "is_legacy"]
    fields += ["fwd_thread", "use_device", "kwinputs", "concrete_inputs", "is_user_annotation"]
    fields += ["device_resource_id", "count", "kernels", "cpu_children", "cpu_parent"]
    fields.remove("start_us")
    fields.remove("end_us")

    def kept(lib):
        ev = lib.autograd.profiler_util.FunctionEvent(**kw)
        out = {f: getattr(ev, f) for f in fields}
        return out, (ev.time_range.start, ev.time_range.end), str(ev.device_type)

    assert kept(ember) == kept(torch)


@pytest.mark.parametrize("use_gzip", [False, True])
def test_tensorboard_trace_handler_default_name_as_torch(tmp_path, use_gzip):
    import socket

    def files(lib):
        out = tmp_path / lib.__name__
        handler = lib.profiler.tensorboard_trace_handler(str(out), use_gzip=use_gzip)
        for _ in range(2):  # the default worker name is the same for every trace
            with lib.profiler.profile(on_trace_ready=handler):
                lib.ones(2) + 1
        return sorted(os.listdir(out))

    ext = r"\.pt\.trace\.json" + (r"\.gz" if use_gzip else "")
    pattern = re.escape(f"{socket.gethostname()}_{os.getpid()}") + r"\.\d+" + ext
    for lib in (ember, torch):
        names = files(lib)
        assert len(names) == 2 and all(re.fullmatch(pattern, n) for n in names), names


# ------------------------------------------------------------------------------ CUDA, legacy API


def test_cuda_activity_warns_as_torch():
    def run(lib):
        P = lib.profiler
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA]) as p:
                lib.ones(2) + 1
        return [str(x.message) for x in w], [a.key for a in p.key_averages()]

    (ew, ek), (tw, tk) = run(ember), run(torch)
    assert ew == tw == ["CUDA is not available, disabling CUDA profiling"]
    assert "aten::add" in ek and "aten::add" in tk
    assert ember.profiler.supported_activities() == {ember.profiler.ProfilerActivity.CPU}
    assert [(a.name, a.value) for a in ember.profiler.ProfilerActivity] == sorted(
        [(k, int(v.value)) for k, v in torch.profiler.ProfilerActivity.__members__.items()],
        key=lambda kv: kv[1],
    )


def test_legacy_autograd_profiler():
    def run(lib):
        x = lib.ones(2, 2, requires_grad=True)
        with lib.autograd.profiler.profile(record_shapes=True) as prof:
            y = x**2
            with lib.autograd.profiler.record_function("label-z"):
                z = y.sum()
            z.backward()
        keys = [a.key for a in prof.key_averages()]
        return prof, keys

    (ep, ek), (tp, tk) = run(ember), run(torch)
    assert {"aten::pow", "label-z", "aten::sum", "PowBackward0", "SumBackward0"} <= set(ek)
    assert set(ek) <= set(tk)
    assert _columns(ep.table().splitlines()[1]) == _columns(tp.table().splitlines()[1])
    assert ep.self_cpu_time_total > 0
    assert ep.total_average().count == len(ep.function_events)
    assert str(ep).startswith("-")


def test_legacy_profile_state_errors():
    for lib in (ember, torch):
        p = lib.autograd.profiler.profile()
        with p:
            assert repr(p) == "<unfinished torch.autograd.profile>"
            with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
                p.__enter__()
        off = lib.autograd.profiler.profile(enabled=False)
        with off as inner:
            assert inner is None


def test_legacy_use_cuda_warnings_as_torch():
    def run(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.autograd.profiler.profile(use_cuda=True)
            lib.autograd.profiler.profile(use_device="tpu")
        return [(x.category, str(x.message)) for x in w]

    assert run(ember) == run(torch)


def test_record_function_as_decorator_and_without_profiler():
    @ember.profiler.record_function("my_fn")
    def f(x):
        return x * 2

    x = ember.ones(3)
    assert f(x).tolist() == [2.0, 2.0, 2.0]  # no profiler: plain call
    with ember.profiler.record_function("outside"):
        pass
    with ember.profiler.profile() as p:
        f(x)
        f(x)
    evs = p.events()
    assert [e.name for e in evs] == ["my_fn", "aten::mul", "my_fn", "aten::mul"]
    assert evs[1].cpu_parent is evs[0] and evs[0].is_user_annotation and evs[0].scope == 7


def test_with_stack_and_export_stacks(tmp_path):
    x = ember.ones(3)

    def my_model_fn(t):
        return t * 2

    with ember.profiler.profile(with_stack=True) as p:
        my_model_fn(x)
    (ev,) = p.events()
    assert re.fullmatch(r".*test_profiler\.py\(\d+\): my_model_fn", ev.stack[0])
    path = tmp_path / "stacks.txt"
    p.export_stacks(str(path), "self_cpu_time_total")
    line = path.read_text().splitlines()[0]
    assert line.split(";")[-1].startswith(ev.stack[0].replace(" ", "_"))
    rows = p.key_averages(group_by_stack_n=1).table()
    assert "Source Location" in rows.splitlines()[1]


# ------------------------------------------------------------------------------ profiler off


def test_observer_removed_after_exit_and_on_exception():
    assert registry._OBSERVERS == [] and engine.NODE_PROFILER == []
    with pytest.raises(ValueError, match="boom"):
        with ember.profiler.profile():
            ember.ones(2) + 1
            raise ValueError("boom")
    assert registry._OBSERVERS == [] and engine.NODE_PROFILER == []
    with pytest.raises(RuntimeError):
        with ember.autograd.profiler.profile() as p:
            ember.ones(2) + ember.ones(3)
    assert [e.name for e in p.function_events] == ["aten::add"]
    assert registry._OBSERVERS == [] and engine.NODE_PROFILER == []


def test_results_unchanged_by_profiling():
    def run():
        ember.manual_seed(1)
        m = ember.nn.Sequential(ember.nn.Linear(3, 5), ember.nn.Tanh(), ember.nn.Linear(5, 1))
        x = ember.randn(4, 3)
        loss = m(x).pow(2).mean()
        loss.backward()
        return loss.item(), [p.grad.numpy().copy() for p in m.parameters()]

    plain = run()
    with ember.profiler.profile(record_shapes=True, profile_memory=True, with_stack=True):
        profiled = run()
    assert plain[0] == profiled[0]
    for a, b in zip(plain[1], profiled[1]):
        np.testing.assert_array_equal(a, b)


def test_nested_profilers_and_threads():
    x = ember.ones(2)
    with ember.profiler.profile() as outer:
        x + 1
        with ember.autograd.profiler.profile() as inner:
            x * 2
        t = threading.Thread(target=lambda: x - 1)
        t.start()
        t.join()
    assert [e.name for e in inner.function_events] == ["aten::mul"]
    evs = outer.events()
    assert [e.name for e in evs] == ["aten::add", "aten::mul", "aten::sub"]
    assert evs[2].thread != evs[0].thread and evs[2].cpu_parent is None


def test_create_graph_backward_ops_nest_under_node():
    x = ember.ones(3, requires_grad=True)
    with ember.profiler.profile() as p:
        (g,) = ember.autograd.grad((x * x).sum(), x, create_graph=True)
    node = next(e for e in p.events() if e.name == "MulBackward0")
    assert {c.name for c in node.cpu_children} == {"aten::mul"}
    assert g.tolist() == [2.0, 2.0, 2.0]


def test_with_flops_as_torch():
    def run(lib):
        a, b, c = lib.ones(3, 4), lib.ones(4, 5), lib.ones(5)
        ba, bb = lib.ones(2, 3, 4), lib.ones(2, 4, 5)
        w, im = lib.ones(6, 2, 3, 3), lib.ones(1, 2, 8, 8)
        with lib.profiler.profile(with_flops=True) as p:
            a @ b
            lib.addmm(c, a, b)
            lib.baddbmm(lib.ones(2, 3, 5), ba, bb)
            a * 2
            a + a
            lib.nn.functional.conv2d(im, w)
            lib.nn.functional.conv2d(im, w, stride=2, padding=1)
        flops = {}
        for e in p.events():
            flops[e.name] = flops.get(e.name, 0) + e.flops
        return flops, p.key_averages().table().splitlines()[1]

    (ef, eh), (tf, th) = run(ember), run(torch)
    assert sum(ef.values()) == sum(tf.values())
    for name in ("aten::addmm", "aten::baddbmm", "aten::mul", "aten::add"):
        assert ef[name] == tf[name], name
    # torch counts the convolutions on aten::conv2d and the product on aten::mm; ember's ops
    # are aten::convolution and aten::matmul
    assert ef["aten::convolution"] == tf["aten::conv2d"]
    assert ef["aten::matmul"] == tf["aten::mm"]
    assert _columns(eh) == _columns(th) and _columns(eh)[-1] == "Total FLOPs"


def test_uninitialized_profiler_and_annotation_managers_as_torch():
    for lib in (ember, torch):
        p = lib.profiler.profile()
        with pytest.raises(AssertionError, match="Profiler must be initialized before accessing"):
            p.events()
        with pytest.raises(AssertionError, match="initialized before getting key averages"):
            p.key_averages()
        legacy = lib.autograd.profiler.profile()
        assert repr(legacy) == "<unfinished torch.autograd.profile>"
        assert len(legacy.function_events) == 0 and legacy.table() == ""
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            with lib.autograd.profiler.emit_nvtx():
                pass
        with lib.autograd.profiler.emit_itt():
            lib.ones(2) + 1


def test_table_header_top_level_and_time_unit_as_torch():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        with lib.profiler.profile() as p:
            with lib.profiler.record_function("outer"):
                (x * 2).sum().backward()
        table = p.key_averages().table(
            header="HDR", top_level_events_only=True, time_unit="ms", max_name_column_width=30
        )
        return table.splitlines()

    e, t = run(ember), run(torch)
    assert e[1] == t[1] == "HDR" and e[3] == t[3]
    assert set(e[0]) == {"="} and len(e[0]) == len(e[2]) == len(t[0])
    ms = re.compile(r"\d+\.\d{3}ms")
    assert all(ms.fullmatch(c) for c in _columns(e[7])[2:6:2])
    assert e[-1].startswith("Self CPU time total: ") and e[-1].endswith("ms")
    top = {_columns(line)[0] for line in e[7:-2]}
    assert top == {c for c in (_columns(line)[0] for line in t[7:-2]) if c in top}
    assert "aten::mul" not in top and "outer" in top


def test_custom_function_backward_events_as_torch():
    def run(lib):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = lib.ones(3, requires_grad=True)
        with lib.profiler.profile() as p:
            Sq.apply(x).sum().backward()
        node = next(e for e in p.events() if e.name == "SqBackward")
        return _engine_names(p), [c.name for c in node.cpu_children]

    (en, ec), (tn, tc) = run(ember), run(torch)
    # (torch's "detach" is an internal op of its Function.apply)
    assert en == [n for n in tn if n != "detach"]
    assert "Sq" in en
    assert ec == tc == ["aten::mul", "aten::mul"]


def test_optimizer_and_dataloader_ranges_as_torch():
    def run(lib):
        m = lib.nn.Linear(3, 2)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        ds = lib.utils.data.TensorDataset(lib.ones(8, 3))
        with lib.profiler.profile() as p:
            for (x,) in lib.utils.data.DataLoader(ds, batch_size=4):
                opt.zero_grad()
                m(x).sum().backward()
                opt.step()
        names = [e.name for e in p.events()]
        return sorted({n for n in names if "#" in n}), names.count("Optimizer.step#SGD.step")

    assert (
        run(ember)
        == run(torch)
        == (
            [
                "Optimizer.step#SGD.step",
                "Optimizer.zero_grad#SGD.zero_grad",
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            ],
            2,
        )
    )


_TABLE_OPS = """add mul addmm matmul baddbmm convolution relu sum expand t transpose view reshape
cat stack max_pool2d_with_indices native_batch_norm nll_loss _log_softmax entr erfcx i0e i1e
log_ndtr ndtr ndtri xlog1py unique pack_padded_sequence adaptive_avg_pool2d_backward
upsample_upsamplenearest2d upsample_upsamplebilinear2d upsample_upsamplenearestexact1d
upsample_upsampletrilinear3d_backward upsample_bilinear2d_aa upsample_bicubic2d_aa_backward
rnn_layer convolution_weight index_backward prod_others normal_cdf as_strided_backward""".split()


def test_op_names_map_to_aten_ops():
    from ember.profiler._recorder import aten_name

    for op in _TABLE_OPS:
        name = aten_name(op)
        ns, base = name.split("::")
        assert ns in ("aten", "ember"), name
        assert hasattr(torch.ops.aten, base) == (ns == "aten"), name
    assert aten_name("upsample_upsamplenearest2d") == "aten::upsample_nearest2d"
    assert aten_name("upsample_upsamplenearestexact1d") == "aten::_upsample_nearest_exact1d"


def test_gzip_trace_and_profiler_util(tmp_path):
    import gzip

    from ember.autograd import profiler_util

    with ember.profiler.profile() as p:
        ember.ones(2) * 3
    path = tmp_path / "t.json.gz"
    p.export_chrome_trace(str(path))
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    assert [e["name"] for e in data["traceEvents"] if e.get("cat") == "cpu_op"] == ["aten::mul"]
    tu = torch.autograd.profiler_util
    for fmt in ("_format_time", "_format_memory"):
        for v in (0, 5, 1023, 1024, 2048.5, 1e6, 3 * 1024**3, -2048):
            assert getattr(profiler_util, fmt)(v) == getattr(tu, fmt)(v), (fmt, v)
    assert profiler_util._format_time_share(1, 3) == tu._format_time_share(1, 3)
    assert isinstance(p.events(), profiler_util.EventList)


def test_activity_errors_as_torch():
    def run(lib):
        P, out = lib.profiler, []
        cases = [
            lambda: P.profile(activities=[P.ProfilerActivity.CUDA]).__enter__(),
            lambda: P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CPU]),
            lambda: P.profile(activities=[]),
        ]
        for case in cases:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    case()
                    out.append(None)
                except Exception as exc:  # noqa: BLE001 - the error is the result compared
                    out.append((type(exc), str(exc)))
        return out

    assert run(ember) == run(torch)
    assert registry._OBSERVERS == [] and engine.NODE_PROFILER == []
