"""Datasets and samplers of ember.utils.data (no worker processes here)."""

import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


class Count(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_dataset_base_and_add():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement"):
        Dataset()[0]
    both = Squares(3) + Squares(2)
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(5)] == [0, 1, 4, 0, 1]
    chain = Count(2) + Count(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    assert Dataset[int] is not None  # generic, as torch's


def test_tensor_dataset():
    x, y = ember.arange(12.0).reshape(4, 3), ember.arange(4)
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    np.testing.assert_array_equal(a.numpy(), [6.0, 7.0, 8.0])
    assert b.item() == 2 and b.dim() == 0
    sl = ds[1:3]
    assert sl[0].shape == (2, 3) and sl[1].tolist() == [1, 2]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.arange(3))


def test_stack_dataset_tuple_and_dict():
    a, b = Squares(4), TensorDataset(ember.arange(4))
    ds = StackDataset(a, b)
    assert len(ds) == 4 and ds[3][0] == 9 and ds[3][1][0].item() == 3
    items = ds.__getitems__([1, 2])
    assert [i[0] for i in items] == [1, 4]
    kd = StackDataset(sq=a, t=b)
    assert kd[2]["sq"] == 4
    assert [d["sq"] for d in kd.__getitems__([0, 3])] == [0, 9]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, Squares(3))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(a, x=b)


def test_concat_dataset_indexing_and_errors():
    ds = ConcatDataset([Squares(2), Squares(3)])
    assert ds.cumulative_sizes == [2, 5] and len(ds) == 5
    assert [ds[i] for i in range(5)] == [0, 1, 0, 1, 4]
    assert ds[-1] == 4 and ds[-5] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed"):
        ds[-6]
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Count(2)])
    with pytest.warns(FutureWarning):
        assert ds.cummulative_sizes == [2, 5]


def test_chain_dataset_rejects_map_style():
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_subset_and_getitems():
    sub = Subset(Squares(10), [9, 0, 3])
    assert len(sub) == 3 and sub[0] == 81 and sub.__getitems__([2, 1]) == [9, 0]

    class Bad(Subset):
        def __getitem__(self, idx):
            return 0

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        Bad(Squares(2), [0])


def test_random_split_lengths_fractions_and_generator():
    ds = Squares(10)
    parts = random_split(ds, [3, 7], generator=ember.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(ds, [3, 7], generator=ember.Generator().manual_seed(1))
    assert again[0].indices == parts[0].indices
    fr = random_split(ds, [0.25, 0.25, 0.5], generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in fr] == [3, 2, 5]  # remainder handed out round-robin
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Squares(2), [1.0, 0.0])
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(ds, [-0.5, 1.5])


def test_sequential_and_base_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert len(SequentialSampler(range(4))) == 4
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_random_sampler_permutations_and_replacement():
    g = ember.Generator().manual_seed(0)
    s = RandomSampler(range(10), generator=g)
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(10)) and first != second
    assert list(RandomSampler(range(10), generator=ember.Generator().manual_seed(0))) == first
    # more samples than data: whole permutations, then a cut one
    long = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert len(long) == 10 and sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3]
    assert len(set(long[8:])) == 2
    rep = list(RandomSampler(range(3), replacement=True, num_samples=70, generator=g))
    assert len(rep) == 70 and set(rep) == {0, 1, 2}
    ember.manual_seed(5)
    a = list(RandomSampler(range(20)))
    ember.manual_seed(5)
    assert list(RandomSampler(range(20))) == a  # seeded from the default generator
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler([])


def test_subset_random_and_weighted_samplers():
    g = ember.Generator().manual_seed(3)
    s = SubsetRandomSampler([10, 20, 30], generator=g)
    assert sorted(s) == [10, 20, 30] and len(s) == 3
    w = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 400, generator=g)
    draws = np.array(list(w))
    assert len(w) == 400 and set(draws.tolist()) == {1, 3}
    assert 0.65 < (draws == 3).mean() < 0.85
    nr = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=g))
    assert sorted(nr) == [0, 1, 2]
    assert w.weights.dtype is ember.float64
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], True)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have"):
        WeightedRandomSampler([[1.0]], 1)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 1, 0)


@pytest.mark.parametrize(
    "n,replicas,drop_last",
    [(10, 3, False), (10, 3, True), (9, 3, False), (2, 4, False), (11, 4, True)],
)
def test_distributed_sampler_shards(n, replicas, drop_last):
    shards = []
    for rank in range(replicas):
        s = DistributedSampler(
            Squares(n), replicas, rank, shuffle=True, seed=7, drop_last=drop_last
        )
        s.set_epoch(2)
        shards.append(list(s))
        assert len(shards[-1]) == len(s)
    flat = [i for sh in shards for i in sh]
    if drop_last:
        assert len(set(flat)) == len(flat) == (n // replicas) * replicas  # disjoint
    else:
        assert set(flat) == set(range(n))  # covering
        assert len(flat) == -(-n // replicas) * replicas  # padded by repetition
        assert len(flat) - len(set(flat)) == len(flat) - n  # only the padding repeats


def test_distributed_sampler_epochs_and_seed():
    def order(epoch, seed=0, rank=0):
        s = DistributedSampler(Squares(50), 2, rank, seed=seed)
        s.set_epoch(epoch)
        return list(s)

    assert order(0) == order(0) and order(0) != order(1) and order(0, seed=1) != order(0)
    assert not set(order(3, rank=0)) & set(order(3, rank=1))
    plain = DistributedSampler(Squares(5), 2, 1, shuffle=False)
    assert list(plain) == [1, 3, 0]


def test_distributed_sampler_errors():
    with pytest.raises(
        ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"
    ):
        DistributedSampler(Squares(4), 2, 2)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(Squares(4))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(Squares(4), num_replicas=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DistributedSampler(Squares(4), 2, 0)
