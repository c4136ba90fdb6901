"""Collectives on Python objects: ``broadcast_object_list``, ``all_gather_object``, ``gather_object``.

As PyTorch's, they **pickle** the objects: unpickling runs code chosen by the
sender, so use them only among processes you trust (the ranks of your own job).
The bytes travel as uint8 arrays through the group's collectives, lengths first.
"""

from __future__ import annotations

import pickle
from typing import Any

from .._host import np
from ._backend import ProcessGroup
from ._collectives import _group
from ._world import group_rank

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object"]


def _host(g: ProcessGroup, op: str) -> None:
    if g.memory != "host":
        raise TypeError(f"{op}: process group backend '{g.backend}' moves device memory; object collectives "
                        "need a host group (init_process_group('mpi'))")


def _pickled(obj: Any) -> Any:
    return np().frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np().uint8)


def _gathered(g: ProcessGroup, obj: Any) -> list[Any]:
    data = _pickled(obj)
    sizes = np().empty(g.size, np().int64)
    g.allgather(np().array([data.size], np().int64), sizes).wait()
    padded = np().zeros(int(sizes.max()), np().uint8)
    padded[:data.size] = data
    every = np().empty((g.size, padded.size), np().uint8)
    g.allgather(padded, every).wait()
    return [pickle.loads(every[i, :int(n)].tobytes()) for i, n in enumerate(sizes)]


def broadcast_object_list(object_list: list[Any], src: int = 0, group: Any = None, device: Any = None) -> None:
    """Replace every rank's ``object_list`` items with rank ``src``'s (pickled; same length on all ranks)."""
    g = _group(group, "broadcast_object_list")
    if g is None:
        return
    _host(g, "broadcast_object_list")
    root = group_rank(g, src, "broadcast_object_list", "src")
    data = _pickled(list(object_list)) if g.rank == root else None
    size = np().array([0 if data is None else data.size], np().int64)
    g.broadcast(size, root).wait()
    buf = data.copy() if data is not None else np().empty(int(size[0]), np().uint8)
    g.broadcast(buf, root).wait()
    if g.rank != root:
        got = pickle.loads(buf.tobytes())
        if len(got) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {src} sent {len(got)} objects, this rank's list holds "
                             f"{len(object_list)}")
        object_list[:] = got


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Every rank's ``obj`` into ``object_list`` (one slot per rank, in rank order; pickled)."""
    g = _group(group, "all_gather_object")
    if g is None:
        return
    _host(g, "all_gather_object")
    if len(object_list) != g.size:
        raise ValueError(f"all_gather_object: object_list must have one slot per rank ({g.size}), "
                         f"got {len(object_list)}")
    object_list[:] = _gathered(g, obj)


def gather_object(obj: Any, object_gather_list: list[Any] | None = None, dst: int = 0, group: Any = None) -> None:
    """Every rank's ``obj`` into rank ``dst``'s ``object_gather_list`` (pickled)."""
    g = _group(group, "gather_object")
    if g is None:
        return
    _host(g, "gather_object")
    root = group_rank(g, dst, "gather_object", "dst")
    got = _gathered(g, obj)  # an all-gather: small objects, one code path
    if g.rank == root:
        if object_gather_list is None or len(object_gather_list) != g.size:
            raise ValueError(f"gather_object: object_gather_list must have one slot per rank ({g.size}) on dst")
        object_gather_list[:] = got
