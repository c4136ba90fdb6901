"""The default process group of this process: ``init_process_group`` and the questions about it.

An unhandled exception in any rank, once the group exists, prints that rank's
traceback and aborts the whole job (``MPI_Abort`` for MPI), so the other ranks
never hang in a collective waiting for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from types import TracebackType
from typing import Any

from ._backend import DistributedError, ProcessGroup
from ._registry import get_process_group_backend, process_group_backends

__all__ = ["init_process_group", "destroy_process_group", "is_available", "is_initialized", "get_rank",
           "get_world_size", "get_backend", "new_group", "default_group", "group_rank", "global_rank",
           "DEFAULT_TIMEOUT"]

#: PyTorch's default for every backend but NCCL.
DEFAULT_TIMEOUT = timedelta(minutes=30)


#: What ``new_group`` returns to the ranks it leaves out (``GroupMember.NON_GROUP_MEMBER``).
NON_GROUP_MEMBER: Any = object()


class _World:
    def __init__(self) -> None:
        self.group: ProcessGroup | None = None
        self.ranks: dict[int, list[int]] = {}  # id(group) -> the global rank of each of its ranks
        self.hook: Any = None


_world = _World()


def is_available() -> bool:
    """Whether a process-group backend can run here (``mpi`` needs ``ferro-core[mpi]``)."""
    return any(b.availability() for b in process_group_backends().values())


def is_initialized() -> bool:
    """Whether ``init_process_group`` ran (and ``destroy_process_group`` did not since)."""
    return _world.group is not None


def _pick_backend() -> str:
    found = process_group_backends()
    for name, b in found.items():
        if name != "mpi" and b.launched() and b.availability():
            return name
    return "mpi"


def _as_timedelta(timeout: timedelta | float | None) -> timedelta:
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, timedelta):
        return timeout
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return timedelta(seconds=timeout)
    raise TypeError(f"init_process_group: timeout must be a datetime.timedelta or positive seconds, got {timeout!r}")


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | float | None = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join the job's default process group (``torch.distributed.init_process_group``).

    ``backend``: ``"mpi"`` (the default), ``"nccl"`` (ferro-cuda) or a plugin's.
    With MPI the rank and world size come from the launcher (``mpiexec``);
    ``rank`` / ``world_size``, when passed, must agree with it. A backend
    that cannot learn them itself receives them, or ``RANK`` / ``WORLD_SIZE``.
    ``timeout`` (a ``timedelta`` or seconds; default 30 minutes) bounds every
    collective. ``init_method``, ``store``, ``group_name``, ``pg_options`` and
    ``device_id`` are accepted for PyTorch's signature and unused.
    """
    if _world.group is not None:
        raise DistributedError("init_process_group: the default process group is already initialized; "
                               "call destroy_process_group() first")
    name = _pick_backend() if backend is None else str(backend).lower()
    b = get_process_group_backend(name)
    avail = b.availability()
    if not avail:
        raise DistributedError(f"init_process_group: backend '{name}' cannot run here: {avail.reason}")
    td = _as_timedelta(timeout)
    env_rank, env_size = int(os.environ.get("RANK", rank)), int(os.environ.get("WORLD_SIZE", world_size))
    group = b.create(td, rank if rank >= 0 else env_rank, world_size if world_size > 0 else env_size)
    for what, want, got in (("rank", rank, group.rank), ("world_size", world_size, group.size)):
        if want >= 0 and want != got:
            group.destroy()
            raise DistributedError(f"init_process_group: {what}={want} was passed, but backend '{name}' "
                                   f"says this process has {what} {got}: launch it with mpiexec -n N, or leave "
                                   f"{what} out")
    _world.group = group
    _world.ranks[id(group)] = list(range(group.size))
    _install_abort_hook()


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave ``group`` (default: the default group, and with it every group made by ``new_group``)."""
    if group is None or group is _world.group:
        if _world.group is None:
            raise DistributedError("destroy_process_group: the default process group is not initialized")
        _world.group.destroy()
        _world.group = None
        _world.ranks.clear()
        _remove_abort_hook()
        return
    group.destroy()
    _world.ranks.pop(id(group), None)


def default_group(op: str) -> ProcessGroup:
    """The default group, or an error that names ``op`` and the fix."""
    if _world.group is None:
        raise DistributedError(
            f"{op}: the default process group has not been initialized; call "
            "ferro.distributed.init_process_group() first (and launch the script with "
            "`mpiexec -n N python script.py` or `ferro run -n N script.py`)")
    return _world.group


def _resolve(group: ProcessGroup | None, op: str) -> ProcessGroup:
    return default_group(op) if group is None else group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (default: the world); -1 if it is not a member."""
    g = _resolve(group, "get_rank")
    return g.rank


def get_world_size(group: ProcessGroup | None = None) -> int:
    """How many processes ``group`` (default: the world) has."""
    return _resolve(group, "get_world_size").size


def get_backend(group: ProcessGroup | None = None) -> str:
    """The name of ``group``'s backend."""
    return _resolve(group, "get_backend").backend


def global_rank(group: ProcessGroup, rank: int) -> int:
    """The world rank of ``group``'s rank ``rank``."""
    return _world.ranks[id(group)][rank]


def group_rank(group: ProcessGroup, global_rank: int, op: str, arg: str) -> int:
    """``group``'s rank for world rank ``global_rank`` (PyTorch's ``src`` / ``dst`` are world ranks)."""
    ranks = _world.ranks.get(id(group), [])
    if global_rank not in ranks:
        raise ValueError(f"{op}: {arg}={global_rank} is not a rank of the group (its world ranks: {ranks})")
    return ranks.index(global_rank)


def new_group(ranks: Sequence[int] | None = None, timeout: timedelta | float | None = None,
              backend: str | None = None, pg_options: Any = None) -> Any:
    """A group of the listed world ranks (all, if None). Every rank of the world must call it;
    ranks not listed get None and take no part (``GroupMember.NON_GROUP_MEMBER`` in PyTorch)."""
    world = default_group("new_group")
    members = sorted(range(world.size) if ranks is None else {int(r) for r in ranks})
    for r in members:
        if not 0 <= r < world.size:
            raise ValueError(f"new_group: rank {r} is not in the world of {world.size} processes")
    if backend is not None and str(backend).lower() != world.backend:
        raise ValueError(f"new_group: backend '{backend}' differs from the default group's '{world.backend}'")
    sub = world.new_group(members)
    if sub is None:
        return NON_GROUP_MEMBER
    if timeout is not None:
        sub.timeout = _as_timedelta(timeout)
    _world.ranks[id(sub)] = members
    return sub


def _abort_on_error(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    group = _world.group
    prev = _world.hook or sys.__excepthook__
    if group is None or group.size == 1 or issubclass(kind, KeyboardInterrupt):
        prev(kind, value, tb)
        return
    import traceback  # deferred: only a failing rank formats its error

    text = "".join(traceback.format_exception(kind, value, tb))
    lines = "".join(f"[rank {group.rank}] {line}\n" for line in text.rstrip("\n").split("\n"))
    sys.stderr.write(f"[ferro.distributed] rank {group.rank} of {group.size} failed; aborting the job.\n{lines}")
    group.abort(1)


def _install_abort_hook() -> None:
    if sys.excepthook is not _abort_on_error:
        _world.hook = sys.excepthook
        sys.excepthook = _abort_on_error


def _remove_abort_hook() -> None:
    if sys.excepthook is _abort_on_error:
        sys.excepthook = _world.hook or sys.__excepthook__
    _world.hook = None
