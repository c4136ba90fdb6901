"""The ``mpi`` process group: MPI through mpi4py (``pip install "ferro-core[mpi]"`` brings mpi4py and MPICH).

Every operation is MPI's non-blocking form (``Iallreduce``, ``Ibcast``...) on
the caller's NumPy buffers, no copy. :meth:`MPIWork.wait` tests the request a
few times, then hands it to a thread blocked in ``MPI_Wait`` and waits for it
up to the group's timeout; past it, the ranks that timed out tell each other on
a side communicator, so the error names the ranks that never arrived.

mpi4py is imported on first use: ``import mpi4py.MPI`` initializes MPI.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from ..backends._base import Availability
from ._backend import DistributedTimeoutError, ProcessGroup, ProcessGroupBackend, Work
from ._launch import launched_by_mpi

__all__ = ["MPIBackend", "MPIProcessGroup", "MPIWork", "mpi"]

#: How long a wait tests its request itself before handing it to the waiter thread (a handoff
#: costs tens of microseconds: more than a small message takes).
_SPIN_SECONDS = 2e-4
_NOTICE_TAG = 7301  # on the side communicator: "I timed out in operation number N"


def mpi() -> Any:
    """The ``mpi4py.MPI`` module (initializes MPI on first call)."""
    from mpi4py import MPI
    return MPI


def _seconds(timeout: timedelta | float | None, default: timedelta) -> float:
    if timeout is None:
        return default.total_seconds()
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


class _Waiter:
    """A daemon thread that blocks in ``MPI_Wait`` for the requests handed to it, one after another.

    ``MPI_Wait`` drives MPI's progress engine at full speed (polling ``MPI_Test``
    from Python moves a large transfer at half the speed), but cannot time out:
    the caller waits on the request's event with the group's timeout instead.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Any, threading.Event] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, req: Any) -> threading.Event:
        done = threading.Event()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ferro-mpi-wait", daemon=True)
            self._thread.start()
        self._queue.put((req, done))
        return done

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            req, done = item
            try:
                req.Wait()
            finally:
                done.set()

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)


class MPIWork(Work):
    """An MPI request: polled briefly, then waited for by the group's waiter thread until the timeout."""

    __slots__ = ("_bufs", "_done", "_event", "_group", "_op", "_req", "_seq")

    def __init__(self, group: MPIProcessGroup, req: Any, op: str, bufs: tuple[Any, ...]) -> None:
        self._group, self._req, self._op, self._bufs, self._done = group, req, op, bufs, False
        self._event: threading.Event | None = None
        group._seq += 1
        self._seq = group._seq

    def is_completed(self) -> bool:
        if not self._done:
            if self._event is not None:  # the waiter thread owns the request now
                self._done = self._event.is_set()
            else:
                self._done = self._req.Test()
            if self._done:
                self._bufs = ()
        return self._done

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        if self._done:
            return True
        if self._event is None:
            req = self._req
            spin_until = time.monotonic() + _SPIN_SECONDS
            while time.monotonic() < spin_until:  # a small operation completes here, without a handoff
                if req.Test():
                    self._done, self._bufs = True, ()
                    return True
            if self._group._waiter is None:  # MPI without thread support: poll until the deadline
                return self._poll(timeout)
            self._event = self._group._waiter.submit(req)
        limit = _seconds(timeout, self._group.timeout)
        if not self._event.wait(limit):
            raise self._group._timed_out(self._op, self._seq, limit)
        self._done, self._bufs = True, ()
        return True

    def _poll(self, timeout: timedelta | float | None) -> bool:
        limit = _seconds(timeout, self._group.timeout)
        deadline = time.monotonic() + limit
        while not self._req.Test():
            if time.monotonic() > deadline:
                raise self._group._timed_out(self._op, self._seq, limit)
            time.sleep(0)
        self._done, self._bufs = True, ()
        return True


_OPS = {"sum": "SUM", "product": "PROD", "min": "MIN", "max": "MAX"}


class MPIProcessGroup(ProcessGroup):
    """A process group on an MPI communicator."""

    memory = "host"

    def __init__(self, comm: Any, timeout: timedelta) -> None:
        super().__init__(comm.Get_rank(), comm.Get_size(), timeout, "mpi")
        self.comm = comm
        self._side = comm.Dup()  # timeout notices never mix with the user's messages
        self._seq = 0
        self._mpi = mpi()
        threads = self._mpi.Query_thread() == self._mpi.THREAD_MULTIPLE
        self._waiter = _Waiter() if threads else None

    def _op(self, op: str) -> Any:
        return getattr(self._mpi, _OPS[op])

    def _work(self, req: Any, op: str, *bufs: Any) -> MPIWork:
        return MPIWork(self, req, op, bufs)

    def allreduce(self, buf: Any, op: str) -> Work:
        return self._work(self.comm.Iallreduce(self._mpi.IN_PLACE, buf, self._op(op)), "all_reduce", buf)

    def broadcast(self, buf: Any, root: int) -> Work:
        return self._work(self.comm.Ibcast(buf, root), "broadcast", buf)

    def reduce(self, buf: Any, op: str, root: int) -> Work:
        if self.rank == root:
            req = self.comm.Ireduce(self._mpi.IN_PLACE, buf, self._op(op), root)
        else:
            req = self.comm.Ireduce(buf, None, self._op(op), root)
        return self._work(req, "reduce", buf)

    def allgather(self, send: Any, recv: Any) -> Work:
        return self._work(self.comm.Iallgather(send, recv), "all_gather", send, recv)

    def gather(self, send: Any, recv: Any | None, root: int) -> Work:
        return self._work(self.comm.Igather(send, recv, root), "gather", send, recv)

    def scatter(self, send: Any | None, recv: Any, root: int) -> Work:
        return self._work(self.comm.Iscatter(send, recv, root), "scatter", send, recv)

    def reduce_scatter(self, send: Any, recv: Any, op: str) -> Work:
        return self._work(self.comm.Ireduce_scatter_block(send, recv, self._op(op)), "reduce_scatter", send, recv)

    def send(self, buf: Any, dst: int, tag: int) -> Work:
        return self._work(self.comm.Isend(buf, dst, tag), "send", buf)

    def recv(self, buf: Any, src: int, tag: int) -> Work:
        return self._work(self.comm.Irecv(buf, src, tag), "recv", buf)

    def barrier(self) -> Work:
        return self._work(self.comm.Ibarrier(), "barrier")

    def new_group(self, ranks: Sequence[int]) -> ProcessGroup | None:
        member = self.rank in ranks
        sub = self.comm.Split(0 if member else self._mpi.UNDEFINED, list(ranks).index(self.rank) if member else 0)
        return MPIProcessGroup(sub, self.timeout) if member else None

    def abort(self, code: int = 1) -> None:
        sys.stderr.flush()
        sys.stdout.flush()
        self.comm.Abort(code)

    def destroy(self) -> None:
        if self._waiter is not None:
            self._waiter.stop()
        if self.comm != self._mpi.COMM_WORLD:
            self.comm.Free()
        self._side.Free()

    def _timed_out(self, op: str, seq: int, limit: float) -> DistributedTimeoutError:
        """Tell the other ranks this one timed out in operation ``seq``, listen a moment for theirs,
        and name the ranks that said nothing: they never reached the operation."""
        MPI = self._mpi
        reqs = [self._side.isend(seq, dest=r, tag=_NOTICE_TAG) for r in range(self.size) if r != self.rank]
        arrived = {self.rank}
        listen_until = time.monotonic() + min(1.0, max(limit, 0.1))
        status = MPI.Status()
        while time.monotonic() < listen_until and len(arrived) < self.size:
            if self._side.Iprobe(source=MPI.ANY_SOURCE, tag=_NOTICE_TAG, status=status):
                theirs = self._side.recv(source=status.Get_source(), tag=_NOTICE_TAG)
                if theirs == seq:
                    arrived.add(status.Get_source())
            else:
                time.sleep(0.01)
        for r in reqs:
            r.cancel()
        missing = sorted(set(range(self.size)) - arrived)
        who = (f"rank(s) {missing} of the group did not reach it" if missing
               else "every rank reached it, yet it did not complete")
        return DistributedTimeoutError(
            f"{op} (operation #{seq} of backend 'mpi', rank {self.rank} of {self.size}) timed out after "
            f"{limit:g} s: {who}. Raise init_process_group(timeout=...) if the ranks are merely slow.")


class MPIBackend(ProcessGroupBackend):
    """MPI through mpi4py, for tensors of every device (non-CPU ones through host memory)."""

    name = "mpi"
    description = "MPI through mpi4py (ferro-core[mpi]); launch with mpiexec or ferro run"
    device_types = ("cpu",)

    def __init__(self) -> None:
        from ..backends._hookspec import PROCESS_GROUP_API_VERSION
        self.api_version = PROCESS_GROUP_API_VERSION

    def availability(self) -> Availability:
        try:
            import mpi4py  # noqa: F401  (the package only: MPI itself starts at create())
        except ImportError:
            return Availability(False, 'mpi4py is not installed: pip install "ferro-core[mpi]" '
                                       "(mpi4py and MPICH, which brings mpiexec)")
        return Availability(True)

    def launched(self) -> bool:
        return launched_by_mpi()

    def create(self, timeout: timedelta, rank: int, world_size: int) -> ProcessGroup:
        comm = mpi().COMM_WORLD
        return MPIProcessGroup(comm, timeout)
