"""The collectives on ferro tensors, with ``torch.distributed``'s names, arguments and semantics.

Each starts the group's operation on the tensors' buffers (:mod:`._buffers`)
and either waits for it or, with ``async_op=True``, returns a :class:`Work`
whose ``wait()`` completes it (results are written into the tensors then).
``src`` / ``dst`` are world ranks, as in PyTorch. A rank that is not in
``group`` takes no part: the call returns None. With
``FERRO_DISTRIBUTED_DEBUG=DETAIL`` every collective first checks that all
ranks called the same collective with the same shapes and dtypes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .._core.host import np
from ._backend import DistributedError, DistributedTimeoutError, ProcessGroup, ReduceOp, Work
from ._buffers import Buffer, reduce_op_name, to_group, to_host, write_array
from ._world import NON_GROUP_MEMBER, _resolve, group_rank

if TYPE_CHECKING:
    from .._core.tensor import Tensor

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
           "gather", "scatter", "send", "recv", "isend", "irecv", "barrier", "GroupMember", "monitored_barrier"]


class GroupMember:
    """``GroupMember.NON_GROUP_MEMBER``: what ``new_group`` gives the ranks it leaves out."""

    NON_GROUP_MEMBER: Any = NON_GROUP_MEMBER
    WORLD: Any = None


class _TensorWork(Work):
    """A group's work plus what must happen once it completes (results written into tensors)."""

    __slots__ = ("_done", "_then", "_work")

    def __init__(self, work: Work, then: Callable[[], None] | None) -> None:
        self._work, self._then, self._done = work, then, False

    def _complete(self) -> None:
        if not self._done:
            self._done = True
            if self._then is not None:
                self._then()

    def is_completed(self) -> bool:
        if self._done or self._work.is_completed():
            self._complete()
            return True
        return False

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        if not self._done:
            self._work.wait(timeout)
            self._complete()
        return True


def _run(g: ProcessGroup, start: Callable[[], Work], then: Callable[[], None] | None,
         async_op: bool) -> Work | None:
    """Start the group's operation (telling it whether this caller waits at once) and, unless
    ``async_op``, wait for it and write the results."""
    g.caller_waits = not async_op
    try:
        work = start()
    finally:
        g.caller_waits = False
    if async_op:
        return _TensorWork(work, then)
    work.wait()
    if then is not None:
        then()
    return None


def _group(group: Any, op: str) -> ProcessGroup | None:
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return _resolve(group, op)


_DEBUG_BYTES = 1024


def _check_same(g: ProcessGroup, op: str, tensor: Tensor | None, **args: Any) -> None:
    """``FERRO_DISTRIBUTED_DEBUG=DETAIL``: every rank must be in the same collective with the same
    shape and dtype, else a DistributedError listing what each rank passed."""
    if os.environ.get("FERRO_DISTRIBUTED_DEBUG", "").upper() != "DETAIL":
        return
    import json  # deferred: only this debug mode needs it, and `import ferro.distributed` is on the first op

    mine = {"op": op, **args}
    if tensor is not None:
        mine.update(shape=list(tensor.shape), dtype=str(tensor._dtype))
    raw = json.dumps(mine, sort_keys=True).encode()[:_DEBUG_BYTES]
    send = np().zeros(_DEBUG_BYTES, np().uint8)
    send[:len(raw)] = np().frombuffer(raw, np().uint8)
    recv = g.empty((g.size, _DEBUG_BYTES), np().uint8)
    try:
        g.allgather(to_group(g, send), recv).wait()
    except DistributedTimeoutError as e:
        raise DistributedTimeoutError(f"{op}: the FERRO_DISTRIBUTED_DEBUG=DETAIL check before it failed: {e}") from None
    seen = [bytes(r).rstrip(b"\0").decode() for r in to_host(recv)]
    if len(set(seen)) > 1:
        lines = "\n".join(f"  rank {i}: {s}" for i, s in enumerate(seen))
        raise DistributedError(f"{op}: the ranks disagree (FERRO_DISTRIBUTED_DEBUG=DETAIL):\n{lines}")


def _as_tensor_list(xs: Any, name: str, arg: str, n: int) -> list[Tensor]:
    xs = list(xs or [])
    if len(xs) != n:
        raise ValueError(f"{name}: {arg} must hold one tensor per rank of the group ({n}), got {len(xs)}")
    return xs


def _check_like(t: Tensor, like: Tensor, name: str, arg: str) -> None:
    if t._dtype is not like._dtype or tuple(t.shape) != tuple(like.shape):
        raise ValueError(f"{name}: every tensor of {arg} must have the input's shape {list(like.shape)} and dtype "
                         f"{like._dtype}, got {list(t.shape)} {t._dtype}")


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over all ranks; every rank gets the result, in place."""
    g = _group(group, "all_reduce")
    if g is None:
        return None
    name = reduce_op_name(op, tensor, "all_reduce")
    _check_same(g, "all_reduce", tensor, reduce=name)
    buf = Buffer(tensor, g, "all_reduce", reduce=True, write=True)
    divide = g.size if op is ReduceOp.AVG else 0
    return _run(g, lambda: g.allreduce(buf.wire, name), lambda: buf.finish(divide), async_op)


def broadcast(tensor: Tensor, src: int = 0, group: Any = None, async_op: bool = False) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into every rank's ``tensor``."""
    g = _group(group, "broadcast")
    if g is None:
        return None
    root = group_rank(g, src, "broadcast", "src")
    _check_same(g, "broadcast", tensor, src=src)
    buf = Buffer(tensor, g, "broadcast", write=g.rank != root, read=g.rank == root)
    return _run(g, lambda: g.broadcast(buf.wire, root), None if g.rank == root else buf.finish, async_op)


def reduce(tensor: Tensor, dst: int = 0, op: ReduceOp = ReduceOp.SUM, group: Any = None,
           async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over all ranks into rank ``dst``'s ``tensor`` (the others' are left as they were)."""
    g = _group(group, "reduce")
    if g is None:
        return None
    root = group_rank(g, dst, "reduce", "dst")
    name = reduce_op_name(op, tensor, "reduce")
    _check_same(g, "reduce", tensor, dst=dst, reduce=name)
    buf = Buffer(tensor, g, "reduce", reduce=True, write=g.rank == root)
    divide = g.size if op is ReduceOp.AVG else 0
    then = (lambda: buf.finish(divide)) if g.rank == root else None
    return _run(g, lambda: g.reduce(buf.wire, name, root), then, async_op)


def _split_into(recv: Any, outs: Sequence[Tensor], like: Buffer) -> Callable[[], None]:
    """After a gather: part ``i`` of ``recv`` (wire dtype) into ``outs[i]``."""
    def then() -> None:
        native_dtype = like.native.dtype
        for i, t in enumerate(outs):
            write_array(t, recv[i].view(native_dtype))
    return then


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` into every rank's ``tensor_list`` (one tensor per rank, in rank order)."""
    g = _group(group, "all_gather")
    if g is None:
        return None
    outs = _as_tensor_list(tensor_list, "all_gather", "tensor_list", g.size)
    for t in outs:
        _check_like(t, tensor, "all_gather", "tensor_list")
    _check_same(g, "all_gather", tensor)
    send = Buffer(tensor, g, "all_gather")
    recv = g.empty((g.size, *send.wire.shape), send.wire.dtype)
    return _run(g, lambda: g.allgather(send.wire, recv), _split_into(recv, outs, send), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's ``input_tensor`` into ``output_tensor``: concatenated along dim 0, or stacked."""
    g = _group(group, "all_gather_into_tensor")
    if g is None:
        return None
    _check_sizes(output_tensor, input_tensor, g.size, "all_gather_into_tensor", "output_tensor")
    _check_same(g, "all_gather_into_tensor", input_tensor)
    send = Buffer(input_tensor, g, "all_gather_into_tensor")
    out = Buffer(output_tensor, g, "all_gather_into_tensor", write=True, read=False)
    return _run(g, lambda: g.allgather(send.wire, out.wire), out.finish, async_op)


def _check_sizes(big: Tensor, small: Tensor, size: int, name: str, arg: str) -> None:
    if big._dtype is not small._dtype:
        raise TypeError(f"{name}: {arg} has dtype {big._dtype}, the other tensor {small._dtype}: they must match")
    if big.numel() != size * small.numel():
        raise ValueError(f"{name}: {arg} must have world size ({size}) times the other tensor's elements "
                         f"({small.numel()}), got shape {list(big.shape)}")


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None,
                          async_op: bool = False) -> Work | None:
    """Reduce ``input`` over all ranks; rank ``i`` gets the ``i``-th of its ``world size`` equal parts."""
    g = _group(group, "reduce_scatter_tensor")
    if g is None:
        return None
    _check_sizes(input, output, g.size, "reduce_scatter_tensor", "input")
    name = reduce_op_name(op, output, "reduce_scatter_tensor")
    _check_same(g, "reduce_scatter_tensor", input, reduce=name)
    send = Buffer(input, g, "reduce_scatter_tensor", reduce=True)
    out = Buffer(output, g, "reduce_scatter_tensor", reduce=True, write=True, read=False)
    divide = g.size if op is ReduceOp.AVG else 0
    return _run(g, lambda: g.reduce_scatter(send.wire, out.wire, name), lambda: out.finish(divide), async_op)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int = 0, group: Any = None,
           async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` into rank ``dst``'s ``gather_list`` (None on the other ranks)."""
    g = _group(group, "gather")
    if g is None:
        return None
    root = group_rank(g, dst, "gather", "dst")
    _check_same(g, "gather", tensor, dst=dst)
    send = Buffer(tensor, g, "gather")
    if g.rank != root:
        if gather_list:
            raise ValueError(f"gather: gather_list must be None on ranks other than dst={dst}")
        return _run(g, lambda: g.gather(send.wire, None, root), None, async_op)
    outs = _as_tensor_list(gather_list, "gather", "gather_list", g.size)
    for t in outs:
        _check_like(t, tensor, "gather", "gather_list")
    recv = g.empty((g.size, *send.wire.shape), send.wire.dtype)
    return _run(g, lambda: g.gather(send.wire, recv, root), _split_into(recv, outs, send), async_op)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int = 0, group: Any = None,
            async_op: bool = False) -> Work | None:
    """Part ``i`` of rank ``src``'s ``scatter_list`` into rank ``i``'s ``tensor``."""
    g = _group(group, "scatter")
    if g is None:
        return None
    root = group_rank(g, src, "scatter", "src")
    _check_same(g, "scatter", tensor, src=src)
    out = Buffer(tensor, g, "scatter", write=True, read=False)
    send = None
    if g.rank == root:
        ins = _as_tensor_list(scatter_list, "scatter", "scatter_list", g.size)
        for t in ins:
            _check_like(t, tensor, "scatter", "scatter_list")
        send = g.empty((g.size, *out.wire.shape), out.wire.dtype)
        for i, t in enumerate(ins):
            send[i] = Buffer(t, g, "scatter").wire
    elif scatter_list:
        raise ValueError(f"scatter: scatter_list must be None on ranks other than src={src}")
    return _run(g, lambda: g.scatter(send, out.wire, root), out.finish, async_op)


def isend(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> Work | None:
    """Start sending ``tensor`` to world rank ``dst``; ``wait()`` the returned work."""
    g = _group(group, "isend")
    if g is None:
        return None
    return _TensorWork(g.send(Buffer(tensor, g, "send").wire, group_rank(g, dst, "send", "dst"), tag), None)


def irecv(tensor: Tensor, src: int, group: Any = None, tag: int = 0) -> Work | None:
    """Start receiving into ``tensor`` from world rank ``src``; ``wait()`` the returned work."""
    g = _group(group, "irecv")
    if g is None:
        return None
    buf = Buffer(tensor, g, "recv", write=True, read=False)
    return _TensorWork(g.recv(buf.wire, group_rank(g, src, "recv", "src"), tag), buf.finish)


def send(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> None:
    """Send ``tensor`` to world rank ``dst`` (blocks until it may be reused)."""
    work = isend(tensor, dst, group, tag)
    if work is not None:
        work.wait()


def recv(tensor: Tensor, src: int, group: Any = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from world rank ``src``; returns ``src``."""
    work = irecv(tensor, src, group, tag)
    if work is not None:
        work.wait()
    return src


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Return once every rank of ``group`` has called ``barrier``."""
    g = _group(group, "barrier")
    if g is None:
        return None
    return _run(g, g.barrier, None, async_op)


def monitored_barrier(group: Any = None, timeout: timedelta | float | None = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that fails after ``timeout`` naming the ranks that did not arrive."""
    g = _group(group, "monitored_barrier")
    if g is None:
        return
    g.barrier().wait(timeout)

