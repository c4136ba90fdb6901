"""The CUDA backend: core's generic Array API backend over CuPy.

Every primitive kernel comes from :class:`ferro.backends.ArrayAPIBackend`;
this module adds what is CUDA's own: availability with the exact reason,
devices, transfers, synchronization and memory statistics.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ferro.backends import ArrayAPIBackend, Availability

__all__ = ["CudaBackend", "explain_cuda_error"]

#: CUDA runtime error names -> what a user should read.
_REASONS = {
    "cudaErrorInsufficientDriver": "no CUDA driver found, or it is older than the CUDA runtime CuPy was built for",
    "cudaErrorNoDevice": "the CUDA driver is loaded but no GPU is present",
    "cudaErrorDevicesUnavailable": "every GPU is busy or in exclusive mode",
    "cudaErrorInitializationError": "the CUDA driver failed to initialize",
}

# Kernels that allocate: they run inside ``cupy.cuda.Device(index)`` for devices other than 0.
_ALLOCATING = ("empty", "full", "arange", "linspace", "eye", "rand", "randn", "randint")


def explain_cuda_error(err: BaseException) -> str:
    """A readable reason from a CuPy / CUDA runtime exception."""
    text = str(err)
    for code, reason in _REASONS.items():
        if code in text:
            return f"{reason} ({text})"
    return f"{type(err).__name__}: {text}"


class CudaBackend(ArrayAPIBackend):
    """Kernels on CuPy arrays; devices ``cuda:0``, ``cuda:1``, ..."""

    name = "cuda"
    description = "CuPy on NVIDIA GPUs"
    module_name = "cupy"

    def check_runtime(self) -> Availability:
        try:
            n = self.xp.cuda.runtime.getDeviceCount()
        except Exception as e:  # CUDARuntimeError, missing libraries: never crash
            return Availability(False, explain_cuda_error(e))
        if n == 0:
            return Availability(False, _REASONS["cudaErrorNoDevice"])
        return Availability(True)

    def device_count(self) -> int:
        if not self.availability():
            return 0
        return int(self.xp.cuda.runtime.getDeviceCount())

    def _props(self, index: int) -> dict[str, Any]:
        return self.xp.cuda.runtime.getDeviceProperties(index)

    def device_name(self, index: int) -> str:
        name = self._props(index)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def device_info(self, index: int) -> dict[str, str]:
        p = self._props(index)
        return {"memory": f"{p['totalGlobalMem'] / 2**30:.1f} GiB",
                "compute capability": f"{p['major']}.{p['minor']}", "cupy": self.xp.__version__}

    def _on(self, index: int) -> Any:
        return self.xp.cuda.Device(index)

    def from_numpy(self, array: Any, index: int) -> Any:
        with self._on(index):
            return self.xp.asarray(array)

    def to_numpy(self, array: Any) -> Any:
        return array.get()

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        table = super().kernels(index)
        if index:
            for name in _ALLOCATING:
                if name in table:
                    table[name] = _on_device(table[name], self._on, index)
        return table

    def synchronize(self, index: int) -> None:
        with self._on(index):
            self.xp.cuda.Device().synchronize()

    def memory_stats(self, index: int) -> dict[str, int]:
        pool = self.xp.get_default_memory_pool()
        return {"allocated": int(pool.used_bytes()), "reserved": int(pool.total_bytes())}


def _on_device(kernel: Callable[..., Any], on: Callable[[int], Any], index: int) -> Callable[..., Any]:
    @functools.wraps(kernel)
    def run(*args: Any) -> Any:
        with on(index):
            return kernel(*args)
    return run
