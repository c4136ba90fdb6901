"""The NumPy backend: the generic Array API backend plus NumPy's fast paths.

The fast paths are NumPy's own ufuncs called with ``out=...`` (so 0-d
results stay arrays, never NumPy scalars), bfloat16 through ml_dtypes, views
for reshape, and ``np.add.at`` for accumulating index writes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from ferro._core.dtypes import DType, all_dtypes, bfloat16
from ferro._core.threads import get_num_threads
from ferro.backends import (
    BINARY_FUNCS,
    UNARY_FUNCS,
    ArrayAPIBackend,
    host_index_reduce,
    with_torch_special_values,
)
from ferro.backends._array_api import numpy_broadcast_view
from ferro.backends._polynomials import POLYNOMIALS, polynomial_kernels

# First: NumPy, with OpenBLAS starting on one thread where ferro-cpu is what imports it (see _blas_start).
from ._blas_start import np

# isort: split
from ._batchnorm import batchnorm_kernels
from ._conv import conv_kernels
from ._erf import gelu_kernels
from ._fused import fused_kernels
from ._half import Half
from ._linear import linear_kernels
from ._losses import bce_kernels, loss_kernels
from ._maxpool import maxpool_kernels
from ._nll import nll_kernels
from ._output_grads import accumulate_kernel, output_grad_kernels
from ._pool import MIN_BYTES, BufferPool
from ._quantized import quantized_kernels
from ._quiet import ignoring
from ._rectifiers import rectifier_kernels
from ._recurrent import recurrent_kernels
from ._rows import BLAS_ROW, last_axis_sums, row_kernels
from ._sigmoid import sigmoid_kernels
from ._sparse import sparse_kernels
from ._split import into as split_into
from ._threads import SPLIT_WORK, THREADED_KERNELS
from ._threads import matmul as split_matmul
from ._threads import setup as setup_threads

__all__ = ["NumpyBackend"]

#: index_put's accumulation (an embedding's backward) sums repeated rows by passes over the k-th repeats up to
#: this many repeats of one row, by one ``np.add.reduceat`` beyond.
_FEW_REPEATS = 8
#: ``full`` keeps filled arrays of up to TEMPLATE_MAX bytes to copy (TEMPLATE_BYTES of them in all).
TEMPLATE_MAX = 1 << 18
TEMPLATE_BYTES = 1 << 22
#: ferro op -> NumPy ufunc, where NumPy's name differs from the Array API's.
_NUMPY_NAMES = {"pow": "power", "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                "acosh": "arccosh", "atanh": "arctanh", "atan2": "arctan2", "bitwise_invert": "invert",
                "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift", "round": "rint"}
#: Ops whose result is bool whatever their input dtype.
# The index types of basic indexing, whose keys never select an element twice.
_BASIC_INDEX = frozenset({int, slice, type(Ellipsis), type(None)})
_BOOL_RESULT = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
                "isnan", "isinf", "isfinite"}
#: Ops left without an errstate guard: the hot arithmetic (the guard costs ~0.2 us a call, see _quiet) and ops
#: that cannot warn. Every other NumPy loop can warn (overflow, divide by zero, invalid), and
#: PyTorch never does.
_UNGUARDED = {"add", "sub", "mul", "neg", "positive", "abs", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
              "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
              "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "isnan", "isinf", "isfinite",
              "maximum", "minimum", "floor", "ceil", "trunc", "round", "sign"}
#: Ops whose floating result is exact in the inputs' dtype (it selects or rounds to an integer): their 16-bit
#: results are taken from float32 without a rounding step (see _half).
_EXACT = {"maximum", "minimum", "fmax", "fmin", "neg", "positive", "abs", "floor", "ceil", "trunc", "round", "sign",
          "copysign"}


class NumpyBackend(ArrayAPIBackend):
    """Kernels on NumPy arrays; the ``cpu`` device."""

    name = "cpu"
    description = "NumPy on the host CPU"
    module_name = "numpy"
    optional_groups = frozenset({"special", "complex", "linalg", "fft", "strided", "quantized"})

    def __init__(self) -> None:
        super().__init__()
        #: Large kernel outputs come from here (see ``_pool``): no page faults on reuse.
        self.pool = BufferPool()
        self._native: dict[DType, Any] = {}  # native_dtype's answers
        #: the 16-bit tools handed to kernels (see _half), which bfloat16 joins when ml_dtypes loads
        self._halves: list[Half] = []

    def memory_stats(self, index: int) -> dict[str, int]:
        return self.pool.stats()

    #: compile_fused takes groups that end with reductions (``ferro.backends.fusion.Reduce``)
    fuses_reductions = True

    def compile_fused(self, group: Any, index: int | None = None) -> Any:
        """A fused group of elementwise ops run block by block in cache, each step a ufunc with ``out=``
        (``ferro_cpu._fusion``): one pass over memory instead of one per op; trailing reductions reduce each
        block as it is computed."""
        from ferro.backends.fusion import unbound_steps
        dev = self._device(index)
        if unbound_steps(group, dev):  # an op that runs by its decomposition here: the replay does that
            return None
        table = dev._kernels
        if group.reductions:
            from ._fusion_reduce import compile_reductions
            return compile_reductions(group, table, self.pool)
        from ._fusion import compile_group
        return compile_group(group, table, self.pool)

    def compile_into(self, name: str, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
                     index: int | None = None) -> Any:
        """A captured call writing into a planned buffer (``ferro_cpu._fusion_into``): ufunc kernels, matmul."""
        from ._fusion_into import compile_into
        return compile_into(self._device(index)._kernels, name, kernel, args, kwargs, out)

    def into_buffer(self, out: Any, index: int | None = None) -> Any:
        """A planned buffer for results like ``out``."""
        from ._fusion_into import into_buffer
        return into_buffer(out)

    def compile_step(self, optimizer: Any, index: int | None = None) -> Any:
        """A captured ``optimizer.step()`` as one update over flat arrays (``ferro_cpu._fusion_step``): SGD, Adam,
        AdamW."""
        from ._fusion_step import compile_step
        return compile_step(optimizer, self._device(index)._kernels)

    def empty_cache(self) -> None:
        """Give cached buffers back to the OS."""
        self.pool.empty_cache()

    def device_name(self, index: int) -> str:
        import platform
        return platform.processor() or platform.machine() or "host CPU"

    def device_info(self, index: int) -> dict[str, str]:
        xp = self.xp
        return {"numpy": xp.__version__, "threads": str(get_num_threads()),
                "threaded kernels": ", ".join(THREADED_KERNELS)}

    def dtypes(self, index: int) -> frozenset[DType]:
        return frozenset(all_dtypes)

    def native_dtype(self, dtype: DType) -> Any:
        nd = self._native.get(dtype)  # kernels ask on every call: a dict, not np.dtype(name)
        if nd is not None:
            return nd
        if dtype is bfloat16:
            import ml_dtypes  # ~4 ms: loaded once a bfloat16 array is made, not when the device binds
            nd = self.xp.dtype(ml_dtypes.bfloat16)
            for half in self._halves:
                half.add_bfloat16(nd)
        else:
            nd = self.xp.dtype(dtype.name)
        self._native[dtype] = nd
        return nd

    def half_natives(self) -> Any:
        return self._half().dtypes  # (a set that bfloat16 joins when ml_dtypes loads)

    def _half(self) -> Half:
        """The 16-bit tools of this backend's kernels, bfloat16 among them once ml_dtypes is loaded."""
        half = Half(self.xp, self._native.get(bfloat16))
        self._halves.append(half)
        return half

    def from_numpy(self, array: Any, index: int) -> Any:
        if array.dtype.kind == "V" and bfloat16 not in self._native:  # ml_dtypes' bfloat16, made by the caller
            self.native_dtype(bfloat16)
        return self.xp.asarray(array)

    def to_numpy(self, array: Any) -> Any:
        return array

    def from_dlpack(self, obj: Any, index: int) -> Any:
        return self.xp.from_dlpack(obj)

    def extra_kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        np = self.xp
        nd = self.native_dtype
        native = self._native  # (native_dtype's answers, read directly on the hot paths)
        np_zeros, np_empty, prod = np.zeros, np.empty, math.prod
        quiet = ignoring(np)  # np.errstate(all="ignore")'s decorator, its state object made once (see _quiet)
        pool = self.pool
        setup_threads(pool.empty)  # BLAS on one thread; large products, blocked kernels on set_num_threads' threads
        half = self._half()  # float16 and bfloat16: computed in float32, rounded once (see _half)
        halves = half.dtypes
        table: dict[str, Callable[..., Any]] = {}
        for op, fn in (*UNARY_FUNCS.items(), *BINARY_FUNCS.items()):
            ufunc = getattr(np, _NUMPY_NAMES.get(op, _NUMPY_NAMES.get(fn, fn)), None)
            if isinstance(ufunc, np.ufunc):
                table[op] = _ufunc_kernel(ufunc, None if op in _UNGUARDED else quiet, op in _BOOL_RESULT, pool,
                                          half, op in _EXACT)
        table["pow"] = _squaring(np, table["pow"])
        table["div"] = _dividing(np, table["div"])

        sigmoids = sigmoid_kernels(np, pool, half)  # sigmoid, and silu (ferro/_ops/fused.py)
        sigmoid = sigmoids.pop("sigmoid")

        half_relu = half.ufunc(np.maximum, exact=True)
        #: read-only zeros by (shape, dtype), for relu of small arrays (bounded: a few shapes recur in a model)
        zero_arrays: dict[tuple[Any, Any], Any] = {}

        slow = half.slow

        def relu(x: Any) -> Any:
            if slow and x.dtype in slow:
                return half_relu(x, np.zeros((), x.dtype))  # a 16-bit zero: relu's result is exact
            # the maximum with an array of zeros: NumPy's vectorized loop (against a scalar its broadcast loop is
            # about 2.5x slower on a 64x64 float32), the same values bit for bit; a small array's zeros are kept
            if x.nbytes < MIN_BYTES:
                key = (x.shape, x.dtype)
                z = zero_arrays.get(key)
                if z is None:
                    if len(zero_arrays) >= 64:
                        zero_arrays.clear()
                    z = zero_arrays[key] = np_zeros(x.shape, x.dtype)
                    z.flags.writeable = False
                return np.maximum(x, z, out=...)
            z = pool.zeros(x.shape, x.dtype)
            return split_into(np.maximum, (x, z), z)

        def relu_into(x: Any, out: Any) -> Any:
            return np.maximum(x, 0, out=out, dtype=x.dtype)
        relu.into = relu_into  # type: ignore[attr-defined]

        def reduce(f: Any) -> Callable[..., Any]:
            @quiet
            def kernel(x: Any, dims: Any, keepdim: bool) -> Any:
                return np.asarray(f(x, axis=dims, keepdims=keepdim))
            return kernel

        def extreme(ufunc: Any) -> Callable[..., Any]:
            reduce_ = ufunc.reduce  # np.max's own step, without its Python wrapper; NaN propagates without warnings
            slow = half.slow
            f32 = np.float32

            def kernel(x: Any, dims: Any, keepdim: bool) -> Any:
                if slow and x.dtype in slow:  # bfloat16: in float32, the result exact (see _half)
                    return half.exact(reduce_(x.astype(f32), axis=dims, keepdims=keepdim, out=...), x.dtype)
                return reduce_(x, axis=dims, keepdims=keepdim, out=...)  # (out=...: an array, 0-d too)
            return kernel

        add_reduce, asarray = np.add.reduce, np.asarray  # (np.sum's own step, without its wrapper)

        rows = last_axis_sums(np)
        blas = (np.dtype(np.float32), np.dtype(np.float64))
        ones: dict[tuple[int, DType], Any] = {}

        def trailing(x: Any, dims: Any, keepdim: bool) -> Any:
            """The sums over ``dims`` when they are the last dims of a C-contiguous float array (the last one, or
            several: a ResNet head's ``mean((2, 3))``): those dims read as one row, summed by ``rows`` (one BLAS
            call, several times faster than ``np.add.reduce`` over two axes); None otherwise."""
            k, n = len(dims), x.ndim
            if dims[0] != n - k or dims[-1] != n - 1:  # (dims are sorted and distinct: a run ending at the last)
                return None
            if not x.flags.c_contiguous or x.size == 0:
                return None
            lead = x.shape[:n - k]
            r = rows(x.reshape(*lead, -1), False)
            if r is None or not keepdim:
                return r
            return r.reshape(*lead, *(1,) * k)

        def sum_(x: Any, dims: Any, keepdim: bool, dtype: DType) -> Any:
            if dims is None and not keepdim:
                # every element of a small float array: one BLAS dot with ones (as the rows below), about twice as
                # fast as np.add.reduce's pairwise loop; the ones by (size, dtype), made on first need
                n = x.size
                v = ones.get((n, dtype))
                if v is None and 0 < n <= BLAS_ROW and nd(dtype) in blas:
                    if len(ones) >= 256:  # (a program sums a handful of sizes; a stream of them must not pile up)
                        ones.clear()
                    v = ones[n, dtype] = np.ones(n, nd(dtype))
                if v is not None and x.dtype is v.dtype and x.flags.c_contiguous:
                    return x.reshape(1, n).dot(v).reshape(())
                if n > BLAS_ROW and x.ndim > 1 and x.dtype == nd(dtype):  # a large one: its rows' sums by BLAS
                    r = rows(x.reshape(-1, x.shape[-1]), False)  # (then pairwise over those: a loss's sum())
                    if r is not None:
                        return add_reduce(r, out=...)
            out = native.get(dtype)
            if out is None:
                out = nd(dtype)
            if x.dtype == out and dims is not None:  # the last dim(s) of float rows: one BLAS call
                r = rows(x, keepdim) if len(dims) == 1 and dims[0] == x.ndim - 1 else trailing(x, dims, keepdim)
                if r is not None:
                    return r
            if out in halves:
                return half.round(add_reduce(x, axis=dims, keepdims=keepdim, dtype=np.float32, out=...), out)
            return add_reduce(x, axis=dims, keepdims=keepdim, dtype=out, out=...)

        true_divide = np.true_divide

        @quiet  # (inf - inf in the sum warns in NumPy; PyTorch never does)
        def mean_(x: Any, dims: Any, keepdim: bool) -> Any:
            if x.dtype in halves:  # 16-bit floats accumulate in float32, as in PyTorch
                return half.round(mean_(x.astype(np.float32), dims, keepdim), x.dtype)
            if x.size == 0:  # nan (0 / 0) without NumPy's "Mean of empty slice" warning; PyTorch does not warn
                return asarray(np.sum(x, axis=dims, keepdims=keepdim, dtype=x.dtype) / x.dtype.type(0))
            # np.mean's own steps (its sum, then one division by the count), without its Python wrappers
            total = None
            if dims is not None:
                total = rows(x, keepdim) if len(dims) == 1 and dims[0] == x.ndim - 1 else trailing(x, dims, keepdim)
            if total is None:
                total = asarray(add_reduce(x, axis=dims, keepdims=keepdim, dtype=x.dtype))
            return true_divide(total, x.size // max(total.size, 1), out=total, casting="unsafe")
        mean = mean_

        def arg(f: Any) -> Callable[..., Any]:
            def kernel(x: Any, dim: int, keepdim: bool) -> Any:
                return np.asarray(f(x, axis=dim, keepdims=keepdim))
            return kernel

        def matmul_(x: Any, y: Any) -> Any:
            if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous:
                # a stack of matrices times one matrix: one BLAS call on the rows stacked (NumPy makes one per
                # matrix of the stack, ~1.5x slower for a Transformer's (32, 64, 128) @ (128, 128))
                r = split_matmul(x.reshape(-1, x.shape[-1]), y).reshape(*x.shape[:-1], y.shape[-1])
                return r if r.dtype == x.dtype else r.astype(x.dtype)
            if x.ndim == y.ndim > 1 and x.size * y.shape[-1] >= SPLIT_WORK:  # (split_matmul checks the rest)
                r = split_matmul(x, y)
            else:
                r = np.matmul(x, y, out=...)
            return r if r.dtype == x.dtype else r.astype(x.dtype)
        # 16-bit operands: float32 BLAS, rounded once (NumPy's own float16 loop is unblocked and ~100x slower)
        matmul = half.kernel(matmul_, operands=2)

        def cast(x: Any, dtype: DType) -> Any:
            want = nd(dtype)
            if x.nbytes < MIN_BYTES:
                return x.astype(want)
            out = pool.empty(x.shape, want)
            np.copyto(out, x, casting="unsafe")
            return out

        def clone(x: Any) -> Any:
            if x.nbytes < MIN_BYTES:
                return np.array(x)
            out = pool.empty(x.shape, x.dtype)
            np.copyto(out, x)
            return out

        def view(x: Any, shape: tuple[int, ...]) -> Any:
            v = x.view()
            v.shape = shape  # raises when no view is possible, as PyTorch's view does
            return v

        def diagonal(x: Any, offset: int, d1: int, d2: int) -> Any:
            v = np.diagonal(x, offset, d1, d2)  # a read-only view: writable where x is (PyTorch's is)
            if x.flags.writeable:
                v.flags.writeable = True
            return v

        def contiguous(x: Any) -> Any:
            if x.flags.c_contiguous:
                return x
            if x.nbytes < MIN_BYTES:
                return np.ascontiguousarray(x)  # row-major (np.array would keep a transpose's column-major order)
            out = pool.empty(x.shape, x.dtype)
            np.copyto(out, x)
            return out

        def rows_add(x: Any, key: Any, value: Any) -> bool:
            """``x[idx] += value`` for one integer index array on axis 0 of a float ``x`` (an embedding's
            backward), repeated rows summed by one sort and ``np.add.reduceat`` (``np.add.at`` goes element by
            element); False where the key or the value's shape is another kind (then ``np.add.at`` runs)."""
            idx = key[0] if len(key) == 1 else None
            if (type(idx) is not np.ndarray or idx.dtype.kind not in "iu" or x.dtype.kind != "f" or x.ndim < 2
                    or value.shape != idx.shape + x.shape[1:] or idx.size < 2):
                return False
            n = x.shape[0]
            flat = idx.reshape(-1)
            flat = np.where(flat < 0, flat + n, flat)
            order = np.argsort(flat, kind="stable")
            rows = flat[order]
            starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
            flat_v = value.reshape(flat.size, -1)
            counts = np.diff(starts, append=flat.size)
            if counts.max() > _FEW_REPEATS:  # rows repeated often: one reduceat over the sorted rows
                sums = np.add.reduceat(flat_v[order], starts, axis=0)
            else:  # many rows, each a few times (reduceat costs ~0.3 us a segment): add the k-th repeats in turn
                sums = flat_v[order[starts]]
                more = np.flatnonzero(counts > 1)
                k = 1
                while more.size:
                    sums[more] += flat_v[order[starts[more] + k]]
                    k += 1
                    more = more[counts[more] > k]
            x.reshape(n, -1)[rows[starts]] += sums
            return True

        def index_put(x: Any, key: Any, value: Any, accumulate: bool) -> None:
            if accumulate and all(type(k) in _BASIC_INDEX for k in key):
                x[key] += value  # no element twice (a slice's backward): one pass, where ufunc.at goes element-wise
            elif accumulate:
                if not rows_add(x, key, value):
                    np.add.at(x, key, value)
            else:
                x[key] = value

        def index_reduce(x: Any, key: Any, value: Any, how: str, include_self: bool) -> None:
            host_index_reduce(np, x, key, value, how, include_self)

        def nonzero(x: Any) -> Any:
            return np.argwhere(x)

        def argsort(x: Any, dim: int, descending: bool) -> Any:
            if x.ndim == 0:
                return np.zeros((), np.int64)
            if descending:
                # Stable descending: sort the reversed axis ascending, then reverse back; equal
                # elements keep their original order.
                idx = np.argsort(np.flip(x, dim), axis=dim, kind="stable")
                return (x.shape[dim] - 1 - np.flip(idx, dim)).astype(np.int64)
            return np.argsort(x, axis=dim, kind="stable").astype(np.int64)

        ndarray = np.ndarray

        def getitem(x: Any, key: Any) -> Any:
            r = x[key]
            return r if type(r) is ndarray else np.asarray(r)  # (a NumPy scalar for a key of ints only)

        #: Small filled arrays by (shape, dtype, value's type, value), copied for each call: NumPy's copy of
        #: 16 KiB takes half the time of its fill (64x64 float32: ~0.29 µs against ~0.1 + 0.41 µs for
        #: empty + fill). Bounded by TEMPLATE_BYTES in all (cleared when full).
        templates: dict[tuple[Any, ...], Any] = {}
        held = [0]

        def full(shape: tuple[int, ...], value: Any, dtype: DType) -> Any:
            tv = type(value)
            if tv is int and value == 0:  # zeros (never a template): NumPy's, or the pool's when large
                d = native.get(dtype)
                if d is None:
                    d = nd(dtype)
                return np_zeros(shape, d) if prod(shape) * d.itemsize < MIN_BYTES else pool.zeros(shape, d)
            key = (shape, dtype, tv, value)
            try:
                t = templates.get(key)  # (never holds a zero, -0.0 or NaN: 0.0 and -0.0 hash alike)
            except TypeError:  # (a shape given as a list, an unhashable value: filled as NumPy takes them)
                t = key = None
            if t is not None:
                return t.copy()
            d = native.get(dtype)
            if d is None:
                d = nd(dtype)
            zero = tv is int and value == 0  # (not -0.0) every byte zero
            size = prod(shape) * d.itemsize
            if (key is not None and size <= TEMPLATE_MAX and not zero
                    and (tv is int or (tv is float and value != 0 and value == value))):
                if held[0] + size > TEMPLATE_BYTES:
                    templates.clear()
                    held[0] = 0
                t = np_empty(shape, d)
                t.fill(value)
                templates[key] = t
                held[0] += size
                return t.copy()
            if size < MIN_BYTES:  # small: NumPy's own allocation, as the pool would
                if zero:
                    return np_zeros(shape, d)
                out = np_empty(shape, d)
            elif zero:
                return pool.zeros(shape, d)
            else:
                out = pool.empty(shape, d)
            out.fill(value)
            return out

        def empty(shape: tuple[int, ...], dtype: DType) -> Any:
            d = native.get(dtype)
            if d is None:
                d = nd(dtype)
            return np_empty(shape, d) if prod(shape) * d.itemsize < MIN_BYTES else pool.empty(shape, d)

        result_type, broadcast_shapes, copyto = np.result_type, np.broadcast_shapes, np.copyto

        def where(c: Any, x: Any, y: Any) -> Any:
            dtype = result_type(x, y)  # (NumPy's promotion, Python scalars weak: np.where's own)
            if max(c.size, np.size(x), np.size(y)) * dtype.itemsize < MIN_BYTES:  # small inputs: np.where's
                return np.asarray(np.where(c, x, y))
            # A large result into a pooled buffer (np.where page-faults a fresh one): y, then x where c. A
            # scalar (masked_fill's value) is a fill.
            out = pool.empty(broadcast_shapes(c.shape, np.shape(x), np.shape(y)), dtype)
            # (a Python scalar as an array first: copyto refuses an out-of-range int that np.where wraps)
            copyto(out, np.asarray(y), casting="unsafe")
            copyto(out, np.asarray(x), casting="unsafe", where=c)
            return out

        # (NumPy's C function under its __array_function__ dispatcher, ~0.15 us less a call: ferro's arrays are
        # plain ndarrays, which that protocol would hand to this very function)
        concatenate = getattr(np.concatenate, "_implementation", np.concatenate)
        ascontiguous, np_array = np.ascontiguousarray, np.array

        def cat(xs: list[Any], dim: int) -> Any:
            # row-major, as PyTorch's: concatenate follows its inputs' order (a copy only for column-major ones)
            return ascontiguous(concatenate(xs, dim))

        def stack(xs: list[Any], dim: int) -> Any:  # np.stack's steps, without its checks (the core made them)
            first = xs[0]
            if dim == 0 and first.ndim:  # a new first axis: the arrays (of one shape) end to end, then split
                n = len(xs)
                if first.size * n <= 2048:  # np.array stacks a list of small arrays in fewer steps (for
                    return np_array(xs)  # big ones it is slower, much so for transposed ones)
                # into a row-major result: concatenate alone follows its inputs' order (column-major ones
                # would give a result whose split is no row-major tensor)
                out = np.empty((n, *first.shape), first.dtype)
                concatenate(xs, out=out.reshape((n * first.shape[0], *first.shape[1:])))
                return out
            at = (slice(None),) * dim + (None,)  # a new axis at dim: a view by basic indexing (cheaper than reshape)
            return ascontiguous(concatenate([x[at] for x in xs], dim))

        rint = table["round"]

        def round_(x: Any) -> Any:  # np.rint gives floats for integers; rounding an integer changes nothing
            return x.copy() if x.dtype.kind in "iub" else rint(x)
        table.update(_special_kernels(pool, quiet, half))
        table.update(polynomial_kernels(np, POLYNOMIALS))  # torch.special's orthogonal polynomials
        table["spherical_bessel_j0"] = _spherical_j0
        table["airy_ai"] = _airy_ai
        table.update(linalg_ldl_factor=_ldl_factor, linalg_ldl_solve=_ldl_solve)
        table.update(fused_kernels(np))  # optimizer updates (ferro.optim)
        table.update(half.kernels(conv_kernels(np, pool)))  # conv2d, conv_transpose2d (ferro/_ops/fused.py)
        table.update(half.kernels(maxpool_kernels(np, pool)))  # max_pool2d (ferro/_ops/fused.py)
        table.update(recurrent_kernels(np, pool))  # LSTM / GRU sequences (ferro/nn/modules/rnn.py)
        table.update(linear_kernels(np, pool, half))  # linear (ferro/_ops/fused.py)
        table.update(half.kernels(loss_kernels(np)))  # cross_entropy (ferro/_ops/fused.py)
        table.update(bce_kernels(np))  # binary_cross_entropy, float32 / float64 (ferro/_ops/fused.py)
        table.update(half.kernels(nll_kernels(np)))  # nll_loss (ferro/_ops/fused.py)
        table.update(half.kernels(row_kernels(np, pool)))  # softmax, log_softmax, layer_norm (ferro/_ops/fused.py)
        table.update(batchnorm_kernels(np, pool))  # batch_norm (ferro/_ops/fused.py)
        table.update(half.kernels(rectifier_kernels(np, pool)))  # leaky_relu (ferro/_ops/fused.py)
        table.update(output_grad_kernels(np, half))  # relu_backward... (ferro/_ops/output_grads.py)
        table.update(accumulate_kernel(np))  # .grad += g in backward (ferro/autograd/_engine.py)
        table.update(quantized_kernels(np))  # int8_matmul (ferro.quantization)
        table.update(gelu_kernels(np, pool, table["erf"]))  # gelu (ferro/_ops/fused.py)
        table.update(sigmoids)  # silu (ferro/_ops/fused.py)
        table.update(sparse_kernels(np))  # spmm_csr, spmv_csr (ferro/_ops/sparse.py)

        def in_f32(kernel: Callable[..., Any], dtypes: frozenset[Any] | None = None,
                   exact: bool = False) -> Callable[..., Any]:
            return half.kernel(kernel, operands=1, dtypes=dtypes, exact=exact)  # x, then non-array arguments
        table.update({
            "round": round_, "sigmoid": sigmoid, "relu": relu, "sum": sum_, "mean": mean,
            "amax": extreme(np.maximum), "amin": extreme(np.minimum),
            "prod": in_f32(reduce(np.prod)), "any": reduce(np.any), "all": reduce(np.all),
            "argmax": in_f32(arg(np.argmax), half.slow), "argmin": in_f32(arg(np.argmin), half.slow),
            "matmul": matmul, "cast": cast, "view": view, "reshape": np.reshape, "contiguous": contiguous,
            "diagonal": diagonal,
            "clone": clone, "index_put": index_put, "index_reduce": index_reduce, "nonzero": nonzero,
            "argsort": argsort, "cumsum": in_f32(lambda x, dim: np.cumsum(x, axis=dim, dtype=x.dtype)),
            "cumprod": in_f32(lambda x, dim: np.cumprod(x, axis=dim, dtype=x.dtype)),
            "getitem": getitem, "full": full, "empty": empty, "cat": cat, "stack": stack,
            "where": where, "permute": np.ndarray.transpose, "expand": numpy_broadcast_view,
            "as_strided": _as_strided, "storage_layout": _storage_layout,
        })
        return table


def _as_strided(base: Any, size: tuple[int, ...], stride: tuple[int, ...], offset: int) -> Any:
    """A view of the C-contiguous ``base``'s memory; the caller (ferro's as_strided) checked that it stays inside."""
    item = base.itemsize
    return np.ndarray(size, base.dtype, buffer=base, offset=offset * item, strides=tuple(s * item for s in stride))


def _storage_layout(base: Any, x: Any) -> tuple[tuple[int, ...], int]:
    """The strides and offset of ``x`` in elements of the memory of ``base`` (which ``x`` views)."""
    item = x.itemsize
    if x.size == 0:
        return tuple(s // item for s in x.strides), 0
    start = x.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return tuple(s // item for s in x.strides), start // item


def _same_dtype(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``kernel`` giving its (array) inputs' dtype: SciPy's ufuncs compute float16 and bfloat16 in a wider type."""
    def k(*args: Any) -> Any:
        out = kernel(*args)
        dt = next(a.dtype for a in args if hasattr(a, "dtype"))
        return out if out.dtype == dt else out.astype(dt)
    return k


#: op -> the scipy.special ufunc its CPU kernel calls
_SPECIAL = {"erf": "erf", "erfc": "erfc", "erfinv": "erfinv", "lgamma": "gammaln", "digamma": "digamma",
            "i0": "i0", "i0e": "i0e", "i1": "i1", "i1e": "i1e", "modified_bessel_k0": "k0", "modified_bessel_k1": "k1",
            "scaled_modified_bessel_k0": "k0e", "scaled_modified_bessel_k1": "k1e", "bessel_j0": "j0",
            "bessel_j1": "j1", "bessel_y0": "y0", "bessel_y1": "y1", "erfcx": "erfcx", "zeta": "zeta",
            "gammainc": "gammainc", "gammaincc": "gammaincc"}


def _special_kernels(pool: BufferPool, quiet: Callable[..., Any], half: Half) -> dict[str, Callable[..., Any]]:
    """The special functions of :data:`_SPECIAL` from scipy.special, imported when one of them first runs: importing
    it (with its array API layer, numpy.testing, unittest, numpy.f2py) would take most of the first op's time."""
    built: dict[str, Callable[..., Any]] = {}

    def build(op: str) -> Callable[..., Any]:
        from scipy import special
        fn = getattr(special, _SPECIAL[op])
        # With SCIPY_ARRAY_API=1 (scikit-learn's array API mode) scipy.special wraps its ufuncs in functions.
        u = getattr(fn, "__wrapped__", fn)
        if hasattr(u, "nin"):
            k = _ufunc_kernel(u, quiet, False, pool, half)
        else:  # zeta is a function around the ufuncs of its two forms
            def k(*args: Any, _u: Any = u) -> Any:
                return np.asarray(_u(*args))
        built[op] = k = with_torch_special_values(np, op, _same_dtype(k))
        return k

    def lazy(op: str) -> Callable[..., Any]:
        def kernel(*args: Any) -> Any:
            k = built.get(op)
            return (k or build(op))(*args)
        kernel.__name__ = kernel.__qualname__ = op
        return kernel
    return {op: lazy(op) for op in _SPECIAL}


def _lapack(kind: str, dtype: Any, hermitian: bool) -> Any:
    """SciPy's LAPACK routine ``?sy{kind}`` (``?he{kind}`` for a complex Hermitian matrix) for ``dtype``."""
    from scipy.linalg import lapack
    letter = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[str(dtype)]
    return getattr(lapack, f"{letter}{'he' if hermitian and letter in 'cz' else 'sy'}{kind}")


def _ldl_factor(x: Any, hermitian: bool) -> tuple[Any, Any, Any]:
    """The LDL factorization of each matrix of the batch ``x`` (its lower triangle), as LAPACK's sytrf / hetrf."""
    trf = _lapack("trf", x.dtype, hermitian)
    flat = x.reshape(-1, *x.shape[-2:])
    ld, piv, info = np.empty_like(flat), np.empty(flat.shape[:-1], np.int32), np.empty(flat.shape[0], np.int32)
    for i, m in enumerate(flat):
        out, ipiv, code = trf(m, lower=1)
        ld[i], piv[i], info[i] = np.tril(out), ipiv, code
    return ld.reshape(x.shape), piv.reshape(x.shape[:-1]), info.reshape(x.shape[:-2])


def _ldl_solve(ld: Any, piv: Any, b: Any, hermitian: bool) -> Any:
    """The solutions from :func:`_ldl_factor`'s results, as LAPACK's sytrs / hetrs (``b`` has ld's batch)."""
    trs = _lapack("trs", ld.dtype, hermitian)
    flat_ld, flat_piv = ld.reshape(-1, *ld.shape[-2:]), piv.reshape(-1, piv.shape[-1])
    flat_b = b.reshape(-1, *b.shape[-2:])
    out = np.empty_like(flat_b)
    for i in range(flat_b.shape[0]):
        out[i] = trs(flat_ld[i], flat_piv[i], flat_b[i], lower=1)[0]
    return out.reshape(b.shape)


def _airy_ai(x: Any) -> Any:
    """Airy's Ai (the first of scipy.special.airy's four results), in x's dtype."""
    from scipy import special
    return np.asarray(special.airy(x if x.itemsize >= 4 else x.astype(np.float32))[0], dtype=x.dtype)


def _spherical_j0(x: Any) -> Any:
    """sin(x) / x (1 at 0, 0 at +-inf), in x's dtype."""
    out = np.sinc(np.where(np.isinf(x), 0, x) / np.pi)
    return np.asarray(np.where(np.isinf(x), 0, out), dtype=x.dtype)


def _squaring(np: Any, power: Callable[..., Any]) -> Callable[..., Any]:
    """The ``pow`` kernel ``power`` with ``x ** 2`` of a small array as one ``square`` (``np.power`` takes no
    fast path for it: three times the time); the same values, x * x rounded once either way. Unguarded, as the
    ``mul`` kernel is (an errstate costs ~0.5 us a call): a float overflow warns as ``x * x`` does."""
    square = functools.partial(np.square, out=...)
    ndarray = np.ndarray

    def pow_(x: Any, y: Any) -> Any:
        if (type(y) is int or type(y) is float) and y == 2 and type(x) is ndarray and x.nbytes < MIN_BYTES:
            return square(x)
        return power(x, y)
    pow_.into = power.into  # type: ignore[attr-defined]
    return pow_


def _dividing(np: Any, divide: Callable[..., Any]) -> Callable[..., Any]:
    """The ``div`` kernel ``divide`` with ``x / c`` of a small float array by a Python number of magnitude at least 1
    (finite) unguarded: such a quotient can neither overflow, nor divide by zero, nor be invalid (an inf or NaN
    in ``x`` stays one without a warning), so NumPy has nothing to warn about and the errstate guard (~0.5 us a
    call) is not needed. The same ufunc, the same values."""
    true_divide, ndarray, inf = np.true_divide, np.ndarray, math.inf

    def div(x: Any, y: Any) -> Any:
        ty = type(y)
        if ((ty is float or ty is int) and (1 <= y < inf or -inf < y <= -1) and type(x) is ndarray
                and x.dtype.kind == "f" and x.nbytes < MIN_BYTES):
            return true_divide(x, y, out=...)
        return divide(x, y)
    div.into = divide.into  # type: ignore[attr-defined]
    return div


def _ufunc_kernel(ufunc: Any, quiet: Callable[..., Any] | None, bool_result: bool,
                  pool: BufferPool, half: Half, exact: bool = False) -> Callable[..., Any]:
    """A kernel calling ``ufunc`` so that it always returns an array (``out=...``);
    outputs of a megabyte or more are written into pooled buffers; 16-bit floats computed in float32."""
    broadcast = np.broadcast_shapes
    bool_ = np.dtype(bool)
    slow = half.slow  # bfloat16: computed in float32 (ml_dtypes' own loops are ~50x slower)
    wide = half.ufunc(ufunc, exact)

    def large(*args: Any) -> Any:
        shapes = [a.shape for a in args if hasattr(a, "shape")]
        shape = shapes[0] if len(shapes) == 1 or shapes[0] == shapes[-1] else broadcast(*shapes)
        out = pool.empty(shape, bool_ if bool_result else args[0].dtype)
        return split_into(ufunc, args, out)  # (from 4 MiB, its pieces on the threads)

    if ufunc.nin == 1:
        def k1(x: Any) -> Any:
            if slow and x.dtype in slow:  # (empty until ml_dtypes' bfloat16 loads: no hashing of the dtype)
                return wide(x)
            if x.nbytes < MIN_BYTES:
                return ufunc(x, out=...)
            return large(x)
        kernel = k1
    else:
        def k2(x: Any, y: Any) -> Any:
            try:
                small = x.nbytes < MIN_BYTES
                dt = x.dtype
            except AttributeError:  # a Python scalar on the left
                return wide(x, y) if getattr(y, "dtype", None) in slow else ufunc(x, y, out=...)
            if slow and dt in slow:
                return wide(x, y)
            if small:
                return ufunc(x, y, out=...)
            return large(x, y)
        kernel = k2
    kernel = kernel if quiet is None else quiet(kernel)
    kernel.into = ufunc  # type: ignore[attr-defined]  # into(*args, out=...): fused groups' blocked runs
    return kernel
