"""ferro's own CUDA kernels: the sources, their instantiation per dtype, and the lazy loader.

Each kernel source is CUDA C kept as a ``.cu`` file here (or generated from a
table: :mod:`.activations`); ``common.cuh`` is prepended to it and one
``FERRO_INSTANTIATE(T, SUFFIX)`` line per dtype appended, which defines plain
``extern "C"`` entry points named ``ferro_<kernel>_<suffix>`` (``f32``,
``f64``, ``i32``, ``i64``, ``i8``). :func:`source` gives that text; :func:`kernel`
compiles it with CuPy (NVRTC) on first use and caches the result per
(source, dtype, entry point); :func:`compile_ptx` compiles it to PTX with
NVRTC alone, which needs no GPU and no driver, so CI checks every source.
"""

from __future__ import annotations

import functools
from typing import Any

from .activations import ACTIVATIONS, activation_source

__all__ = ["SOURCES", "DTYPES", "source", "sources", "kernel", "entry_name", "compile_ptx", "KernelCompileError",
           "ACTIVATIONS", "launch_config"]

#: ferro dtype name -> (C type, entry-point suffix).
DTYPES: dict[str, tuple[str, str]] = {
    "float32": ("float", "f32"), "float64": ("double", "f64"), "int32": ("int", "i32"), "int64": ("long long", "i64"),
    "int8": ("signed char", "i8"),
}
_FLOATS = ("float32", "float64")

#: source name -> (file name, or None for the generated activations; dtypes it is instantiated for).
SOURCES: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "activations": (None, _FLOATS),
    "softmax": ("softmax.cu", _FLOATS),
    "layer_norm": ("layer_norm.cu", _FLOATS),
    "cross_entropy": ("cross_entropy.cu", _FLOATS),
    "optim": ("optim.cu", _FLOATS),
    "amp": ("amp.cu", _FLOATS),
    "scatter_add": ("scatter_add.cu", (*_FLOATS, "int32", "int64")),
    "scan": ("scan.cu", (*_FLOATS, "int32", "int64")),
    "int8_matmul": ("int8_matmul.cu", ("int8",)),
}

#: Options for NVRTC, both at run time (CuPy adds the GPU's architecture) and in the CI check.
OPTIONS: tuple[str, ...] = ("-std=c++17",)
#: Threads per block of every launch (the block reductions need a multiple of 32).
THREADS = 256
#: The architecture the CI check compiles for (the oldest NVRTC 12.9 does not call deprecated; a GPU
#: compiles for its own). Nothing here needs more than 6.0 (atomicAdd on double).
CI_ARCH = "75"


class KernelCompileError(RuntimeError):
    """A kernel source did not compile; the message holds NVRTC's log."""


def _read(file: str) -> str:
    # Deferred: importlib.resources brings pathlib, tempfile, shutil and urllib, and this package is imported
    # when ferro discovers its backends (the first op of every program, CUDA or not).
    from importlib import resources
    return resources.files(__package__).joinpath(file).read_text(encoding="utf-8")


@functools.cache
def _body(name: str) -> str:
    try:
        file, _ = SOURCES[name]
    except KeyError:
        raise KeyError(f"no CUDA kernel source named '{name}'; there are {', '.join(SOURCES)}") from None
    return activation_source() if file is None else _read(file)


def source(name: str, dtype: str) -> str:
    """The complete CUDA C of source ``name`` instantiated for ``dtype`` (a ferro dtype name)."""
    dtypes = SOURCES[name][1] if name in SOURCES else ()
    body = _body(name)
    if dtype not in dtypes:
        raise TypeError(f"CUDA kernel source '{name}' is not instantiated for {dtype}; it has {', '.join(dtypes)}")
    ctype, suffix = DTYPES[dtype]
    return f"{_read('common.cuh')}\n// ---- {name} ----\n{body}\nFERRO_INSTANTIATE({ctype}, {suffix})\n"


def sources() -> list[tuple[str, str]]:
    """Every (source name, dtype) pair ferro instantiates: what CI compiles."""
    return [(name, dtype) for name, (_, dtypes) in SOURCES.items() for dtype in dtypes]


def entry_name(kernel_name: str, dtype: str) -> str:
    """``("softmax_forward", "float32")`` -> ``"ferro_softmax_forward_f32"``."""
    return f"ferro_{kernel_name}_{DTYPES[dtype][1]}"


@functools.cache
def kernel(source_name: str, kernel_name: str, dtype: str) -> Any:
    """The ``cupy.RawKernel`` for entry point ``kernel_name`` of ``source_name`` at ``dtype``.

    Built on first use; CuPy compiles the source once (its compile cache is
    keyed by the source text) and loads it per device on the first launch there.
    """
    import cupy
    return cupy.RawKernel(source(source_name, dtype), entry_name(kernel_name, dtype), options=OPTIONS)


def launch_config(n: int) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) for a grid-stride loop over ``n`` elements."""
    return (max(1, min((n + THREADS - 1) // THREADS, 65535)),), (THREADS,)


def compile_ptx(code: str, arch: str = CI_ARCH, name: str = "ferro_kernel.cu") -> str:
    """Compile ``code`` to PTX for ``compute_<arch>`` with NVRTC; no GPU or driver is needed.

    Raises :class:`KernelCompileError` with NVRTC's log when the source does
    not compile or compiles with warnings, and ``RuntimeError`` saying how to get NVRTC when it cannot
    be loaded.
    """
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
    except Exception as e:
        raise RuntimeError(f"NVRTC could not be loaded ({type(e).__name__}: {e}); pip install "
                           f"'ferro-cuda[cupy]' (it brings nvidia-cuda-nvrtc-cu12)") from e
    prog = nvrtc.createProgram(code, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [*OPTIONS, f"--gpu-architecture=compute_{arch}"])
        except nvrtc.NVRTCError as e:
            raise KernelCompileError(f"{name} does not compile ({e}):\n{nvrtc.getProgramLog(prog)}") from None
        log = nvrtc.getProgramLog(prog)
        if "warning" in log:  # a warning in a kernel is a bug waiting (narrowing, unused results): refuse it too
            raise KernelCompileError(f"{name} compiles with warnings:\n{log}")
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else ptx
    finally:
        nvrtc.destroyProgram(prog)
