"""The ``mpi`` process group: MPI through mpi4py (``pip install "ferro-core[mpi]"`` brings mpi4py and MPICH).

Operations move the caller's NumPy buffers, no copy. A collective of 1 MB or
more runs as MPI's blocking call (``Allreduce``...): in the caller's thread,
under a watchdog, when the caller waits at once, else on the group's
communication thread; a smaller one as MPI's non-blocking form (``Iallreduce``),
which :meth:`MPIWork.wait` tests for a moment before handing it to that thread's
``MPI_Wait``. Either way the caller waits up to the group's timeout; past it,
the ranks that timed out tell each other on a side communicator, so the error
names the ranks that never arrived.

mpi4py is imported on first use: ``import mpi4py.MPI`` initializes MPI.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..backends._base import Availability
from ._backend import DistributedTimeoutError, ProcessGroup, ProcessGroupBackend, Work
from ._launch import launched_by_mpi

if TYPE_CHECKING:
    import queue

_ABORT_GRACE_S = 0.5  # time for mpiexec to forward a failing rank's last output before MPI_Abort

__all__ = ["MPIBackend", "MPIProcessGroup", "MPIWork", "mpi"]

#: How long a wait tests its request itself before handing it to the communication thread (a
#: handoff costs tens of microseconds: more than a small message takes).
_SPIN_SECONDS = 2e-4
#: Collectives of at least this many bytes run as blocking calls on the communication thread.
_THREAD_BYTES = 1 << 20
_NOTICE_TAG = 7301  # on the side communicator: "I timed out in operation number N"


def mpi() -> Any:
    """The ``mpi4py.MPI`` module (initializes MPI on first call)."""
    from mpi4py import MPI
    return MPI


def _seconds(timeout: timedelta | float | None, default: timedelta) -> float:
    if timeout is None:
        return default.total_seconds()
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


class _Job:
    """A call handed to the communication thread: done when ``event`` is set; ``error`` if it raised."""

    __slots__ = ("error", "event")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.error: BaseException | None = None


class _CommThread:
    """A daemon thread that makes blocking MPI calls handed to it, one after another, in order.

    A blocking call (``MPI_Allreduce``, ``MPI_Wait``) drives MPI's progress engine at full
    speed and uses MPI's fastest algorithms (its non-blocking collectives, polled from Python,
    move large buffers at half to nine tenths of the speed), but cannot time out: the caller
    waits on the job's event with the group's timeout instead. mpi4py releases the GIL during
    the call, so the transfer also progresses while the caller computes (DDP's backward).
    """

    def __init__(self) -> None:
        import queue  # deferred: a process-group plugin imports ferro.distributed at the first op

        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], _Job] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._submitted = 0  # written by the caller's thread only
        self._finished = 0  # written by this thread only

    def idle(self) -> bool:
        """Whether every call handed over has returned (then the caller may start MPI calls itself
        without reordering the communicator's collectives)."""
        return self._finished == self._submitted

    def submit(self, call: Callable[[], Any]) -> _Job:
        job = _Job()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ferro-mpi", daemon=True)
            self._thread.start()
        self._submitted += 1
        self._queue.put((call, job))
        return job

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            call, job = item
            try:
                call()
            except BaseException as e:  # handed to the waiting caller
                job.error = e
            finally:
                self._finished += 1
                job.event.set()

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)


class _Watchdog:
    """Ends the job when a blocking call made in the caller's thread outlives the group's timeout.

    That call cannot be interrupted, so instead of raising, the watchdog prints the same
    :class:`DistributedTimeoutError` (the collective and the ranks that never reached it) and
    aborts the job, as PyTorch's NCCL watchdog tears a stuck job down.
    """

    def __init__(self, group: MPIProcessGroup) -> None:
        self._group = group
        self._thread: threading.Thread | None = None
        self.current: tuple[str, int, float, float] | None = None  # op, seq, deadline, limit
        self.stopped = False

    def guard(self, op: str, seq: int, limit: float) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ferro-mpi-watchdog", daemon=True)
            self._thread.start()
        self.current = (op, seq, time.monotonic() + limit, limit)

    def _run(self) -> None:
        while not self.stopped:
            current = self.current
            if current is not None and time.monotonic() > current[2]:
                op, seq, _, limit = current
                error = self._group._timed_out(op, seq, limit)
                if self.current is current:  # still stuck in it after listening for the others
                    g = self._group
                    sys.stderr.write(f"[ferro.distributed] rank {g.rank} of {g.size}: "
                                     f"{type(error).__module__}.{type(error).__name__}: {error}\n"
                                     "[ferro.distributed] a blocking call cannot be interrupted: aborting the job.\n")
                    g.abort(1)
            time.sleep(0.05)


class MPIWork(Work):
    """An MPI operation: a non-blocking request tested briefly by the caller, a job of the group's
    communication thread, or a blocking call that :meth:`wait` makes in the caller's thread under
    the group's watchdog; waited for until the timeout."""

    __slots__ = ("_bufs", "_call", "_done", "_group", "_job", "_op", "_req", "_seq")

    def __init__(self, group: MPIProcessGroup, op: str, bufs: tuple[Any, ...], *, req: Any = None,
                 job: _Job | None = None, call: Callable[[], Any] | None = None) -> None:
        self._group, self._req, self._job, self._op, self._bufs, self._done = group, req, job, op, bufs, False
        self._call = call
        group._seq += 1
        self._seq = group._seq

    def _run_call(self, timeout: timedelta | float | None) -> bool:
        call, self._call = self._call, None
        watchdog = self._group._watchdog
        watchdog.guard(self._op, self._seq, _seconds(timeout, self._group.timeout))
        try:
            call()
        finally:
            watchdog.current = None
        self._done, self._bufs = True, ()
        return True

    def is_completed(self) -> bool:
        if self._call is not None:  # the caller promised to wait at once: this is that wait
            return self._run_call(None)
        if not self._done:
            if self._job is not None:  # the communication thread owns the operation
                self._done = self._job.event.is_set() and self._job.error is None
            else:
                self._done = self._req.Test()
            if self._done:
                self._bufs = ()
        return self._done

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        if self._done:
            return True
        if self._call is not None:
            return self._run_call(timeout)
        if self._job is None:
            req = self._req
            spin_until = time.monotonic() + _SPIN_SECONDS
            while time.monotonic() < spin_until:  # a small operation completes here, without a handoff
                if req.Test():
                    self._done, self._bufs = True, ()
                    return True
            if self._group._thread is None:  # MPI without thread support: poll until the deadline
                return self._poll(timeout)
            self._job = self._group._thread.submit(req.Wait)
        limit = _seconds(timeout, self._group.timeout)
        if not self._job.event.wait(limit):
            raise self._group._timed_out(self._op, self._seq, limit)
        if self._job.error is not None:
            raise self._job.error
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
        self._thread = _CommThread() if threads else None
        self._watchdog = _Watchdog(self)

    def _op(self, op: str) -> Any:
        return getattr(self._mpi, _OPS[op])

    def _work(self, req: Any, op: str, *bufs: Any) -> MPIWork:
        return MPIWork(self, op, bufs, req=req)

    def _collective(self, op: str, nbytes: int, start: Callable[[], Any], blocking: Callable[[], Any],
                    *bufs: Any) -> MPIWork:
        """A large collective runs as MPI's blocking call: in the caller's thread when it waits at
        once (``async_op=False``), else on the communication thread; a small one (or any while that
        thread is busy, so the order of collectives is the same on every rank) as a non-blocking
        request."""
        thread = self._thread
        if thread is not None and (nbytes >= _THREAD_BYTES or not thread.idle()):
            if self.caller_waits and thread.idle():  # no handoff: the caller's thread makes the call
                return MPIWork(self, op, bufs, call=blocking)
            return MPIWork(self, op, bufs, job=thread.submit(blocking))
        return MPIWork(self, op, bufs, req=start())

    def allreduce(self, buf: Any, op: str) -> Work:
        c, mop, inplace = self.comm, self._op(op), self._mpi.IN_PLACE
        return self._collective("all_reduce", buf.nbytes, lambda: c.Iallreduce(inplace, buf, mop),
                                lambda: c.Allreduce(inplace, buf, mop), buf)

    def broadcast(self, buf: Any, root: int) -> Work:
        c = self.comm
        return self._collective("broadcast", buf.nbytes, lambda: c.Ibcast(buf, root), lambda: c.Bcast(buf, root), buf)

    def reduce(self, buf: Any, op: str, root: int) -> Work:
        c, mop = self.comm, self._op(op)
        send, recv = (self._mpi.IN_PLACE, buf) if self.rank == root else (buf, None)
        return self._collective("reduce", buf.nbytes, lambda: c.Ireduce(send, recv, mop, root),
                                lambda: c.Reduce(send, recv, mop, root), buf)

    def allgather(self, send: Any, recv: Any) -> Work:
        c = self.comm
        return self._collective("all_gather", recv.nbytes, lambda: c.Iallgather(send, recv),
                                lambda: c.Allgather(send, recv), send, recv)

    def gather(self, send: Any, recv: Any | None, root: int) -> Work:
        c = self.comm
        return self._collective("gather", send.nbytes * self.size, lambda: c.Igather(send, recv, root),
                                lambda: c.Gather(send, recv, root), send, recv)

    def scatter(self, send: Any | None, recv: Any, root: int) -> Work:
        c = self.comm
        return self._collective("scatter", recv.nbytes * self.size, lambda: c.Iscatter(send, recv, root),
                                lambda: c.Scatter(send, recv, root), send, recv)

    def reduce_scatter(self, send: Any, recv: Any, op: str) -> Work:
        c, mop = self.comm, self._op(op)
        return self._collective("reduce_scatter", send.nbytes, lambda: c.Ireduce_scatter_block(send, recv, mop),
                                lambda: c.Reduce_scatter_block(send, recv, mop), send, recv)

    def _p2p(self, op: str, start: Callable[[], Any], *bufs: Any) -> MPIWork:
        thread = self._thread
        if thread is not None and not thread.idle():  # after the collectives handed over
            return MPIWork(self, op, bufs, job=thread.submit(lambda: start().Wait()))
        return MPIWork(self, op, bufs, req=start())

    def send(self, buf: Any, dst: int, tag: int) -> Work:
        return self._p2p("send", lambda: self.comm.Isend(buf, dst, tag), buf)

    def recv(self, buf: Any, src: int, tag: int) -> Work:
        return self._p2p("recv", lambda: self.comm.Irecv(buf, src, tag), buf)

    def barrier(self) -> Work:
        c = self.comm
        return self._collective("barrier", 0, c.Ibarrier, c.Barrier)

    def new_group(self, ranks: Sequence[int]) -> ProcessGroup | None:
        member = self.rank in ranks
        sub = self.comm.Split(0 if member else self._mpi.UNDEFINED, list(ranks).index(self.rank) if member else 0)
        return MPIProcessGroup(sub, self.timeout) if member else None

    def abort(self, code: int = 1) -> None:
        sys.stderr.flush()
        sys.stdout.flush()
        # mpiexec's proxy forwards a rank's output from a pipe; MPI_Abort kills the job at once, and under
        # load the proxy can die before it has read what this rank just wrote (its error message).
        time.sleep(_ABORT_GRACE_S)
        self.comm.Abort(code)

    def destroy(self) -> None:
        if self._thread is not None:
            self._thread.stop()
        self._watchdog.stopped = True
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
