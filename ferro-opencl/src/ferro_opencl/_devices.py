"""Finding OpenCL devices and the default one, with a reason when there are none.

Every platform's devices, in pyopencl's order, are numbered ``opencl:0``,
``opencl:1``, ... The default device is ``FERRO_OPENCL_DEVICE=N`` when set,
else the one ``PYOPENCL_CTX`` names (pyopencl's own ``"platform:device"``
spelling, each part an index or a piece of the name), else ``opencl:0``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ferro.backends import Availability

__all__ = ["INSTALL_HINT", "import_pyopencl", "find_devices", "default_index"]

INSTALL_HINT = "pip install 'ferro-opencl[pocl]'"


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
    for p in platforms:
        try:
            devices.extend(p.get_devices())
        except Exception as e:  # a platform without devices raises DEVICE_NOT_FOUND
            failures.append(f"{p.name.strip()}: {type(e).__name__}: {e}")
    if not devices:
        names = ", ".join(repr(p.name.strip()) for p in platforms)
        detail = f" ({'; '.join(failures)})" if failures else ""
        return [], Availability(False, f"the OpenCL platforms {names} have no device{detail}")
    return devices, Availability(True)


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
