"""A third-party process group: ``loopback``, a world of one process, written against the public contract.

Every collective of a one-process world is a copy (or nothing): the group runs
``ferro.distributed``'s whole API in a single interpreter with no MPI, so tests
and docs can exercise it anywhere. ``calls`` counts what the group was asked to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from ferro.backends import PLUGIN_API_VERSION, PROCESS_GROUP_API_VERSION, hookimpl
from ferro.distributed import CompletedWork, ProcessGroup, ProcessGroupBackend, Work

#: Operation name -> how many times this process's loopback groups ran it.
calls: dict[str, int] = {}


class LoopbackGroup(ProcessGroup):
    """Rank 0 of 1: results are the inputs."""

    def _done(self, op: str) -> Work:
        calls[op] = calls.get(op, 0) + 1
        return CompletedWork()

    def allreduce(self, buf: Any, op: str) -> Work:
        return self._done("allreduce")

    def broadcast(self, buf: Any, root: int) -> Work:
        return self._done("broadcast")

    def reduce(self, buf: Any, op: str, root: int) -> Work:
        return self._done("reduce")

    def allgather(self, send: Any, recv: Any) -> Work:
        recv.reshape(-1)[...] = send.reshape(-1)
        return self._done("allgather")

    def gather(self, send: Any, recv: Any | None, root: int) -> Work:
        recv.reshape(-1)[...] = send.reshape(-1)
        return self._done("gather")

    def scatter(self, send: Any | None, recv: Any, root: int) -> Work:
        recv.reshape(-1)[...] = send.reshape(-1)
        return self._done("scatter")

    def reduce_scatter(self, send: Any, recv: Any, op: str) -> Work:
        recv.reshape(-1)[...] = send.reshape(-1)
        return self._done("reduce_scatter")

    def barrier(self) -> Work:
        return self._done("barrier")

    def new_group(self, ranks: Sequence[int]) -> ProcessGroup | None:
        return LoopbackGroup(0, 1, self.timeout, self.backend) if 0 in ranks else None


class LoopbackBackend(ProcessGroupBackend):
    """The ``loopback`` process group."""

    name = "loopback"
    api_version = PROCESS_GROUP_API_VERSION
    description = "a world of one process (ferro-testplugins)"

    def create(self, timeout: timedelta, rank: int, world_size: int) -> ProcessGroup:
        if world_size not in (-1, 1) or rank not in (-1, 0):
            raise ValueError(f"loopback is a world of one process, not rank {rank} of {world_size}")
        return LoopbackGroup(0, 1, timeout, self.name)


class FutureBackend(ProcessGroupBackend):
    """A process group written for a process-group API this ferro does not speak."""

    name = "future"
    api_version = PROCESS_GROUP_API_VERSION + 1


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_process_groups() -> list[ProcessGroupBackend]:
    return [LoopbackBackend()]
