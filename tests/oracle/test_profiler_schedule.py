"""``profiler.schedule`` and the profiler's action transitions against torch: the action of
every step for a grid of schedules, the calls made for every (previous, next) action pair,
and the averages/formatting helpers of the event classes."""

import itertools
import warnings

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")

import ember

torch = pytest.importorskip("torch")

GRID = list(itertools.product([0, 1, 2], [0, 1, 2], [1, 3], [0, 2], [0, 3], [0, 1]))


@pytest.mark.parametrize("wait,warmup,active,repeat,skip_first,skip_first_wait", GRID)
def test_schedule_actions(wait, warmup, active, repeat, skip_first, skip_first_wait):
    kw = dict(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first,
              skip_first_wait=skip_first_wait)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = ember.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    assert [ours(s).name for s in range(40)] == [theirs(s).name for s in range(40)]


@pytest.mark.parametrize(
    "kw",
    [
        dict(wait=-1, warmup=0, active=1),
        dict(wait=0, warmup=0, active=0),
        dict(wait=0, warmup=1, active=1, repeat=-1),
        dict(wait=0, warmup=1, active=1, skip_first=-2),
    ],  # fmt: skip
)
def test_schedule_rejections(kw):
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(AssertionError) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.profiler.schedule(**kw)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def _describe(call):
    func = getattr(call, "func", None)
    if func is not None:  # a partial(warnings.warn, message)
        return ("warn", call.args[0])
    return call.__name__


def test_transition_plans():
    t = torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=1))
    e = ember.profiler.profile(schedule=ember.profiler.schedule(wait=1, warmup=1, active=1))
    for key, calls in t.action_map.items():
        # DEVICE_STOPPED is torch's state for an accelerator trace that ended early; ember
        # never enters it (a schedule may not return it, and there is no device to stop)
        if torch.profiler.ProfilerAction.DEVICE_STOPPED in key:
            continue
        ekey = tuple(None if a is None else ember.profiler.ProfilerAction[a.name] for a in key)
        assert [_describe(c) for c in e.action_map[ekey]] == [_describe(c) for c in calls], key
    # pairs torch leaves out of its map do nothing in either
    for ekey, calls in e.action_map.items():
        tkey = tuple(None if a is None else torch.profiler.ProfilerAction[a.name] for a in ekey)
        if tkey not in t.action_map:
            assert calls == []


def test_scheduled_run_step_names_and_trace_ready():
    def run(lib):
        ready = []
        sched = lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)

        def on_ready(prof):
            steps = {e.name for e in prof.events() if e.name.startswith("ProfilerStep")}
            ready.append(sorted(steps))

        with lib.profiler.profile(schedule=sched, on_trace_ready=on_ready) as p:
            for _ in range(10):
                lib.ones(2) + 1
                p.step()
        return ready, p.step_num

    assert run(ember) == run(torch)


def test_average_fields_and_formatting():
    def run(lib):
        with lib.profiler.profile() as p:
            x = lib.ones(8, 8)
            for _ in range(3):
                lib.add(x, x)
        avg = {a.key: a for a in p.key_averages()}["aten::add"]
        evts = [e for e in p.events() if e.name == "aten::add"]
        names = ["cpu_time_str", "device_time_str", "cpu_time_total_str",
                 "device_time_total_str", "self_cpu_time_total_str",
                 "self_device_time_total_str"]  # fmt: skip
        shapes = [all(isinstance(getattr(o, n), str) for n in names) for o in (avg, evts[0])]
        inner = evts[0].self_cpu_time_total <= evts[0].cpu_time_total
        return (avg.count, avg.is_async, avg.device_type.name, avg.self_cpu_memory_usage,
                avg.flops, shapes, inner)  # fmt: skip

    assert run(ember) == run(torch)


@pytest.mark.parametrize("value,total", [(0.0, 0.0), (1.0, 3.0), (2.5, 2.5), (1e-3, 7.0)])
def test_time_share_format(value, total):
    from torch.autograd.profiler_util import _format_time_share

    from ember.profiler._events import _format_time_share as ours

    assert ours(value, total) == _format_time_share(value, total)


@pytest.mark.parametrize("acc_events", [False, True])
def test_events_across_cycles(acc_events):
    def run(lib):
        seen = []

        def on_ready(prof):
            names = [e.name for e in prof.events() if e.name.startswith(("aten::add", "Prof"))]
            seen.append(sorted(names))

        sched = lib.profiler.schedule(wait=0, warmup=1, active=1, repeat=3)
        with lib.profiler.profile(
            schedule=sched, on_trace_ready=on_ready, acc_events=acc_events
        ) as p:
            for _ in range(6):
                lib.add(lib.ones(2), 1)
                p.step()
        return seen, str(p.profiler).startswith("<unfinished")

    assert run(ember) == run(torch)
