"""A generic backend over any Python Array API namespace.

Every primitive kernel is written here once, against the standard's
functions; the NumPy and CuPy backends subclass :class:`ArrayAPIBackend` and
override only what their library does faster. A third party turns a
compliant array library into a ferro backend in a few lines::

    class StrictBackend(ArrayAPIBackend):
        name = "strict"
        def namespace(self):
            import array_api_strict
            return array_api_strict
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.dtypes import DType, all_dtypes, bfloat16, float16
from ._array_api_indexing import make_indexing_kernels
from ._base import Availability, Backend
from ._lu import lu_factor

__all__ = ["ArrayAPIBackend", "UNARY_FUNCS", "BINARY_FUNCS", "host_kernels", "host_index_reduce", "half_dtypes",
           "in_float32", "numpy_broadcast_view"]

#: ferro elementwise op -> Array API function of one argument.
UNARY_FUNCS: dict[str, str] = {
    "neg": "negative", "positive": "positive", "abs": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt",
    "sin": "sin", "cos": "cos", "tanh": "tanh", "logical_not": "logical_not",
    "sign": "sign", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "round": "round", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
    "bitwise_not": "bitwise_invert", "square": "square", "log1p": "log1p",
    "expm1": "expm1", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
    "sinh": "sinh", "cosh": "cosh", "asinh": "asinh", "acosh": "acosh",
    "atanh": "atanh", "log2": "log2", "log10": "log10",
}

#: ferro elementwise op -> Array API function of two arguments.
BINARY_FUNCS: dict[str, str] = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
    "pow": "pow", "maximum": "maximum", "minimum": "minimum",
    "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
    "gt": "greater", "ge": "greater_equal", "atan2": "atan2",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "bitwise_left_shift": "bitwise_left_shift", "bitwise_right_shift": "bitwise_right_shift",
    "floor_divide": "floor_divide", "remainder": "remainder", "hypot": "hypot",
    "logaddexp": "logaddexp",
}


#: Kernels the standard defines on real numbers only that PyTorch also runs on bool (False < True), each with
#: whether its result holds values (cast back to bool) rather than truths or indices. A namespace that refuses
#: to order bool (array-api-strict) runs them on uint8.
BOOL_AS_UINT8: dict[str, bool] = {
    "lt": False, "le": False, "gt": False, "ge": False, "isnan": False, "isinf": False, "isfinite": False,
    "argsort": False, "maximum": True, "minimum": True, "amax": True, "amin": True,
}


class ArrayAPIBackend(Backend):
    """A backend whose kernels are the Array API standard's functions.

    Subclasses implement :meth:`namespace` (import the library there, not at
    module import) and may override :meth:`native_device`, the RNG methods
    and single kernels through :meth:`extra_kernels`.
    """

    #: The module to import for :meth:`namespace` and to report when missing.
    module_name: str = ""
    #: Every required primitive of the contract is written here once; optional groups depend on the namespace.
    complete = True

    def __init__(self) -> None:
        self._xp: Any = None
        self._rngs: dict[int, Any] = {}
        self._seeds: dict[int, int] = {}  # manual_seed's seed per device, until its generator is made
        self._avail: Availability | None = None

    # -- the namespace ----------------------------------------------------

    def namespace(self) -> Any:
        """Import and return the Array API namespace (called lazily)."""
        import importlib
        return importlib.import_module(self.module_name)

    @property
    def xp(self) -> Any:
        """The Array API namespace, imported on first use."""
        if self._xp is None:
            self._xp = self.namespace()
        return self._xp

    def availability(self) -> Availability:
        """Available when :meth:`namespace` imports; otherwise the import error is the reason."""
        if self._avail is None:
            try:
                _ = self.xp  # imports the namespace
                self._avail = self.check_runtime()
            except ModuleNotFoundError as e:
                self._avail = Availability(False, f"{self.module_name or 'its array library'} is not installed ({e})")
            except Exception as e:  # a broken install or driver must not crash ferro
                self._avail = Availability(False, f"{self.module_name or 'its array library'} failed to load: {e}")
        return self._avail

    def check_runtime(self) -> Availability:
        """After a successful import: check drivers and devices (override)."""
        return Availability(True)

    def native_device(self, index: int) -> Any:
        """The namespace's device object for ``index``; None means its default."""
        return None

    def native_dtype(self, dtype: DType) -> Any:
        native = getattr(self.xp, dtype.name, None)
        if native is None:
            raise TypeError(f"backend '{self.name}' has no native dtype for {dtype!r}")
        return native

    def dtypes(self, index: int) -> frozenset[DType]:
        xp = self.xp
        return frozenset(d for d in all_dtypes if d is not bfloat16 and hasattr(xp, d.name))

    # -- transfers ----------------------------------------------------------

    def from_numpy(self, array: Any, index: int) -> Any:
        dev = self.native_device(index)
        return self.xp.asarray(array, copy=True) if dev is None else self.xp.asarray(array, device=dev, copy=True)

    def to_numpy(self, array: Any) -> Any:
        import numpy as np
        return np.asarray(array)

    def from_dlpack(self, obj: Any, index: int) -> Any:
        return self.xp.from_dlpack(obj)

    # -- RNG: a host Philox generator per device, copied to the device ------

    def _rng(self, index: int) -> Any:
        gen = self._rngs.get(index)
        if gen is None:  # made at first use: numpy.random costs a fifth of NumPy's import (the first op's time)
            import numpy as np
            seed = self._seeds.get(index, 0)
            gen = self._rngs.setdefault(index, np.random.Generator(np.random.Philox(seed)))
        return gen

    def manual_seed(self, seed: int, index: int) -> None:
        self._seeds[index] = seed
        self._rngs.pop(index, None)

    def get_rng_state(self, index: int) -> bytes:
        import json  # not at import: ferro's import stays light
        state = self._rng(index).bit_generator.state
        return json.dumps(state, default=_jsonable).encode()

    def set_rng_state(self, state: bytes, index: int) -> None:
        import json

        import numpy as np
        decoded = json.loads(bytes(state).decode())
        bg = np.random.Philox()
        bg.state = _from_json(decoded)
        self._rngs[index] = np.random.Generator(bg)

    # -- kernels ----------------------------------------------------------

    def _broadcast_read_only(self) -> bool:
        """Whether the namespace's ``broadcast_to`` gives read-only views (array-api-strict's; the standard
        leaves it open), found once by writing one element of one. NumPy's are made writable instead."""
        known = getattr(self, "_read_only_broadcast", None)
        if known is None:
            xp = self.xp
            if getattr(xp, "__name__", "") == "numpy":
                known = False
            else:  # asked only of a usable backend (its device and runtime there)
                probe = xp.broadcast_to(xp.zeros((1, 1)), (1, 2))
                try:
                    probe[0, 0] = 1.0
                    known = False
                except (ValueError, TypeError):  # NumPy's "read-only", a strict namespace's refusal
                    known = True
            self._read_only_broadcast = known
        return known

    def _expand_kernel(self) -> Callable[..., Any]:
        """``expand``: a writable view (a write through a part of it that does not overlap reaches the base), or,
        where the namespace's views are read-only, a copy that core keeps in step (:meth:`view_copies`)."""
        xp = self.xp
        if getattr(xp, "__name__", "") == "numpy":
            return numpy_broadcast_view

        def expand(x: Any, shape: tuple[int, ...]) -> Any:
            out = xp.broadcast_to(x, shape)
            # asked at the first call, not when the table is built (that may happen where no device runs)
            return xp.asarray(out, copy=True) if self._broadcast_read_only() else out
        return expand

    def view_copies(self, index: int) -> frozenset[str]:
        """``expand`` where the namespace's ``broadcast_to`` views are read-only (its kernel copies)."""
        return frozenset({"expand"}) if self._broadcast_read_only() else frozenset()

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        xp = self.xp
        table: dict[str, Callable[..., Any]] = {}
        for op, fn in UNARY_FUNCS.items():
            if hasattr(xp, fn):
                table[op] = getattr(xp, fn)
        for op, fn in BINARY_FUNCS.items():
            if hasattr(xp, fn):
                table[op] = getattr(xp, fn)
        # bool + bool is "or" and bool * bool is "and" in PyTorch; the standard refuses bool arithmetic.
        for op, logical in (("add", "logical_or"), ("mul", "logical_and")):
            if op in table:
                table[op] = _bool_as(xp, table[op], getattr(xp, logical))
        table.update(self._generic_kernels(index))
        table.update(self._complex_kernels())
        table.update(self.extra_kernels(index))
        for op in ("floor_divide", "remainder"):  # ferro's rule on every backend built here (CPU and CUDA too)
            if op in table:
                table[op] = _zero_division_checked(xp, table[op], op)
        if not _orders_bool(xp):
            for op, values in BOOL_AS_UINT8.items():
                if op in table:
                    table[op] = _bool_as_uint8(xp, table[op], values)
        return table

    def extra_kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        """Kernels a subclass adds or replaces (its fast paths)."""
        return {}

    def half_natives(self) -> list[Any]:
        """The native 16-bit float dtypes that the kernels compute in float32 (``in_float32``), as a list
        that they test membership in. A subclass whose bfloat16 comes from a module loaded on first use
        appends it to the lists it handed out when it loads it (the CPU backend: ml_dtypes)."""
        return list(half_dtypes(self.native_dtype))

    def _generic_kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        xp = self.xp
        dev = self.native_device(index)
        nd = self.native_dtype
        kw = {} if dev is None else {"device": dev}
        rng = self._rng

        def relu(x: Any) -> Any:
            return xp.maximum(x, xp.zeros_like(x))  # nan stays nan, as in PyTorch

        def sigmoid(x: Any) -> Any:
            if xp.isdtype(x.dtype, "complex floating"):  # no sign to split on: the plain formula, as PyTorch
                return 1 / (1 + xp.exp(-x))
            # Stable on both tails: exp of a non-positive number never overflows.
            e = xp.exp(-xp.abs(x))
            return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))

        def cast(x: Any, dtype: DType) -> Any:
            want = nd(dtype)
            # dtype equality, not isdtype: CuPy's isdtype refuses ml_dtypes' bfloat16
            if (x.dtype == xp.complex64 or x.dtype == xp.complex128) and not (want == xp.complex64
                                                                           or want == xp.complex128):
                # the standard refuses complex to real; PyTorch drops the imaginary part (bool: nonzero)
                return x != 0 if want == xp.bool else xp.astype(xp.real(x), want)
            return xp.astype(x, want)

        def where(c: Any, x: Any, y: Any) -> Any:
            return xp.where(c, x, y)

        def reduce(name: str) -> Callable[..., Any]:
            f = getattr(xp, name)

            def kernel(x: Any, dims: tuple[int, ...] | None, keepdim: bool) -> Any:
                return f(x, axis=dims, keepdims=keepdim)
            return kernel

        halves = self.half_natives()

        def sum_(x: Any, dims: tuple[int, ...] | None, keepdim: bool, dtype: DType) -> Any:
            out = nd(dtype)
            if out in halves:  # accumulated in float32 (see in_float32)
                return xp.astype(xp.sum(x, axis=dims, keepdims=keepdim, dtype=xp.float32), out)
            return xp.sum(x, axis=dims, keepdims=keepdim, dtype=out)

        def arg(name: str) -> Callable[..., Any]:
            f = getattr(xp, name)

            def kernel(x: Any, dim: int | None, keepdim: bool) -> Any:
                return f(x, axis=dim, keepdims=keepdim)
            return kernel

        def reshape(x: Any, shape: tuple[int, ...]) -> Any:
            return xp.reshape(x, shape)

        def view(x: Any, shape: tuple[int, ...]) -> Any:
            return xp.reshape(x, shape, copy=False)

        indexing = make_indexing_kernels(xp, self.to_numpy, lambda a: xp.asarray(a, **kw))
        getitem, setitem = indexing["getitem"], indexing["setitem"]

        def index_put(x: Any, key: Any, value: Any, accumulate: bool) -> None:
            if not accumulate:
                setitem(x, key, value)
                return
            # The standard has no scatter-add. `x[key] += value` is exact when no element is
            # addressed twice; repeated indices are summed on the host (a backend overrides this).
            positions = xp.reshape(getitem(xp.reshape(xp.arange(math.prod(x.shape), **kw), x.shape), key), (-1,))
            if positions.shape[0] == xp.unique_values(positions).shape[0]:
                setitem(x, key, getitem(x, key) + value)
                return
            import numpy as np
            host = np.array(self.to_numpy(x))
            host_key = tuple(np.asarray(self.to_numpy(k)) if hasattr(k, "shape") else k
                             for k in (key if isinstance(key, tuple) else (key,)))
            np.add.at(host, host_key, np.asarray(self.to_numpy(value)) if hasattr(value, "shape") else value)
            x[...] = xp.asarray(host, **kw)

        def nonzero(x: Any) -> Any:
            idx = xp.nonzero(x) if x.ndim else xp.nonzero(xp.reshape(x, (1,)))[:0]
            if not idx:
                return xp.zeros((int(bool(x)), 0), dtype=xp.int64, **kw)
            return xp.stack([xp.astype(i, xp.int64) for i in idx], axis=-1)

        def index_reduce(x: Any, key: Any, value: Any, how: str, include_self: bool) -> None:
            # No scatter-reduce in the standard: reduced on the host.
            import numpy as np
            host = np.array(self.to_numpy(x))
            host_key = tuple(np.asarray(self.to_numpy(k)) if hasattr(k, "shape") else k for k in key)
            host_index_reduce(np, host, host_key, np.asarray(self.to_numpy(value)), how, include_self)
            x[...] = xp.asarray(host, **kw)

        def copy_(dst: Any, src: Any) -> None:
            dst[...] = src

        def contiguous(x: Any) -> Any:
            return xp.asarray(x, copy=True)

        def empty(shape: tuple[int, ...], dtype: DType) -> Any:
            return xp.empty(shape, dtype=nd(dtype), **kw)

        def full(shape: tuple[int, ...], value: Any, dtype: DType) -> Any:
            return xp.full(shape, value, dtype=nd(dtype), **kw)

        def arange(start: Any, stop: Any, step: Any, dtype: DType) -> Any:
            return xp.arange(start, stop, step, dtype=nd(dtype), **kw)

        def linspace(start: float, stop: float, num: int, dtype: DType) -> Any:
            return xp.linspace(start, stop, num, dtype=nd(dtype), **kw)

        def eye(n: int, m: int, dtype: DType) -> Any:
            return xp.eye(n, m, dtype=nd(dtype), **kw)

        def host_random(draw: Callable[..., Any]) -> Callable[..., Any]:
            def kernel(shape: tuple[int, ...], dtype: DType, *args: Any) -> Any:
                host = draw(rng(index), shape, *args)
                return xp.astype(xp.asarray(host, **kw), nd(dtype))
            return kernel

        table = host_kernels(self, index)

        def standard(name: str, fallback: str) -> Callable[..., Any]:
            return (getattr(xp, name, None) and (lambda x, dim: getattr(xp, name)(x, axis=dim))) or table[fallback]

        def _stable_argsort(x: Any, dim: int) -> Any:
            try:
                return xp.argsort(x, axis=dim, stable=True)
            except TypeError:  # a namespace without the keyword (CuPy): its sort is stable already
                return xp.argsort(x, axis=dim)

        def argsort(x: Any, dim: int, descending: bool) -> Any:
            if x.ndim == 0:
                return xp.zeros((), dtype=xp.int64, **kw)
            if not descending:
                return xp.astype(_stable_argsort(x, dim), xp.int64)
            # Stable descending from a stable ascending sort of the reversed axis.
            idx = _stable_argsort(xp.flip(x, axis=dim), dim)
            return xp.astype(x.shape[dim] - 1 - xp.flip(idx, axis=dim), xp.int64)

        table.update(self._linalg_kernels())
        table.update({
            "cumsum": in_float32(xp, halves, standard("cumulative_sum", "cumsum")),
            "cumprod": in_float32(xp, halves, standard("cumulative_prod", "cumprod")),
            "argsort": argsort,
        })
        return {
            **table,
            "relu": relu, "sigmoid": sigmoid, "cast": cast, "where": where,
            "sum": sum_, "mean": in_float32(xp, halves, reduce("mean")), "amax": reduce("max"),
            "amin": reduce("min"), "prod": in_float32(xp, halves, reduce("prod")), "any": reduce("any"),
            "all": reduce("all"),
            "argmax": arg("argmax"), "argmin": arg("argmin"),
            "matmul": in_float32(xp, halves, xp.matmul, operands=2), "reshape": reshape, "view": view,
            "permute": xp.permute_dims, "expand": self._expand_kernel(),
            "cat": lambda xs, dim: xp.concat(xs, axis=dim),
            "stack": lambda xs, dim: xp.stack(xs, axis=dim),
            "getitem": getitem, "setitem": setitem, "index_put": index_put, "copy_": copy_,
            "nonzero": nonzero, "index_reduce": index_reduce,
            "contiguous": contiguous, "clone": contiguous,
            "empty": empty, "full": full, "arange": arange, "linspace": linspace, "eye": eye,
            "rand": host_random(lambda g, s: g.random(s)),
            "randn": host_random(lambda g, s: g.standard_normal(s)),
            "randint": host_random(lambda g, s, lo, hi: g.integers(lo, hi, s)),
        }

    def device_count(self) -> int:
        return 1 if self.availability() else 0

    def _linalg_kernels(self) -> dict[str, Callable[..., Any]]:
        """The standard's ``linalg`` extension, where the namespace has it."""
        la = getattr(self.xp, "linalg", None)
        if la is None:
            return {}
        xp = self.xp

        def qr(x: Any, mode: str) -> tuple[Any, Any]:
            q, r = la.qr(x, mode=mode)
            return q, r

        def svd(x: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
            u, s, vh = la.svd(x, full_matrices=full_matrices)
            return u, s, vh

        def slogdet(x: Any) -> tuple[Any, Any]:
            sign, logabs = la.slogdet(x)
            return xp.asarray(sign), xp.asarray(logabs)

        def eigh(x: Any) -> tuple[Any, Any]:
            w, v = la.eigh(x)
            return w, v

        table = {"linalg_inv": la.inv, "linalg_det": lambda x: xp.asarray(la.det(x)), "linalg_slogdet": slogdet,
                 "linalg_solve": la.solve, "linalg_cholesky": la.cholesky, "linalg_qr": qr, "linalg_eigh": eigh,
                 "linalg_svd": svd, "linalg_pinv": la.pinv, "linalg_lu_factor": lambda x: lu_factor(xp, x)}
        if hasattr(la, "eig"):  # not in the standard (NumPy has it): linalg.eig / eigvals's kernel

            def eig(x: Any) -> tuple[Any, Any]:
                w, v = la.eig(x)
                return w, v
            table["linalg_eig"] = eig
        return table

    # -- complex numbers and the FFT (ferro._ops.complex, ferro._ops.fft) ---------------------------------

    def _complex_kernels(self) -> dict[str, Callable[..., Any]]:
        """``real``/``imag`` (views where the arrays have ``.real``/``.imag``), ``conj``, ``angle``, and the three
        FFT primitives over the standard's ``fft`` extension: ``fft_c2c`` (complex to complex), ``fft_r2c``
        (real to the onesided half spectrum), ``fft_c2r`` (half spectrum to real, of ``last_dim_size``)."""
        xp = self.xp
        table: dict[str, Callable[..., Any]] = {}
        if hasattr(xp, "real") and hasattr(xp, "imag"):
            def part(name: str) -> Callable[..., Any]:
                fn = getattr(xp, name)

                def kernel(x: Any) -> Any:
                    view = getattr(x, name, None)  # NumPy and CuPy: a view of x's storage
                    return view if view is not None and not callable(view) else fn(x)
                return kernel

            def angle(x: Any) -> Any:
                if x.dtype in (xp.complex64, xp.complex128):  # isdtype refuses ml_dtypes' bfloat16
                    return xp.atan2(xp.imag(x), xp.real(x))
                # PyTorch: pi for negative reals, 0 otherwise (-0.0 included), nan stays nan.
                return xp.where(xp.isnan(x), x, xp.where(x < 0, xp.asarray(math.pi, dtype=x.dtype),
                                                        xp.zeros_like(x)))

            table.update({"real": part("real"), "imag": part("imag"), "conj": xp.conj, "angle": angle})
            strided = getattr(getattr(getattr(xp, "lib", None), "stride_tricks", None), "as_strided", None)
            if strided is not None:  # NumPy and CuPy: view_as_real as a view, as in PyTorch
                def view_as_real(x: Any) -> Any:
                    r = x.real
                    return strided(r, shape=(*r.shape, 2), strides=(*r.strides, r.itemsize))
                table["view_as_real"] = view_as_real
        if not _has_extension(xp, "fft"):
            return table

        def c2c(x: Any, dims: tuple[int, ...], norm: str, forward: bool) -> Any:
            fft = xp.fft  # looked up per call: NumPy imports numpy.fft on first access, not at the first op
            out = (fft.fftn if forward else fft.ifftn)(x, axes=dims, norm=norm)
            return out if out.dtype == x.dtype else xp.astype(out, x.dtype)

        def r2c(x: Any, dims: tuple[int, ...], norm: str) -> Any:
            out = xp.fft.rfftn(x, axes=dims, norm=norm)
            want = xp.complex64 if x.dtype == xp.float32 else xp.complex128
            return out if out.dtype == want else xp.astype(out, want)

        def c2r(x: Any, dims: tuple[int, ...], norm: str, last_dim_size: int) -> Any:
            s = [x.shape[d] for d in dims[:-1]] + [last_dim_size]
            out = xp.fft.irfftn(x, s=s, axes=dims, norm=norm)
            want = xp.float32 if x.dtype == xp.complex64 else xp.float64
            return out if out.dtype == want else xp.astype(out, want)

        table.update({"fft_c2c": c2c, "fft_r2c": r2c, "fft_c2r": c2r})
        return table



def numpy_broadcast_view(x: Any, shape: tuple[int, ...]) -> Any:
    """NumPy's ``broadcast_to(x, shape)`` as a view that can be written where ``x`` can (``broadcast_to``'s
    is read-only): a write through a part of an expanded tensor whose own elements do not overlap
    (``x.expand(3, 4)[:, 0].add_(1)``) reaches ``x``, as in PyTorch. Writes into overlapping elements are
    refused by core before any kernel runs."""
    import numpy as np
    flags = x.flags
    if flags.c_contiguous and flags.writeable and x.size:
        # the strides by hand (broadcast_to alone costs several times this), then the cheap constructor
        lead = len(shape) - x.ndim
        if lead >= 0:
            strides = [0] * lead
            for n, s, st in zip(x.shape, shape[lead:], x.strides):
                if n != s:
                    if n != 1:
                        break  # not broadcastable: broadcast_to's error below
                    st = 0
                strides.append(st)
            else:
                return np.ndarray(shape, x.dtype, buffer=x, strides=tuple(strides))
    base = x.base
    if (type(base) is np.ndarray and base.size == 1 and base.dtype == x.dtype and flags.writeable
            and not any(x.strides) and base.flags.c_contiguous):
        # an expanded single element (a full reduction's gradient reshaped, then broadcast again by the next
        # reduction's backward): every element is the base's only one (same dtype), at offset 0
        return np.ndarray(shape, x.dtype, buffer=base, strides=(0,) * len(shape))
    out = np.broadcast_to(x, shape)
    if not x.flags.writeable or not x.size:
        return out
    if x.flags.c_contiguous:  # the cheap constructor; as_strided (any layout) costs twice broadcast_to
        return np.ndarray(out.shape, x.dtype, buffer=x, strides=out.strides)
    return np.lib.stride_tricks.as_strided(x, out.shape, out.strides)


def _has_extension(xp: Any, name: str) -> bool:
    """Whether namespace ``xp`` has the extension ``name`` (``fft``, ``linalg``), without importing it where
    the namespace lists it in ``__all__`` (NumPy imports its submodules on first access)."""
    if name in getattr(xp, "__dict__", {}) or name in getattr(xp, "__all__", ()):
        return True
    return getattr(xp, name, None) is not None


def host_kernels(backend: Backend, index: int) -> dict[str, Callable[..., Any]]:
    """Kernels the standard lacks (``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``searchsorted``,
    ``unique``, ``histc``, ``bincount``), computed with NumPy on the host: any backend whose ``to_numpy`` and
    ``from_numpy`` work may put them in its table (free for NumPy itself)."""
    import numpy as np

    def contiguous(o: Any) -> Any:
        # ascontiguousarray alone would turn a 0-d result (searchsorted of a 0-d value) into shape (1,)
        return np.ascontiguousarray(o) if np.ndim(o) else np.asarray(o)

    def host(fn: Callable[..., Any]) -> Callable[..., Any]:
        def kernel(*args: Any) -> Any:
            conv = [np.asarray(backend.to_numpy(a)) if hasattr(a, "shape") else a for a in args]
            out = fn(*conv)
            if isinstance(out, tuple):
                return tuple(backend.from_numpy(contiguous(o), index) for o in out)
            return backend.from_numpy(contiguous(out), index)
        return kernel

    def extreme_accumulate(ufunc: Any) -> Callable[..., Any]:
        def kernel(x: Any, dim: int) -> tuple[Any, Any]:
            values = ufunc.accumulate(x, axis=dim)
            pos = np.arange(x.shape[dim]).reshape([-1 if i == dim else 1 for i in range(x.ndim)])
            # the index of the last element equal to the running extreme (PyTorch's choice)
            hit = np.where(x == values, pos, 0)
            return values, np.maximum.accumulate(hit, axis=dim).astype(np.int64)
        return kernel

    def searchsorted(seq: Any, values: Any, right: bool) -> Any:
        side = "right" if right else "left"
        if seq.ndim <= 1:
            return np.searchsorted(seq, values, side=side).astype(np.int64)
        flat_s = seq.reshape(-1, seq.shape[-1])
        flat_v = values.reshape(-1, values.shape[-1])
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(flat_s, flat_v)])
        return out.reshape(values.shape).astype(np.int64)

    def unique(x: Any, consecutive: bool) -> tuple[Any, Any, Any]:
        flat = x.reshape(-1)
        if consecutive:
            if flat.size == 0:
                return flat, np.zeros(x.shape, np.int64), np.zeros(0, np.int64)
            starts = np.concatenate([[True], flat[1:] != flat[:-1]])
            values, inverse = flat[starts], np.cumsum(starts) - 1
            counts = np.diff(np.append(np.flatnonzero(starts), flat.size))
            return values, inverse.reshape(x.shape).astype(np.int64), counts.astype(np.int64)
        # each NaN is its own value, as in PyTorch (NumPy merges them by default)
        values, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True, equal_nan=False)
        return values, inverse.reshape(x.shape).astype(np.int64), counts.astype(np.int64)

    def histc(x: Any, bins: int, lo: float, hi: float) -> Any:
        if lo == hi == 0:
            lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        counts, _ = np.histogram(x, bins=bins, range=(lo, hi))
        return counts.astype(x.dtype)

    def bincount(x: Any, weights: Any, minlength: int) -> Any:
        return np.bincount(x, weights=weights, minlength=minlength)

    return {name: host(fn) for name, fn in {
        "cumsum": lambda x, dim: np.cumsum(x, axis=dim, dtype=x.dtype),
        "cumprod": lambda x, dim: np.cumprod(x, axis=dim, dtype=x.dtype),
        "cummax": extreme_accumulate(np.maximum), "cummin": extreme_accumulate(np.minimum),
        "searchsorted": searchsorted, "unique": unique, "histc": histc, "bincount": bincount,
    }.items()}


def half_dtypes(native_dtype: Callable[[DType], Any]) -> tuple[Any, ...]:
    """The native float16 and bfloat16 dtypes a backend has (those ``native_dtype`` knows)."""
    out = []
    for d in (float16, bfloat16):
        try:
            out.append(native_dtype(d))
        except (TypeError, AttributeError, ImportError):
            continue
    return tuple(out)


def _zero_division_checked(xp: Any, kernel: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``kernel`` raising ZeroDivisionError for an integer divisor of 0, as PyTorch's CPU kernels do (NumPy
    gives 0 silently, CuPy garbage). On a device array the check waits for the result: integer division
    is rare on accelerators, and a wrong answer is worse."""
    def integral(dtype: Any) -> bool:
        kind = getattr(dtype, "kind", None)
        return kind in ("i", "u") if kind is not None else bool(xp.isdtype(dtype, "integral"))

    def k(x: Any, y: Any) -> Any:
        r = kernel(x, y)
        if integral(r.dtype) and (y == 0 if isinstance(y, int) else not bool(xp.all(y))):
            raise ZeroDivisionError(f"{name}: integer division by zero")
        return r
    return k


def in_float32(xp: Any, halves: tuple[Any, ...], kernel: Callable[..., Any], operands: int = 1) -> Callable[..., Any]:
    """``kernel(x, ...)`` computed in float32 when ``x`` is float16 or bfloat16 (``halves``), rounded back once;
    the first ``operands`` arguments are arrays of ``x``'s dtype, all widened.

    Sums, means, products, scans and matrix products of 16-bit floats accumulate in float32, as PyTorch's do:
    added up in bfloat16, 12,288 values near 1 stop at 512 (1 is below half the spacing of bfloat16 there).
    """
    f32 = xp.float32
    if operands == 2:
        def accumulating2(x: Any, y: Any, *args: Any) -> Any:
            if x.dtype in halves:
                return xp.astype(kernel(xp.astype(x, f32), xp.astype(y, f32), *args), x.dtype)
            return kernel(x, y, *args)
        return accumulating2

    def accumulating(x: Any, *args: Any) -> Any:
        if x.dtype in halves:
            return xp.astype(kernel(xp.astype(x, f32), *args), x.dtype)
        return kernel(x, *args)
    return accumulating


def host_index_reduce(np: Any, x: Any, key: Any, value: Any, how: str, include_self: bool) -> None:
    """``x[key] = reduce(x[key], value)`` with repeated indices reduced too (NumPy's ufunc.at)."""
    ufunc = {"amax": np.maximum, "amin": np.minimum, "prod": np.multiply}[how]
    if not include_self:
        identity = {"amax": -np.inf, "amin": np.inf, "prod": 1}[how]
        if how != "prod" and x.dtype.kind == "b":
            identity = how == "amin"
        elif how != "prod" and x.dtype.kind in "iu":
            identity = np.iinfo(x.dtype).min if how == "amax" else np.iinfo(x.dtype).max
        touched = np.zeros(x.shape, bool)
        touched[key] = True
        x[touched] = identity
    ufunc.at(x, key, np.broadcast_to(value, x[key].shape))


def _orders_bool(xp: Any) -> bool:
    """Whether the namespace compares bool arrays (NumPy, CuPy), or refuses to as the standard may.

    NumPy and CuPy are known without a probe (CuPy's would need a GPU: its kernel table is also built
    without one, to check claims); another namespace is asked once."""
    if getattr(xp, "__name__", "").partition(".")[0] in ("numpy", "cupy"):
        return True
    try:
        xp.less(xp.asarray([False]), xp.asarray([True]))
    except TypeError:
        return False
    return True


def _bool_as_uint8(xp: Any, kernel: Callable[..., Any], values: bool) -> Callable[..., Any]:
    """``kernel`` run on uint8 copies of its bool arrays, its result cast back to bool where ``values``."""
    bool_dtype, uint8 = xp.bool, xp.uint8

    def run(*args: Any) -> Any:
        if not any(getattr(a, "dtype", None) == bool_dtype for a in args):
            return kernel(*args)
        out = kernel(*(xp.astype(a, uint8) if getattr(a, "dtype", None) == bool_dtype else a for a in args))
        return xp.astype(out, bool_dtype) if values else out
    return run


def _bool_as(xp: Any, arithmetic: Callable[..., Any], logical: Callable[..., Any]) -> Callable[..., Any]:
    """A binary kernel that runs ``logical`` on bool arrays and ``arithmetic`` otherwise."""
    bool_dtype = xp.bool

    def kernel(x: Any, y: Any) -> Any:
        if getattr(x, "dtype", None) == bool_dtype or getattr(y, "dtype", None) == bool_dtype:
            return logical(x, y)
        return arithmetic(x, y)
    return kernel


def _jsonable(o: Any) -> Any:
    import numpy as np
    if isinstance(o, np.ndarray):
        return {"__ndarray__": o.tolist(), "dtype": str(o.dtype)}
    if isinstance(o, np.integer):
        return int(o)
    raise TypeError(f"cannot serialize {type(o).__name__} in an RNG state")


def _from_json(o: Any) -> Any:
    import numpy as np
    if isinstance(o, dict):
        if "__ndarray__" in o:
            return np.asarray(o["__ndarray__"], dtype=o["dtype"])
        return {k: _from_json(v) for k, v in o.items()}
    return o
