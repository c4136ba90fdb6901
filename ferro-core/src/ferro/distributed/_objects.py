"""Collectives on Python objects: ``broadcast_object_list``, ``all_gather_object``, ``gather_object``.

As PyTorch's, they **pickle** the objects: unpickling runs code chosen by the
sender, so use them only among processes you trust (the ranks of your own job).
The bytes travel as uint8 arrays through the group's collectives, lengths first
(through device memory for a device group, as PyTorch's do with NCCL).
"""

from __future__ import annotations

import pickle
from typing import Any

from .._core.host import np
from ._backend import ProcessGroup
from ._buffers import to_group, to_host
from ._collectives import _group
from ._world import group_rank

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object"]


def _pickled(obj: Any) -> Any:
    return np().frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np().uint8)


def _gathered(g: ProcessGroup, obj: Any) -> list[Any]:
    data = _pickled(obj)
    sizes = g.empty((g.size,), np().int64)
    g.allgather(to_group(g, np().array([data.size], np().int64)), sizes).wait()
    sizes = to_host(sizes)
    padded = np().zeros(int(sizes.max()), np().uint8)
    padded[:data.size] = data
    every = g.empty((g.size, padded.size), np().uint8)
    g.allgather(to_group(g, padded), every).wait()
    every = to_host(every)
    return [pickle.loads(every[i, :int(n)].tobytes()) for i, n in enumerate(sizes)]


def broadcast_object_list(object_list: list[Any], src: int = 0, group: Any = None, device: Any = None) -> None:
    """Replace every rank's ``object_list`` items with rank ``src``'s (pickled; same length on all ranks)."""
    g = _group(group, "broadcast_object_list")
    if g is None:
        return
    root = group_rank(g, src, "broadcast_object_list", "src")
    data = _pickled(list(object_list)) if g.rank == root else None
    size = to_group(g, np().array([0 if data is None else data.size], np().int64))
    g.broadcast(size, root).wait()
    n = int(to_host(size)[0])
    buf = to_group(g, data.copy()) if data is not None else g.empty((n,), np().uint8)
    g.broadcast(buf, root).wait()
    if g.rank != root:
        got = pickle.loads(to_host(buf).tobytes())
        if len(got) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {src} sent {len(got)} objects, this rank's list holds "
                             f"{len(object_list)}")
        object_list[:] = got


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Every rank's ``obj`` into ``object_list`` (one slot per rank, in rank order; pickled)."""
    g = _group(group, "all_gather_object")
    if g is None:
        return
    if len(object_list) != g.size:
        raise ValueError(f"all_gather_object: object_list must have one slot per rank ({g.size}), "
                         f"got {len(object_list)}")
    object_list[:] = _gathered(g, obj)


def gather_object(obj: Any, object_gather_list: list[Any] | None = None, dst: int = 0, group: Any = None) -> None:
    """Every rank's ``obj`` into rank ``dst``'s ``object_gather_list`` (pickled)."""
    g = _group(group, "gather_object")
    if g is None:
        return
    root = group_rank(g, dst, "gather_object", "dst")
    got = _gathered(g, obj)  # an all-gather: small objects, one code path
    if g.rank == root:
        if object_gather_list is None or len(object_gather_list) != g.size:
            raise ValueError(f"gather_object: object_gather_list must have one slot per rank ({g.size}) on dst")
        object_gather_list[:] = got
