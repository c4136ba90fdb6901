"""ferro.data against torch.utils.data: batch counts, collate structures, samplers, splits, shuffling, prefetch."""

from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ferro
import ferro.data as fd

Point = namedtuple("Point", ["x", "y"])


def _plain(x: Any) -> Any:
    """A batch as comparable Python values: tensors as (dtype, shape, values); containers kept by kind."""
    if isinstance(x, ferro.Tensor):
        return ("tensor", x.dtype.name, tuple(x.shape), x.tolist())
    if isinstance(x, torch.Tensor):
        return ("tensor", str(x.dtype).removeprefix("torch."), tuple(x.shape), x.tolist())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, *(_plain(v) for v in x))
    if isinstance(x, dict):
        return (type(x).__name__, {k: _plain(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    return x


class _Items:
    """A map-style dataset of given samples, duck-typed so that torch and ferro take it alike."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __getitem__(self, i: int) -> Any:
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)


class FerroIndices(fd.Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int) -> int:
        return i

    def __len__(self) -> int:
        return self.n


def _samples(t: Any) -> dict[str, list[Any]]:
    """Sample lists of every structure default_collate handles; ``t`` makes a tensor (ferro or torch)."""
    rng = np.random.default_rng(0)
    return {
        "tensors": [t(rng.standard_normal((2, 3)).astype(np.float32)) for _ in range(4)],
        "int tensors": [t(np.array([i, i + 1])) for i in range(3)],
        "numpy arrays": [rng.standard_normal(3) for _ in range(3)],
        "numpy int32 arrays": [np.arange(4, dtype=np.int32) + i for i in range(2)],
        "numpy scalars": [np.float32(i) / 3 for i in range(3)],
        "numpy int scalars": [np.int16(i) for i in range(3)],
        "floats": [0.5, 1.5, -2.0],
        "ints": [1, 2, 3],
        "bools": [True, False, True],
        "strings": ["a", "bc", "d"],
        "bytes": [b"a", b"b"],
        "tuples": [(t(np.array([1.0, 2.0])), 3, "x"), (t(np.array([3.0, 4.0])), 4, "y")],
        "lists": [[1, 2.0], [3, 4.0]],
        "dicts": [{"a": t(np.array(i)), "b": {"c": float(i)}} for i in range(3)],
        "ordered dicts": [OrderedDict(z=i, a=[i, i]) for i in range(2)],
        "namedtuples": [Point(t(np.array([i])), i * 1.0) for i in range(3)],
        "nested": [{"pair": (np.ones(2) * i, [i, {"k": i}])} for i in range(2)],
    }


@pytest.mark.parametrize("case", list(_samples(np.asarray)))
def test_default_collate_matches_torch(case: str) -> None:
    ours = fd.default_collate(_samples(ferro.tensor)[case])
    theirs = tud.default_collate(_samples(torch.tensor)[case])
    assert _plain(ours) == _plain(theirs)


@pytest.mark.parametrize("case", list(_samples(np.asarray)))
def test_unbatched_loading_converts_as_torch(case: str) -> None:
    ours = list(fd.DataLoader(_Items(_samples(ferro.tensor)[case]), batch_size=None))
    theirs = list(tud.DataLoader(_Items(_samples(torch.tensor)[case]), batch_size=None))
    assert _plain(ours) == _plain(theirs)


def test_default_collate_errors_as_torch() -> None:
    for bad in ([[1, 2], [3]], [object(), object()], [np.array(["a"]), np.array(["b"])]):
        with pytest.raises(Exception) as want:
            tud.default_collate(bad)
        with pytest.raises(type(want.value)) as got:
            fd.default_collate(bad)
        assert str(got.value).split(";")[0] == str(want.value).split(";")[0]


@pytest.mark.parametrize("n", [0, 1, 7, 10])
@pytest.mark.parametrize("batch_size", [1, 3, 5, 10, 12])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batches_and_len_match_torch(n: int, batch_size: int, drop_last: bool) -> None:
    ours = fd.DataLoader(FerroIndices(n), batch_size=batch_size, drop_last=drop_last)
    theirs = tud.DataLoader(range(n), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
    assert len(iter(ours)) == len(theirs)


def test_batch_sampler_and_sampler_options_match_torch() -> None:
    ours = list(fd.BatchSampler(fd.SequentialSampler(range(10)), 4, False))
    assert ours == list(tud.BatchSampler(tud.SequentialSampler(range(10)), 4, False))
    assert list(fd.BatchSampler(range(10), 4, True)) == list(tud.BatchSampler(range(10), 4, True))
    assert len(fd.BatchSampler(range(10), 4, True)) == 2 and len(fd.BatchSampler(range(10), 4, False)) == 3
    custom = [[3, 1], [0], [2, 4]]
    loader = fd.DataLoader(FerroIndices(5), batch_sampler=custom)
    assert [b.tolist() for b in loader] == custom and len(loader) == 3
    loader = fd.DataLoader(FerroIndices(5), sampler=[4, 3, 2, 1, 0], batch_size=2)
    assert [b.tolist() for b in loader] == [[4, 3], [2, 1], [0]]


@pytest.mark.parametrize("kwargs", [
    {"batch_sampler": [[0]], "batch_size": 2}, {"batch_sampler": [[0]], "shuffle": True},
    {"batch_sampler": [[0]], "drop_last": True}, {"batch_sampler": [[0]], "sampler": [0]},
    {"sampler": [0], "shuffle": True}, {"batch_size": None, "drop_last": True}, {"num_workers": -1},
])
def test_conflicting_options_are_refused_as_torch(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as want:
        tud.DataLoader(range(4), **kwargs)
    with pytest.raises(ValueError, match=str(want.value)[:30]):
        fd.DataLoader(FerroIndices(4), **kwargs)
    for bad in ({"batch_size": 0}, {"batch_size": 2.5}, {"drop_last": 1}):
        with pytest.raises(ValueError, match="should be"):
            fd.BatchSampler(range(4), **{"batch_size": 2, "drop_last": False, **bad})


def _orders(loader: fd.DataLoader, epochs: int = 2) -> list[list[int]]:
    return [[i for b in loader for i in b.tolist()] for _ in range(epochs)]


def test_shuffle_with_a_seeded_generator_is_reproducible_and_ignores_the_global_seed() -> None:
    def orders(seed: int, global_seed: int) -> list[list[int]]:
        ferro.manual_seed(global_seed)
        return _orders(fd.DataLoader(FerroIndices(50), batch_size=8, shuffle=True,
                                     generator=ferro.Generator().manual_seed(seed)))
    a = orders(3, 0)
    assert a == orders(3, 123)
    assert all(sorted(o) == list(range(50)) for o in a)  # each epoch is a permutation
    assert a[0] != a[1] and a[0] != list(range(50))  # a new order per epoch
    assert orders(4, 0) != a


def test_shuffle_without_a_generator_follows_the_global_rng_and_its_state() -> None:
    loader = fd.DataLoader(FerroIndices(40), batch_size=16, shuffle=True)
    ferro.manual_seed(7)
    first = _orders(loader)
    ferro.manual_seed(7)
    assert _orders(loader) == first
    ferro.manual_seed(7)
    states = ferro.random.get_all_rng_states()
    epoch = _orders(loader, 1)
    ferro.rand(10)
    ferro.random.set_all_rng_states(states)
    assert _orders(loader, 1) == epoch


def test_random_samplers() -> None:
    g = ferro.Generator().manual_seed(0)
    s = fd.RandomSampler(range(5), num_samples=12, generator=g)
    order = list(s)
    assert len(s) == 12 and len(order) == 12
    assert sorted(order[:5]) == sorted(order[5:10]) == list(range(5)) and len(set(order[10:])) == 2
    r = list(fd.RandomSampler(range(3), replacement=True, num_samples=300, generator=g))
    assert set(r) == {0, 1, 2}
    w = list(fd.WeightedRandomSampler([0.0, 1.0, 3.0], 400, generator=g))
    assert 1 in w and 2 in w and 0 not in w and 2.0 < w.count(2) / w.count(1) < 4.5
    sub = list(fd.SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(sub) == [10, 20, 30]
    with pytest.raises(ValueError, match="num_samples"):
        fd.RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement"):
        fd.RandomSampler(range(3), replacement=1)


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.33, 0.33, 0.34], [1 / 3] * 3,
                                     [10], [0, 10]])
def test_random_split_lengths_as_torch(lengths: list[float]) -> None:
    g = ferro.Generator().manual_seed(1)
    ours = fd.random_split(FerroIndices(10), lengths, generator=g)
    theirs = tud.random_split(range(10), lengths, generator=torch.Generator().manual_seed(1))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    items = [ours[k][i] for k in range(len(ours)) for i in range(len(ours[k]))]
    assert sorted(items) == list(range(10))
    again = fd.random_split(FerroIndices(10), lengths, generator=ferro.Generator().manual_seed(1))
    assert [s.indices for s in again] == [s.indices for s in ours]


def test_random_split_errors() -> None:
    with pytest.raises(ValueError, match="Sum of input lengths"):
        fd.random_split(FerroIndices(10), [3, 3])
    with pytest.raises(ValueError, match="between 0 and 1"):
        fd.random_split(FerroIndices(10), [1.5, -0.5])


def test_concat_subset_stack_and_chain_datasets_as_torch() -> None:
    a, b = list(range(5)), list(range(100, 103))
    ours = fd.ConcatDataset([_Items(a), _Items(b)])
    theirs = tud.ConcatDataset([a, b])
    assert len(ours) == len(theirs) == 8 and ours.cumulative_sizes == theirs.cumulative_sizes
    assert [ours[i] for i in range(-8, 8)] == [theirs[i] for i in range(-8, 8)]
    with pytest.raises(IndexError):
        ours[8]
    assert len(FerroIndices(3) + FerroIndices(2)) == 5
    sub = fd.Subset(_Items(a), [4, 0, 2])
    assert [sub[i] for i in range(3)] == [4, 0, 2] and sub.__getitems__([2, 0]) == [2, 4]
    st = fd.StackDataset(_Items(a), _Items([x * 2 for x in a]))
    assert st[3] == (3, 6) and fd.StackDataset(p=_Items(a), q=_Items(a))[1] == {"p": 1, "q": 1}

    class Stream(fd.IterableDataset):
        def __init__(self, items: list[int]) -> None:
            self.items = items

        def __iter__(self) -> Any:
            return iter(self.items)

        def __len__(self) -> int:
            return len(self.items)

    chain = Stream([1, 2]) + Stream([3])
    assert list(chain) == [1, 2, 3] and len(chain) == 3


class _Stream(fd.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Any:
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


class _TorchStream(tud.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Any:
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("prefetch", [None, 2])
def test_iterable_datasets_as_torch(drop_last: bool, prefetch: int | None) -> None:
    ours = fd.DataLoader(_Stream(10), batch_size=4, drop_last=drop_last, prefetch_factor=prefetch)
    theirs = tud.DataLoader(_TorchStream(10), batch_size=4, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
    assert list(fd.DataLoader(_Stream(3), batch_size=None, prefetch_factor=prefetch)) == [0, 1, 2]
    with pytest.raises(ValueError, match="shuffle"):
        fd.DataLoader(_Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="sampler"):
        fd.DataLoader(_Stream(3), sampler=[0])


def test_tensor_dataset_batches_index_each_tensor_once(device: ferro.device, monkeypatch: pytest.MonkeyPatch) -> None:
    x = ferro.tensor(np.arange(30.0).reshape(10, 3), device=device)
    y = ferro.tensor(np.arange(10) % 3, device=device)
    ds = fd.TensorDataset(x, y)
    g = ferro.Generator().manual_seed(0)
    slow = list(fd.DataLoader(ds, batch_size=4, shuffle=True, generator=g,
                              collate_fn=lambda b: fd.default_collate(b)))
    monkeypatch.setattr(fd.TensorDataset, "__getitem__", lambda self, i: pytest.fail("indexed per sample"))
    g.manual_seed(0)
    fast = list(fd.DataLoader(ds, batch_size=4, shuffle=True, generator=g))
    assert _plain(fast) == _plain(slow)
    assert type(fast[0]) is list and fast[0][0].device is device
    sub = fd.Subset(ds, [9, 3, 5])
    (bx, by), = list(fd.DataLoader(sub, batch_size=3))
    assert bx.tolist() == [[27.0, 28.0, 29.0], [9.0, 10.0, 11.0], [15.0, 16.0, 17.0]] and by.tolist() == [0, 0, 2]


def test_tensor_dataset_checks_sizes() -> None:
    with pytest.raises(ValueError, match="Size mismatch"):
        fd.TensorDataset(ferro.zeros(3), ferro.zeros(4))
    assert len(fd.TensorDataset(ferro.zeros(3, 2))) == 3


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"shuffle": False, "drop_last": True},
                                    {"batch_size": None}])
def test_prefetch_gives_the_same_batches(kwargs: dict[str, Any]) -> None:
    ds = _Items([{"x": np.full(2, i), "i": i} for i in range(23)])
    runs = []
    for prefetch, workers in [(None, 0), (1, 0), (3, 0), (None, 2)]:
        loader = fd.DataLoader(ds, **{"batch_size": 5, **kwargs}, prefetch_factor=prefetch, num_workers=workers,
                               generator=ferro.Generator().manual_seed(5) if kwargs.get("shuffle") else None)
        runs.append(_plain(_orders_of(loader)))
    assert all(r == runs[0] for r in runs)


def _orders_of(loader: fd.DataLoader) -> list[Any]:
    return [list(loader) for _ in range(2)]


def test_prefetch_runs_in_a_background_thread_and_passes_errors_on() -> None:
    seen: list[str] = []

    class Watch(fd.Dataset):
        def __getitem__(self, i: int) -> int:
            seen.append(threading.current_thread().name)
            if i == 7:
                raise KeyError("sample 7 is broken")
            return i

        def __len__(self) -> int:
            return 10

    inits: list[int] = []
    loader = fd.DataLoader(Watch(), batch_size=2, prefetch_factor=2, worker_init_fn=inits.append)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    assert inits == [0] and seen and all(name.startswith("ferro-dataloader") for name in seen)
    with pytest.raises(KeyError, match="sample 7"):
        list(it)
    it = iter(loader)
    next(it)
    del it  # an abandoned pass shuts its thread down
    assert [b.tolist() for b in fd.DataLoader(Watch(), batch_size=2, sampler=[0, 1, 2])] == [[0, 1], [2]]
