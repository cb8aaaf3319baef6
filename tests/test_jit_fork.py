"""fork/wait on the inter-op pool: results, errors at wait, autograd, nested forks, and the
executor's prim::fork."""

import threading

import pytest

import ember
from ember.jit import ir
from ember.jit.executor import run

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_fork_runs_on_the_pool_and_returns_a_future():
    names = []

    def f(a, b=1):
        names.append(threading.current_thread().name)
        return a + b

    fut = ember.jit.fork(f, ember.ones(2), b=2)
    assert type(fut).__name__ == "Future"
    assert ember.jit.wait(fut).tolist() == [3.0, 3.0]
    assert fut.done() and names[0].startswith("ember-interop")
    assert fut.then(lambda f: f.wait() * 2).wait().tolist() == [6.0, 6.0]


def test_exception_surfaces_at_wait_with_the_task_traceback():
    def boom(x):
        raise ValueError("bad value")

    fut = ember.jit.fork(boom, 1)  # does not raise here
    with pytest.raises(ValueError, match="bad value") as info:
        ember.jit.wait(fut)
    assert any(tb.name == "boom" for tb in info.traceback)


def test_autograd_through_fork():
    w = ember.randn(3, requires_grad=True)
    x = ember.randn(3)
    fut = ember.jit.fork(lambda a: (a * w).sum(), x)
    ember.jit.wait(fut).backward()
    assert ember.allclose(w.grad, x)


def test_grad_mode_follows_the_caller():
    w = ember.randn(3, requires_grad=True)
    with ember.no_grad():
        fut = ember.jit.fork(lambda: w * 2)
    assert not ember.jit.wait(fut).requires_grad


def test_nested_forks_do_not_deadlock():
    def inner(x):
        return x + 1

    def outer(x):
        futs = [ember.jit.fork(inner, x) for _ in range(6)]
        return sum(ember.jit.wait(f) for f in futs)

    futs = [ember.jit.fork(outer, ember.ones(1)) for _ in range(4)]
    assert [ember.jit.wait(f).item() for f in futs] == [12.0] * 4


def test_executor_fork_and_wait_nodes():
    g = ir.Graph()
    x = g.addInput("x")
    fork = g.insertNode(g.create("prim::fork", [x]))
    fork.output().setType(ir.FutureType(ir.TensorType()))
    body = fork.addBlock()
    a = body.addInput("a")
    with g.insert_point_guard(body):
        body.registerOutput(g.insertNode(g.create("aten::neg", [a])).output())
    wait = g.insertNode(g.create("aten::wait", [fork.output()]))
    g.registerOutput(wait.output())
    g.lint()
    assert "Future(Tensor) = prim::fork(%x)" in str(g)
    (out,) = run(g, [ember.ones(2)])
    assert out.tolist() == [-1.0, -1.0]


def test_profiler_shows_forked_tasks_on_their_own_thread_row(tmp_path):
    import json

    def task(x):
        return (x @ x).relu()

    with ember.profiler.profile() as prof:
        futs = [ember.jit.fork(task, ember.randn(32, 32)) for _ in range(2)]
        [ember.jit.wait(f) for f in futs]
        ember.randn(2).relu()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    rows = {e["name"]: set() for e in events if e.get("ph") == "X"}
    for e in events:
        if e.get("ph") == "X":
            rows[e["name"]].add(e["tid"])
    main = rows["aten::randn"]
    assert rows["aten::matmul"] and not rows["aten::matmul"] & main
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert all(t in names for t in rows["aten::matmul"])
