"""User code: the PyTorch Benchmark recipe (``torch.utils.benchmark.Timer`` / ``Measurement`` /
``Compare``). Times differ from run to run, so numbers are masked and the printed layout, the
statistics' relations and the API are compared."""

from __future__ import annotations

import re

import ember
from tests.oracle._user_code import run_snippet
from tests.oracle.helper import torch

RECIPE = """
    import torch.utils.benchmark as benchmark
    x = torch.ones(100, 64)
    def batched_dot_mul_sum(a, b):
        return a.mul(b).sum(-1)
    t0 = benchmark.Timer(stmt="batched_dot_mul_sum(x, x)",
                         setup="pass",
                         globals={"x": x, "batched_dot_mul_sum": batched_dot_mul_sum})
    m = t0.timeit(20)
    print(m)
    print(len(m.times), m.number_per_run, m.mean > 0, m.median == m.mean, m.iqr == 0)
    m = t0.blocked_autorange(min_run_time=0.02)
    print(m.median > 0, m.title, m.stmt, m.label, m.sub_label, m.as_row_name, m.num_threads)
    print(type(m.times).__name__, len(m.times) == len(m.raw_times))
    results = []
    for n in [1, 4]:
        for fn in ["mul", "add"]:
            results.append(benchmark.Timer(
                stmt=f"x.{fn}(x)", globals={"x": torch.ones(n, 3)}, label="ops",
                sub_label=f"[{n}, 3]", description=fn).blocked_autorange(min_run_time=0.01))
    compare = benchmark.Compare(results)
    print(str(compare).splitlines()[0].startswith("["), "Times are in" in str(compare))
    merged = benchmark.Measurement.merge(results + results)
    print(len(merged), all(m.number_per_run == 1 for m in merged))
    print(benchmark.Timer("pass", label="L", sub_label="S", description="D").timeit(5))
    try:
        benchmark.Timer(stmt=lambda: 1)
    except ValueError as e:
        print("ValueError", e)
"""


def _masked(text: str) -> str:
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return re.sub(r" (ns|us|ms|s)\b", " UNIT", text)


def test_benchmark_recipe():
    want = run_snippet(torch, RECIPE)
    got = run_snippet(ember, RECIPE)
    want = want.replace("torch.utils.benchmark.utils.common.", "")
    got = got.replace("ember.utils.benchmark.", "")
    assert _masked(got) == _masked(want), f"torch printed:\n{want}\nember printed:\n{got}"
