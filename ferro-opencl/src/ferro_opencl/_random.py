"""Random numbers generated on the device: Philox4x32-10 (``kernels/philox.cl``), opt-in.

``FERRO_OPENCL_RNG=device`` makes ``rand`` / ``randn`` / ``randint`` run on
the device: nothing is drawn on the host or uploaded, and the generator's
state per device is ``(seed, offset)``, saved and restored as bytes. The
default (``host``) draws with the host Philox generator of core's generic
backend and uploads, so that ``ferro.manual_seed`` gives the same numbers
on every backend.

Uniform floats take the top 24 (float32) or 53 (float64) bits; normals come
from Box-Muller on pairs of uniforms; integers are ``lo + u64 % span``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from string import Template
from typing import Any

import numpy as np

from ._array import CLArray
from ._runtime import Runtime, ctype, read_source

__all__ = ["DeviceGenerator", "device_random_kernels"]

_F32_BITS = "(1.0f / 16777216.0f)"
_F64_BITS = "(1.0 / 9007199254740992.0)"
_TWO_PI_F = "6.283185307179586f"
_TWO_PI = "6.283185307179586"


def _u53(a: str, b: str) -> str:
    return f"(double)(((ulong)({a} >> 5) << 26) | ({b} >> 6))"


#: (kind, float64?) -> (outputs per Philox block, C statements filling v[0 .. PER-1] from the words w).
_BODIES: dict[tuple[str, bool], tuple[int, str]] = {
    ("uniform", False): (4, "\n".join(f"    v[{i}] = (float)(w.{c} >> 8) * {_F32_BITS};"
                                       for i, c in enumerate("xyzw"))),
    ("uniform", True): (2, f"    v[0] = {_u53('w.x', 'w.y')} * {_F64_BITS};\n"
                           f"    v[1] = {_u53('w.z', 'w.w')} * {_F64_BITS};"),
    ("normal", False): (4, "\n".join(
        f"    {{ const float u1 = (float)((w.{a} >> 8) + 1) * {_F32_BITS}, u2 = (float)(w.{b} >> 8) * {_F32_BITS};\n"
        f"      const float r = sqrt(-2.0f * log(u1));\n"
        f"      v[{i}] = r * cos({_TWO_PI_F} * u2); v[{i + 1}] = r * sin({_TWO_PI_F} * u2); }}"
        for i, (a, b) in ((0, "xy"), (2, "zw")))),
    ("normal", True): (2, f"    {{ const double u1 = ({_u53('w.x', 'w.y')} + 1.0) * {_F64_BITS};\n"
                          f"      const double u2 = {_u53('w.z', 'w.w')} * {_F64_BITS};\n"
                          f"      const double r = sqrt(-2.0 * log(u1));\n"
                          f"      v[0] = r * cos({_TWO_PI} * u2); v[1] = r * sin({_TWO_PI} * u2); }}"),
    ("int", False): (2, "    v[0] = lo + (long)((((ulong)w.x << 32) | w.y) % span);\n"
                        "    v[1] = lo + (long)((((ulong)w.z << 32) | w.w) % span);"),
}


class DeviceGenerator:
    """The Philox state of one device: the seed (key) and how many blocks have been used (counter)."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed & (2**64 - 1)
        self.offset = 0

    def state(self) -> bytes:
        """The state as bytes, for ``get_rng_state``."""
        return json.dumps({"generator": "philox4x32-10", "seed": self.seed, "offset": self.offset}).encode()

    @classmethod
    def from_state(cls, state: bytes) -> DeviceGenerator:
        """A generator restored from :meth:`state`'s bytes."""
        try:
            d = json.loads(bytes(state).decode())
            if d.get("generator") != "philox4x32-10":
                raise ValueError(d.get("generator"))
            g = cls(int(d["seed"]))
            g.offset = int(d["offset"])
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            raise ValueError(f"not an OpenCL device RNG state (FERRO_OPENCL_RNG=device): {e}") from None
        return g


def device_random_kernels(rt: Runtime, generator: Callable[[], DeviceGenerator]) -> dict[str, Callable[..., Any]]:
    """rand, randn, randint drawn on ``rt``'s device from ``generator()``."""
    i64 = np.int64
    u64 = np.uint64

    def draw(kind: str, shape: tuple[int, ...], dtype: Any, lo: int = 0, span: int = 1) -> CLArray:
        wide = dtype.itemsize == 8 and dtype.kind == "f"
        per, body = _BODIES[(kind, wide)]
        out_dt = np.dtype(np.int64) if kind == "int" else dtype
        out = rt.empty(tuple(shape), out_dt)
        n = out.size
        if n:
            st = ctype(out_dt)[0]

            def source() -> str:
                return Template(read_source("philox.cl")).substitute(T=st, PER=per, body=body)
            k = rt.kernel(("philox", kind, out_dt), "draw", source, [None, i64, u64, u64, i64, u64])
            gen = generator()
            blocks = -(-n // per)
            with rt.launch_lock:  # threads drawing at once each reserve their own counters
                start = gen.offset
                gen.offset += blocks
            k(rt.queue, rt.grid(blocks), None, out.buffer, n, gen.seed, start, lo, span)
        return out

    def floating(kind: str) -> Callable[..., CLArray]:
        def kernel(shape: tuple[int, ...], dtype: Any) -> CLArray:
            dt = rt.np_dtype(dtype)
            if dt.kind != "f" or dt.itemsize == 2:  # other dtypes: drawn in float32, then converted
                from ._elementwise import cast_array
                return cast_array(draw(kind, shape, np.dtype(np.float32)), dt)
            return draw(kind, shape, dt)
        return kernel

    def randint(shape: tuple[int, ...], dtype: Any, low: int, high: int) -> CLArray:
        if high <= low:
            raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
        got = draw("int", shape, np.dtype(np.int64), int(low), int(high) - int(low))
        dt = rt.np_dtype(dtype)
        if dt == got.dtype:
            return got
        from ._elementwise import cast_array
        return cast_array(got, dt)

    return {"rand": floating("uniform"), "randn": floating("normal"), "randint": randint}
