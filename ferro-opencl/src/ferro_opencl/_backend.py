"""The OpenCL backend: devices, capabilities per device, transfers on pyopencl.

Every platform's devices are numbered in order as ``opencl:0``, ``opencl:1``,
... (see ``_devices``); each gets one context and one in-order queue, made on
first use, with a memory pool and a program cache (``_runtime``). pyopencl is
imported on first use, never at module import. The kernel table comes from
``_table``; an op it lacks runs by its decomposition where the registry has
one, else raises ``UnsupportedOperationError`` naming the backends that have it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ferro._core.dtypes import DType, all_dtypes, float64
from ferro._core.host import numpy_dtype
from ferro.backends import ArrayAPIBackend, Availability, Backend, host_kernels

from ._devices import default_index, find_devices

__all__ = ["OpenCLBackend"]


class OpenCLBackend(Backend):
    """pyopencl arrays on every OpenCL device."""

    name = "opencl"
    description = "pyopencl on OpenCL devices"
    complete = True
    optional_groups = frozenset({"special", "strided", "quantized"})

    def __init__(self) -> None:
        self._devices: list[Any] = []
        self._avail: Availability | None = None
        self._runtimes: dict[int, Any] = {}
        self._rng_mode: str | None = None
        self._generators: dict[int, Any] = {}
        self._lock = threading.Lock()
        # The generic backend's host RNG (a Philox generator per device), reused as it is:
        # ferro.manual_seed then gives the same numbers here as on cpu and cuda.
        self._host_rng = ArrayAPIBackend()

    # -- availability and devices -------------------------------------------

    def availability(self) -> Availability:
        """Available when pyopencl imports and some platform has a device; never raises."""
        if self._avail is None:
            try:
                self._devices, self._avail = find_devices()
            except Exception as e:  # a broken pyopencl or driver must not crash ferro
                self._devices, self._avail = [], Availability(False, f"{type(e).__name__}: {e}")
        return self._avail

    def device_count(self) -> int:
        return len(self._devices) if self.availability() else 0

    def default_device_index(self) -> int:
        """``FERRO_OPENCL_DEVICE=N``, else the device ``PYOPENCL_CTX`` names, else 0."""
        return default_index(lambda: self._devices if self.availability() else [])

    def cl_device(self, index: int) -> Any:
        """The ``pyopencl.Device`` of ``opencl:index``."""
        self.availability()
        return self._devices[index]

    def device_name(self, index: int) -> str:
        return str(self.cl_device(index).name).strip()

    def device_info(self, index: int) -> dict[str, str]:
        d = self.cl_device(index)
        return {"platform": d.platform.name.strip(), "vendor": str(d.vendor).strip(),
                "version": str(d.version).strip(), "global memory": f"{d.global_mem_size / 2**30:.1f} GiB",
                "compute units": str(d.max_compute_units), **self.half_modes(index),
                "extensions": " ".join(sorted(d.extensions.split()))}

    def dtypes(self, index: int) -> frozenset[DType]:
        """Every integer and bool; float32, float16, bfloat16; float64 only with cl_khr_fp64."""
        out = {d for d in all_dtypes if not d.is_complex}
        if "cl_khr_fp64" not in self.cl_device(index).extensions.split():
            out.discard(float64)
        return frozenset(out)

    def half_modes(self, index: int) -> dict[str, str]:
        """How device ``index`` runs the 16-bit floats (``ferro info`` shows it): on every device they are
        stored in 16 bits and computed in float32, each result rounded once (native half arithmetic, even
        where ``cl_khr_fp16`` offers it, would round after every operation of an expression)."""
        fp16 = "cl_khr_fp16" in self.cl_device(index).extensions.split()
        return {"float16": "storage only: computed in float32 (vload_half / vstore_half_rte"
                           + ("; the device's cl_khr_fp16 is not used)" if fp16 else ")"),
                "bfloat16": "storage only: computed in float32 (16-bit words)"}

    # -- runtime --------------------------------------------------------------

    def runtime(self, index: int) -> Any:
        """The runtime of ``opencl:index``: its context, in-order queue, memory pool and programs."""
        rt = self._runtimes.get(index)
        if rt is None:
            from ._runtime import Runtime
            with self._lock:
                rt = self._runtimes.get(index)
                if rt is None:
                    rt = self._runtimes[index] = Runtime(self.cl_device(index))
        return rt

    def queue(self, index: int) -> Any:
        """The in-order command queue of ``opencl:index`` (one context and queue per device)."""
        return self.runtime(index).queue

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        from ._table import kernel_table
        host = host_kernels(self, index)  # NumPy on the host through this backend's to_numpy / from_numpy
        table = kernel_table(self.runtime(index), lambda: self._host_rng._rng(index), host)
        from ._fused import fused_kernels  # softmax, layer_norm, cross_entropy in one launch (ferro._ops.fused)
        table.update(fused_kernels(self.runtime(index)))
        from ._quantized import quantized_kernels  # int8_matmul (ferro.quantization)
        table.update(quantized_kernels(self.runtime(index)))
        from ._sparse import sparse_kernels  # spmm_csr, spmv_csr (ferro._ops.sparse, ferro.sparse)
        table.update(sparse_kernels(self.runtime(index)))
        if self.device_rng():
            from ._random import device_random_kernels
            table.update(device_random_kernels(self.runtime(index), lambda: self._generator(index)))
        return table

    #: compile_fused takes groups that end with reductions (``ferro.backends.fusion.Reduce``)
    fuses_reductions = True

    def compile_fused(self, group: Any, index: int | None = None) -> Any:
        """A fused group of elementwise ops as one generated OpenCL C kernel on ``opencl:index`` (built on first
        use, cached per group signature), its trailing reductions fused too; None for a group it cannot
        generate (``ferro.backends.fusion``)."""
        rt = self.runtime(self._index(index))
        if group.reductions:
            from ._fusion_reduce import compile_reductions
            return compile_reductions(rt, group, self._device(index)._kernels)
        from ._fusion import compile_group
        return compile_group(rt, group)

    def unsupported(self, index: int) -> dict[str, frozenset[DType]]:
        from ._table import refused
        return refused(self.dtypes(index))

    def memory_stats(self, index: int) -> dict[str, int]:
        """The device's memory pool: active and held bytes and blocks; programs built and their build time."""
        return self.runtime(index).stats() if index in self._runtimes else {}

    def empty_cache(self) -> None:
        """Give the pools' held (unused) buffers back to the driver."""
        for rt in self._runtimes.values():
            rt.pool.free_held()

    def native_dtype(self, dtype: DType) -> Any:
        return numpy_dtype(dtype)

    def from_numpy(self, array: Any, index: int) -> Any:
        return self.runtime(index).from_host(array)

    def to_numpy(self, array: Any) -> Any:
        return array.rt.to_host(array)

    def to_dlpack(self, array: Any, stream: Any = None) -> Any:
        raise BufferError("pyopencl arrays do not support DLPack; move the tensor with .to('cpu') first")

    def dlpack_device(self, array: Any) -> tuple[int, int]:
        raise BufferError("pyopencl arrays do not support DLPack; move the tensor with .to('cpu') first")

    def synchronize(self, index: int) -> None:
        """Wait for the device's queue; raises the IndexError a kernel flagged (an index out of range)."""
        rt = self.runtime(index)
        rt.queue.finish()
        rt.check_errors()

    def name_deferred_errors(self, index: int, label: str) -> None:
        """``label`` names the op in the IndexError its kernels may flag before the next synchronization (the
        first 16 distinct labels between two synchronizations: a loop that never synchronizes stays bounded)."""
        labels = self.runtime(index).deferred_labels
        if len(labels) < 16:
            labels[label] = None

    # -- random numbers: the host Philox generator (default) or Philox4x32-10 on the device -------------

    def device_rng(self) -> bool:
        """Whether random numbers are drawn on the device (``FERRO_OPENCL_RNG=device``, read once)."""
        if self._rng_mode is None:
            raw = os.environ.get("FERRO_OPENCL_RNG", "host").strip().lower() or "host"
            if raw not in ("host", "device"):
                raise ValueError(f"FERRO_OPENCL_RNG={raw!r}: use 'host' (the same numbers as on cpu, the default) "
                                 "or 'device' (Philox4x32-10 on the device)")
            self._rng_mode = raw
        return self._rng_mode == "device"

    def _generator(self, index: int) -> Any:
        g = self._generators.get(index)
        if g is None:
            from ._random import DeviceGenerator
            g = self._generators.setdefault(index, DeviceGenerator(0))
        return g

    def manual_seed(self, seed: int, index: int) -> None:
        if self.device_rng():
            from ._random import DeviceGenerator
            self._generators[index] = DeviceGenerator(seed)
        else:
            self._host_rng.manual_seed(seed, index)

    def get_rng_state(self, index: int) -> bytes:
        return self._generator(index).state() if self.device_rng() else self._host_rng.get_rng_state(index)

    def set_rng_state(self, state: bytes, index: int) -> None:
        if self.device_rng():
            from ._random import DeviceGenerator
            self._generators[index] = DeviceGenerator.from_state(state)
        else:
            self._host_rng.set_rng_state(state, index)
