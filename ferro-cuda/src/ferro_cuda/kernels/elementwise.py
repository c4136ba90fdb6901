"""CUDA C elementwise kernels generated from the ops' records (``OpDef.expr``), as ferro-opencl's are.

An op whose record gives an expression (``ferro.backends.elementwise_ops``)
has, per compute dtype its expression covers, one source: core's helpers in
the CUDA dialect (``ferro/_core/c_helpers.py``, written once for OpenCL C and
CUDA C), then one entry point over contiguous arrays of ``n`` elements::

    ferro_ew_<op>_<dtype>(const S* x1[, const S* x2, const S* x3], O* out, long long n, int* err)

``err`` is a device int the expression sets to 2 on an integer division by
zero. float16 and bfloat16 are stored as their bits (``unsigned short``) and
computed in float, converted by a PTX ``cvt`` and by bit shifts, so no CUDA
header is needed under NVRTC. A bool result stores ``(expr) != 0``.
:func:`elementwise_source` gives the text, :func:`elementwise_sources` every
(op, dtype) pair CI compiles; :mod:`ferro_cuda._generated` launches them.
"""

from __future__ import annotations

import re

from ferro._core.dtypes import all_dtypes, bool_
from ferro.backends import ARITY, CUDA, OpDef, elementwise_ops, helper_source, substitute

__all__ = ["CTYPES", "elementwise_source", "elementwise_sources", "elementwise_entry", "result_is_bool"]

#: ferro dtype name -> (storage C type, compute C type, load, store); ``{}`` is the value converted.
CTYPES: dict[str, tuple[str, str, str, str]] = {
    "bool": ("bool", "unsigned char", "{}", "{}"),
    "uint8": ("unsigned char", "unsigned char", "{}", "{}"), "int8": ("signed char", "signed char", "{}", "{}"),
    "int16": ("short", "short", "{}", "{}"), "uint16": ("unsigned short", "unsigned short", "{}", "{}"),
    "int32": ("int", "int", "{}", "{}"), "uint32": ("unsigned int", "unsigned int", "{}", "{}"),
    "int64": ("long long", "long long", "{}", "{}"),
    "uint64": ("unsigned long long", "unsigned long long", "{}", "{}"),
    "float16": ("unsigned short", "float", "ferro_h2f({})", "ferro_f2h({})"),
    "bfloat16": ("unsigned short", "float", "ferro_bf2f({})", "ferro_f2bf({})"),
    "float32": ("float", "float", "{}", "{}"), "float64": ("double", "double", "{}", "{}"),
}

#: float16 by the PTX conversions (round to nearest even); bfloat16 is the high half of a float, rounded to
#: nearest even, NaN kept quiet.
_CONVERSIONS = """\
__device__ inline float ferro_h2f(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ inline unsigned short ferro_f2h(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ inline float ferro_bf2f(unsigned short b) { return __uint_as_float(((unsigned int)b) << 16); }
__device__ inline unsigned short ferro_f2bf(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); return (unsigned short)(u >> 16); }
"""


_IDENT = re.compile(r"\W")
#: ferro dtype name -> NumPy kind ("b", "i", "u", "f"): which of an expression's texts applies.
_KIND = {d.name: d.kind for d in all_dtypes}


def result_is_bool(op: OpDef) -> bool:
    """Whether ``op`` gives bool at every dtype (comparisons, ``isnan``...): its kernels store bool."""
    return all(r is bool_ for _, r in op.table.values())


def elementwise_entry(op_name: str, dtype: str) -> str:
    """The entry point of ``op_name`` at compute dtype ``dtype``: ``ferro_ew_<op>_<dtype>``."""
    return f"ferro_ew_{_IDENT.sub('_', op_name)}_{dtype}"


def generation_refusal(op: OpDef, dtype: str) -> str | None:
    """Why no kernel can be generated for ``op`` at compute dtype ``dtype`` (None: one can): the backend refuses
    those dtypes up front (``CudaBackend.unsupported``) rather than at the launch."""
    if op.expr is None or op.kind not in ARITY:
        return f"op '{op.name}' has no elementwise expression to generate a CUDA kernel from"
    if dtype not in CTYPES:
        return f"no CUDA elementwise kernels for dtype {dtype}; there are {', '.join(CTYPES)}"
    if op.expr.text(_KIND[dtype]) is None:
        return f"op '{op.name}' has no expression for {dtype}"
    return None


def elementwise_source(op: OpDef, dtype: str) -> str:
    """The CUDA C of ``op``'s kernel at compute dtype ``dtype`` (a ferro dtype name)."""
    why = generation_refusal(op, dtype)
    if why is not None:
        raise TypeError(why)
    storage, compute, load, store = CTYPES[dtype]
    text = op.expr.text(_KIND[dtype])
    names = "abc"[:ARITY[op.kind]]
    body = substitute(text, compute, CUDA)
    if result_is_bool(op) or dtype == "bool":
        out_t, result = "bool", f"(({body}) != 0)"
    else:
        out_t, result = storage, store.format(f"({compute})({body})")
    params = "".join(f"const {storage}* __restrict__ x{j}, " for j in range(1, len(names) + 1))
    loads = "".join(f"        const {compute} {v} = {load.format(f'x{j}[i]')}; (void){v};\n"
                    for j, v in enumerate(names, start=1))  # (void): isnan of an integer reads nothing
    return (f"// Generated by ferro_cuda.kernels.elementwise from op '{op.name}''s record; do not edit.\n"
            + (_CONVERSIONS if load != "{}" else "") + helper_source(text, op.expr.helpers, compute, CUDA)
            + f'extern "C" __global__ void {elementwise_entry(op.name, dtype)}({params}{out_t}* __restrict__ out, '
            "long long n, int* err) {\n"
            "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
            "         i += (long long)blockDim.x * gridDim.x) {\n"
            f"{loads}        out[i] = {result};\n    }}\n}}\n")


def elementwise_sources(ops: dict[str, OpDef] | None = None) -> list[tuple[str, str]]:
    """Every (op name, compute dtype) with a generated kernel: what CI compiles (default: every op with an
    expression)."""
    ops = elementwise_ops() if ops is None else ops
    out = []
    for name, op in ops.items():
        for dtype in sorted({c.name for c, _ in op.table.values()}):
            if dtype in CTYPES and op.expr.text(_KIND[dtype]) is not None:
                out.append((name, dtype))
    return out
