"""The process-group contract: what a collective backend (``mpi``, ``nccl``, a plugin's) implements.

A :class:`ProcessGroupBackend` is what a plugin returns from the hook
``ferro_register_process_groups``; its :meth:`~ProcessGroupBackend.create`
makes the world's :class:`ProcessGroup`. A group moves *native arrays*, never
ferro tensors: contiguous NumPy arrays for a group whose ``memory`` is
``"host"``, CuPy arrays for ``"cuda"``. :mod:`ferro.distributed` hands it only
the wire dtypes (``uint8 int8 int16 int32 int64 float32 float64 complex64
complex128``): bool travels as uint8, float16 / bfloat16 as their uint16 bits
(reductions in float32), so a backend needs no table of exotic types.

Every operation starts the transfer and returns a :class:`Work`; ranks are the
group's own (0 .. size-1). Reductions take one of ``"sum" "product" "min" "max"``
(``AVG`` is a sum divided by ferro).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from .._core.host import np
from ..backends._base import Availability

__all__ = ["ReduceOp", "Work", "CompletedWork", "ProcessGroup", "ProcessGroupBackend", "DistributedError",
           "DistributedTimeoutError"]


class ReduceOp(enum.Enum):
    """How a reduction combines the ranks' values (``torch.distributed.ReduceOp``)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return f"ReduceOp.{self.name}"


class DistributedError(RuntimeError):
    """A collective failed: used before ``init_process_group``, mismatched across ranks, or aborted."""

    __module__ = "ferro.distributed"


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A collective did not complete within the group's ``timeout``."""

    __module__ = "ferro.distributed"


class Work:
    """A started operation (``async_op=True`` returns one): :meth:`wait` for it to finish."""

    def is_completed(self) -> bool:
        """Whether the operation has finished (never blocks)."""
        raise NotImplementedError(f"{type(self).__name__} must implement is_completed()")

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        """Block until the operation finishes; :class:`DistributedTimeoutError` past ``timeout``
        (default: the group's). Returns True."""
        raise NotImplementedError(f"{type(self).__name__} must implement wait()")


class CompletedWork(Work):
    """A work handle for an operation that finished when it was started (a blocking backend)."""

    def is_completed(self) -> bool:
        return True

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        return True


class ProcessGroup:
    """A communicator among ``size`` processes; this process is ``rank``.

    Subclasses implement the operations below on native arrays of their
    ``memory`` kind (see the module's docstring). Buffers passed in must stay
    untouched until the returned :class:`Work` completes.
    """

    #: ``"host"``: NumPy arrays (tensors of other devices are staged through host memory);
    #: ``"cuda"``: CuPy arrays on the current device and stream.
    memory: str = "host"
    #: Set by ferro around each call: True when the caller waits for the returned work at once
    #: (``async_op=False``), so the group may run a blocking call in the caller's thread.
    caller_waits: bool = False

    def __init__(self, rank: int, size: int, timeout: timedelta, backend: str) -> None:
        self.rank, self.size, self.timeout, self.backend = rank, size, timeout, backend

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """An uninitialized native array of this group's memory (a NumPy array for host groups)."""
        return np().empty(shape, dtype)

    def _missing(self, op: str) -> Any:
        raise NotImplementedError(f"process group '{self.backend}' does not implement {op}")

    def allreduce(self, buf: Any, op: str) -> Work:
        """Reduce ``buf`` over all ranks, in place on every rank."""
        return self._missing("all_reduce")

    def broadcast(self, buf: Any, root: int) -> Work:
        """Copy ``root``'s ``buf`` into every rank's ``buf``."""
        return self._missing("broadcast")

    def reduce(self, buf: Any, op: str, root: int) -> Work:
        """Reduce ``buf`` over all ranks into ``root``'s ``buf`` (the others' stay as they were)."""
        return self._missing("reduce")

    def allgather(self, send: Any, recv: Any) -> Work:
        """Every rank's ``send`` into ``recv`` (``size`` times as long), in rank order."""
        return self._missing("all_gather")

    def gather(self, send: Any, recv: Any | None, root: int) -> Work:
        """Every rank's ``send`` into ``root``'s ``recv``, in rank order (``recv`` None elsewhere)."""
        return self._missing("gather")

    def scatter(self, send: Any | None, recv: Any, root: int) -> Work:
        """Part ``i`` of ``root``'s ``send`` into rank ``i``'s ``recv`` (``send`` None elsewhere)."""
        return self._missing("scatter")

    def reduce_scatter(self, send: Any, recv: Any, op: str) -> Work:
        """Reduce ``send`` (``size`` equal parts) over all ranks; rank ``i`` receives part ``i``."""
        return self._missing("reduce_scatter")

    def send(self, buf: Any, dst: int, tag: int) -> Work:
        """Send ``buf`` to rank ``dst``."""
        return self._missing("send")

    def recv(self, buf: Any, src: int, tag: int) -> Work:
        """Receive into ``buf`` from rank ``src``."""
        return self._missing("recv")

    def barrier(self) -> Work:
        """Complete once every rank has entered the barrier."""
        return self._missing("barrier")

    def new_group(self, ranks: Sequence[int]) -> ProcessGroup | None:
        """A group of the listed ranks (called by every rank); None on ranks not listed."""
        return self._missing("new_group")

    def abort(self, code: int = 1) -> None:
        """End every process of the job now (after an unhandled error in this one)."""
        raise SystemExit(code)

    def destroy(self) -> None:
        """Release the group's resources (``destroy_process_group``)."""


class ProcessGroupBackend:
    """A collective engine ferro can run on: names itself, says whether it can run here, makes groups.

    ``api_version`` must equal :data:`ferro.backends.PROCESS_GROUP_API_VERSION`.
    """

    name: str = ""
    api_version: int = 0
    description: str = ""
    #: Device types whose tensors this backend moves without going through host memory.
    device_types: tuple[str, ...] = ("cpu",)
    plugin: str = ""  # set by ferro: the plugin that contributed it

    def availability(self) -> Availability:
        """Whether the engine can run here, with the reason when not (may import the transport library)."""
        return Availability(True)

    def launched(self) -> bool:
        """Whether this process was started by this engine's launcher (``mpiexec`` for MPI)."""
        return False

    def create(self, timeout: timedelta, rank: int, world_size: int) -> ProcessGroup:
        """The world group of this job. ``rank`` / ``world_size`` are -1 unless the user passed them."""
        raise NotImplementedError(f"process-group backend '{self.name}' must implement create()")
