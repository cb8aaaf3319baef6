"""ember.utils.data against torch.utils.data: the same datasets, samplers and collation give the
same batches (values, dtypes, structure), lengths and errors.

What cannot be equal: anything drawn from a random generator. ember's ``randperm``/``randint``
streams are its own, so ``shuffle=True``, ``RandomSampler``, ``random_split`` and a shuffled
``DistributedSampler`` give other orders than torch for the same seed; for those the tests
compare properties (lengths, coverage, disjointness, padding, per-epoch change) instead.
"""

import collections
import itertools
import math

import numpy as np
import pytest

import ember
import ember.utils.data as ed
from tests._data_helpers import (  # noqa: F401
    DictDataset,
    FailingDataset,
    RangeDataset,
    ShardedRangeMixin,
    SlowDataset,
    no_orphans,
)

torch = pytest.importorskip("torch")
td = torch.utils.data

pytestmark = pytest.mark.usefixtures("no_orphans")

Point = collections.namedtuple("Point", ["x", "y"])


def canon(obj, lib):
    """A comparable form of a batch: tensors become (dtype name, shape, values)."""
    if isinstance(obj, lib.Tensor):
        dt = str(obj.dtype).replace("torch.", "")
        arr = obj.detach().float().numpy() if dt == "bfloat16" else obj.detach().numpy()
        return ("T", dt, tuple(obj.shape), arr.tolist())
    if isinstance(obj, dict):
        return (type(obj).__name__, [(k, canon(v, lib)) for k, v in obj.items()])
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, [canon(v, lib) for v in obj])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [canon(v, lib) for v in obj])
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.tolist())
    return (type(obj).__name__, obj)


def both(fn):
    """Return (ember result, torch result) of fn(lib) in comparable form."""
    return canon(fn(ember), ember), canon(fn(torch), torch)


def assert_same(fn):
    e, t = both(fn)
    assert e == t


def assert_same_error(fn):
    errs = []
    for lib in (ember, torch):
        with pytest.raises(Exception) as excinfo:
            fn(lib)
        errs.append((type(excinfo.value), str(excinfo.value)))
    assert errs[0] == errs[1]


def data(lib):
    return ed if lib is ember else td


# ------------------------------------------------------------------------------ collation
COLLATE_CASES = {
    "ints": [1, 2, 3],
    "floats": [0.5, 1.5],
    "bools": [True, False],
    "mixed_int_float": [1, 2.5],
    "np_f16": [np.float16(1), np.float16(2)],
    "np_i32": [np.int32(1), np.int32(2)],
    "np_u8": [np.uint8(1), np.uint8(2)],
    "np_bool": [np.bool_(True), np.bool_(False)],
    "np_f64": [np.float64(1.5), np.float64(2)],
    "arrays_f32": [np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)],
    "arrays_i8": [np.arange(3, dtype=np.int8), np.arange(3, dtype=np.int8)],
    "arrays_0d": [np.array(1.0), np.array(2.0)],
    "arrays_bool": [np.array([True]), np.array([False])],
    "strings": ["a", "bc"],
    "bytes": [b"a", b"b"],
    "dicts": [{"a": 1, "b": 2.0}, {"a": 3, "b": 4.0}],
    "ordered": [collections.OrderedDict(z=1, a=2)] * 2,
    "namedtuples": [Point(1, 2.0), Point(3, 4.0)],
    "tuples": [(1, "x", 2.0), (2, "y", 3.0)],
    "lists": [[1, [2, 3]], [4, [5, 6]]],
    "nested": [{"k": (np.float32(1), [np.arange(2)])}, {"k": (np.float32(2), [np.arange(2)])}],
}


@pytest.mark.parametrize("name", sorted(COLLATE_CASES))
def test_default_collate_same_as_torch(name):
    batch = COLLATE_CASES[name]
    assert_same(lambda lib: data(lib).default_collate(batch))


@pytest.mark.parametrize("name", sorted(COLLATE_CASES))
def test_default_convert_same_as_torch(name):
    sample = COLLATE_CASES[name]
    assert_same(lambda lib: data(lib).default_convert(sample))
    assert_same(lambda lib: data(lib).default_convert(sample[0]))


def test_collate_tensors_same_as_torch():
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in range(3)]
    for dt in ["float32", "float64", "int64", "bool", "bfloat16"]:
        assert_same(
            lambda lib, dt=dt: data(lib).default_collate(
                [lib.from_numpy(a.copy()).to(getattr(lib, dt)) for a in arrays]
            )
        )


@pytest.mark.parametrize(
    "batch",
    [
        [None, None],
        [object(), object()],
        [[1, 2], [3]],
        [np.array(["a"]), np.array(["b"])],
        [np.array([object()]), np.array([object()])],
    ],
    ids=["none", "object", "ragged_lists", "np_str", "np_object"],
)
def test_collate_errors_same_as_torch(batch):
    assert_same_error(lambda lib: data(lib).default_collate(batch))


def test_collate_ragged_tensors_error_same_as_torch():
    assert_same_error(lambda lib: data(lib).default_collate([lib.zeros(3), lib.zeros(2)]))


# ------------------------------------------------------------------------------ loaders
def _tensor_dataset(lib):
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10) % 3
    return data(lib).TensorDataset(lib.from_numpy(x.copy()), lib.from_numpy(y.copy()))


def _range(lib):
    return RangeDataset(7, lib.__name__, shape=(2,), dtype="float64")


LOADER_CASES = {
    "tensor_b4": (_tensor_dataset, dict(batch_size=4)),
    "tensor_b4_drop": (_tensor_dataset, dict(batch_size=4, drop_last=True)),
    "tensor_unbatched": (_tensor_dataset, dict(batch_size=None)),
    "range_b3": (_range, dict(batch_size=3)),
    "range_sampler": (_range, dict(batch_size=2, sampler=[6, 0, 3, 3, 1])),
    "range_batch_sampler": (_range, dict(batch_sampler=[[5, 1], [0], [2, 3, 4]])),
    "dict_b2": (lambda lib: DictDataset(5), dict(batch_size=2)),
    "dict_unbatched": (lambda lib: DictDataset(3), dict(batch_size=None)),
    "concat_subset": (
        lambda lib: data(lib).ConcatDataset(
            [data(lib).Subset(_tensor_dataset(lib), [9, 2, 4]), _tensor_dataset(lib)]
        ),
        dict(batch_size=5),
    ),
    "stack_dict": (
        lambda lib: data(lib).StackDataset(t=_tensor_dataset(lib), r=DictDataset(10)),
        dict(batch_size=4),
    ),
}


def _batches(lib, name, num_workers):
    make, kwargs = LOADER_CASES[name]
    loader = data(lib).DataLoader(make(lib), num_workers=num_workers, **kwargs)
    return len(loader), [canon(b, lib) for b in loader]


@pytest.mark.parametrize("name", sorted(LOADER_CASES))
def test_loader_batches_same_as_torch(name):
    expected = _batches(torch, name, 0)
    assert _batches(ember, name, 0) == expected


@pytest.mark.parametrize(
    "name", ["tensor_b4", "tensor_unbatched", "range_batch_sampler", "dict_b2", "stack_dict"]
)
def test_loader_batches_with_workers_same_as_torch_and_single_process(name):
    expected = _batches(torch, name, 0)
    assert _batches(ember, name, 2) == expected


class TorchSharded(ShardedRangeMixin, td.IterableDataset):
    lib = "torch"


class EmberSharded(ShardedRangeMixin, ed.IterableDataset):
    lib = "ember"


@pytest.mark.parametrize("num_workers", [0, 2, 3])
@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_order_same_as_torch(num_workers, drop_last):
    # workers exhaust at different times: the order of the batches is torch's round-robin
    out = []
    for lib, cls in ((ember, EmberSharded), (torch, TorchSharded)):
        loader = data(lib).DataLoader(
            cls(0, 11), batch_size=2, num_workers=num_workers, drop_last=drop_last
        )
        out.append([b.tolist() for b in loader])
    assert out[0] == out[1]


def test_len_same_as_torch():
    class ELen(EmberSharded):
        def __len__(self):
            return 11

    class TLen(TorchSharded):
        def __len__(self):
            return 11

    for kwargs in [dict(batch_size=2), dict(batch_size=2, drop_last=True), dict(batch_size=None)]:
        assert len(ed.DataLoader(ELen(0, 11), **kwargs)) == len(
            td.DataLoader(TLen(0, 11), **kwargs)
        )
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, False), (1, 5, False)]:
        e = ed.DataLoader(list(range(n)), batch_size=bs, drop_last=drop)
        t = td.DataLoader(list(range(n)), batch_size=bs, drop_last=drop)
        assert len(e) == len(t)


BAD_LOADER_ARGS = [
    dict(num_workers=-1),
    dict(timeout=-1),
    dict(prefetch_factor=2),
    dict(num_workers=1, prefetch_factor=-1),
    dict(persistent_workers=True),
    dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_size=None, drop_last=True),
    dict(multiprocessing_context="fork"),
    dict(num_workers=1, multiprocessing_context="nope"),
    dict(num_workers=1, multiprocessing_context=3),
    dict(batch_size=0),
    dict(batch_size=2, drop_last=1),
    # several bad options at once: the first one checked is the one reported
    dict(num_workers=-1, timeout=-1),
    dict(prefetch_factor=2, persistent_workers=True),
    dict(persistent_workers=True, multiprocessing_context="fork"),
    dict(num_workers=1, prefetch_factor=-1, multiprocessing_context="nope"),
    dict(num_workers=1, multiprocessing_context="nope", shuffle=True, sampler=[0]),
    dict(shuffle=True, sampler=[0], batch_sampler=[[0]]),
    dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_size=None, drop_last=True, sampler=[0], shuffle=True),
]


@pytest.mark.parametrize("kwargs", BAD_LOADER_ARGS, ids=[str(k) for k in BAD_LOADER_ARGS])
def test_loader_argument_errors_same_as_torch(kwargs):
    assert_same_error(lambda lib: data(lib).DataLoader(list(range(4)), **kwargs))


def test_iterable_dataset_argument_errors_same_as_torch():
    for kwargs in [
        dict(shuffle=True),
        dict(sampler=[0]),
        dict(batch_sampler=[[0]]),
        dict(shuffle=1, sampler=[0]),
        dict(sampler=[0], batch_sampler=[[0]]),
        dict(batch_size=None, drop_last=True),
        dict(batch_sampler=[[0]], batch_size=3),
    ]:
        assert_same_error(
            lambda lib, kwargs=kwargs: data(lib).DataLoader(
                (EmberSharded if lib is ember else TorchSharded)(0, 3), **kwargs
            )
        )


def _first_lines(loader, take_all=True):
    """The error class and first two message lines of iterating ``loader``. The iterator is shut
    down explicitly: torch's, left to the garbage collector (the traceback holds it in a
    reference cycle), takes 5 s per worker to stop."""
    it = iter(loader)
    try:
        with pytest.raises(Exception) as excinfo:
            list(it) if take_all else next(it)
        return type(excinfo.value), str(excinfo.value).split("\n")[:2]
    finally:
        it._shutdown_workers()
        del excinfo


def test_worker_exception_text_same_as_torch():
    for exc_type in (ValueError, KeyError, IndexError):
        got = [
            _first_lines(
                data(lib).DataLoader(FailingDataset(6, 3, exc_type), batch_size=2, num_workers=2)
            )
            for lib in (ember, torch)
        ]
        assert got[0] == got[1]
        assert got[0][1] == [
            f"Caught {exc_type.__name__} in DataLoader worker process 1.",
            "Original Traceback (most recent call last):",
        ]


def test_timeout_error_same_as_torch():
    got = [
        _first_lines(
            data(lib).DataLoader(
                SlowDataset(2, 0, 0.6), batch_size=None, num_workers=1, timeout=0.1
            ),
            take_all=False,
        )
        for lib in (ember, torch)
    ]
    assert got[0] == got[1] == (RuntimeError, ["DataLoader timed out after 0.1 seconds"])


# ------------------------------------------------------------------------------ samplers
def test_sequential_and_batch_samplers_same_as_torch():
    for n, bs, drop in [(10, 3, False), (10, 3, True), (4, 4, False), (3, 5, True)]:
        e = list(ed.BatchSampler(ed.SequentialSampler(range(n)), bs, drop))
        t = list(td.BatchSampler(td.SequentialSampler(range(n)), bs, drop))
        assert e == t
        assert len(ed.BatchSampler(range(n), bs, drop)) == len(td.BatchSampler(range(n), bs, drop))


@pytest.mark.parametrize("n", [1, 5, 10, 11])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_unshuffled_equals_torch(n, replicas, drop_last):
    for rank in range(replicas):
        e = ed.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        t = td.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(e) == list(t)
        assert (len(e), e.num_samples, e.total_size) == (len(t), t.num_samples, t.total_size)


@pytest.mark.parametrize(
    "n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 4, False), (12, 4, False)]
)
def test_distributed_sampler_shuffled_properties_as_torch(n, replicas, drop_last):
    def shards(mod, epoch):
        out = []
        for rank in range(replicas):
            s = mod.DistributedSampler(range(n), replicas, rank, seed=3, drop_last=drop_last)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    def props(sh):
        flat = [i for s in sh for i in s]
        counts = collections.Counter(flat)
        return (
            [len(s) for s in sh],
            len(flat),
            len(set(flat)),
            sorted(collections.Counter(counts.values()).items()),  # how many repeat how often
            set(flat) == set(range(n)),
        )

    for epoch in (0, 1):
        assert props(shards(ed, epoch)) == props(shards(td, epoch))
    # same seed and epoch: same order; next epoch: another one (as torch)
    assert shards(ed, 0) == shards(ed, 0)
    if n > 2:
        assert (shards(ed, 0) != shards(ed, 1)) == (shards(td, 0) != shards(td, 1))


def test_distributed_sampler_errors_same_as_torch():
    for args in [(range(4), 2, 2), (range(4), 2, -1), (range(4),), (range(4), 2)]:
        assert_same_error(
            lambda lib, args=args: (ed if lib is ember else td).DistributedSampler(*args)
        )


def test_random_samplers_properties_as_torch():
    for kwargs in [dict(), dict(num_samples=25), dict(replacement=True, num_samples=70)]:
        e = list(ed.RandomSampler(range(10), generator=ember.Generator().manual_seed(0), **kwargs))
        t = list(td.RandomSampler(range(10), generator=torch.Generator().manual_seed(0), **kwargs))
        assert len(e) == len(t)
        if not kwargs.get("replacement"):
            assert collections.Counter(e) == collections.Counter(t)
    for args in [dict(replacement=1), dict(num_samples=0), dict(num_samples=1.5)]:
        assert_same_error(lambda lib, args=args: data(lib).RandomSampler(range(3), **args))
    assert_same_error(lambda lib: data(lib).WeightedRandomSampler([[1.0]], 2))
    assert_same_error(lambda lib: data(lib).WeightedRandomSampler([1.0], 0))
    e = ed.SubsetRandomSampler([4, 8, 15])
    t = td.SubsetRandomSampler([4, 8, 15])
    assert sorted(e) == sorted(t) and len(e) == len(t)


def test_random_split_lengths_as_torch():
    for lengths in [[3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.34, 0.33, 0.33]]:
        e = ed.random_split(range(10), lengths, generator=ember.Generator().manual_seed(0))
        t = td.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in e] == [len(s) for s in t]
        assert sorted(i for s in e for i in s.indices) == list(range(10))
    assert_same_error(lambda lib: data(lib).random_split(range(10), [3, 3]))
    assert_same_error(lambda lib: data(lib).random_split(range(10), [-0.5, 1.5]))


def test_dataset_errors_same_as_torch():
    assert_same_error(lambda lib: data(lib).ConcatDataset([]))
    assert_same_error(lambda lib: data(lib).ConcatDataset([range(2)])[-3])
    assert_same_error(lambda lib: data(lib).StackDataset(range(2), range(3)))
    assert_same_error(lambda lib: data(lib).StackDataset())
    assert_same_error(lambda lib: data(lib).Dataset()[0])
    assert_same_error(lambda lib: data(lib).TensorDataset(lib.zeros(2), lib.zeros(3)))


def test_worker_numpy_seeds_same_as_torch():
    from torch.utils.data._utils.worker import _generate_state as t_gen

    from ember.utils.data._utils.worker import _generate_state as e_gen

    rng = np.random.default_rng(0)
    for base in [0, 1, 2**32 + 5, *rng.integers(0, 2**63 - 1, 5).tolist()]:
        for wid in range(4):
            assert e_gen(int(base), wid) == t_gen(int(base), wid)


def test_sampler_with_math_len():
    # len() of a loader over a sampler with len: ceil as torch
    s = list(range(7))
    assert (
        len(ed.DataLoader(s, batch_size=2))
        == math.ceil(7 / 2)
        == len(td.DataLoader(s, batch_size=2))
    )


def test_loader_attributes_and_warnings_same_as_torch():
    import warnings

    def build(lib, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loader = data(lib).DataLoader(list(range(7)), **kwargs)
            it = iter(loader)
            first = next(it)
            del it
        return loader, first, [str(w.message) for w in caught]

    for kwargs in [
        dict(batch_size=3),
        dict(batch_size=None),
        dict(batch_sampler=[[0, 1], [2]]),
        dict(batch_size=2, shuffle=True, generator=None, drop_last=True),
        dict(batch_size=2, pin_memory=True),
        dict(batch_size=2, pin_memory=True, pin_memory_device="cpu"),
    ]:
        (el, ef, ew), (tl, tf, tw) = build(ember, **kwargs), build(torch, **kwargs)
        assert ew == tw, kwargs
        assert (el.batch_size, el.drop_last, el.prefetch_factor) == (
            tl.batch_size,
            tl.drop_last,
            tl.prefetch_factor,
        )
        assert type(el.sampler).__name__ == type(tl.sampler).__name__
        assert type(el.batch_sampler).__name__ == type(tl.batch_sampler).__name__
        assert el.collate_fn.__name__ == tl.collate_fn.__name__
        assert len(el) == len(tl)
        if not kwargs.get("shuffle"):
            assert (ef if isinstance(ef, int) else ef.tolist()) == (
                tf if isinstance(tf, int) else tf.tolist()
            )
        for attr in ("batch_size", "sampler", "drop_last", "dataset", "persistent_workers"):
            pair = {ember: el, torch: tl}
            assert_same_error(lambda lib, attr=attr, pair=pair: setattr(pair[lib], attr, 1))
        el.num_workers = tl.num_workers = 0  # not frozen
    for kwargs in [dict(num_workers=2), dict(num_workers=2, prefetch_factor=5)]:
        e, t = data(ember).DataLoader([1], **kwargs), data(torch).DataLoader([1], **kwargs)
        assert e.prefetch_factor == t.prefetch_factor


# ------------------------------------------------------------------------------ collation of
# containers: which container type comes back (rebuilt, copied and filled, or plain)


class FrozenMap(collections.abc.Mapping):
    """An immutable mapping built from a dict."""

    def __init__(self, d):
        self._d = dict(d)

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


class OddMap(FrozenMap):
    """A mapping whose constructor does not take a dict (TypeError: plain dict back)."""

    def __init__(self, *pairs):
        super().__init__(dict(p for p in pairs if isinstance(p, tuple)) or {"a": 1, "b": 2.0})


class TaggedDict(dict):
    """A mutable mapping with state of its own (kept by the copy)."""

    tag = "t"


class Row(collections.abc.Sequence):
    """An immutable sequence built from a list."""

    def __init__(self, items):
        self._items = list(items)

    def __getitem__(self, i):
        return self._items[i]

    def __len__(self):
        return len(self._items)


class OddRow(Row):
    def __init__(self, *items):
        super().__init__(items if len(items) != 1 else [1, 2.0])


def _canon_deep(obj, lib):
    if isinstance(obj, lib.Tensor):
        return canon(obj, lib)
    if isinstance(obj, collections.abc.Mapping):
        extra = getattr(obj, "tag", None)
        return (type(obj).__name__, extra, [(k, _canon_deep(v, lib)) for k, v in obj.items()])
    if isinstance(obj, (str, bytes)):
        return (type(obj).__name__, obj)
    if isinstance(obj, (collections.abc.Sequence, collections.deque)):
        return (type(obj).__name__, [_canon_deep(v, lib) for v in obj])
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.tolist())
    return (type(obj).__name__, obj)


def _tagged(**kw):
    d = TaggedDict(kw)
    d.tag = "mine"
    return d


CONTAINER_CASES = {
    "frozen_map": lambda: [FrozenMap({"a": 1, "b": 2.0}), FrozenMap({"a": 3, "b": 4.0})],
    "odd_map": lambda: [OddMap(), OddMap()],
    "tagged_dict": lambda: [_tagged(a=1, b=np.float32(2)), _tagged(a=3, b=np.float32(4))],
    "defaultdict": lambda: [collections.defaultdict(int, a=1), collections.defaultdict(int, a=2)],
    "row": lambda: [Row([1, 2.0]), Row([3, 4.0])],
    "odd_row": lambda: [OddRow(1, 2.0), OddRow(3, 4.0)],
    "deque": lambda: [collections.deque([1, "a"]), collections.deque([2, "b"])],
    "tuple_of_strings": lambda: [("a", b"x", 1), ("b", b"y", 2)],
    "namedtuple_strings": lambda: [Point("a", 1), Point("b", 2)],
    "dict_of_tuples": lambda: [{"k": ("a", 1.0)}, {"k": ("b", 2.0)}],
    "nested_rows": lambda: [[Row([np.int16(1)]), {"z": [1]}], [Row([np.int16(2)]), {"z": [2]}]],
    "datetime_as": lambda: [np.array(["2020"], "datetime64[as]")] * 2,
    "np_strings": lambda: [np.str_("a"), np.str_("b")],
}


@pytest.mark.parametrize("name", sorted(CONTAINER_CASES))
def test_collate_and_convert_containers_same_as_torch(name):
    for fn in ("default_collate", "default_convert"):
        results = []
        for lib in (ember, torch):
            try:
                out = getattr(data(lib), fn)(CONTAINER_CASES[name]())
                results.append(_canon_deep(out, lib))
            except Exception as exc:  # noqa: BLE001 - the error is part of the comparison
                results.append((type(exc), str(exc)))
        assert results[0] == results[1], fn
    # one sample through default_convert as well
    sample = CONTAINER_CASES[name]()[0]
    assert _canon_deep(ed.default_convert(sample), ember) == _canon_deep(
        td.default_convert(sample), torch
    )


def test_collate_fn_map_lookup_same_as_torch():
    class MyInt(int):
        pass

    from torch.utils.data._utils import collate as tc

    from ember.utils.data._utils import collate as ec

    for lib, mod in ((ember, ec), (torch, tc)):
        table = {
            int: lambda b, *, collate_fn_map: ("int", list(b)),
            (str, MyInt): lambda b, *, collate_fn_map: ("str-or-myint", list(b)),
            MyInt: lambda b, *, collate_fn_map: ("exact", list(b)),
        }
        got = [
            mod.collate([MyInt(1), MyInt(2)], collate_fn_map=table),
            mod.collate([True, False], collate_fn_map=table),
            mod.collate([[MyInt(1), "s"], [MyInt(2), "t"]], collate_fn_map=table),
        ]
        if lib is ember:
            expected = got
        else:
            assert got == expected


# ------------------------------------------------------------------------------ datasets


class _Stream:
    """An iterable dataset of ``n`` ints, built for either library."""

    def __init__(self, lib, n):
        outer = self

        class S(data(lib).IterableDataset):
            def __iter__(self):
                return iter(range(n))

            def __len__(self):
                return n

        outer.cls = S


def _outcome(fn):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as exc:  # noqa: BLE001 - compared as (class, message)
            value = (type(exc).__name__, str(exc))
    return value, [str(w.message) for w in caught]


DATASET_CASES = {
    "concat_index": lambda d, lib: [
        d.ConcatDataset([list(range(3)), [], list(range(10, 12))])[i] for i in (-5, -1, 0, 2, 3, 4)
    ],
    "concat_too_negative": lambda d, lib: d.ConcatDataset([[1, 2]])[-3],
    "concat_past_end": lambda d, lib: d.ConcatDataset([[1, 2], [3]])[3],
    "concat_sizes": lambda d, lib: d.ConcatDataset([[1, 2], [], [3]]).cumulative_sizes,
    "concat_empty": lambda d, lib: d.ConcatDataset([]),
    "concat_iterable": lambda d, lib: d.ConcatDataset([[1], _Stream(lib, 2).cls()]),
    "tensor_none": lambda d, lib: (d.TensorDataset().tensors, len(d.TensorDataset())),
    "tensor_mismatch": lambda d, lib: d.TensorDataset(lib.zeros(3), lib.zeros(3), lib.zeros(2)),
    "tensor_rows": lambda d, lib: [
        [t.tolist() for t in d.TensorDataset(lib.arange(6).reshape(3, 2), lib.arange(3))[i]]
        for i in (0, -1)
    ],
    "stack_both": lambda d, lib: d.StackDataset([1], x=[2]),
    "stack_none": lambda d, lib: d.StackDataset(),
    "stack_mismatch_args": lambda d, lib: d.StackDataset([1, 2], [1]),
    "stack_mismatch_kwargs": lambda d, lib: d.StackDataset(a=[1, 2], b=[1, 2], c=[1]),
    "stack_items": lambda d, lib: (
        d.StackDataset([1, 2], "ab")[1],
        d.StackDataset(a=[1, 2], b="xy")[0],
        d.StackDataset(a=[1, 2], b="xy").__getitems__([1, 0]),
        len(d.StackDataset(a=[1, 2])),
    ),
    "chain_lazy": lambda d, lib: list(
        itertools.islice(iter(d.ChainDataset([_Stream(lib, 2).cls(), [5]])), 2)
    ),
    "chain_bad": lambda d, lib: list(d.ChainDataset([_Stream(lib, 2).cls(), [5]])),
    "chain_len": lambda d, lib: len(d.ChainDataset([_Stream(lib, 2).cls(), _Stream(lib, 3).cls()])),
    "chain_len_bad": lambda d, lib: len(d.ChainDataset([_Stream(lib, 2).cls(), [1]])),
    "subset": lambda d, lib: (
        d.Subset("abcdef", [5, 0, 2])[1],
        d.Subset(list("abcdef"), [5, 0, 2]).__getitems__([2, 0]),
        d.Subset(d.Subset(list("abcdef"), [5, 4, 3]), [2, 1]).__getitems__([0, 1]),
        len(d.Subset("abc", [])),
    ),
    "split_fractions": lambda d, lib: [
        len(s) for s in d.random_split(range(10), [0.33, 0.33, 0.34])
    ],
    "split_zero": lambda d, lib: [len(s) for s in d.random_split(range(3), [0.1, 0.1, 0.8])],
    "split_bad_fraction": lambda d, lib: d.random_split(range(3), [1.5, -0.5]),
    "split_bad_sum": lambda d, lib: d.random_split(range(3), [1, 1]),
    "split_ints": lambda d, lib: [len(s) for s in d.random_split(range(5), [2, 0, 3])],
    "split_covers": lambda d, lib: sorted(
        i for s in d.random_split(range(7), [0.5, 0.5]) for i in s
    ),
}


@pytest.mark.parametrize("name", sorted(DATASET_CASES))
def test_dataset_combinators_same_as_torch(name):
    got = [_outcome(lambda lib=lib: DATASET_CASES[name](data(lib), lib)) for lib in (ember, torch)]
    assert got[0] == got[1]


def test_subset_subclass_rule_same_as_torch():
    def make(lib, with_items):
        class Mine(data(lib).Subset):
            def __getitem__(self, idx):
                return -1

            if with_items:

                def __getitems__(self, indices):
                    return [-1] * len(indices)

        return Mine([1, 2], [0])

    for with_items in (False, True):
        got = [_outcome(lambda lib=lib, w=with_items: make(lib, w)[0]) for lib in (ember, torch)]
        assert got[0] == got[1]


# ------------------------------------------------------------------------------ samplers


SAMPLER_CASES = [
    ("RandomSampler", (range(10),), {}),
    ("RandomSampler", (range(10),), dict(replacement=True, num_samples=70)),
    ("RandomSampler", (range(10),), dict(replacement=True, num_samples=32)),
    ("RandomSampler", (range(10),), dict(num_samples=23)),
    ("RandomSampler", (range(7),), dict(num_samples=3)),
    ("SubsetRandomSampler", ([5, 6, 7, 8, 9],), {}),
    ("WeightedRandomSampler", ([1, 2, 3.0], 10), {}),
    ("WeightedRandomSampler", ([1, 2, 3.0, 4], 3), dict(replacement=False)),
]


@pytest.mark.parametrize("case", range(len(SAMPLER_CASES)))
@pytest.mark.parametrize("seed", [0, 7])
def test_random_samplers_same_stream_as_torch(case, seed):
    name, args, kwargs = SAMPLER_CASES[case]
    streams = []
    for lib in (ember, torch):
        gen = lib.Generator().manual_seed(seed)
        sampler = getattr(data(lib), name)(*args, generator=gen, **kwargs)
        streams.append((list(sampler), list(sampler), len(sampler)))
        lib.manual_seed(seed)  # and through the default generator
        if name == "RandomSampler":
            streams.append(list(getattr(data(lib), name)(*args, **kwargs)))
    assert streams[: len(streams) // 2] == streams[len(streams) // 2 :]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(batch_size=3, drop_last=False),
        dict(batch_size=3, drop_last=True),
        dict(batch_size=5, drop_last=True),
        dict(batch_size=1, drop_last=False),
        dict(batch_size=11, drop_last=False),
        dict(batch_size=11, drop_last=True),
    ],
)
def test_batch_sampler_same_as_torch(kwargs):
    out = [
        (list(s), len(s))
        for s in (ed.BatchSampler(range(10), **kwargs), td.BatchSampler(range(10), **kwargs))
    ]
    assert out[0] == out[1]


@pytest.mark.parametrize(
    "make",
    [
        lambda d: d.BatchSampler(range(3), 0, False),
        lambda d: d.BatchSampler(range(3), True, False),
        lambda d: d.BatchSampler(range(3), 2, None),
        lambda d: d.RandomSampler(range(3), replacement=1),
        lambda d: d.RandomSampler(range(3), num_samples=0),
        lambda d: d.RandomSampler([], num_samples=None),
        lambda d: d.WeightedRandomSampler([1.0], 0),
        lambda d: d.WeightedRandomSampler([1.0], True),
        lambda d: d.WeightedRandomSampler([1.0], 2, replacement=0),
        lambda d: d.WeightedRandomSampler([[1.0]], 2),
    ],
)
def test_sampler_errors_same_as_torch(make):
    assert_same_error(lambda lib: make(data(lib)))


@pytest.mark.parametrize("n", [0, 1, 7, 10])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shuffled_same_as_torch(n, drop_last):
    for replicas in (1, 3, 4):
        for rank in range(replicas):
            streams = []
            for d in (ed, td):
                s = d.DistributedSampler(
                    range(n), replicas, rank, shuffle=True, seed=11, drop_last=drop_last
                )
                epochs = []
                for epoch in (0, 1):
                    s.set_epoch(epoch)
                    epochs.append(list(s))
                streams.append((epochs, len(s), s.total_size))
            assert streams[0] == streams[1], (replicas, rank)
