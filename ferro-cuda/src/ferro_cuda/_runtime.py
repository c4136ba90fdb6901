"""Why CUDA cannot run here, in words: the driver, the GPUs, the runtime compiler.

:func:`cuda_availability` asks CuPy's runtime bindings in the order that
separates the causes (driver installed? recent enough? any GPU? NVRTC
loadable?) and turns each CUDA error code into a sentence that says what to
do, keeping CuPy's own message in parentheses.
"""

from __future__ import annotations

import os
from typing import Any

from ferro.backends import Availability

__all__ = ["cuda_availability", "explain_cuda_error", "cuda_version"]

#: CUDA runtime error codes (``cudaError_t``) -> what a user should read.
_REASONS: dict[int, str] = {
    3: "the CUDA driver failed to initialize",
    34: "the CUDA driver library that was found is a stub (the CUDA toolkit's stubs/libcuda.so), "
        "not a real NVIDIA driver",
    46: "every CUDA GPU is busy or in exclusive-process mode",
    100: "the NVIDIA driver is installed but no CUDA GPU is visible",
    803: "the NVIDIA kernel module and the driver library have different versions "
         "(reboot, or reinstall the driver)",
    804: "this GPU does not support CUDA forward compatibility (the cuda-compat driver package)",
    999: "the CUDA driver reported an unknown error (in a container this usually means the GPU "
         "device files /dev/nvidia* are not visible)",
}
#: The same codes by name, for errors that carry no ``status``.
_NAMES = {"cudaErrorInitializationError": 3, "cudaErrorStubLibrary": 34, "cudaErrorDevicesUnavailable": 46,
          "cudaErrorNoDevice": 100, "cudaErrorSystemDriverMismatch": 803,
          "cudaErrorCompatNotSupportedOnDevice": 804, "cudaErrorUnknown": 999,
          "cudaErrorInsufficientDriver": 35}


def cuda_version(code: int) -> str:
    """``12090`` -> ``"12.9"`` (CUDA's encoding: 1000 * major + 10 * minor)."""
    return f"{code // 1000}.{code % 1000 // 10}"


def _status(err: BaseException) -> int | None:
    status = getattr(err, "status", None)
    if isinstance(status, int):
        return status
    text = str(err)
    return next((code for name, code in _NAMES.items() if name in text), None)


def explain_cuda_error(err: BaseException, cupy: Any) -> str:
    """A readable reason, ending in CuPy's own message, for a CUDA runtime error."""
    rt = cupy.cuda.runtime
    status = _status(err)
    raw = f"({type(err).__name__}: {err})"
    if status == 35:  # cudaErrorInsufficientDriver with a driver present: too old
        built = cuda_version(rt.runtimeGetVersion())
        try:
            have = f"supports CUDA {cuda_version(rt.driverGetVersion())}"
        except Exception:
            have = "is older than needed"
        return (f"the NVIDIA driver is too old: it {have}, but CuPy {cupy.__version__} was built for CUDA "
                f"{built}; update the driver, or install the CuPy build for your CUDA version {raw}")
    reason = _REASONS.get(status) if status is not None else None
    if reason is None:
        return f"CUDA failed to start {raw}"
    if status == 100 and "CUDA_VISIBLE_DEVICES" in os.environ:
        reason += f" (CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r})"
    return f"{reason} {raw}"


def cuda_availability(cupy: Any) -> Availability:
    """Whether CuPy can run kernels here; the reason names the first thing missing."""
    rt = cupy.cuda.runtime
    try:
        driver = rt.driverGetVersion()
    except Exception as e:
        return Availability(False, f"the NVIDIA driver could not be queried ({type(e).__name__}: {e})")
    if driver == 0:  # cudaDriverGetVersion's answer when libcuda cannot be loaded
        return Availability(False, f"no NVIDIA CUDA driver is installed (libcuda.so.1 / nvcuda.dll could not be "
                                   f"loaded); CuPy {cupy.__version__}, built for CUDA "
                                   f"{cuda_version(rt.runtimeGetVersion())}, needs one")
    try:
        count = rt.getDeviceCount()
    except Exception as e:  # CUDARuntimeError, and anything else: never crash
        return Availability(False, explain_cuda_error(e, cupy))
    if count == 0:
        return Availability(False, _REASONS[100])
    try:
        cupy.cuda.nvrtc.getVersion()  # CuPy compiles its elementwise kernels with NVRTC
    except Exception as e:
        return Availability(False, f"CUDA's runtime compiler NVRTC, which CuPy compiles its kernels with, could "
                                   f"not be loaded; pip install 'cupy-cuda12x[ctk]' or install the CUDA toolkit "
                                   f"({type(e).__name__}: {e})")
    return Availability(True)
