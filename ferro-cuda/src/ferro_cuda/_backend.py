"""The CUDA backend: core's generic Array API backend over CuPy.

Every primitive kernel comes from :class:`ferro.backends.ArrayAPIBackend`;
this module adds what is CUDA's own: availability with the exact reason,
devices, transfers, synchronization and memory statistics. CuPy is imported
on first use (:meth:`CudaBackend.availability`), never at module import.

CuPy's creation functions take no ``device=`` argument: an array is made on
the *current* device. So :meth:`CudaBackend.native_device` stays None and
every kernel of ``cuda:N`` with ``N > 0`` runs inside ``cupy.cuda.Device(N)``;
``cuda:0`` kernels run unwrapped, on the current device, which ferro never
changes outside those blocks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ferro.backends import ArrayAPIBackend, Availability

from ._runtime import cuda_availability, cuda_version

__all__ = ["CudaBackend"]

#: DLPack device types whose memory CuPy imports without a copy (kDLCUDA, kDLCUDAManaged).
_DLPACK_CUDA = (2, 13)
_DLPACK_CPU = 1


class CudaBackend(ArrayAPIBackend):
    """Kernels on CuPy arrays; devices ``cuda:0``, ``cuda:1``, ..."""

    name = "cuda"
    description = "CuPy on NVIDIA GPUs"
    module_name = "cupy"

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

    def check_runtime(self) -> Availability:
        return cuda_availability(self.xp)

    # -- devices ----------------------------------------------------------

    def device_count(self) -> int:
        return int(self.xp.cuda.runtime.getDeviceCount()) if self.availability() else 0

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
        with self._on(index):
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
        table = super().kernels(index)
        if index:
            table = {name: _on_device(kernel, self._on, index) for name, kernel in table.items()}
        return table

    # -- runtime ----------------------------------------------------------

    def synchronize(self, index: int) -> None:
        self._on(index).synchronize()

    def memory_stats(self, index: int) -> dict[str, int]:
        """CuPy's default memory pool on device ``index``: bytes in use, cached, reserved, and the limit."""
        if not self.availability():
            return {}
        pool = self.xp.get_default_memory_pool()
        with self._on(index):
            return {"allocated": int(pool.used_bytes()), "cached": int(pool.free_bytes()),
                    "reserved": int(pool.total_bytes()), "limit": int(pool.get_limit())}


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
