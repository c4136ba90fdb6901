"""One device's runtime: context, in-order queue, memory pool, program cache, transfers.

Programs are built once per (source, device) in this process (the
``programs`` dict) and across processes by the driver's cache (PoCL's kernel
cache, or pyopencl's binary cache for drivers without one; on disk, keyed by
source and device), so a second run loads binaries instead of compiling; a
first run that compiles for more than a second says so (``_compile_notice``).
Allocations come from a ``pyopencl.tools.MemoryPool``: a freed
buffer goes back to the pool and is reused by the next allocation of its
size class, which is safe on the one in-order queue. Nothing on the op path
waits for the device; only transfers to the host do.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ferro._core.dtypes import bfloat16
from ferro._core.host import numpy_dtype

from ._array import CLArray
from ._compile_notice import CompileNotice

__all__ = ["Runtime", "LockedKernel", "KERNEL_DIR", "CType", "ctype", "ctypes", "is_half", "is_floating",
           "compute_dtype", "bits_dtype", "scalar_arg", "HALF_DTYPES", "MAX_DIMS"]

#: The OpenCL C sources (templates) of the kernels.
KERNEL_DIR = Path(__file__).parent / "kernels"
#: The most dimensions a strided kernel takes (more are refused with a clear error).
MAX_DIMS = 8

class CType(NamedTuple):
    """How kernels hold one dtype: ``storage`` (the C type of an element in memory), ``compute`` (the C type
    they compute in), ``load`` / ``store`` (the macros of ``common.cl`` reading element ``i`` of a pointer as
    ``compute`` and writing a ``compute`` value there), ``bits`` (a C type of the element's width, for kernels
    that only move elements) and whether the dtype is floating."""

    storage: str
    compute: str
    load: str
    store: str
    bits: str
    floating: bool


def _plain(t: str, floating: bool = False) -> CType:
    return CType(t, t, "LD", "ST", t, floating)


#: NumPy dtype name -> its OpenCL C types. The 16-bit floats are stored in 16 bits and computed in float on
#: every device (no cl_khr_fp16 needed): float16 through the core builtins vload_half / vstore_half_rte,
#: bfloat16 as ushort bits (common.cl's bf16_load / bf16_round); each result is rounded once, when stored.
#: bool is stored as uchar 0 / 1.
_CTYPES: dict[str, CType] = {
    "bool": _plain("uchar"), "int8": _plain("char"), "uint8": _plain("uchar"), "int16": _plain("short"),
    "uint16": _plain("ushort"), "int32": _plain("int"), "uint32": _plain("uint"), "int64": _plain("long"),
    "uint64": _plain("ulong"), "float32": _plain("float", True), "float64": _plain("double", True),
    "float16": CType("half", "float", "LD_H", "ST_H", "ushort", True),
    "bfloat16": CType("ushort", "float", "LD_B", "ST_B", "ushort", True),
}
_F32 = np.dtype(np.float32)
_U16 = np.dtype(np.uint16)


def ctypes(dtype: Any) -> CType:
    """The OpenCL C types, load and store macros of a NumPy dtype (see :class:`CType`)."""
    try:
        return _CTYPES[dtype.name]
    except KeyError:
        raise TypeError(f"the OpenCL backend has no kernels for dtype {dtype}") from None


def ctype(dtype: Any) -> tuple[str, str]:
    """(storage, compute) OpenCL C types of a NumPy dtype."""
    c = ctypes(dtype)
    return c.storage, c.compute


def is_half(dtype: Any) -> bool:
    """Whether ``dtype`` is float16 or bfloat16: stored in 16 bits, computed in float32."""
    return dtype.itemsize == 2 and ctypes(dtype).floating


def compute_dtype(dtype: Any) -> Any:
    """The NumPy dtype kernels compute ``dtype`` in (and take its by-value scalars in): float32 for the 16-bit
    floats, else ``dtype`` itself."""
    return _F32 if is_half(dtype) else dtype


def bits_dtype(dtype: Any) -> Any:
    """``dtype``, or uint16 for the 16-bit floats: what kernels that only move elements take them as."""
    return _U16 if is_half(dtype) else dtype


#: The NumPy dtypes of the 16-bit floats (singletons: compared by identity on the launch path).
HALF_DTYPES = (np.dtype(np.float16), numpy_dtype(bfloat16))


def scalar_arg(dtype: Any, value: Any) -> Any:
    """A Python number as the by-value kernel argument for operands of ``dtype``: for the 16-bit floats the
    number rounded to ``dtype`` once (as NumPy's and PyTorch's weak scalars are), then widened to float32."""
    if dtype is HALF_DTYPES[0] or dtype is HALF_DTYPES[1]:
        with np.errstate(over="ignore"):
            return np.float32(np.asarray(value, dtype))
    return value if type(value) is not bool else dtype.type(value)


def is_floating(dtype: Any) -> bool:
    """Whether kernels treat ``dtype`` as floating (bfloat16's NumPy kind is 'V', not 'f')."""
    return ctypes(dtype).floating


def read_source(name: str) -> str:
    """A ``.cl`` file of ``kernels/``."""
    return (KERNEL_DIR / name).read_text()


class Runtime:
    """The context, queue, pool and compiled programs of one OpenCL device."""

    def __init__(self, device: Any) -> None:
        import numpy as np
        import pyopencl as cl
        import pyopencl.tools as cltools
        self.cl = cl
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context)
        self.pool = cltools.MemoryPool(cltools.ImmediateAllocator(self.queue))
        self.fp64 = "cl_khr_fp64" in device.extensions.split()
        self._copy_in = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        self._metas: dict[bytes, Any] = {}
        #: (shape, operand shapes and strides) -> (layout buffer, innermost extent), see _elementwise
        self.layouts: dict[Any, Any] = {}
        #: source key -> built program; kernels by (key, kernel name).
        self.programs: dict[Any, Any] = {}
        self.kernels: dict[Any, Any] = {}
        #: seconds spent building programs in this process, and how many were built.
        self.build_seconds = 0.0
        self.builds = 0
        self.notice = CompileNotice(device.name.strip())
        self._lock = threading.Lock()
        #: held while a kernel's arguments are set and it is enqueued (see :class:`LockedKernel`)
        self.launch_lock = threading.Lock()
        #: held while the error flag is read and cleared, so that one synchronization reports a flagged error
        self._flag_lock = threading.Lock()
        self._header = read_source("common.cl")
        self._bf16 = read_source("bfloat16.cl")
        self.max_group = min(256, device.max_work_group_size)
        #: set by kernels that meet a bad index (they cannot raise): checked at each synchronization
        self.error_flag = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                    hostbuf=np.zeros(1, np.int32))
        #: the ops (with their index argument) that queued index-checking kernels since the last check, in
        #: order and once each (a dict as an ordered set): named in the IndexError a flag reports
        self.deferred_labels: dict[str, None] = {}

    def check_errors(self) -> None:
        """Raise the error a kernel flagged since the last check (an index out of range: IndexError; an integer
        division by zero: ZeroDivisionError), after waiting."""
        import numpy as np
        flag = np.zeros(1, np.int32)
        with self._flag_lock:
            self.cl.enqueue_copy(self.queue, flag, self.error_flag, is_blocking=True)
            if flag[0]:
                self.cl.enqueue_copy(self.queue, self.error_flag, np.zeros(1, np.int32), is_blocking=True)
            labels, self.deferred_labels = self.deferred_labels, {}
        if flag[0]:
            if flag[0] == 2:
                raise ZeroDivisionError(f"integer division by zero (floor_divide or remainder) in an op queued on "
                                        f"{self.device.name.strip()} before this synchronization")
            # the ops that said they index (several: any of them, the flag does not say which)
            named = f"{' or '.join(labels)}: " if labels else ""
            raise IndexError(f"{named}an index tensor held an index out of range for the indexed dimension, in an "
                             f"indexing op queued on {self.device.name.strip()} before this synchronization "
                             "(device kernels cannot raise where they run)")

    def np_dtype(self, dtype: Any) -> Any:
        """The NumPy dtype of a ferro dtype."""
        got = _NP.get(dtype)
        if got is None:
            got = _NP[dtype] = numpy_dtype(dtype)
        return got

    def meta(self, layout: Any) -> Any:
        """The device buffer holding ``layout`` (a ``meta_t`` as int64s), made once per distinct layout."""
        key = layout.tobytes()
        buf = self._metas.get(key)
        if buf is None:
            if len(self._metas) > 4096:  # bounded; a dropped buffer stays alive while a queued kernel uses it
                self._metas.clear()
            buf = self._metas[key] = self.cl.Buffer(self.context, self._copy_in, hostbuf=layout)
        return buf

    # -- memory -----------------------------------------------------------

    def empty(self, shape: tuple[int, ...], dtype: Any) -> CLArray:
        """A new contiguous array from the pool (uninitialized)."""
        a = CLArray(self, None, shape, dtype)
        if a.size:
            nbytes = a.size * dtype.itemsize
            try:
                a.buffer = self.pool.allocate(nbytes)
            except self.cl.Error as e:  # INVALID_BUFFER_SIZE, MEM_OBJECT_ALLOCATION_FAILURE, OUT_OF_RESOURCES
                raise MemoryError(f"out of memory on {self.device.name.strip()}: {nbytes} bytes requested, the "
                                  f"device allocates at most {self.device.max_mem_alloc_size} bytes at once and "
                                  f"has {self.device.global_mem_size} in all ({e})") from None
        return a

    def stats(self) -> dict[str, int]:
        """The pool's statistics."""
        p = self.pool
        return {"active_bytes": p.active_bytes, "managed_bytes": p.managed_bytes,
                "held_bytes": p.managed_bytes - p.active_bytes, "active_blocks": p.active_blocks,
                "held_blocks": p.held_blocks, "programs_built": self.builds,
                "build_ms": round(self.build_seconds * 1000)}

    # -- transfers ----------------------------------------------------------

    def from_host(self, array: Any) -> CLArray:
        """Copy a NumPy array to the device. The buffer is made with the host data (``COPY_HOST_PTR``): the
        copy happens at creation, outside the queue, so it neither waits for queued kernels nor leaves the
        caller's array in use."""
        import numpy as np
        a = np.ascontiguousarray(array) if array.ndim else np.asarray(array).reshape(())
        out = CLArray(self, None, a.shape, a.dtype)
        if out.size:
            out.buffer = self.cl.Buffer(self.context, self._copy_in, hostbuf=a)
        return out

    def to_host(self, x: CLArray) -> Any:
        """The elements of ``x`` as a new NumPy array (waits for the queue)."""
        import numpy as np
        if not x.contiguous:
            from ._elementwise import copy_contiguous
            x = copy_contiguous(x)
        out = np.empty(x.shape, x.dtype)
        if x.size:
            self.cl.enqueue_copy(self.queue, out, x.buffer, src_offset=x.offset * x.dtype.itemsize, is_blocking=True)
        self.check_errors()
        return out

    # -- programs -----------------------------------------------------------

    def program(self, key: Any, make_source: Callable[[], str]) -> Any:
        """The built program of ``key``, building ``make_source()`` once (and caching its binary on disk)."""
        prog = self.programs.get(key)
        if prog is None:
            with self._lock:
                prog = self.programs.get(key)
                if prog is None:
                    body = make_source()
                    # bfloat16's helpers go only into the programs that use them: every other program's source
                    # stays as it was, byte for byte, and so does its cached binary
                    src = self._header + (self._bf16 if "_B(" in body else "") + body
                    if self.fp64:
                        src = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + src
                    t0 = time.perf_counter()
                    try:
                        prog = self.cl.Program(self.context, src).build(options=_OPTIONS)
                    except self.cl.RuntimeError as e:
                        raise RuntimeError(f"building the OpenCL program {key!r} failed on "
                                           f"{self.device.name.strip()}: {e}") from None
                    seconds = time.perf_counter() - t0
                    self.build_seconds += seconds
                    self.builds += 1
                    self.notice.built(seconds)
                    self.programs[key] = prog
        return prog

    def kernel(self, key: Any, name: str, make_source: Callable[[], str],
               scalar_types: list[Any] | None) -> LockedKernel:
        """Kernel ``name`` of program ``key``, with its scalar argument types set (fast invoker), launched under
        the device's launch lock."""
        k = self.kernels.get((key, name))
        if k is None:
            raw = self.cl.Kernel(self.program(key, make_source), name)
            if scalar_types is not None:
                raw.set_scalar_arg_dtypes(scalar_types)
            k = self.kernels.setdefault((key, name), LockedKernel(raw, self.launch_lock))
        return k

    def grid(self, n: int) -> tuple[int]:
        """A 1-D global size covering ``n`` work-items, a multiple of the group size."""
        g = self.max_group
        return ((n + g - 1) // g * g,)


class LockedKernel:
    """A kernel whose calls (set the arguments, enqueue) hold the device's launch lock.

    OpenCL keeps a kernel's arguments in the kernel object, and ``clSetKernelArg`` is the one OpenCL call that
    is not thread-safe: two threads launching one kernel object would enqueue it with each other's buffers and
    sizes (a kernel writing past a buffer's end corrupts the host heap on a CPU device). The enqueue copies the
    arguments, so the lock is held only from the first argument to the enqueue. ``raw`` is the pyopencl kernel,
    for launch paths that set arguments themselves (they take ``lock`` too).
    """

    __slots__ = ("lock", "raw")

    def __init__(self, raw: Any, lock: threading.Lock) -> None:
        self.raw = raw
        self.lock = lock

    def __call__(self, *args: Any) -> Any:
        with self.lock:
            return self.raw(*args)


_NP: dict[Any, Any] = {}

# -cl-std is left to the driver; no fast-math: results must match NumPy's within float tolerance.
_OPTIONS: list[str] = [] if not os.environ.get("FERRO_OPENCL_BUILD_OPTIONS") else \
    os.environ["FERRO_OPENCL_BUILD_OPTIONS"].split()
