"""Finding OpenCL devices and the default one, with a reason when there are none.

Every platform's devices that can build a program, in pyopencl's order, are
numbered ``opencl:0``, ``opencl:1``, ... A device whose compiler fails on a
one-line kernel (PoCL 3.0 from PyPI, whose LLVM 14 does not know CPUs newer
than it, e.g. AMD's family 26) is left out, and the reason is reported when it
leaves no device at all. The default device is ``FERRO_OPENCL_DEVICE=N`` when set,
else the one ``PYOPENCL_CTX`` names (pyopencl's own ``"platform:device"``
spelling, each part an index or a piece of the name), else ``opencl:0``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

from ferro.backends import Availability

__all__ = ["INSTALL_HINT", "import_pyopencl", "find_devices", "default_index"]

INSTALL_HINT = "pip install 'ferro-opencl[pocl]'"
#: What to do when PyPI's PoCL cannot compile for this CPU (its LLVM predates the CPU).
NEWER_POCL_HINT = ("install a newer PoCL, whose LLVM knows this CPU: on Debian or Ubuntu "
                   "`apt-get install pocl-opencl-icd` (ferro finds it beside PyPI's)")
_PROBE = "__kernel void ferro_probe(__global float *a) { a[get_global_id(0)] += 1.0f; }"


def import_pyopencl() -> Any:
    """Import pyopencl; ImportError only when it is not installed at all."""
    try:
        import pyopencl
    except ModuleNotFoundError as e:
        if e.name != "pyopencl":
            raise RuntimeError(f"pyopencl is installed but failed to import: {e}") from e
        raise
    except ImportError as e:  # its compiled part or libOpenCL could not be loaded
        raise RuntimeError(f"pyopencl is installed but failed to import: {e}") from e
    return pyopencl


def find_devices() -> tuple[list[Any], Availability]:
    """Every device of every platform, and whether that makes the backend available."""
    try:
        cl = import_pyopencl()
    except ImportError:
        return [], Availability(False, f"pyopencl is not installed ({INSTALL_HINT})")
    try:
        platforms = cl.get_platforms()
    except Exception as e:  # no ICD loader, or it lists no platform: LogicError PLATFORM_NOT_FOUND_KHR
        return [], Availability(False, f"no OpenCL platform found: no OpenCL driver (ICD) is installed or "
                                       f"registered; {INSTALL_HINT} for PoCL's CPU driver "
                                       f"({type(e).__name__}: {e})")
    if not platforms:
        return [], Availability(False, f"no OpenCL platform found; {INSTALL_HINT} for PoCL's CPU driver")
    devices: list[Any] = []
    failures: list[str] = []
    cannot_build: list[str] = []
    for p in platforms:
        try:
            found = p.get_devices()
        except Exception as e:  # a platform without devices raises DEVICE_NOT_FOUND
            failures.append(f"{p.name.strip()}: {type(e).__name__}: {e}")
            continue
        for d in found:
            why = _cannot_build(cl, d)
            if why is None:
                devices.append(d)
            else:
                cannot_build.append(f"{d.name.strip()} ({p.name.strip()} {p.version.strip()}): {why}")
    if not devices and cannot_build:
        return [], Availability(False, "no OpenCL device can compile a kernel here: " + "; ".join(cannot_build)
                                + f"; {NEWER_POCL_HINT}")
    if not devices:
        names = ", ".join(repr(p.name.strip()) for p in platforms)
        detail = f" ({'; '.join(failures)})" if failures else ""
        return [], Availability(False, f"the OpenCL platforms {names} have no device{detail}")
    return devices, Availability(True)


def _cannot_build(cl: Any, device: Any) -> str | None:
    """None when ``device`` builds a one-line kernel, else the compiler's complaint (its last useful line)."""
    try:
        ctx = cl.Context([device])
        with warnings.catch_warnings():  # pyopencl warns about any compiler output; the result is what counts
            warnings.simplefilter("ignore")
            cl.Program(ctx, _PROBE).build()
    except Exception as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip().startswith("error")]
        return lines[-1] if lines else f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return None


def default_index(devices: Callable[[], list[Any]]) -> int:
    """The flat index of the default device (see the module's docstring); ``devices`` is asked only for
    ``PYOPENCL_CTX``."""
    raw = os.environ.get("FERRO_OPENCL_DEVICE", "").strip()
    if raw:
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"FERRO_OPENCL_DEVICE={raw!r} is not a device index (0, 1, ...)") from None
    spec = os.environ.get("PYOPENCL_CTX", "").strip()
    found = devices() if spec else []
    return _from_pyopencl_ctx(spec, found) if found else 0


def _from_pyopencl_ctx(spec: str, devices: list[Any]) -> int:
    """Best effort at pyopencl's ``PYOPENCL_CTX``; 0 when it names nothing here."""
    platform_part, _, device_part = spec.partition(":")
    platforms: list[Any] = []
    for d in devices:
        if all(p != d.platform for p in platforms):
            platforms.append(d.platform)
    platform = _pick(platform_part, platforms, lambda p: p.name, last=True)
    if platform is None:
        return 0
    on_platform = [d for d in devices if d.platform == platform]
    device = _pick(device_part.split(",")[0], on_platform, lambda d: d.name, last=False) or on_platform[0]
    return next(i for i, d in enumerate(devices) if d == device)


def _pick(answer: str, items: list[Any], name: Callable[[Any], str], *, last: bool) -> Any:
    answer = answer.strip()
    if not answer:
        return items[0] if items else None
    if answer.isdigit():
        return items[int(answer)] if int(answer) < len(items) else None
    # pyopencl's rule: a name containing the answer, case-insensitively (the last platform, the first device).
    matches = [it for it in items if answer.lower() in name(it).lower()]
    return (matches[-1] if last else matches[0]) if matches else None
