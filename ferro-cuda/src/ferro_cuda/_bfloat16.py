"""bfloat16 on the CUDA backend: claimed op by op, from CuPy's own type tables.

CuPy 14 takes ml_dtypes' ``bfloat16`` (``cupy.dtype(ml_dtypes.bfloat16)``, type
char ``'E'``), but not everywhere: most ufuncs and reductions have an ``'E'``
loop, 2-D matmul is cuBLAS ``GemmEx`` with ``CUDA_R_16BF``, while ``where``,
``round``, argmax, the scans, sorting, ``cupy.linalg`` (cuSOLVER) and
``cupy.fft`` have none. A loop that is missing does not always fail: CuPy
picks the next loop the input casts to safely, so ``round`` of bfloat16 runs
in float32 and returns float32, which ferro would mislabel. So nothing is
claimed from a guess:

- :data:`REQUIREMENTS` maps each kernel of the CUDA table to what it runs on
  CuPy: a routine with the input types it is called with (:class:`Loop`,
  checked with CuPy's own loop resolution on the routine's type table), a
  host-side check (:class:`Probe`), one of ferro's CUDA C sources
  (:class:`OwnKernel`: only if instantiated for bfloat16), a kernel generated
  from the op's expression (:class:`Generated`), a fact of CuPy's
  source that Python cannot reach (:class:`Cited`), or :class:`Refused`.
  A kernel not in the table is refused.
- :func:`refused_ops` asks core's resolver (``ferro.backends.explain``'s
  reasoning, over this table's kernel names with :func:`kernel_refusals` as
  the per-kernel check) how each op computing in bfloat16 would run: an op is
  refused when the resolver finds no way, and an op with fused kernels that
  refuse bfloat16 (or that core does not bind for bfloat16) runs its
  decomposition, judged by what that uses.

All of it reads type tables and needs no GPU, so CI checks the claims; the
values themselves are checked on a GPU (``tests/test_cuda_bfloat16.py``).
:func:`bfloat16_kernels` adds the kernels that make claims possible:
``where`` on bfloat16 selects through the arrays' int16 views (selection moves
bits only), batched (3-D and up) bfloat16 matmul, which CuPy sends to
its integer kernel accumulating in bfloat16, computes in float32 through
cuBLAS and rounds once, and the ops of :data:`GENERATED` (CuPy has no bfloat16
loop for them) run, on bfloat16, the kernel generated from their records'
expressions (``kernels/elementwise.py``: computed in float, rounded once).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ferro._core.dtypes import DType, bfloat16
from ferro.backends import BINARY_FUNCS, UNARY_FUNCS, elementwise_ops

from ._device_kernels import _SPECIAL
from .kernels import SOURCES

__all__ = ["cupy_bfloat16", "REQUIREMENTS", "Loop", "Probe", "OwnKernel", "Generated", "Cited", "Refused",
           "kernel_refusals", "refused_ops", "bfloat16_kernels", "GENERATED", "generated_bfloat16_kernels"]

#: The first CuPy with bfloat16 (through ml_dtypes).
MIN_CUPY = 14


def cupy_bfloat16(cp: Any) -> Any:
    """CuPy's bfloat16 dtype, or None where this CuPy has none (older than 14, or no ml_dtypes)."""
    try:
        if int(str(cp.__version__).split(".")[0]) < MIN_CUPY:
            return None
        import ml_dtypes
        return cp.dtype(ml_dtypes.bfloat16)
    except Exception:  # no ml_dtypes, or a CuPy that refuses the dtype: no bfloat16
        return None


def _lookup(path: str) -> Any:
    """The object at a dotted path (``"cupy._core._routines_math._sum_keep_dtype"``)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


# -- what a kernel needs from CuPy ------------------------------------------------------------------------


@dataclass(frozen=True)
class Loop:
    """CuPy routine ``path`` (a ufunc or reduction), called with ``inputs`` (NumPy type chars, ``'E'`` for
    bfloat16), must resolve to a loop that takes bfloat16 as bfloat16. An exact widening to float32/float64
    also does when the loop's results are bool or integer (nothing to round), or when the kernel rounds its
    result back to bfloat16 itself (``rounded``)."""

    path: str
    inputs: str
    rounded: bool = False

    def check(self, cp: Any, bf16: Any) -> str | None:
        """None when the routine runs bfloat16 as said; otherwise why not."""
        import numpy as np
        try:
            ops = _lookup(self.path)._ops
            types = tuple(bf16 if c == "E" else np.dtype(c) for c in self.inputs)
            op = ops._guess_routine_from_in_types(types)
        except Exception as e:  # no such routine, no type table, or CuPy's resolver moved: refuse
            return f"{self.path}: no type table to check ({type(e).__name__}: {e})"
        if op is None:
            return f"{self.path} has no loop for {self.inputs}"
        loop = "".join(t.char for t in op.in_types) + "->" + "".join(t.char for t in op.out_types)
        exact_ok = self.rounded or all(t.kind in "biu" for t in op.out_types)
        for want, got in zip(self.inputs, op.in_types, strict=True):
            if want == "E" and got != bf16 and not (exact_ok and got.char in "fd"):
                return f"{self.path} has no bfloat16 loop (bfloat16 would run its {loop} loop)"
        return None


@dataclass(frozen=True)
class Probe:
    """A host-side check of CuPy: ``test(cupy, bf16)`` returns True without raising."""

    what: str
    test: Callable[[Any, Any], bool]

    def check(self, cp: Any, bf16: Any) -> str | None:
        """None when the check passes; otherwise what failed."""
        try:
            ok = bool(self.test(cp, bf16))
        except Exception as e:
            return f"{self.what}: no ({type(e).__name__}: {e})"
        return None if ok else f"{self.what}: no"


@dataclass(frozen=True)
class OwnKernel:
    """One of ferro's CUDA C sources (:mod:`.kernels`): it must be instantiated for bfloat16."""

    source: str

    def check(self, cp: Any, bf16: Any) -> str | None:
        """None when the source has a bfloat16 instantiation; otherwise that it has none."""
        dtypes = SOURCES[self.source][1]
        return None if "bfloat16" in dtypes else f"ferro's {self.source} kernel is built for {', '.join(dtypes)} only"


@dataclass(frozen=True)
class Generated:
    """The kernel generated from op ``op``'s expression (``kernels/elementwise.py``, compiled by NVRTC): it needs
    the expression to have floating C. bfloat16 is loaded as bits, computed in float and rounded once."""

    op: str

    def check(self, cp: Any, bf16: Any) -> str | None:
        """None when the op's expression covers floating dtypes; otherwise why not."""
        op = elementwise_ops().get(self.op)
        if op is None or op.expr.text("f") is None:
            return f"op '{self.op}' has no floating expression to generate a kernel from"
        return None


@dataclass(frozen=True)
class Cited:
    """Claimed from CuPy's source where Python cannot reach the table (a ``cdef`` reduction); ``why`` says
    where, and the GPU tests check it."""

    why: str

    def check(self, cp: Any, bf16: Any) -> str | None:
        """Always None: the claim rests on the cited source."""
        return None


@dataclass(frozen=True)
class Refused:
    """Never claimed for bfloat16; ``why`` says why."""

    why: str

    def check(self, cp: Any, bf16: Any) -> str | None:
        """Always the reason."""
        return self.why


Requirement = Loop | Probe | OwnKernel | Generated | Cited | Refused

#: Ops CuPy has no bfloat16 loop for (``round``: its ufunc's is ``fq->f``; ``sigmoid``: core's generic kernel
#: asks ``xp.isdtype``) that run, on bfloat16, the kernel generated from their expression.
GENERATED = ("round", "sigmoid")

#: CuPy's copy kernel: casts, and every kernel that only moves elements (views, concatenation, indexing,
#: CuPy's type-generic ``T`` templates), need nothing more of bfloat16 than this loop.
COPY = Loop("cupy._core.elementwise_copy", "E")
#: Core's generic sigmoid and angle ask ``xp.isdtype``, which is NumPy's and refuses ml_dtypes' dtypes.
ISDTYPE = Probe("cupy.isdtype takes bfloat16", lambda cp, bf: cp.isdtype(bf, "complex floating") in (True, False))
#: 2-D matmul: cupy.dot -> tensordot_core_v11 -> cublasGemmEx with CUDA_R_16BF, float32 compute.
CUBLAS = Probe("cuBLAS GEMM takes bfloat16 (CuPy's compute-type table and CUDA_R_16BF)",
               lambda cp, bf: _lookup("cupy._core._routines_linalg.to_compute_type_index")(bf) >= 0
               and hasattr(cp.cuda.runtime, "CUDA_R_16BF"))
#: Host NumPy with ml_dtypes' loops, the code ferro-cpu runs for bfloat16 too.
HOST_AT = Probe("NumPy's ufunc.at takes ml_dtypes' bfloat16 (the host path)",
                lambda cp, bf: _host_at_works(bf))
#: CuPy sorts (argsort, unique) through Thrust, dispatched on this dtype table.
THRUST = Probe("CuPy's Thrust sort takes bfloat16 (cupy.cuda.common._get_dtype_id)",
               lambda cp, bf: _lookup("cupy.cuda.common._get_dtype_id")(bf) >= 0)
_CUSOLVER = Refused("cuSOLVER (cupy.linalg) has no bfloat16 routines")
_CUFFT = Refused("cuFFT (cupy.fft) has no bfloat16 transforms")
#: CuPy routines with no type table Python can read, not tested with bfloat16 by CuPy itself.
_UNCHECKED = Refused("no CuPy type table says it takes bfloat16; refused until checked on a GPU")
_UNCHECKED_CUMPROD = Refused("the prod op runs cumprod, which no CuPy type table says takes bfloat16")


def _host_at_works(bf: Any) -> bool:
    import numpy as np
    host = np.zeros(2, dtype=bf)
    np.maximum.at(host, np.array([0, 0]), np.ones(2, dtype=bf))
    return bool(host[0] == 1)


def _ufunc(path: str, arity: int, *, rounded: bool = False) -> tuple[Requirement, ...]:
    return (Loop(path, "E" * arity, rounded=rounded),)


def _requirements() -> dict[str, tuple[Requirement, ...]]:
    table: dict[str, tuple[Requirement, ...]] = {}
    table.update({op: _ufunc(f"cupy.{fn}", 1) for op, fn in UNARY_FUNCS.items()})
    table.update({op: _ufunc(f"cupy.{fn}", 2) for op, fn in BINARY_FUNCS.items()})
    # CuPy's special functions compute float16 / bfloat16 in float32; the kernel rounds back (_device_kernels)
    table.update({op: _ufunc(f"cupyx.scipy.special.{fn}", 1, rounded=True) for op, fn in _SPECIAL.items()})
    table["zeta"] = _ufunc("cupyx.scipy.special.zeta", 2, rounded=True)
    moves = ("cast", "reshape", "view", "permute", "expand", "cat", "stack", "getitem", "setitem", "copy_",
             "contiguous", "clone", "real", "imag", "where",  # where: this module's int16-view kernel
             "diagonal", "as_strided", "storage_layout",  # views and their strides: no arithmetic
             # creation: a fill, float64 values cast (linspace, the host draws), or a diagonal written
             "empty", "full", "linspace", "eye", "rand", "randn", "randint")
    table.update({k: (COPY,) for k in moves})
    stats = "cupy._core._routines_statistics"
    table.update({
        "relu": _ufunc("cupy.maximum", 2),
        "arange": _ufunc("cupy._creation.ranges._arange_ufunc", 2),  # (start, step) -> element
        "angle": (ISDTYPE, *_ufunc("cupy.isnan", 1), *_ufunc("cupy.less", 2), COPY),
        "conj": _ufunc("cupy.conj", 1),
        "sum": _ufunc("cupy._core._routines_math._sum_keep_dtype", 1),  # called with dtype=
        # ferro's prod is a composite: its entry runs the decomposition (cumprod), never this kernel
        "prod": (*_ufunc("cupy._core._routines_math._prod_auto_dtype", 1), _UNCHECKED_CUMPROD),
        "amax": _ufunc(f"{stats}.amax", 1), "amin": _ufunc(f"{stats}.amin", 1),
        "any": _ufunc("cupy._core._routines_logic.any", 1), "all": _ufunc("cupy._core._routines_logic.all", 1),
        "mean": (Cited("cupy/_core/_routines_statistics.pyx: _mean_core has a bf16_loop summing in float, and "
                       "_ndarray_mean keeps bfloat16 as the result dtype"),),
        "argmax": (Cited("cupy/_core/_routines_statistics.pyx: _argmax has no bfloat16 loop; bfloat16 widens "
                         "exactly to its 'f->q' loop"),),
        "argmin": (Cited("cupy/_core/_routines_statistics.pyx: _argmin, as _argmax"),),
        "nonzero": _ufunc("cupy.not_equal", 2),  # _ndarray_argwhere: not_equal(x, 0), then a type-generic scan
        "index_put": (COPY, *_ufunc("cupy.add", 2), HOST_AT),
        "index_reduce": (HOST_AT,),
        "matmul": (CUBLAS,),
        "cummax": (OwnKernel("scan"),), "cummin": (OwnKernel("scan"),),
        "argsort": (THRUST,), "unique": (THRUST,),
        **{k: (_UNCHECKED,) for k in ("cumsum", "cumprod", "searchsorted", "histc", "bincount")},
        **{f"linalg_{k}": (_CUSOLVER,) for k in ("inv", "det", "slogdet", "solve", "cholesky", "qr", "eigh", "svd",
                                                 "pinv", "lu_factor", "eig")},
        **{k: (_CUFFT,) for k in ("fft_c2c", "fft_r2c", "fft_c2r")},
        # the optimizer kernels run their CUDA C source for float32/float64 and CuPy ufuncs otherwise (_fused)
        "fused_adam": (*(r for f, n in (("multiply", 2), ("add", 2), ("subtract", 2), ("divide", 2), ("sqrt", 1),
                                        ("maximum", 2), ("negative", 1)) for r in _ufunc(f"cupy.{f}", n)), COPY),
        "fused_sgd": (*(r for f, n in (("multiply", 2), ("add", 2), ("negative", 1)) for r in _ufunc(f"cupy.{f}", n)),
                      COPY),
        # bfloat16 gradients are copied to float32, run amp.cu's float32 kernel and are copied back (_fused)
        "fused_amp_unscale": (COPY,),
        # bfloat16 values and operand are copied to float32, multiplied by cuSPARSE and copied back (_sparse)
        "spmm_csr": (COPY,), "spmv_csr": (COPY,),
    })
    table.update({op: (Generated(op),) for op in GENERATED})
    own = {"softmax": "softmax", "log_softmax": "softmax", "layer_norm": "layer_norm",
           "cross_entropy": "cross_entropy", **{name: "activations" for name in _activation_names()}}
    # each fused op's pair (ferro._ops.fused) and the one-call forwards run the same CUDA C source
    own.update({f"{k}_backward": s for k, s in own.items()})
    own.update({f"{k}_forward": s for k, s in own.items() if k in ("layer_norm", "cross_entropy")})
    for kernel, source in own.items():
        table[kernel] = (OwnKernel(source),)
    return table


def _activation_names() -> set[str]:
    """The activation kernels of the table (``gelu`` covers both rows ``gelu`` and ``gelu_tanh``)."""
    from .kernels import ACTIVATIONS
    return {"gelu" if n.startswith("gelu") else n for n in ACTIVATIONS}


#: Kernel name -> what it runs on CuPy, for every kernel a registry op (or a composite, directly) calls.
REQUIREMENTS: dict[str, tuple[Requirement, ...]] = _requirements()


def kernel_refusals(cp: Any, bf16: Any, kernel: str) -> list[str]:
    """Why ``kernel`` cannot take bfloat16 on this CuPy (empty: it can)."""
    reqs = REQUIREMENTS.get(kernel)
    op = elementwise_ops().get(kernel)
    if reqs is None and op is not None and op.plugin:  # a plugin's op with an expression: its generated kernel
        reqs = (Generated(kernel),)
    if reqs is None:
        return [f"no record of what kernel '{kernel}' runs on CuPy"]
    return [why for r in reqs if (why := r.check(cp, bf16)) is not None]


def kernel_check(cp: Any, bf16: Any) -> Callable[[str, DType], str | None]:
    """``check(kernel, dtype)`` -> why the kernel cannot take ``dtype`` (only bfloat16 is ever refused), or None."""
    @functools.cache
    def check(kernel: str, dtype: DType) -> str | None:
        if dtype is not bfloat16:
            return None
        reasons = kernel_refusals(cp, bf16, kernel)
        return "; ".join(dict.fromkeys(reasons)) if reasons else None
    return check


def resolutions(cp: Any, bf16: Any, kernels: Iterable[str]) -> dict[str, Any]:
    """Registry op -> core's resolution (``ferro.backends.Resolution``) of it at bfloat16 on a device whose
    kernel table has ``kernels``, for the ops computing in bfloat16."""
    from ferro.backends import explain_table
    table = explain_table(kernels, bfloat16, refuses=kernel_check(cp, bf16), device="cuda")
    return {name: r for name, r in table.items() if r.compute is bfloat16}


def refused_ops(cp: Any, bf16: Any, kernels: Iterable[str]) -> dict[str, str]:
    """Registry op -> why bfloat16 is refused for it: the ops the resolver finds no way to run, and the ops
    whose own (fused) kernels refuse it while their decomposition runs (so that core does not bind them)."""
    out = {}
    for name, r in resolutions(cp, bf16, kernels).items():
        if not r.supported:
            out[name] = r.reason
        elif r.refused:
            out[name] = "its kernels are not used (the decomposition runs): " + "; ".join(r.notes)
    return out


# -- the kernels bfloat16 needs -----------------------------------------------------------------------------


def bfloat16_kernels(cp: Any, bf16: Any, generic: dict[str, Callable[..., Any]],
                     unsupported: Callable[[str, str], Exception]) -> dict[str, Callable[..., Any]]:
    """``where`` and ``matmul`` that take bfloat16 (see the module docstring), and the refused raw kernels
    (``linalg_*``, ``argsort``..., which composites call directly) guarded to raise ``unsupported(kernel, reason)`` on a
    bfloat16 input instead of running CuPy on it."""
    int16, float32 = cp.dtype("int16"), cp.dtype("float32")
    where_any, matmul_any = generic["where"], generic["matmul"]

    def where(c: Any, x: Any, y: Any) -> Any:
        if getattr(x, "dtype", None) == bf16 and getattr(y, "dtype", None) == bf16:
            return cp.where(c, x.view(int16), y.view(int16)).view(bf16)
        return where_any(c, x, y)

    def matmul(a: Any, b: Any) -> Any:
        if a.dtype == bf16 and (a.ndim > 2 or b.ndim > 2):
            return matmul_any(a.astype(float32), b.astype(float32)).astype(bf16)
        return matmul_any(a, b)

    out: dict[str, Callable[..., Any]] = {"where": where, "matmul": matmul}
    for name, kernel in generic.items():
        # registry ops are refused through Backend.unsupported before their kernel runs, but a composite calls
        # its parts' kernels directly (sort -> argsort): those are guarded too
        if name in out:
            continue
        reasons = kernel_refusals(cp, bf16, name)
        if reasons and name in REQUIREMENTS:
            out[name] = _guarded(name, kernel, bf16, unsupported, "; ".join(reasons))
    return out


def generated_bfloat16_kernels(bf16: Any, table: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The kernels of :data:`GENERATED` in ``table`` (the backend's whole table), each running the kernel
    generated from its op's expression on a bfloat16 array and the table's kernel on anything else."""
    from ._generated import generated_kernels
    exprs = elementwise_ops()
    made = generated_kernels({name: exprs[name] for name in GENERATED})
    return {name: _on_bfloat16(made[name], table[name], bf16) for name in GENERATED}


def _on_bfloat16(kernel: Callable[..., Any], other: Callable[..., Any], bf16: Any) -> Callable[..., Any]:
    """``kernel`` for one bfloat16 array, ``other`` for anything else."""
    @functools.wraps(other)
    def run(x: Any, *rest: Any) -> Any:
        return kernel(x) if not rest and getattr(x, "dtype", None) == bf16 else other(x, *rest)
    return run


def _guarded(name: str, kernel: Callable[..., Any], bf16: Any, unsupported: Callable[[str, str], Exception],
             reason: str) -> Callable[..., Any]:
    @functools.wraps(kernel)
    def run(*args: Any, **kwargs: Any) -> Any:  # keywords too: a fused activation's parameters (beta=...)
        if any(getattr(a, "dtype", None) == bf16 for a in args):
            raise unsupported(name, reason)
        return kernel(*args, **kwargs)
    return run
