# ruff: noqa  (tutorial-style user code, kept as users write it)
import torch
from torch.utils.data import (
    Dataset,
    IterableDataset,
    DataLoader,
    TensorDataset,
    ConcatDataset,
    Subset,
    random_split,
    WeightedRandomSampler,
    RandomSampler,
    SequentialSampler,
    BatchSampler,
    SubsetRandomSampler,
    default_collate,
    get_worker_info,
    ChainDataset,
)
import numpy as np


class DictDS(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {
            "x": torch.full((2,), float(i)),
            "y": i,
            "name": f"s{i}",
            "arr": np.array([i, i]),
            "t": (i, 1.5),
        }


dl = DataLoader(DictDS(5), batch_size=2)
for b in dl:
    print(b)
print(default_collate([(1, 2.0), (3, 4.0)]))
print(default_collate([np.float32(1.0), np.float32(2.0)]))
print(default_collate([[1, 2], [3, 4]]))
ds = TensorDataset(torch.arange(10).float(), torch.arange(10) % 3)
c = ConcatDataset([ds, ds])
print(len(c), c[12], c.cumulative_sizes)
s = Subset(ds, [1, 3, 5])
print(len(s), s[1], s.indices)
print(list(SequentialSampler(ds)))
print(list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False)))
print(list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True)))
g = torch.Generator().manual_seed(0)
print(len(list(RandomSampler(ds, generator=g))), sorted(RandomSampler(ds, generator=g)))
w = WeightedRandomSampler([0.1, 0.9, 0.0], num_samples=5, replacement=True)
print(len(w), len(list(w)), set(list(w)) <= {0, 1})
print(sorted(SubsetRandomSampler([4, 5, 6])))
dl = DataLoader(ds, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(1))
print(len(dl), sorted(torch.cat([b[0] for b in dl]).tolist()))
dl = DataLoader(ds, batch_size=4, drop_last=True)
print(len(dl), [b[1].tolist() for b in dl])


def collate(batch):
    xs, ys = zip(*batch)
    return torch.stack(xs), torch.tensor(ys)


dl = DataLoader(ds, batch_size=3, collate_fn=collate)
print(next(iter(dl)))
dl = DataLoader(ds, batch_size=None)
print(next(iter(dl)))


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        return iter(range(self.n))


print(list(DataLoader(Stream(7), batch_size=3)))
print(list(ChainDataset([Stream(2), Stream(3)])))
dl = DataLoader(ds, batch_size=5, num_workers=2)
print([b[0].tolist() for b in dl])
dl = DataLoader(ds, batch_size=5, num_workers=2, persistent_workers=True, pin_memory=True)
for e in range(2):
    print([b[1].tolist() for b in dl])
print(
    dl.batch_size,
    dl.num_workers,
    dl.drop_last,
    type(dl.sampler).__name__,
    type(dl.batch_sampler).__name__,
)
a, b = random_split(range(10), [0.5, 0.5], generator=torch.Generator().manual_seed(42))
print(len(a), len(b), type(a.dataset))
print(ds[2:4])
try:
    TensorDataset(torch.zeros(3), torch.zeros(4))
except AssertionError as e:
    print("AssertionError", e)
try:
    random_split(range(10), [3, 3])
except ValueError as e:
    print("ValueError", e)
import torch.utils.data as data

print(data.DataLoader is DataLoader)
