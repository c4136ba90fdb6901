"""The ``nccl`` process group: NCCL through ``cupy.cuda.nccl``, for CUDA tensors, on the current stream.

The communicator is bootstrapped over MPI (mpi4py, ``ferro-core[mpi]``): rank 0
makes NCCL's unique id and broadcasts it; each process uses GPU
``local rank % GPU count`` (``LOCAL_RANK``, or MPI's node-local rank). Every
operation is enqueued on CuPy's current stream and returns a work whose
``wait()`` polls a CUDA event until the group's timeout, then aborts the
communicator and names the operation. CuPy is imported when the group is
made, never when the plugin loads.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from ferro import backends
from ferro.backends import Availability
from ferro.backends._hookspec import PROCESS_GROUP_API_VERSION
from ferro.distributed import DistributedTimeoutError, ProcessGroup, ProcessGroupBackend, Work

__all__ = ["NCCLBackend", "NCCLProcessGroup", "NCCL_TYPES", "NCCL_OPS", "nccl_type"]

#: Wire dtype -> NCCL datatype constant of ``cupy.cuda.nccl`` (int16 and uint16 have none: they
#: travel as bytes where no arithmetic is needed).
NCCL_TYPES = {"uint8": "NCCL_UINT8", "int8": "NCCL_INT8", "int32": "NCCL_INT32", "int64": "NCCL_INT64",
              "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}
#: Reduction name -> NCCL op constant.
NCCL_OPS = {"sum": "NCCL_SUM", "product": "NCCL_PROD", "min": "NCCL_MIN", "max": "NCCL_MAX"}
_COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}  # a sum is a sum of (re, im) pairs


def nccl_type(dtype_name: str, op: str | None, name: str) -> tuple[str, int]:
    """The NCCL datatype constant for ``dtype_name`` and how many of it make one element.

    ``op`` None (a copy): anything NCCL lacks goes as bytes. A reduction needs
    arithmetic: complex numbers only sum, int16 / uint16 have no NCCL type.
    """
    if dtype_name in NCCL_TYPES:
        return NCCL_TYPES[dtype_name], 1
    if op is None:
        from numpy import dtype
        return NCCL_TYPES["uint8"], dtype(dtype_name).itemsize
    if dtype_name in _COMPLEX_PARTS and op == "sum":
        return NCCL_TYPES[_COMPLEX_PARTS[dtype_name]], 2
    raise TypeError(f"{name}: NCCL cannot reduce {dtype_name} with {op}; use backend 'mpi' for these tensors")


class NCCLWork(Work):
    """A CUDA event after the operation on its stream."""

    def __init__(self, group: NCCLProcessGroup, op: str, bufs: tuple[Any, ...]) -> None:
        self._group, self._op, self._bufs = group, op, bufs
        self._event = group.cupy.cuda.Event(block=False, disable_timing=True)
        self._event.record(group.cupy.cuda.get_current_stream())

    def is_completed(self) -> bool:
        return bool(self._event.done)

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        limit = (self._group.timeout.total_seconds() if timeout is None
                 else timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout))
        deadline = time.monotonic() + limit
        while not self._event.done:
            if time.monotonic() > deadline:
                self._group.comm.abort()
                raise DistributedTimeoutError(
                    f"{self._op} (backend 'nccl', rank {self._group.rank} of {self._group.size}) timed out after "
                    f"{limit:g} s; the NCCL communicator was aborted (NCCL cannot tell which ranks did not arrive)")
            time.sleep(1e-5)
        self._bufs = ()
        return True


class NCCLProcessGroup(ProcessGroup):
    """A process group on an NCCL communicator; buffers are CuPy arrays on the current device."""

    memory = "cuda"

    def __init__(self, comm: Any, rank: int, size: int, timeout: timedelta, mpi_comm: Any) -> None:
        super().__init__(rank, size, timeout, "nccl")
        import cupy
        from cupy.cuda import nccl
        self.comm, self.cupy, self.nccl, self._mpi_comm = comm, cupy, nccl, mpi_comm

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.cupy.empty(shape, dtype)

    def _args(self, buf: Any, op: str | None, name: str) -> tuple[int, int]:
        """(count, NCCL datatype) of ``buf``."""
        const, per = nccl_type(buf.dtype.name, op, name)
        return buf.size * per, getattr(self.nccl, const)

    def _stream(self) -> int:
        return self.cupy.cuda.get_current_stream().ptr

    def allreduce(self, buf: Any, op: str) -> Work:
        n, t = self._args(buf, op, "all_reduce")
        self.comm.allReduce(buf.data.ptr, buf.data.ptr, n, t, getattr(self.nccl, NCCL_OPS[op]), self._stream())
        return NCCLWork(self, "all_reduce", (buf,))

    def broadcast(self, buf: Any, root: int) -> Work:
        n, t = self._args(buf, None, "broadcast")
        self.comm.broadcast(buf.data.ptr, buf.data.ptr, n, t, root, self._stream())
        return NCCLWork(self, "broadcast", (buf,))

    def reduce(self, buf: Any, op: str, root: int) -> Work:
        n, t = self._args(buf, op, "reduce")
        self.comm.reduce(buf.data.ptr, buf.data.ptr, n, t, getattr(self.nccl, NCCL_OPS[op]), root, self._stream())
        return NCCLWork(self, "reduce", (buf,))

    def allgather(self, send: Any, recv: Any) -> Work:
        n, t = self._args(send, None, "all_gather")
        self.comm.allGather(send.data.ptr, recv.data.ptr, n, t, self._stream())
        return NCCLWork(self, "all_gather", (send, recv))

    def reduce_scatter(self, send: Any, recv: Any, op: str) -> Work:
        n, t = self._args(recv, op, "reduce_scatter")
        self.comm.reduceScatter(send.data.ptr, recv.data.ptr, n, t, getattr(self.nccl, NCCL_OPS[op]),
                                self._stream())
        return NCCLWork(self, "reduce_scatter", (send, recv))

    def gather(self, send: Any, recv: Any | None, root: int) -> Work:
        n, t = self._args(send, None, "gather")
        s = self._stream()
        self.nccl.groupStart()
        self.comm.send(send.data.ptr, n, t, root, s)
        if self.rank == root:
            for r in range(self.size):
                self.comm.recv(recv[r].data.ptr, n, t, r, s)
        self.nccl.groupEnd()
        return NCCLWork(self, "gather", (send, recv))

    def scatter(self, send: Any | None, recv: Any, root: int) -> Work:
        n, t = self._args(recv, None, "scatter")
        s = self._stream()
        self.nccl.groupStart()
        if self.rank == root:
            for r in range(self.size):
                self.comm.send(send[r].data.ptr, n, t, r, s)
        self.comm.recv(recv.data.ptr, n, t, root, s)
        self.nccl.groupEnd()
        return NCCLWork(self, "scatter", (send, recv))

    def send(self, buf: Any, dst: int, tag: int) -> Work:
        n, t = self._args(buf, None, "send")
        self.comm.send(buf.data.ptr, n, t, dst, self._stream())
        return NCCLWork(self, "send", (buf,))

    def recv(self, buf: Any, src: int, tag: int) -> Work:
        n, t = self._args(buf, None, "recv")
        self.comm.recv(buf.data.ptr, n, t, src, self._stream())
        return NCCLWork(self, "recv", (buf,))

    def barrier(self) -> Work:
        one = self.cupy.zeros(1, self.cupy.int32)
        return self.allreduce(one, "sum")

    def new_group(self, ranks: Sequence[int]) -> ProcessGroup | None:
        member = self.rank in ranks
        sub = self._mpi_comm.Split(0 if member else _mpi().UNDEFINED, self.rank)
        if not member:
            return None
        return _communicator(sub, self.timeout)

    def abort(self, code: int = 1) -> None:
        self.comm.abort()
        self._mpi_comm.Abort(code)

    def destroy(self) -> None:
        self.comm.destroy()


def _mpi() -> Any:
    from mpi4py import MPI
    return MPI


def _communicator(mpi_comm: Any, timeout: timedelta) -> NCCLProcessGroup:
    """An NCCL communicator over the processes of ``mpi_comm`` (its rank 0 makes the unique id)."""
    import cupy
    from cupy.cuda import nccl
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("MPI_LOCALRANKID", rank)))
    cupy.cuda.Device(local % cupy.cuda.runtime.getDeviceCount()).use()
    uid = mpi_comm.bcast(nccl.get_unique_id() if rank == 0 else None, root=0)
    return NCCLProcessGroup(nccl.NcclCommunicator(size, uid, rank), rank, size, timeout, mpi_comm)


class NCCLBackend(ProcessGroupBackend):
    """NCCL for CUDA tensors (ferro-cuda), bootstrapped over MPI."""

    name = "nccl"
    api_version = PROCESS_GROUP_API_VERSION
    description = "NCCL through cupy.cuda.nccl, for CUDA tensors (bootstrapped over mpi4py)"
    device_types = ("cuda",)

    def availability(self) -> Availability:
        avail = backends.get("cuda").availability()  # CuPy installed, a driver, a GPU
        if not avail:
            return Availability(False, f"the cuda backend is unavailable: {avail.reason}")
        try:
            from cupy.cuda import nccl
        except ImportError as e:
            return Availability(False, f"CuPy was built without NCCL ({e}); pip install nvidia-nccl-cu12")
        if not nccl.available:
            return Availability(False, "CuPy's NCCL bindings are present but NCCL is not available")
        try:
            import mpi4py  # noqa: F401
        except ImportError:
            return Availability(False, 'the nccl group bootstraps over MPI: pip install "ferro-core[mpi]"')
        return Availability(True)

    def create(self, timeout: timedelta, rank: int, world_size: int) -> ProcessGroup:
        return _communicator(_mpi().COMM_WORLD, timeout)
