"""The OpenCL backend: devices, capabilities per device, transfers on pyopencl.

Every platform's devices are numbered in order as ``opencl:0``, ``opencl:1``,
...; each gets one context and one in-order queue, made on first use. The
kernels arrive with the OpenCL issue; until then an op raises
``UnsupportedOperationError`` naming the backends that have it.
"""

from __future__ import annotations

import os
from typing import Any

from ferro._dtypes import DType, all_dtypes, bfloat16, float16, float64
from ferro.backends import Availability, Backend
from ferro.backends._array_api import ArrayAPIBackend

__all__ = ["OpenCLBackend"]

_INSTALL_HINT = "pip install 'ferro-opencl[pocl]' for PoCL's CPU device"


class OpenCLBackend(Backend):
    """pyopencl arrays on every OpenCL device."""

    name = "opencl"
    description = "pyopencl on OpenCL devices"

    def __init__(self) -> None:
        self._devices: list[Any] | None = None
        self._avail: Availability | None = None
        self._queues: dict[int, Any] = {}
        # The host RNG of the generic backend (a Philox generator per device), reused as is.
        self._rng_host = ArrayAPIBackend()

    # -- availability and devices -------------------------------------------

    def _cl(self) -> Any:
        import pyopencl
        return pyopencl

    def _all_devices(self) -> list[Any]:
        if self._devices is None:
            cl = self._cl()
            self._devices = [d for p in cl.get_platforms() for d in p.get_devices()]
        return self._devices

    def availability(self) -> Availability:
        if self._avail is None:
            try:
                self._cl()
            except ImportError as e:
                self._avail = Availability(False, f"pyopencl is not installed ({e}); {_INSTALL_HINT}")
                return self._avail
            try:
                devices = self._all_devices()
            except Exception as e:  # no ICD loader, no platform: pyopencl raises LogicError / RuntimeError
                self._avail = Availability(False, f"no OpenCL platform found ({type(e).__name__}: {e}); "
                                                  f"{_INSTALL_HINT}")
                return self._avail
            self._avail = Availability(True) if devices else Availability(
                False, f"OpenCL platforms are installed but none has a device; {_INSTALL_HINT}")
        return self._avail

    def device_count(self) -> int:
        return len(self._all_devices()) if self.availability() else 0

    def default_device_index(self) -> int:
        raw = os.environ.get("FERRO_OPENCL_DEVICE", "").strip()
        return int(raw) if raw.isdigit() else 0

    def device_name(self, index: int) -> str:
        return str(self._all_devices()[index].name).strip()

    def device_info(self, index: int) -> dict[str, str]:
        d = self._all_devices()[index]
        return {"platform": d.platform.name, "vendor": str(d.vendor).strip(),
                "memory": f"{d.global_mem_size / 2**30:.1f} GiB", "compute units": str(d.max_compute_units),
                "extensions": " ".join(sorted(d.extensions.split()))}

    def dtypes(self, index: int) -> frozenset[DType]:
        ext = self._all_devices()[index].extensions.split()
        out = {d for d in all_dtypes if not d.is_complex and d is not bfloat16}
        if "cl_khr_fp64" not in ext:
            out.discard(float64)
        if "cl_khr_fp16" not in ext:
            out.discard(float16)
        return frozenset(out)

    # -- runtime --------------------------------------------------------------

    def queue(self, index: int) -> Any:
        """The command queue of device ``index`` (one context and queue per device)."""
        q = self._queues.get(index)
        if q is None:
            cl = self._cl()
            ctx = cl.Context([self._all_devices()[index]])
            q = self._queues[index] = cl.CommandQueue(ctx)
        return q

    def native_dtype(self, dtype: DType) -> Any:
        import numpy as np
        return np.dtype(dtype.name)

    def from_numpy(self, array: Any, index: int) -> Any:
        import numpy as np
        import pyopencl.array as cla
        return cla.to_device(self.queue(index), np.ascontiguousarray(array))

    def to_numpy(self, array: Any) -> Any:
        return array.get()

    def synchronize(self, index: int) -> None:
        self.queue(index).finish()

    def manual_seed(self, seed: int, index: int) -> None:
        self._rng_host.manual_seed(seed, index)

    def get_rng_state(self, index: int) -> bytes:
        return self._rng_host.get_rng_state(index)

    def set_rng_state(self, state: bytes, index: int) -> None:
        self._rng_host.set_rng_state(state, index)
