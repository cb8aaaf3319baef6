"""DataLoader: arguments, single-process loading and worker processes (ordering, seeding,
worker info, failures, shutdown). Every test checks that no worker process is left behind."""

import os
import signal
import threading

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    DataLoader,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
    get_worker_info,
)
from tests._data_helpers import (  # noqa: F401
    DictDataset,
    DyingDataset,
    FailingDataset,
    H5Dataset,
    InitRecordDataset,
    PidDataset,
    RandomDataset,
    RangeDataset,
    ShardedRange,
    ShardedRangeWithLen,
    SlowDataset,
    SometimesNoneDataset,
    UnshardedRange,
    WaitForDataset,
    drop_none_collate,
    no_orphans,
    worker_init_record,
)

pytestmark = pytest.mark.usefixtures("no_orphans")


def flat(batches):
    return [i for b in batches for i in b.tolist()]


# ------------------------------------------------------------------------------ arguments
def test_argument_errors():
    ds = RangeDataset(4)
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multi"),
        (dict(num_workers=1, prefetch_factor=-1), "prefetch_factor option should be non-neg"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(shuffle=True, sampler=[0, 1]), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
        (dict(multiprocessing_context="fork"), "multiprocessing_context can only be used with"),
        (dict(num_workers=1, multiprocessing_context="nope"), "should specify a valid start"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, **kwargs)
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context"):
        DataLoader(ds, num_workers=1, multiprocessing_context=3)
    it = UnshardedRange(3)
    for kwargs, msg in [
        (dict(shuffle=True), "expected unspecified shuffle option, but got shuffle=True"),
        (dict(sampler=[0]), "expected unspecified sampler option"),
        (dict(batch_sampler=[[0]]), "expected unspecified batch_sampler option"),
    ]:
        with pytest.raises(ValueError, match=msg):
            DataLoader(it, **kwargs)
    loader = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader"):
        loader.batch_size = 3
    loader.num_workers = 0  # other attributes may change


def test_defaults_and_len():
    ds = RangeDataset(10)
    loader = DataLoader(ds, batch_size=3)
    assert isinstance(loader.sampler, SequentialSampler)
    assert isinstance(loader.batch_sampler, BatchSampler)
    assert loader.prefetch_factor is None and len(loader) == 4
    assert len(DataLoader(ds, batch_size=3, drop_last=True)) == 3
    assert isinstance(DataLoader(ds, shuffle=True).sampler, RandomSampler)
    assert DataLoader(ds, num_workers=2).prefetch_factor == 2
    assert len(DataLoader(ds, batch_size=None)) == 10
    assert len(DataLoader(ShardedRangeWithLen(0, 10), batch_size=4)) == 3
    assert len(DataLoader(ShardedRangeWithLen(0, 10), batch_size=4, drop_last=True)) == 2
    with pytest.raises(TypeError):
        len(DataLoader(ShardedRange(0, 10)))


def test_too_many_workers_warns():
    with pytest.warns(UserWarning, match=r"This DataLoader will create 999 worker processes"):
        DataLoader(RangeDataset(3), num_workers=999)


def test_pin_memory_is_accepted_and_warns_as_torch_on_cpu():
    loader = DataLoader(RangeDataset(4), batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator"):
        batches = list(loader)
    assert batches[1][1].tolist() == [2, 3]


# ------------------------------------------------------------------------------ one process
def test_single_process_batches():
    batches = list(DataLoader(RangeDataset(5), batch_size=2))
    assert len(batches) == 3
    x, i, s = batches[2]
    assert x.shape == (1, 2, 3) and i.tolist() == [4] and s == ("4",)  # a tuple, as torch
    assert [b[1].tolist() for b in DataLoader(RangeDataset(5), batch_size=2, drop_last=True)] == [
        [0, 1],
        [2, 3],
    ]


def test_unbatched_loading_converts_only():
    out = list(DataLoader(DictDataset(2), batch_size=None))
    assert isinstance(out[0]["x"], ember.Tensor) and out[0]["x"].dtype is ember.int32
    assert out[1]["f"] == 0.5 and isinstance(out[1]["pair"], list)


def test_shuffle_uses_generator():
    def order(seed):
        g = ember.Generator().manual_seed(seed)
        return flat(
            b[1] for b in DataLoader(RangeDataset(20), batch_size=4, shuffle=True, generator=g)
        )

    assert order(1) == order(1) and sorted(order(1)) == list(range(20))
    assert order(1) != order(2)


def test_custom_collate_drops_none():
    out = list(DataLoader(SometimesNoneDataset(6), batch_size=3, collate_fn=drop_none_collate))
    assert [b.tolist() for b in out] == [[1, 2], [4, 5]]
    out = list(
        DataLoader(
            SometimesNoneDataset(6), batch_size=3, collate_fn=drop_none_collate, num_workers=2
        )
    )
    assert [b.tolist() for b in out] == [[1, 2], [4, 5]]


def test_iterable_dataset_single_process_and_len_warning():
    assert flat(DataLoader(ShardedRange(0, 7), batch_size=3)) == list(range(7))
    loader = DataLoader(UnshardedRange(3), batch_size=None)
    assert len(loader) == 3

    class Liar(IterableDataset):
        def __iter__(self):
            return iter(range(5))

        def __len__(self):
            return 2

    loader = DataLoader(Liar(), batch_size=None)
    len(loader)
    with pytest.warns(UserWarning, match="was reported to be 2"):
        assert list(loader) == [0, 1, 2, 3, 4]


# ------------------------------------------------------------------------------ workers
def test_workers_match_single_process_in_order():
    ref = list(DataLoader(RangeDataset(11), batch_size=3))
    got = list(DataLoader(RangeDataset(11), batch_size=3, num_workers=2))
    assert len(got) == len(ref) == 4
    for (x0, i0, s0), (x1, i1, s1) in zip(ref, got):
        np.testing.assert_array_equal(x0.numpy(), x1.numpy())
        assert x1.dtype is x0.dtype and i1.tolist() == i0.tolist() and s1 == s0
        assert x1.is_shared() and i1.is_shared()  # came through shared memory


def test_workers_round_robin_and_pids():
    out = list(DataLoader(PidDataset(8), batch_size=2, num_workers=2))
    assert flat(b[0] for b in out) == list(range(8))
    pids = [b[1].tolist() for b in out]
    assert len({p[0] for p in pids}) == 2 and os.getpid() not in {p[0] for p in pids}
    assert pids[0][0] == pids[2][0] and pids[1][0] == pids[3][0]  # batch k -> worker k % 2


def test_in_order_false_returns_every_batch(tmp_path):
    # batch 0 (worker 0) is held back until the main process has received another batch: out
    # of order, that other batch comes first and batch 0 later (no clock involved)
    release = tmp_path / "received"
    ds = WaitForDataset(12, waiter=0, signal_index=None, path=str(release))
    got = []
    for b in DataLoader(ds, batch_size=2, num_workers=2, in_order=False):
        got.append(b.tolist())
        release.touch()
    assert sorted(i for b in got for i in b) == list(range(12))
    assert got[0] == [2, 3] and got.index([0, 1]) > 0  # worker 1 answered first
    ds = WaitForDataset(12, waiter=0, signal_index=2, path=str(tmp_path / "again"))
    got = [b.tolist() for b in DataLoader(ds, batch_size=2, num_workers=2)]
    assert got[:2] == [[0, 1], [2, 3]]  # in order, it waits


def test_prefetch_factor_bounds_tasks_in_flight():
    loader = DataLoader(RangeDataset(40), batch_size=1, num_workers=2, prefetch_factor=3)
    it = iter(loader)
    assert it._tasks_outstanding == 6 and it._send_idx == 6
    next(it)
    assert it._tasks_outstanding <= 6 and it._send_idx == 7
    del it


def test_per_worker_seeding_differs_across_workers():
    g = ember.Generator().manual_seed(123)
    rows = [
        r
        for b in DataLoader(RandomDataset(8), batch_size=2, num_workers=2, generator=g)
        for r in zip(*[c.tolist() for c in b])
    ]
    by_worker = {}
    for py, npy, em, wid in rows:
        by_worker.setdefault(wid, []).append((py, npy, em))
    assert set(by_worker) == {0, 1}
    first0, first1 = by_worker[0][0], by_worker[1][0]
    assert all(a != b for a, b in zip(first0, first1))  # random, NumPy and ember all differ
    g2 = ember.Generator().manual_seed(123)
    again = [
        r
        for b in DataLoader(RandomDataset(8), batch_size=2, num_workers=2, generator=g2)
        for r in zip(*[c.tolist() for c in b])
    ]
    assert again == rows  # reproducible from the loader's generator


def test_worker_info_and_init_fn():
    assert get_worker_info() is None
    out = list(
        DataLoader(
            InitRecordDataset(4), batch_size=None, num_workers=2, worker_init_fn=worker_init_record
        )
    )
    assert [int(i) for i, _ in out] == [0, 1, 2, 3]
    assert [int(w) for _, w in out] == [0, 1, 0, 1]


def test_iterable_dataset_sharded_by_worker_info():
    got = flat(DataLoader(ShardedRange(0, 10), batch_size=2, num_workers=2))
    assert sorted(got) == list(range(10))
    dup = flat(DataLoader(UnshardedRange(3), batch_size=1, num_workers=2))
    assert sorted(dup) == [0, 0, 1, 1, 2, 2]  # unsharded: once per worker, as torch


def test_persistent_workers_survive_epochs():
    loader = DataLoader(PidDataset(6), batch_size=2, num_workers=2, persistent_workers=True)
    e1 = list(loader)
    pids1 = {b[1][0].item() for b in e1}
    it = loader._iterator
    e2 = list(loader)
    assert loader._iterator is it and all(w.is_alive() for w in it._workers)
    assert {b[1][0].item() for b in e2} == pids1
    assert flat(b[0] for b in e2) == list(range(6))
    next(iter(loader))  # a partial epoch, then a full one: leftovers are dropped
    assert flat(b[0] for b in loader) == list(range(6))
    del loader, it


def test_spawn_context():
    x = ember.arange(12.0).reshape(6, 2)
    loader = DataLoader(
        TensorDataset(x, ember.arange(6)),
        batch_size=4,
        num_workers=2,
        multiprocessing_context="spawn",
    )
    (a, ia), (b, ib) = list(loader)
    np.testing.assert_array_equal(np.concatenate([a.numpy(), b.numpy()]), x.numpy())
    assert ia.tolist() == [0, 1, 2, 3] and ib.tolist() == [4, 5]


def test_h5py_lazy_open_per_worker(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "data.h5")
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(40, dtype=np.float32).reshape(10, 4)
        f["y"] = np.arange(10) * 10
    ds = H5Dataset(path)
    assert ds.file is None  # not opened in the main process
    out = list(DataLoader(ds, batch_size=2, num_workers=2))
    x = np.concatenate([b[0].numpy() for b in out])
    np.testing.assert_array_equal(x, np.arange(40, dtype=np.float32).reshape(10, 4))
    assert flat(b[1] for b in out) == list(range(0, 100, 10))
    openers = {p for b in out for p in b[2].tolist()}
    assert len(openers) == 2 and os.getpid() not in openers
    assert ds.file is None


# ------------------------------------------------------------------------------ failures
def test_worker_exception_reraised_with_traceback():
    loader = DataLoader(FailingDataset(8, bad=5), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as excinfo:
        list(loader)
    msg = str(excinfo.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback")
    assert "raise self.exc_type(self.message)" in msg and msg.rstrip().endswith("bad sample")
    del excinfo


def test_worker_key_error_message_is_readable():
    loader = DataLoader(FailingDataset(4, bad=1, exc_type=KeyError), batch_size=None, num_workers=1)
    with pytest.raises(KeyError) as excinfo:
        list(loader)
    assert str(excinfo.value).startswith("Caught KeyError in DataLoader worker process 0.")
    del excinfo


def test_main_process_exception_is_not_wrapped():
    with pytest.raises(ValueError, match="^bad sample$"):
        list(DataLoader(FailingDataset(4, bad=1), batch_size=2))


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV, None])
def test_dead_worker_raises_instead_of_hanging(sig):
    loader = DataLoader(DyingDataset(16, bad=5, sig=sig), batch_size=2, num_workers=2)
    with pytest.raises(RuntimeError) as excinfo:
        list(loader)
    msg = str(excinfo.value)
    # torch's flow: the SIGCHLD handler's error, reported as "exited unexpectedly" when it
    # lands in the wait for data (it can land elsewhere in the main loop, in torch too)
    if "exited unexpectedly" in msg and "pid(s)" in msg:
        cause = str(excinfo.value.__cause__)
    else:
        cause = msg
    expected = {
        signal.SIGKILL: "is killed by signal: Killed.",
        signal.SIGSEGV: "is killed by signal: Segmentation fault.",
        None: "exited unexpectedly with exit code 3.",
    }[sig]
    assert cause.startswith("DataLoader worker (pid ") and expected in cause
    del excinfo


def test_timeout():
    loader = DataLoader(
        SlowDataset(4, slow=0, seconds=0.8), batch_size=1, num_workers=1, timeout=0.2
    )
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.2 seconds$"):
        next(iter(loader))


def test_unpicklable_batch_is_an_error_not_a_hang():
    loader = DataLoader(
        RangeDataset(4), batch_size=2, num_workers=1, collate_fn=lambda batch: lambda: None
    )
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        next(iter(loader))


def test_init_fn_error_is_reported_on_first_batch():
    def bad_init(worker_id):
        raise OSError("no device")

    with pytest.raises(OSError, match="Caught OSError in DataLoader worker process 0"):
        list(DataLoader(RangeDataset(4), num_workers=1, worker_init_fn=bad_init))


# ------------------------------------------------------------------------------ shutdown
def _workers_of(it):
    return list(it._workers)


def test_break_out_of_loop_stops_workers():
    loader = DataLoader(RangeDataset(100), batch_size=2, num_workers=2)
    for _ in loader:
        break
    # the fixture checks that both workers are gone


def test_exhausted_iterator_joins_workers():
    it = iter(DataLoader(RangeDataset(4), batch_size=2, num_workers=2))
    workers = _workers_of(it)
    list(it)
    assert all(not w.is_alive() for w in workers) and it._shutdown


def test_deleting_loader_stops_persistent_workers():
    loader = DataLoader(RangeDataset(4), batch_size=2, num_workers=2, persistent_workers=True)
    list(loader)
    workers = _workers_of(loader._iterator)
    assert all(w.is_alive() for w in workers)
    del loader
    for w in workers:
        w.join(5)
    assert all(not w.is_alive() for w in workers)


def test_keyboard_interrupt_in_main_loop():
    # Ctrl-C as the main thread sees it. The signal is sent to the main thread itself: sent to
    # the process, it may land on another thread (pytest-xdist's I/O thread), and the main
    # thread then raises KeyboardInterrupt wherever it happens to be next, possibly inside a
    # __del__ that swallows it. Sent to the main thread, it is raised as pthread_kill returns.
    loader = DataLoader(RangeDataset(100), batch_size=2, num_workers=2)
    it = iter(loader)
    workers = list(it._workers)
    with pytest.raises(KeyboardInterrupt):
        for i, _ in enumerate(it):
            if i == 2:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    del it
    for w in workers:  # the interrupted iterator shut its workers down
        w.join(10)
        assert not w.is_alive()


def test_ctrl_c_reaching_a_worker_does_not_break_it():
    # Ctrl-C reaches the workers too (same process group): they ignore it and keep serving (a
    # KeyboardInterrupt inside Queue.put could leave the queue's lock held and hang the worker
    # at exit); the main process's KeyboardInterrupt is what shuts them down
    it = iter(DataLoader(RangeDataset(10), batch_size=2, num_workers=1, timeout=10))
    next(it)
    worker = it._workers[0]
    for _ in range(3):
        os.kill(worker.pid, signal.SIGINT)
    assert [b[1].tolist() for b in it] == [[2, 3], [4, 5], [6, 7], [8, 9]]
    worker.join(5)
    assert worker.exitcode == 0


def test_unpicklable_worker_init_fn_with_spawn_warns_and_raises():
    loader = DataLoader(
        RangeDataset(4),
        num_workers=1,
        multiprocessing_context="spawn",
        worker_init_fn=lambda i: None,
    )
    with pytest.warns(UserWarning, match="Got pickle error when attempting to start a worker"):
        with pytest.raises((AttributeError, TypeError, Exception), match="pickle"):
            iter(loader)


def test_persistent_workers_with_iterable_dataset():
    loader = DataLoader(ShardedRange(0, 9), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(3):
        assert sorted(flat(loader)) == list(range(9))
    del loader


def test_interpreter_exit_with_live_persistent_workers_is_quiet():
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import ember.utils.data as d\n"
        "loader = d.DataLoader(list(range(8)), batch_size=2, num_workers=2,"
        " persistent_workers=True)\n"
        "assert len(list(loader)) == 4\n"
        "it = iter(d.DataLoader(list(range(8)), num_workers=1))\n"
        "next(it)\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    res = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, res.stderr
