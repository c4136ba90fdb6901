"""The ``compile_fused`` hook of the OpenCL backend: a fused group of elementwise ops as one OpenCL C kernel.

The steps' C comes from the ops' expressions through core's generator
(``ferro.backends._fused_source``, the same expressions ``_elementwise``
builds single-op kernels from), in this backend's types, loads and stores
(``_runtime.ctypes``), wrapped by ``kernels/fusion.cl``: one pass over memory
whatever the number of steps. The program is built once per group signature
(ops, dtypes, shapes; Python scalars are kernel arguments) on first call; a
strided or broadcast input takes the layout ``_elementwise.device_layout``
caches. Nothing here waits for the device.
"""

from __future__ import annotations

from string import Template
from typing import Any

import numpy as np

from ferro._core.host import numpy_dtype
from ferro.backends import OPENCL
from ferro.backends._fused_source import FusedSource, Unfusable, fused_source
from ferro.backends.fusion import CompiledGroup, FusedGroup, check_inputs, plan, signature

from ._array import CLArray
from ._elementwise import CHUNK, device_layout
from ._runtime import MAX_DIMS, Runtime, compute_dtype, ctypes, read_source

__all__ = ["compile_group"]

_I64 = np.int64
_TEMPLATE: list[Template] = []


def _template() -> Template:
    if not _TEMPLATE:
        _TEMPLATE.append(Template(read_source("fusion.cl")))
    return _TEMPLATE[0]


def _compute_ctype(dtype: Any) -> str:
    return ctypes(numpy_dtype(dtype)).compute


#: Rounding a float to a 16-bit float and back, as a store and a load do (ferro_round_B's name holds "_B(", so
#: the runtime adds bfloat16.cl to the program). A half is written to a ushort: no cl_khr_fp16 needed.
_ROUND = {"float16": "ferro_round_H({})", "bfloat16": "ferro_round_B({})"}
_ROUNDERS = ("inline float ferro_round_H(const float v) { ushort h; vstore_half_rte(v, 0, (__private half *)&h); "
             "return vload_half(0, (__private const half *)&h); }\n"
             "#define ferro_round_B(v) bf16_load(bf16_round(v))\n")


def _rounding(dtype: Any) -> str | None:
    return _ROUND.get(dtype.name)


def steps_source(group: FusedGroup) -> FusedSource:
    """The C of the group's steps in OpenCL C (core's generator, this backend's types and roundings)."""
    return fused_source(group, plan(group), OPENCL, _compute_ctype, rounding=_rounding)


def inputs_source(group: FusedGroup, indent: str = "    ", chunked: bool = False) -> dict[str, str]:
    """The template pieces of the group's inputs: ``params`` (a buffer and an element offset each), ``loads_c``
    / ``loads_s`` (v0.. from element i, or from the positions p0..), ``pos_init`` / ``pos_step`` /
    ``pos_next`` (the positions from the strides in ``m``, array 0 being the outputs; ``chunked``: starting at
    element ``lo`` of the innermost dimension, ``pos_next`` stepping along it)."""
    parts: dict[str, list[str]] = {"params": [], "loads_c": [], "loads_s": [], "pos_init": [], "pos_step": [],
                                   "pos_next": []}
    for j, inp in enumerate(group.inputs):
        st, ct, ld = ctypes(numpy_dtype(inp.dtype))[:3]
        parts["params"].append(f", __global const {st} *x{j}, const long off{j}")
        parts["loads_c"].append(f"{indent}const {ct} v{j} = {ld}(x{j}, off{j} + i); (void)v{j};")
        parts["loads_s"].append(f"{indent}const {ct} v{j} = {ld}(x{j}, p{j}); (void)v{j};")
        base = 1 + MAX_DIMS * (j + 2)
        parts["pos_init"].append(f"{indent}long p{j} = off{j}{f' + lo * m[{base} + last]' if chunked else ''};")
        parts["pos_step"].append(f"{indent}    p{j} += k * m[{base} + d];")
        parts["pos_next"].append(f"{indent}    p{j} += m[{base} + last];")
    return {k: ("" if k == "params" else "\n").join(v) for k, v in parts.items()}


def prelude(group: FusedGroup, src: FusedSource) -> str:
    """What goes before a group's kernels: the 16-bit roundings where the group has 16-bit floats, the helpers."""
    names = {i.dtype.name for i in group.inputs} | {st.dtype.name for st in group.steps}
    return (_ROUNDERS if names & set(_ROUND) else "") + src.helpers


def scalars_source(src: FusedSource) -> str:
    """The kernel parameters of the group's Python scalars."""
    return "".join(f", const {_compute_ctype(d)} {s}" for s, d, _ in src.scalars)


def _source(group: FusedGroup, src: FusedSource, name: str) -> str:
    """The program's source: ``src`` (the steps' C) in the template."""
    outs, stores = [], []
    for k, o in enumerate(group.outputs):
        st, _, _, store = ctypes(numpy_dtype(group.value_dtype(o)))[:4]
        outs.append(f"__global {st} *out{k}")
        stores.append(f"    {store}(out{k}, i, v{o});")
    err = ", volatile __global int *err" if src.flag else ""
    flat, chunked = inputs_source(group), inputs_source(group, "        ", chunked=True)
    c = _template().substitute(
        name=name, outs=", ".join(outs), scalars=scalars_source(src), body=src.body, stores="\n".join(stores),
        err=err, chunk=CHUNK, out_st=1 + MAX_DIMS, params=flat["params"], loads_c=flat["loads_c"],
        loads_s=chunked["loads_s"], pos_init=chunked["pos_init"],
        pos_step=chunked["pos_step"], pos_next=chunked["pos_next"])
    return prelude(group, src) + c


def arg_dtype(dtype: Any) -> Any:
    """The NumPy type of a by-value scalar the kernel computes ``dtype`` in (uchar for bool)."""
    nd = numpy_dtype(dtype)
    return np.dtype(np.uint8) if nd.kind == "b" else compute_dtype(nd)


def compile_group(rt: Runtime, group: FusedGroup) -> CompiledGroup | None:
    """``group`` as one kernel on ``rt``'s device (built on its first call); None for a group the generator
    cannot write (a dtype without kernels, a helper needed at two compute types): it is replayed."""
    try:
        src = steps_source(group)
    except (Unfusable, TypeError):
        return None
    key = ("fused", signature(group))
    got = rt.kernels.get(key)
    if got is None:
        flag = src.flag
        base = [None] * len(group.outputs) + [None, _I64] * len(group.inputs) + \
            [arg_dtype(d) for _, d, _ in src.scalars] + [_I64]

        def text() -> str:
            return _source(group, src, "ferro_fused")
        got = rt.kernels[key] = (rt.kernel(key, "ferro_fused_c", text, base + ([None] if flag else [])),
                                 rt.kernel(key, "ferro_fused_s", text, base + [None] + ([None] if flag else [])))
    return _launcher(rt, group, *got, [v for _, _, v in src.scalars], src.flag)


def _launcher(rt: Runtime, group: FusedGroup, kc: Any, ks: Any, scalars: list[Any], flag: bool) -> CompiledGroup:
    shape = group.shape
    out_dtypes = [numpy_dtype(group.value_dtype(o)) for o in group.outputs]
    in_dtypes = [numpy_dtype(i.dtype) for i in group.inputs]
    extra = (rt.error_flag,) if flag else ()

    def run(*arrays: Any) -> list[CLArray]:
        check_inputs(group, arrays, in_dtypes)
        outs = [rt.empty(shape, dt) for dt in out_dtypes]
        n = outs[0].size
        if not n:
            return outs
        fast = True
        args: list[Any] = [o.buffer for o in outs]
        for a in arrays:
            if a.rt is not rt:
                raise ValueError("a fused group runs on one OpenCL device: an input is on another")
            args += (a.buffer, a.offset)
            if fast and not (a.contiguous and a.shape == shape):
                fast = False
        args += scalars
        if fast:
            args.append(n)
            kc(rt.queue, rt.grid(n), None, *args, *extra)
        else:
            meta, inner = device_layout(rt, shape, [outs[0], *arrays])
            work = n // inner * -(-inner // CHUNK)  # CHUNK elements of a row per work-item
            args.append(work)
            ks(rt.queue, rt.grid(work), None, *args, meta, *extra)
        return outs
    return run
