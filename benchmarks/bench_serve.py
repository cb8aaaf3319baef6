"""Serving throughput: LeNet MNIST behind ember-serve, 1/8/32 concurrent clients.

Each case sends a fixed count of PNG digit requests through the real HTTP stack (httpx
clients -> uvicorn/Starlette -> batching queue -> worker processes) and reports throughput,
p50/p99 latency and the mean batch size (from the server's Prometheus metrics). Targets:
dynamic batching (batch 16, 10 ms) >= 2x batch size 1 at 32 clients; 2 workers >= 1.5x
1 worker. Every request must be answered (answered == sent).

    python benchmarks/bench_serve.py [--quick] [--requests N] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np
from _timing import bench_record, write_json

from tests.serve.conftest import Server


def _png(seed: int) -> bytes:
    from PIL import Image

    img = np.random.default_rng(seed).integers(0, 255, (28, 28), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


def _batch_stats(text: str, name: str) -> tuple[float, float]:
    def val(metric):
        m = re.search(rf'{metric}{{model_name="{name}",model_version="1.0"}} ([0-9.e+]+)', text)
        return float(m.group(1)) if m else 0.0

    return val("ember_serve_batch_size_sum"), val("ember_serve_batch_size_count")


async def _request(reader, writer, host: str, path: str, body: bytes) -> int:
    """One keep-alive HTTP/1.1 POST on an open connection; return the status code."""
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: image/png\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    await reader.readexactly(length)
    return status


async def _drive(url: str, clients: int, total: int, bodies: list[bytes]):
    """``clients`` closed-loop clients, each on its own keep-alive connection, share ``total``
    requests. A raw asyncio client: httpx's own overhead at 32 connections exceeded the
    server's on this machine, so it measured the client."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    latencies: list[float] = []
    codes: dict[int, int] = {}
    counter = iter(range(total))

    async def one_client():
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        try:
            for i in counter:
                t0 = time.perf_counter()
                code = await _request(
                    reader, writer, parts.netloc, parts.path, bodies[i % len(bodies)]
                )
                latencies.append(time.perf_counter() - t0)
                codes[code] = codes.get(code, 0) + 1
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(one_client() for _ in range(clients)))
    return time.perf_counter() - start, latencies, codes


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (Linux /proc); 0.0 where unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out = []
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _cpu_split(server_pid: int) -> dict[str, float]:
    """CPU seconds so far of the front end (the server process) and of its workers."""
    return {
        "front": _cpu_seconds(server_pid),
        "workers": sum(_cpu_seconds(c) for c in _children(server_pid)),
        "client": sum(os.times()[:2]),
    }


def run_case(server, name, batch, delay, workers, clients, total, bodies):
    import httpx

    m = server.url("management", "/models")
    params = {
        "url": "mnist.mar",
        "model_name": name,
        "batch_size": batch,
        "max_batch_delay": delay,
        "initial_workers": workers,
    }
    r = httpx.post(m, params=params, timeout=300)
    r.raise_for_status()
    url = server.url("inference", f"/predictions/{name}")
    asyncio.run(_drive(url, clients, min(total, 4 * clients), bodies))  # warm-up
    s0, c0 = _batch_stats(httpx.get(server.url("metrics", "/metrics")).text, name)
    cpu0 = _cpu_split(server.proc.pid)
    elapsed, lat, codes = asyncio.run(_drive(url, clients, total, bodies))
    cpu1 = _cpu_split(server.proc.pid)
    s1, c1 = _batch_stats(httpx.get(server.url("metrics", "/metrics")).text, name)
    httpx.delete(f"{m}/{name}", timeout=120)
    lat.sort()
    return {
        "throughput": total / elapsed,
        "p50": statistics.median(lat) * 1e3,
        "p99": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1e3,
        "mean_batch": (s1 - s0) / max(c1 - c0, 1),
        "answered": sum(codes.values()),
        # CPU milliseconds per request, by process: what bounds throughput on few cores
        **{f"cpu_{k}": (cpu1[k] - cpu0[k]) / total * 1e3 for k in cpu0},
        "ok": codes.get(200, 0),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer requests (CI smoke)")
    p.add_argument("--requests", type=int, default=None, help="requests per case")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    total = args.requests or (100 if args.quick else 600)
    sys.path.insert(0, str(ROOT / "examples" / "serve_mnist"))
    import prepare

    records, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        store = prepare.main(["--out", str(tmp / "mnist"), "--checkpoint", str(tmp / "none")])
        server = Server(tmp, store, models=())
        print(f"load average at start: {os.getloadavg()}; {total} requests per case")
        cases = [
            ("b1_w1", 1, 0, 1, 1),
            ("b1_w1", 1, 0, 1, 8),
            ("b1_w1", 1, 0, 1, 32),
            ("b16_w1", 16, 10, 1, 1),
            ("b16_w1", 16, 10, 1, 8),
            ("b16_w1", 16, 10, 1, 32),
            ("b1_w2", 1, 0, 2, 32),
            ("b16_w2", 16, 10, 2, 32),
        ]
        bodies = [_png(i) for i in range(64)]
        results = {}
        try:
            print(
                f"{'case':>14} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'batch':>6} "
                f"{'answered':>9}  CPU ms/request: front workers client"
            )
            for name, batch, delay, workers, clients in cases:
                res = run_case(server, name, batch, delay, workers, clients, total, bodies)
                results[(name, clients)] = res
                ok &= res["answered"] == total and res["ok"] == total
                print(
                    f"{name + '_c' + str(clients):>14} {res['throughput']:8.1f} "
                    f"{res['p50']:8.2f} {res['p99']:8.2f} {res['mean_batch']:6.2f} "
                    f"{res['answered']:>5}/{total:<4} {res['cpu_front']:6.2f} "
                    f"{res['cpu_workers']:7.2f} {res['cpu_client']:6.2f}"
                )
                records.append(
                    bench_record(
                        "serve",
                        f"{name}_c{clients} (p50 {res['p50']:.1f} ms, p99 {res['p99']:.1f} ms, "
                        f"batch {res['mean_batch']:.1f})",
                        1000.0 / res["throughput"],
                        unit="ms/request",
                    )
                )
        finally:
            server.stop()
    speed = results[("b16_w1", 32)]["throughput"] / results[("b1_w1", 32)]["throughput"]
    scale = results[("b1_w2", 32)]["throughput"] / results[("b1_w1", 32)]["throughput"]
    scale_b = results[("b16_w2", 32)]["throughput"] / results[("b16_w1", 32)]["throughput"]
    print(f"dynamic batching at 32 clients: {speed:.2f}x batch 1 (target >= 2x)")
    print(f"2 workers vs 1 at 32 clients: {scale:.2f}x at batch 1, {scale_b:.2f}x at batch 16")
    print(f"load average at end: {os.getloadavg()}")
    for case, value, goal in (("batching_32c", speed, 2.0), ("workers_2v1_32c", scale, 1.5)):
        records.append(
            bench_record(
                "serve",
                f"{case} = {value:.2f}x",
                value,
                target=f">= {goal}x",
                status="PASS" if value >= goal else "MISS",
                unit="x",
            )
        )
    write_json(args.json, records)
    if not ok:
        print("FAILED: some requests were not answered with 200")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
