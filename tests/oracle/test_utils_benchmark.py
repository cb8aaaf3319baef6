"""``ember.utils.benchmark`` against ``torch.utils.benchmark``.

Measurements built from the same raw times must agree in every statistic, their repr and the
``Compare`` tables. Timers driven by a fake clock (each execution of the statement advances it by
a fixed step) must choose the same block sizes and record the same times as torch's.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import ember
import ember.utils.benchmark as eb

torch = pytest.importorskip("torch")
import torch.utils.benchmark as tb  # noqa: E402

_rng = np.random.default_rng(0)


def _both_measurements(raw_times, number=10, **spec):
    spec.setdefault("stmt", "x + y")
    spec.setdefault("setup", "pass")
    return (
        tb.Measurement(number, list(raw_times), tb.TaskSpec(**spec)),
        eb.Measurement(number, list(raw_times), eb.TaskSpec(**spec)),
    )


def _repr(m) -> str:
    return re.sub(r"^<[\w.]+\.Measurement object at 0x[0-9a-f]+>", "<Measurement>", repr(m))


_SPECS = [
    {},
    {"label": "add", "sub_label": "float", "description": "n=4"},
    {"stmt": "a = 1\nb = a + 2", "setup": "import math\nx = 1", "num_threads": 4},
    {"stmt": "f(x)", "setup": "x = 2", "sub_label": "s", "env": "A"},
    {"stmt": "a\nb", "sub_label": "sub", "description": "desc"},
]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 40])
@pytest.mark.parametrize("spec", range(len(_SPECS)))
@pytest.mark.parametrize("scale", [3e-9, 5e-7, 2e-4, 0.03, 2.0])
def test_measurement_stats_and_repr(n, spec, scale):
    raw = (scale * (1 + 0.3 * _rng.random(n))).tolist()
    t, e = _both_measurements(raw, number=7, **_SPECS[spec])
    assert e.times == t.times
    assert e.median == t.median
    assert e.mean == pytest.approx(t.mean, rel=1e-14)
    assert e.iqr == t.iqr
    assert e.significant_figures == t.significant_figures
    assert e.has_warnings == t.has_warnings
    assert e.meets_confidence() == t.meets_confidence()
    assert e.meets_confidence(0.5) == t.meets_confidence(0.5)
    assert (e.title, e.env, e.as_row_name, e.num_threads, e.stmt, e.label) == (
        t.title,
        t.env,
        t.as_row_name,
        t.num_threads,
        t.stmt,
        t.label,
    )
    assert _repr(e) == _repr(t)


def test_measurement_low_variance_has_no_warning():
    raw = [1e-3 * (1 + 1e-4 * i) for i in range(20)]
    t, e = _both_measurements(raw)
    assert not e.has_warnings and not t.has_warnings
    assert _repr(e) == _repr(t)
    assert e.significant_figures == t.significant_figures == 3


def test_measurement_pickles():
    import pickle

    _, e = _both_measurements([1e-3, 2e-3, 3e-3, 4e-3], label="L", description="d")
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.raw_times, e2.number_per_run, e2.task_spec) == (e.raw_times, 10, e.task_spec)
    assert _repr(e2) == _repr(e)


def test_merge_and_helpers():
    spec = {"stmt": "s", "setup": "pass", "label": "L"}
    tm = [tb.Measurement(n, [1e-3 * n, 2e-3], tb.TaskSpec(**spec)) for n in (2, 5)]
    em = [eb.Measurement(n, [1e-3 * n, 2e-3], eb.TaskSpec(**spec)) for n in (2, 5)]
    tm.append(tb.Measurement(3, [1e-3], tb.TaskSpec("other", "pass")))
    em.append(eb.Measurement(3, [1e-3], eb.TaskSpec("other", "pass")))
    tmerged, emerged = tb.Measurement.merge(tm), eb.Measurement.merge(em)
    assert [(m.number_per_run, m.raw_times, m.stmt) for m in emerged] == [
        (m.number_per_run, m.raw_times, m.stmt) for m in tmerged
    ]
    for x in (3.14159, 0.000123456, 98765.4321, 1.0, 2.5e-8):
        for k in (1, 2, 3, 4):
            assert eb.trim_sigfig(x, k) == tb.trim_sigfig(x, k)
        assert eb.select_unit(x) == tb.select_unit(x)
    for u in ("ns", "us", "ms", "s"):
        assert eb.unit_to_english(u) == tb.unit_to_english(u)
    assert eb.ordered_unique([3, 1, 3, 2, 1]) == tb.ordered_unique([3, 1, 3, 2, 1])
    with pytest.raises(AssertionError, match="must be an integer"):
        eb.trim_sigfig(1.0, 1.5)


def _compare_measurements(lib_b, seed):
    rng = np.random.default_rng(seed)
    out = []
    for label in ("add", "mul"):
        for threads in (1, 4):
            for sub in ("float", "int", None):
                for j, desc in enumerate(("n=1", "n=1000", "n=100000")):
                    if (label, sub, desc) == ("mul", "int", "n=1"):
                        continue  # a missing cell
                    base = 1e-6 * 10**j * (2 if sub == "int" else 1) / threads
                    noise = 0.02 if sub != "float" or j != 1 else 0.6
                    raw = (base * 100 * (1 + noise * rng.random(9))).tolist()
                    spec = lib_b.TaskSpec(
                        stmt=f"x.{label}(y)",
                        setup="pass",
                        label=label,
                        sub_label=sub,
                        description=desc,
                        num_threads=threads,
                    )
                    out.append(lib_b.Measurement(100, raw, spec))
    return out


@pytest.mark.parametrize(
    "options",
    [(), ("trim",), ("color",), ("rowcolor",), ("warn",), ("trim", "color", "warn")],
)
def test_compare_table(options, capsys):
    tables = []
    for lib_b in (tb, eb):
        c = lib_b.Compare(_compare_measurements(lib_b, 3))
        if "trim" in options:
            c.trim_significant_figures()
        if "color" in options:
            c.colorize()
        if "rowcolor" in options:
            c.colorize(rowwise=True)
        if "warn" in options:
            c.highlight_warnings()
        c.print()
        tables.append((str(c), capsys.readouterr().out))
    assert tables[1] == tables[0]
    assert "Times are in" in tables[0][0]


def test_compare_envs_and_extend():
    tables = []
    for lib_b in (tb, eb):
        ms = [
            lib_b.Measurement(
                10,
                [1e-4 * (i + 1), 1.1e-4 * (i + 1)],
                lib_b.TaskSpec("f()", "pass", env=env, description="d"),
            )
            for i, env in enumerate(("base", "new_kernel"))
        ]
        c = lib_b.Compare(ms[:1])
        c.extend_results(ms[1:])
        tables.append(str(c))
        with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
            c.extend_results([1.0])
    assert tables[1] == tables[0]


# ------------------------------------------------------------------------------ Timer


class _Clock:
    """A fake clock: ``tick()`` (the timed statement) advances it by ``step`` seconds."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def tick(self) -> None:
        self.now += self.step

    def __call__(self) -> float:
        return self.now


def _fake_timers(step, **kwargs):
    out = []
    for lib_b in (tb, eb):
        clock = _Clock(step)
        out.append(lib_b.Timer("clock.tick()", timer=clock, globals={"clock": clock}, **kwargs))
    return out


@pytest.mark.parametrize("step", [1e-6, 3e-5, 2e-3])
def test_blocked_autorange_same_blocks_and_times(step):
    calls = ([], [])
    t_timer, e_timer = _fake_timers(step, label="tick")
    tm = t_timer.blocked_autorange(callback=lambda n, t: calls[0].append((n, t)), min_run_time=0.02)
    em = e_timer.blocked_autorange(callback=lambda n, t: calls[1].append((n, t)), min_run_time=0.02)
    assert em.number_per_run == tm.number_per_run
    assert em.raw_times == tm.raw_times
    assert calls[1] == calls[0]
    assert _repr(em) == _repr(tm)


@pytest.mark.parametrize("step", [1e-6, 2e-3])
def test_adaptive_autorange_same_blocks_and_times(step):
    t_timer, e_timer = _fake_timers(step)
    tm = t_timer.adaptive_autorange(threshold=0.1, min_run_time=0.01, max_run_time=0.5)
    em = e_timer.adaptive_autorange(threshold=0.1, min_run_time=0.01, max_run_time=0.5)
    assert (em.number_per_run, em.raw_times) == (tm.number_per_run, tm.raw_times)


def test_timeit_fake_clock():
    t_timer, e_timer = _fake_timers(1e-6, sub_label="s", description="d")
    tm, em = t_timer.timeit(1000), e_timer.timeit(1000)
    assert (em.number_per_run, em.raw_times) == (tm.number_per_run, tm.raw_times)
    assert _repr(em) == _repr(tm)


def test_timer_runs_ember_code():
    x = ember.ones(8, 8)
    timer = eb.Timer(
        stmt="torch.mm(x, y)",
        setup="y = torch.ones(8, 8) * 2",
        globals={"x": x},
        label="mm",
        description="8x8",
    )
    m = timer.blocked_autorange(min_run_time=0.01)
    assert m.number_per_run >= 1 and len(m.raw_times) >= 1
    assert all(t > 0 for t in m.raw_times)
    assert m.task_spec.stmt == "torch.mm(x, y)"
    assert m.median > 0 and m.mean > 0 and m.iqr >= 0
    m = eb.Timer("ember.add(x, 1)", globals={"x": x}).timeit(100)
    assert m.number_per_run == 100 and len(m.raw_times) == 1 and m.times[0] > 0
    m = eb.Timer("x + 1", globals={"x": x}).adaptive_autorange(max_run_time=0.2)
    assert len(m.raw_times) >= 1


def test_timer_dedents_code_like_torch():
    stmt = "\n    a = 1\n    b = a + 1\n    "
    setup = "\n    import math\n    "
    t, e = tb.Timer(stmt, setup), eb.Timer(stmt, setup)
    assert e._task_spec.stmt == t._task_spec.stmt
    assert e._task_spec.setup == t._task_spec.setup
    assert e._task_spec.title == t._task_spec.title


def test_num_threads_set_during_run_and_restored():
    before = ember.get_num_threads()
    seen = []
    timer = eb.Timer("seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=1)
    timer.timeit(3)
    assert set(seen) == {1}
    assert ember.get_num_threads() == before
    seen.clear()
    eb.Timer(
        "seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=2
    ).blocked_autorange(min_run_time=0.001)
    assert set(seen) == {2}
    assert ember.get_num_threads() == before


def test_timer_errors_match_torch():
    for kwargs, exc in [
        (dict(stmt=lambda: None), ValueError),
        (dict(global_setup="#include <x>"), ValueError),
        (dict(language="rust"), ValueError),
    ]:
        with pytest.raises(exc) as texc:
            tb.Timer(**kwargs)
        with pytest.raises(exc) as eexc:
            eb.Timer(**kwargs)
        assert str(eexc.value) == str(texc.value)
    for name, args in (("repeat", ()), ("autorange", ())):
        with pytest.raises(NotImplementedError) as texc:
            getattr(tb.Timer(), name)(*args)
        with pytest.raises(NotImplementedError) as eexc:
            getattr(eb.Timer(), name)(*args)
        assert str(eexc.value) == str(texc.value)
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        eb.Timer(language="cpp")
    with pytest.raises(NotImplementedError, match="Callgrind"):
        eb.Timer().collect_callgrind(10)


def test_public_names():
    for name in ("Timer", "Measurement", "Compare", "TaskSpec", "Language", "timer", "Colorize"):
        assert hasattr(eb, name), name
    assert eb.Language.PYTHON.value == tb.Language.PYTHON.value


# ------------------------------------------------------------------------------ Fuzzer


def _recipe_fuzzer(lib_b, seed=0, **tensor_kwargs):
    return lib_b.Fuzzer(
        parameters=[
            lib_b.FuzzedParameter("k0", minval=1, maxval=10000, distribution="loguniform"),
            lib_b.FuzzedParameter("k1", minval=1, maxval=10000, distribution="loguniform"),
            lib_b.FuzzedParameter("u", minval=0.5, maxval=2.5, distribution="uniform"),
            lib_b.FuzzedParameter("step", minval=1, maxval=3, distribution="uniform", strict=True),
        ],
        tensors=[
            lib_b.FuzzedTensor(
                "x",
                size=("k0", "k1"),
                steps=("step", 1),
                min_elements=128,
                max_elements=1000000,
                probability_contiguous=0.6,
                **tensor_kwargs,
            ),
            lib_b.FuzzedTensor("y", size=("k0", 3, "k1"), dim_parameter="step"),
        ],
        constraints=[lambda params: params["k0"] != 17],
        seed=seed,
    )


@pytest.mark.parametrize("seed", [0, 1, 123])
def test_fuzzer_same_params_and_layouts(seed):
    t_steps = list(_recipe_fuzzer(tb, seed).take(12))
    e_steps = list(_recipe_fuzzer(eb, seed).take(12))
    for (tt, tprops, tparams), (et, eprops, eparams) in zip(t_steps, e_steps, strict=True):
        assert eparams == tparams
        assert sorted(et) == sorted(tt)
        for name in tt:
            assert tuple(et[name].shape) == tuple(tt[name].shape)
            assert et[name].stride() == tt[name].stride()
            assert et[name].dtype == tt[name].dtype or str(et[name].dtype) == str(tt[name].dtype)
            tp, ep = tprops[name], eprops[name]
            assert ep["order"].tolist() == tp["order"].tolist()
            assert {k: v for k, v in ep.items() if k != "order"} == {
                k: v for k, v in tp.items() if k != "order"
            }
            values = et[name].numpy()
            assert ((values >= 0) & (values < 1)).all()


def test_fuzzer_int_tensors_constructor_and_rejections():
    def ctor(lib):
        return lambda size, dtype, **params: lib.full(size, params["k0"] % 7, dtype=dtype)

    res = []
    for lib, lib_b in ((torch, tb), (ember, eb)):
        f = _recipe_fuzzer(lib_b, 5, dtype=lib.int32, tensor_constructor=ctor(lib))
        steps = list(f.take(6))
        res.append(
            (
                [p for _, _, p in steps],
                [t["x"].numpy().tolist() for t, _, _ in steps],
                [str(t["x"].dtype) for t, _, _ in steps],
                f.rejection_rate,
            )
        )
        ints = list(
            lib_b.Fuzzer(
                [lib_b.FuzzedParameter("n", 1, 4, "uniform")],
                [lib_b.FuzzedTensor("i", size=("n",), dtype=lib.int64)],
                seed=3,
            ).take(3)
        )
        for t, _, _ in ints:
            values = t["i"].numpy()
            assert ((values >= 1) & (values < 127)).all()
    assert res[1] == res[0]


def test_fuzzer_errors_like_torch():
    cases = [
        lambda b: b.FuzzedParameter("a", 1, 2, distribution="gauss"),
        lambda b: b.FuzzedParameter("a", distribution={1: 0.5, 2: 0.5}),
        lambda b: b.FuzzedParameter("a", distribution={1: -0.5, 2: 1.5}),
        lambda b: b.FuzzedParameter("a", 1, distribution={1: 0.2, 2: 0.2}),
        lambda b: b.Fuzzer([b.FuzzedParameter("x", 1, 2, "uniform")], [b.FuzzedTensor("x", (2,))]),
        lambda b: next(
            b.Fuzzer(
                [b.FuzzedParameter("a", 1, 2, "uniform")],
                [b.FuzzedTensor("x", ("a",))],
                constraints=[lambda p: False],
            ).take(1)
        ),
    ]
    for case in cases:
        with pytest.raises(Exception) as texc:
            case(tb)
        with pytest.raises(Exception) as eexc:
            case(eb)
        assert (type(eexc.value), str(eexc.value)) == (type(texc.value), str(texc.value))
    assert repr(eb.ParameterAlias("a")) == repr(tb.ParameterAlias("a"))
    params = eb.Fuzzer._resolve_aliases({"a": 3, "b": eb.ParameterAlias("a")})
    assert params == {"a": 3, "b": 3}
    with pytest.raises(ValueError, match="ParameterAlias cycle detected"):
        eb.Fuzzer._resolve_aliases({"a": eb.ParameterAlias("b"), "b": eb.ParameterAlias("a")})


def test_fuzzer_alias_cycle_message_and_chains_like_torch():
    def run(b, params):
        try:
            return b.Fuzzer._resolve_aliases(params(b))
        except ValueError as exc:
            return ("ValueError", str(exc).split("\n")[0], sorted(str(exc).split("\n")[1:]))

    cases = [
        lambda b: {"a": b.ParameterAlias("b"), "b": b.ParameterAlias("a")},
        lambda b: {"a": 1, "b": b.ParameterAlias("c"), "c": b.ParameterAlias("d"), "d": 7},
        lambda b: {"x": b.ParameterAlias("y"), "y": b.ParameterAlias("z"), "z": 2, "w": 5},
        lambda b: {"a": b.ParameterAlias("a")},
    ]
    for case in cases:
        t, e = run(tb, case), run(eb, case)
        assert str(e).replace("ember", "torch") == str(t)


@pytest.mark.parametrize("seed", [2, 9])
def test_fuzzer_aliases_one_dim_and_strict_like_torch(seed):
    def make(b, lib):
        return b.Fuzzer(
            parameters=[
                [b.FuzzedParameter("n", 1, 64, "loguniform")],
                b.FuzzedParameter("m", 2, 5, "uniform", strict=True),
                b.FuzzedParameter("f", 0.0, 1.0, "uniform"),
                b.FuzzedParameter("alias", distribution="uniform", minval=1, maxval=2),
            ],
            tensors=[
                b.FuzzedTensor("v", size=("n",), probability_contiguous=0.0, dtype=lib.float64),
                [b.FuzzedTensor("w", size=("m", "n", 2), steps=(1, 2), max_elements=400)],
            ],
            constraints=[lambda p: p["f"] > 0.2],
            seed=seed,
        )

    t_steps = list(make(tb, torch).take(8))
    e_steps = list(make(eb, ember).take(8))
    for (tt, tprops, tparams), (et, eprops, eparams) in zip(t_steps, e_steps, strict=True):
        assert eparams == tparams
        for name in tt:
            assert tuple(et[name].shape) == tuple(tt[name].shape)
            assert et[name].stride() == tt[name].stride()
            assert eprops[name]["order"].tolist() == tprops[name]["order"].tolist()
            assert eprops[name]["is_contiguous"] == tprops[name]["is_contiguous"]
            assert eprops[name]["numel"] == tprops[name]["numel"]


def test_fuzzer_unnormalized_dict_distribution_fails_like_torch():
    outcomes = []
    for b in (tb, eb):
        p = b.FuzzedParameter("a", distribution={1: 0.3, 2: 0.3})
        with pytest.raises(Exception) as exc:
            p.sample(np.random.RandomState(0))
        outcomes.append((type(exc.value), str(exc.value)))
    assert outcomes[0] == outcomes[1]
    from torch.utils.benchmark.utils import fuzzer as tf

    from ember.utils.benchmark.utils import fuzzer as ef

    assert ef.prod([2, 3, np.int64(4)]) == tf.prod([2, 3, np.int64(4)]) == 24
    assert ef.prod([], base=5) == tf.prod([], base=5)
    for name in ("bool", "int8", "int16", "int64", "float16", "bfloat16", "float64", "complex64"):
        assert ef.dtype_size(getattr(ember, name)) == tf.dtype_size(getattr(torch, name)), name


def _random_measurements(lib_b, seed):
    """A random mix of labels (incl. None), envs (incl. ''), thread counts, row names and
    descriptions, with holes, duplicated keys (merged) and noisy cells."""
    rng = np.random.default_rng(seed)
    out = []
    envs = [None] if rng.random() < 0.4 else ["", "envA", "a-longer-env"][: rng.integers(2, 4)]
    for _ in range(int(rng.integers(4, 30))):
        spec = lib_b.TaskSpec(
            stmt=str(rng.choice(["f(x)", "g(x, y)", "x + y"])),
            setup="pass",
            label=[None, "L1", "label two"][int(rng.integers(0, 3))],
            sub_label=[None, "s", "sub"][int(rng.integers(0, 3))],
            description=["d1", "desc-2", "n=10000"][int(rng.integers(0, 3))],
            env=envs[int(rng.integers(0, len(envs)))],
            num_threads=int(rng.choice([1, 2, 8])),
        )
        base = 10.0 ** rng.uniform(-8.5, 0.5)
        noise = float(rng.choice([0.001, 0.05, 0.5]))
        raw = (base * 10 * (1 + noise * rng.random(int(rng.integers(1, 8))))).tolist()
        out.append(lib_b.Measurement(10, raw, spec))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_compare_random_tables_match_torch(seed):
    for options in [(), ("trim",), ("color", "warn"), ("rowcolor", "trim", "warn")]:
        tables = []
        for lib_b in (tb, eb):
            c = lib_b.Compare(_random_measurements(lib_b, seed))
            if "trim" in options:
                c.trim_significant_figures()
            if "color" in options:
                c.colorize()
            if "rowcolor" in options:
                c.colorize(rowwise=True)
            if "warn" in options:
                c.highlight_warnings()
            try:
                tables.append(str(c))
            except Exception as exc:  # noqa: BLE001 - the error is part of the comparison
                tables.append((type(exc), str(exc)))
        assert tables[1] == tables[0], options
