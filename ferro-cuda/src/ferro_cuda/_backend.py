"""The CUDA backend: core's generic Array API backend over CuPy.

Every primitive kernel comes from :class:`ferro.backends.ArrayAPIBackend`
(matmul through cuBLAS, ``linalg`` through cuSOLVER, both by way of CuPy);
this module adds what is CUDA's own: availability with the exact reason,
devices, pinned-memory transfers, streams, memory statistics with a peak,
the TF32 switch, device versions of what the generic backend computes on
the host, and ferro's own kernels (:mod:`._fused`). CuPy is imported on first
use (:meth:`CudaBackend.availability`), never at module import.

CuPy's creation functions take no ``device=`` argument: an array is made on
the *current* device. So :meth:`CudaBackend.native_device` stays None and
every kernel of ``cuda:N`` with ``N > 0`` runs inside ``cupy.cuda.Device(N)``;
``cuda:0`` kernels run unwrapped, on the current device, which ferro never
changes outside those blocks.

bfloat16 is a dtype here where CuPy has it (CuPy 14 with ml_dtypes), and each
op claims it only where CuPy really runs it (:mod:`._bfloat16`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ferro._core.dtypes import DType, bfloat16
from ferro.backends import ArrayAPIBackend, Availability, elementwise_ops

from ._indexing import IndexLabels
from ._memory import MemoryTracker, PinnedStager
from ._runtime import cuda_availability, cuda_version
from ._streams import CudaEvent, CudaStream

__all__ = ["CudaBackend"]

_UNKNOWN = object()
#: DLPack device types whose memory CuPy imports without a copy (kDLCUDA, kDLCUDAManaged).
_DLPACK_CUDA = (2, 13)
_DLPACK_CPU = 1


class CudaBackend(ArrayAPIBackend):
    """Kernels on CuPy arrays; devices ``cuda:0``, ``cuda:1``, ..."""

    name = "cuda"
    description = "CuPy on NVIDIA GPUs"
    module_name = "cupy"
    optional_groups = frozenset({"special", "complex", "linalg", "fft", "strided", "quantized"})

    def namespace(self) -> Any:
        """Import CuPy; a missing CuPy says how to install it, a broken one says why it failed."""
        try:
            import cupy
        except ModuleNotFoundError as e:
            if e.name != "cupy":
                raise _broken_cupy(e) from e
            raise ModuleNotFoundError("pip install 'ferro-cuda[cupy]'", name="cupy") from e
        except ImportError as e:  # CuPy present, its CUDA libraries not
            raise _broken_cupy(e) from e
        return cupy

    def __init__(self) -> None:
        super().__init__()
        self._memory: MemoryTracker | None = None
        self._stager: PinnedStager | None = None
        self._tf32: bool | None = None
        self._current = 0
        self._bf16: Any = _UNKNOWN
        self._bf16_refused: dict[str, str] | None = None
        self._bf16_check: Callable[[str, DType], str | None] | None = None
        self._index_labels = IndexLabels()
        #: the plugin ops whose kernels are generated from their expressions (:meth:`extra_kernels`)
        self._generated: dict[str, Any] = {}

    def check_runtime(self) -> Availability:
        avail = cuda_availability(self.xp)
        if avail:
            self._memory = MemoryTracker(self.xp)
            self._stager = PinnedStager(self.xp)
        return avail

    # -- dtypes -----------------------------------------------------------

    def cupy_bfloat16(self) -> Any:
        """CuPy's bfloat16 dtype, or None where the installed CuPy has none (asked once)."""
        if self._bf16 is _UNKNOWN:
            from ._bfloat16 import cupy_bfloat16
            self._bf16 = cupy_bfloat16(self.xp)
        return self._bf16

    def dtypes(self, index: int) -> frozenset[DType]:
        """CuPy's dtypes; bfloat16 too where CuPy has it."""
        out = super().dtypes(index)
        return out | {bfloat16} if self.cupy_bfloat16() is not None else out

    def native_dtype(self, dtype: DType) -> Any:
        if dtype is bfloat16:
            native = self.cupy_bfloat16()
            if native is None:
                raise TypeError(f"CuPy {self.xp.__version__} has no bfloat16 (it needs CuPy 14 and ml_dtypes)")
            return native
        return super().native_dtype(dtype)

    def bfloat16_refusals(self, index: int = 0) -> dict[str, str]:
        """Op -> why it is refused for bfloat16 here (empty without bfloat16); see :mod:`._bfloat16`."""
        bf16 = self.cupy_bfloat16()
        if bf16 is None:
            return {}
        if self._bf16_refused is None:
            from ._bfloat16 import refused_ops
            self._bf16_refused = refused_ops(self.xp, bf16, self.kernels(index))
        return self._bf16_refused

    def unsupported(self, index: int) -> dict[str, frozenset[DType]]:
        """bfloat16 for every op CuPy has no bfloat16 path for (and every op whose fused kernels it refuses), and
        the compute dtypes a plugin op's generated kernel has no C for (complex: ``kernels/elementwise.py``)."""
        out = {op: frozenset({bfloat16}) for op in self.bfloat16_refusals(index)}
        if self._generated:
            from .kernels.elementwise import generation_refusal  # here: the kernel sources wait for a CUDA op
        for name, op in self._generated.items():
            if no := frozenset(d for d, _ in op.table.values() if generation_refusal(op, d.name) is not None):
                out[name] = out.get(name, frozenset()) | no
        return out

    def refuses(self, kernel: str, dtype: DType, index: int) -> str | None:
        """Why ``kernel`` cannot take ``dtype``: bfloat16 on this CuPy (see :mod:`._bfloat16`), and a generated
        kernel's dtype without C; otherwise None."""
        op = self._generated.get(kernel)
        if op is not None:
            from .kernels.elementwise import generation_refusal
            if (why := generation_refusal(op, dtype.name)) is not None:
                return why
        bf16 = self.cupy_bfloat16() if dtype is bfloat16 else None
        if bf16 is None:
            return None
        if self._bf16_check is None:
            from ._bfloat16 import kernel_check
            self._bf16_check = kernel_check(self.xp, bf16)
        return self._bf16_check(kernel, dtype)

    # -- devices ----------------------------------------------------------

    def device_count(self) -> int:
        return int(self.xp.cuda.runtime.getDeviceCount()) if self.availability() else 0

    def default_device_index(self) -> int:
        """The current GPU: 0 unless ``ferro.cuda.set_device`` chose another."""
        return self._current

    def set_current_device(self, index: int) -> None:
        """Make GPU ``index`` ferro's current one (``ferro.cuda`` queries default to it). CuPy's own current
        device is left alone: ``cuda:0``'s kernels run on it unwrapped (see the module docstring)."""
        self._current = index

    def _props(self, index: int) -> dict[str, Any]:
        return self.xp.cuda.runtime.getDeviceProperties(index)

    def device_name(self, index: int) -> str:
        name = self._props(index)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def device_info(self, index: int) -> dict[str, str]:
        p = self._props(index)
        rt = self.xp.cuda.runtime
        return {"memory": f"{p['totalGlobalMem'] / 2**30:.1f} GiB",
                "compute capability": f"{p['major']}.{p['minor']}",
                "multiprocessors": str(p["multiProcessorCount"]),
                "cupy": self.xp.__version__, "CUDA runtime": cuda_version(rt.runtimeGetVersion()),
                "CUDA driver": cuda_version(rt.driverGetVersion())}

    def _on(self, index: int) -> Any:
        """``with self._on(i):`` makes device ``i`` current."""
        return self.xp.cuda.Device(index)

    # -- transfers ----------------------------------------------------------

    def from_numpy(self, array: Any, index: int) -> Any:
        """Large arrays go through pinned host memory: an asynchronous copy at full bus speed."""
        with self._on(index):
            stager = self._stager
            if stager is not None and array.nbytes >= stager.min_bytes:
                return stager.to_device(array)
            return self.xp.asarray(array)

    def to_numpy(self, array: Any) -> Any:
        return array.get()

    def from_dlpack(self, obj: Any, index: int) -> Any:
        """Zero-copy for CUDA memory on device ``index``; host memory is copied in."""
        kind, dev_id = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (_DLPACK_CPU, 0)
        if kind not in _DLPACK_CUDA:
            import numpy as np
            return self.from_numpy(np.from_dlpack(obj), index)
        with self._on(index):
            array = self.xp.from_dlpack(obj)
            # ndarray.copy() allocates on the current device: another GPU's memory is moved here.
            return array if dev_id == index else array.copy()

    # -- kernels ----------------------------------------------------------

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        import ferro.cuda
        if self.availability():
            self.set_allow_tf32(ferro.cuda.matmul.allow_tf32)  # the switch may have been set before CUDA started
        table = super().kernels(index)
        bf16 = self.cupy_bfloat16()
        if bf16 is not None:  # round, sigmoid: on bfloat16, the kernels generated from their expressions
            from ._bfloat16 import generated_bfloat16_kernels
            table.update(generated_bfloat16_kernels(bf16, table))
        if index:
            table = {name: _on_device(kernel, self._on, index) for name, kernel in table.items()}
        return table

    def compile_fused(self, group: Any, index: int | None = None) -> Any:
        """A fused group of elementwise ops as one CUDA C kernel on ``cuda:index``, compiled by NVRTC on first
        launch and cached per group signature; None for a group it cannot generate (``ferro.backends.fusion``)."""
        from ._fusion import compile_group
        return compile_group(self, group, self._index(index))

    def extra_kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        """ferro's own CUDA kernels, and CuPy's device versions of what the generic backend does on the host."""
        from ._device_kernels import device_kernels, wrapping_cast
        from ._fused import cum_extreme_kernel, fused_kernels, index_put_kernel
        from ._generated import generated_kernels
        from ._indexing import checked_getitem
        from ._quantized import quantized_kernels
        generic = self._generic_kernels(index)

        def label() -> str | None:  # the op core named for the indices this device's next checked kernel reads
            return self._index_labels.take(index)
        table = {**device_kernels(self.xp, self.cupy_bfloat16()), **fused_kernels(),
                 "getitem": checked_getitem(self.xp, generic["getitem"], label),
                 "index_put": index_put_kernel(generic["index_put"], label),
                 "cast": wrapping_cast(generic["cast"]),
                 "cummax": cum_extreme_kernel(True, generic["cummax"]),
                 "cummin": cum_extreme_kernel(False, generic["cummin"]),
                 "diagonal": lambda x, offset, d1, d2: self.xp.diagonal(x, offset, d1, d2),  # a view in CuPy
                 **quantized_kernels()}  # int8_matmul (ferro.quantization)
        from ._sparse import sparse_kernels
        table.update(sparse_kernels(self.xp))  # spmm_csr, spmv_csr on cuSPARSE (ferro._ops.sparse)
        # a plugin's op that gives an expression and no CUDA kernel: generated from its record (ferro's own
        # elementwise ops run CuPy's ufuncs; reciprocal, rsqrt, exp2, frac their decompositions)
        self._generated = {name: op for name, op in elementwise_ops().items()
                           if op.plugin and name not in generic and name not in table}
        table.update(generated_kernels(self._generated))
        bf16 = self.cupy_bfloat16()
        if bf16 is not None:
            from ferro.errors import UnsupportedOperationError

            from ._bfloat16 import bfloat16_kernels

            def refuse(kernel: str, reason: str) -> Exception:
                return UnsupportedOperationError(kernel, bfloat16, self.name, f"{self.name}:{index}", reason=reason)
            table.update(bfloat16_kernels(self.xp, bf16, {**generic, **table}, refuse))
        return table

    # -- TF32 -------------------------------------------------------------

    def set_allow_tf32(self, allow: bool) -> None:
        """Let cuBLAS compute float32 matmul in TF32 on every GPU that has it (compute capability 8.0+)."""
        allow = bool(allow)
        if self._tf32 is allow or not self.availability():
            return
        from cupy._core import _routines_linalg as la
        kind = la.COMPUTE_TYPE_TF32 if allow else la.COMPUTE_TYPE_DEFAULT
        for i in range(self.device_count()):
            with self._on(i):
                if allow and int(self.xp.cuda.Device(i).compute_capability) < 80:
                    continue  # no TF32 units: float32 stays float32
                la.set_compute_type(self.xp.float32, kind)
        self._tf32 = allow

    # -- streams and events (the contract's DeviceRuntime, which ferro.cuda calls) ------------

    def new_stream(self, index: int, priority: int = 0) -> CudaStream:
        """A new non-blocking CuPy stream on device ``index``."""
        with self._on(index):
            return CudaStream(self.xp, self.xp.cuda.Stream(non_blocking=True, priority=priority))

    def current_stream(self, index: int) -> CudaStream:
        """The stream kernels of device ``index`` are queued on now."""
        with self._on(index):
            return CudaStream(self.xp, self.xp.cuda.get_current_stream())

    def default_stream(self, index: int) -> CudaStream:
        """Device ``index``'s legacy default stream."""
        with self._on(index):
            return CudaStream(self.xp, self.xp.cuda.Stream.null)

    @contextmanager
    def use_stream(self, stream: CudaStream) -> Iterator[None]:
        """Queue work on ``stream`` (on its own device) inside the block."""
        with self._on(stream.device_index), stream.native:
            yield

    def new_event(self, enable_timing: bool, blocking: bool) -> CudaEvent:
        """A new CuPy event."""
        return CudaEvent(self.xp, self.xp.cuda.Event(block=blocking, disable_timing=not enable_timing))

    # -- memory -------------------------------------------------------------

    def _tracker(self) -> MemoryTracker:
        if not self.availability() or self._memory is None:
            raise RuntimeError(f"CUDA is not available: {self.availability().reason}")
        return self._memory

    def memory_allocated(self, index: int) -> int:
        """Bytes of device ``index`` held by tensors (CuPy's pool, in use)."""
        with self._on(index):
            return self._tracker().allocated()

    def max_memory_allocated(self, index: int) -> int:
        """The most bytes in use on device ``index`` since the start or the last reset."""
        return self._tracker().peak(index)

    def reset_peak_memory_stats(self, index: int) -> None:
        """Start the peak of device ``index`` again from what is in use now."""
        with self._on(index):
            self._tracker().reset_peak(index)

    def memory_reserved(self, index: int) -> int:
        """Bytes CuPy's pool holds on device ``index`` (in use and cached)."""
        with self._on(index):
            return self._tracker().reserved()

    def empty_cache(self) -> None:
        """Give the cached blocks of the device and pinned-host pools back to the driver."""
        if self.availability():
            self.xp.get_default_memory_pool().free_all_blocks()
            self.xp.get_default_pinned_memory_pool().free_all_blocks()

    # -- runtime ----------------------------------------------------------

    def synchronize(self, index: int) -> None:
        self._index_labels.take(index)  # a label no kernel took (the op failed before indexing) names nothing later
        self._on(index).synchronize()

    def name_deferred_errors(self, index: int, label: str) -> None:
        """``label`` (the op and its index argument) names the IndexError of the next index-checking kernel on
        device ``index``: CuPy wraps out-of-range indices around, so ``getitem`` and ``index_put`` check them
        and raise at once (:mod:`._indexing`), but cannot tell which op they run for."""
        self._index_labels.name(index, label)

    def memory_stats(self, index: int) -> dict[str, int]:
        """CuPy's default memory pool on device ``index``: bytes in use, cached, reserved, and the limit."""
        if not self.availability():
            return {}
        pool = self.xp.get_default_memory_pool()
        with self._on(index):
            return {"allocated": int(pool.used_bytes()), "cached": int(pool.free_bytes()),
                    "reserved": int(pool.total_bytes()), "limit": int(pool.get_limit()),
                    "peak": self._tracker().peak(index)}


def _broken_cupy(err: ImportError) -> RuntimeError:
    # CuPy wraps the cause in a long banner; its "Original error:" line is the part worth reading.
    text = str(err)
    if "Original error:" in text:
        text = text.split("Original error:", 1)[1].strip().split("\n", 1)[0].strip()
    return RuntimeError(f"CuPy is installed but failed to import ({text}); install the CuPy build for your "
                        f"CUDA version (cupy-cuda12x, cupy-cuda13x)")


def _on_device(kernel: Callable[..., Any], on: Callable[[int], Any], index: int) -> Callable[..., Any]:
    @functools.wraps(kernel)
    def run(*args: Any, **kwargs: Any) -> Any:
        with on(index):
            return kernel(*args, **kwargs)
    return run
