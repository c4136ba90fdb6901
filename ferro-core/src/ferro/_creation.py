"""Creating tensors: from data, filled, ranges, identity, random."""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any

from ._core import dtypes as _dtypes
from ._core import host as _host
from ._core.device import device as _device_cls
from ._core.dtypes import DType, as_dtype, bool_, get_default_dtype, int64
from ._core.naming import names_errors
from ._core.tensor import Tensor, _wrap
from ._core.tensor import _new as _new_object
from .backends._selection import current_device

__all__ = ["tensor", "as_tensor", "from_numpy", "from_dlpack", "zeros", "ones", "full", "empty", "arange",
           "linspace", "eye", "zeros_like", "ones_like", "full_like", "empty_like", "rand", "randn", "randint",
           "rand_like", "randn_like", "randint_like"]


def _device(device: Any) -> _device_cls:
    if device is None:
        dev = current_device()
    elif type(device) is _device_cls:
        dev = device
    else:
        dev = _device_cls(device)
    if dev._backend is None:
        dev.backend  # binds; BackendUnavailableError carries the reason  # noqa: B018
    return dev


def _check_dtype(dtype: DType, dev: _device_cls, what: str) -> None:
    if dtype not in dev._dtypes:
        from .errors import UnsupportedOperationError
        raise UnsupportedOperationError(what, dtype, dev.type, dev, reason=f"the device does not support {dtype}")


def _make(kind: str, dev: _device_cls, dtype: DType, *args: Any) -> Tensor:
    """Run creation kernel ``kind``; without one, the opt-in CPU fallback or a clear error. Running out of
    memory names the size and the device (the public function's wrapper puts the user's op before it)."""
    _check_dtype(dtype, dev, kind)
    k = dev._kernels.get(kind)  # type: ignore[union-attr]
    if k is not None:
        try:
            return _wrap(k(*args), dtype, dev)
        except MemoryError as e:  # the backend's own words (NumPy's, the OpenCL runtime's) after ours
            shape = args[0] if args and isinstance(args[0], tuple) else None
            what = f"a tensor of shape {list(shape)} and dtype {dtype} ({math.prod(shape) * dtype.itemsize:,} bytes)" \
                if shape is not None else f"a tensor of dtype {dtype}"
            from .errors import OutOfMemoryError
            raise OutOfMemoryError(f"out of memory allocating {what} on {dev}: {e}") from None
    from .dispatch._dispatch import fallback_enabled, warn_fallback
    if fallback_enabled() and dev.type != "cpu":
        warn_fallback(kind, dev)
        cpu = _device("cpu")
        return _wrap(cpu._kernels[kind](*args), dtype, cpu).to(dev)  # type: ignore[index]
    from .errors import UnsupportedOperationError
    raise UnsupportedOperationError(kind, dtype, dev.type, dev, reason="the backend has no kernel for it",
                                    others=["cpu"] if dev.type != "cpu" else [])


def _size_keyword(fn: Any) -> Any:
    """Let ``fn(*size, ...)`` take its size as the keyword ``size=`` too, as PyTorch's creation functions do."""
    @functools.wraps(fn)
    def call(*size: Any, **kwargs: Any) -> Tensor:
        if "size" in kwargs:
            if size:
                raise TypeError(f"{fn.__name__}() got its size both as positional arguments and as size=")
            size = (kwargs.pop("size"),)
        return fn(*size, **kwargs)
    return call


def _size(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        out = tuple(map(operator.index, size))  # 2.5 is refused, as in PyTorch (int() would truncate)
    except TypeError:
        raise TypeError(f"argument 'size' must be a tuple of ints, got {list(size)}") from None
    if out and min(out) < 0:
        raise ValueError(f"negative dimension in size {list(out)}")
    return out


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, NumPy arrays, tensors)."""
    dtype = as_dtype(dtype, "tensor")
    if isinstance(data, Tensor):
        t = data.detach().to(device or data._device, dtype or data._dtype, copy=True)
        return _finish(t, requires_grad)
    dev = _device(device)
    arr, d = _host.infer(data, dtype)
    _check_dtype(d, dev, "tensor")
    np = _host.np()
    if isinstance(data, np.ndarray) and arr is data:
        arr = arr.copy()
    return _finish(_wrap(dev._backend.from_numpy(arr, dev.index), d, dev), requires_grad)


def as_tensor(data: Any, dtype: DType | None = None, device: Any = None) -> Tensor:
    """``data`` as a tensor, sharing memory where it can (a CPU NumPy array, a tensor)."""
    dtype = as_dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data.to(device or data._device, dtype or data._dtype)
    dev = _device(device)
    arr, d = _host.infer(data, dtype)
    _check_dtype(d, dev, "as_tensor")
    return _wrap(dev._backend.from_numpy(arr, dev.index), d, dev)


def from_numpy(array: Any) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array."""
    np = _host.np()
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy() expects a numpy.ndarray, got {type(array).__name__}")
    dev = _device("cpu")
    d = _host.from_numpy_dtype(array.dtype)
    return _wrap(dev._backend.from_numpy(array, dev.index), d, dev)


def from_dlpack(obj: Any, device: Any = None) -> Tensor:
    """A tensor viewing a DLPack-capable array (NumPy, CuPy, PyTorch...) without a copy where possible."""
    dev = _device(device)
    data = dev._backend.from_dlpack(obj, dev.index)
    return _wrap(data, _host.from_numpy_dtype(_host.np().dtype(str(data.dtype))), dev)


def full(size: Sequence[int], fill_value: Any, *, dtype: DType | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype inferred from it by default)."""
    dtype = as_dtype(dtype, "full")
    dev = _device(device)
    if dtype is None:
        dtype = bool_ if isinstance(fill_value, bool) else int64 if isinstance(fill_value, int) else \
            get_default_dtype() if isinstance(fill_value, float) else _host.infer(fill_value, None)[1]
    shape = _size((tuple(size),) if isinstance(size, (tuple, list)) else (size,))
    return _finish(_make("full", dev, dtype, shape, fill_value, dtype), requires_grad)


@_size_keyword
def zeros(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros of shape ``size``."""
    dtype = as_dtype(dtype, "zeros") or get_default_dtype()
    shape = _size(size)
    return _finish(_make("full", _device(device), dtype, shape, 0, dtype), requires_grad)


@_size_keyword
def ones(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones of shape ``size``."""
    dtype = as_dtype(dtype, "ones") or get_default_dtype()
    shape = _size(size)
    return _finish(_make("full", _device(device), dtype, shape, 1, dtype), requires_grad)


@_size_keyword
def empty(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor of shape ``size``."""
    dtype = as_dtype(dtype, "empty")
    dev = _device(device)
    dtype = dtype or get_default_dtype()
    return _finish(_make("empty", dev, dtype, _size(size), dtype), requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: DType | None = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` up to (not including) ``end`` by ``step``; int64 for integer arguments."""
    dtype = as_dtype(dtype, "arange")
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: upper bound and lower bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")
    if dtype is None:
        dtype = int64 if all(isinstance(v, int) for v in (start, end, step)) else get_default_dtype()
    dev = _device(device)
    return _finish(_make("arange", dev, dtype, start, end, step, dtype), requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: DType | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    dtype = as_dtype(dtype, "linspace")
    if steps < 0:
        raise ValueError(f"linspace: number of steps must be non-negative, got {steps}")
    dtype = dtype or get_default_dtype()
    dev = _device(device)
    return _finish(_make("linspace", dev, dtype, start, end, steps, dtype), requires_grad)


def eye(n: int, m: int | None = None, *, dtype: DType | None = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal."""
    dtype = as_dtype(dtype, "eye")
    dtype = dtype or get_default_dtype()
    dev = _device(device)
    return _finish(_make("eye", dev, dtype, n, n if m is None else m, dtype), requires_grad)


def _random(kind: str, size: tuple[int, ...], dtype: DType, device: Any, requires_grad: bool,
            *args: Any, generator: Any = None) -> Tensor:
    from ._random import using
    dev = _device(device if device is not None or generator is None else generator.device)
    with using(generator, dev):
        return _finish(_make(kind, dev, dtype, size, dtype, *args), requires_grad)


@_size_keyword
def rand(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
         generator: Any = None) -> Tensor:
    """Uniform random values in [0, 1)."""
    dtype = as_dtype(dtype, "rand")
    dtype = dtype or get_default_dtype()
    if not dtype.is_floating_point:
        raise TypeError(f"rand: expected a floating dtype, got {dtype}")
    return _random("rand", _size(size), dtype, device, requires_grad, generator=generator)


@_size_keyword
def randn(*size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False,
          generator: Any = None) -> Tensor:
    """Standard normal random values."""
    dtype = as_dtype(dtype, "randn")
    dtype = dtype or get_default_dtype()
    if not dtype.is_floating_point:
        raise TypeError(f"randn: expected a floating dtype, got {dtype}")
    return _random("randn", _size(size), dtype, device, requires_grad, generator=generator)


def randint(low: int, high: int | None = None, size: Sequence[int] = (), *, dtype: DType | None = None,
            device: Any = None, generator: Any = None) -> Tensor:
    """Random integers in [low, high) (``randint(high, size)`` starts at 0)."""
    dtype = as_dtype(dtype, "randint")
    if high is None or isinstance(high, (tuple, list)):  # randint(high, size), as PyTorch
        low, high, size = 0, low, (size if high is None else high)
    if low >= high:
        raise ValueError(f"randint: expected low < high, got low={low}, high={high}")
    return _random("randint", _size((tuple(size),)), dtype or int64, device, False, low, high,
                   generator=generator)


def _like(fn: Any, x: Tensor, *args: Any, dtype: DType | None = None, device: Any = None, **kw: Any) -> Tensor:
    dtype = as_dtype(dtype, fn.__name__ + "_like")
    return fn(*args, dtype=dtype or x._dtype, device=device or x._device, **kw)


def zeros_like(x: Tensor, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros with ``x``'s shape, dtype and device."""
    return _like(zeros, x, x.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(x: Tensor, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones with ``x``'s shape, dtype and device."""
    return _like(ones, x, x.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(x: Tensor, fill_value: Any, *, dtype: DType | None = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """``fill_value`` with ``x``'s shape, dtype and device."""
    return _like(full, x, x.shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(x: Tensor, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Uninitialized, with ``x``'s shape, dtype and device."""
    return _like(empty, x, x.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def rand_like(x: Tensor, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform [0, 1) values with ``x``'s shape, dtype and device."""
    return _like(rand, x, x.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randn_like(x: Tensor, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Standard normal values with ``x``'s shape, dtype and device."""
    return _like(randn, x, x.shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randint_like(x: Tensor, low: int, high: int | None = None, *, dtype: DType | None = None,
                 device: Any = None) -> Tensor:
    """Random integers in [low, high) with ``x``'s shape, dtype and device."""
    return randint(low, high, x.shape, dtype=dtype or x._dtype, device=device or x._device)


def _new(fn: Any) -> Any:
    """The method ``Tensor.new_<fn>``: ``fn`` with the tensor's dtype and device as defaults."""
    def method(self: Tensor, *args: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
        return fn(*args, dtype=dtype or self._dtype, device=device or self._device, requires_grad=requires_grad)
    method.__name__ = method.__qualname__ = f"new_{fn.__name__}"
    method.__doc__ = (f"A new tensor as :func:`ferro.{fn.__name__}` makes it, with this tensor's dtype and device "
                      "unless given.")
    return method


for _name in __all__:  # every error (allocation failures too) names the creation function called
    globals()[_name] = names_errors(_name, globals()[_name])

_index = operator.index
_default_float = _dtypes._default_float


def _shape_of(size: tuple[Any, ...]) -> tuple[int, ...] | None:
    """``size`` as :func:`_size` reads it, or None where that would raise (the checked path says why)."""
    if len(size) == 1:
        s = size[0]
        if type(s) is tuple or isinstance(s, (tuple, list)):
            size = s
    for n in size:  # the usual case, sizes as non-negative Python ints: no conversion
        if type(n) is not int or n < 0:
            break
    else:
        return size if type(size) is tuple else tuple(size)
    try:
        shape = tuple(map(_index, size))
    except TypeError:
        return None
    return None if shape and min(shape) < 0 else shape


def _run(kind: str, dev: Any, dtype: Any, args: tuple[Any, ...]) -> Any:
    """Creation kernel ``kind`` of a bound ``dev`` taking ``dtype`` run on ``args``, or None where the checked path
    must run (an unbound device, a dtype it lacks, a missing kernel, a kernel that raised: it says why)."""
    if type(dtype) is not DType or type(dev) is not _device_cls or dtype not in dev._dtypes:
        return None
    k = dev._kernels.get(kind)  # type: ignore[union-attr]  # (a probe: the checked path handles a missing kernel)
    if k is None:
        return None
    try:
        return k(*args)
    except Exception:  # (the checked path runs it again and reports the error in its own words)
        return None


def _filled(slow: Any, kind: str, value: Any) -> Any:
    """The public ``zeros`` / ``ones`` / ``empty``: ``slow`` (the checked path, its errors named) behind a fast path
    for the usual call (sizes as ints; no ``requires_grad``), which checks each argument once and calls the kernel."""
    fill = () if kind == "empty" else (value,)

    @functools.wraps(slow)
    def make(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        if not (kwargs or requires_grad):
            # _run's checks, _shape_of's usual cases and _made inlined: at ~1 us a call, each frame counts
            shape = size[0] if len(size) == 1 and type(size[0]) is tuple else size  # (zeros((2, 3)) or zeros(2, 3))
            for n in shape:
                if type(n) is not int or n < 0:
                    shape = _shape_of(size)
                    break
            dt = _default_float[0] if dtype is None else dtype
            dev = current_device() if device is None else device
            if (shape is not None and type(dt) is DType and type(dev) is _device_cls and dt in dev._dtypes
                    and (k := dev._kernels.get(kind)) is not None):  # type: ignore[union-attr]
                try:
                    data = k(shape, *fill, dt)
                except Exception:  # (the checked path runs it again and reports the error in its own words)
                    data = None
                if data is not None:
                    t = _new_object(Tensor)
                    t._data = data
                    t._dtype = dt
                    t._device = dev
                    t._rg = False
                    t._vc = [0]
                    t.grad_fn = t._grad = t._base = t._hooks = t._retains = t._view = None
                    return t
        return slow(*size, dtype=dtype, device=device, requires_grad=requires_grad, **kwargs)
    return make


def _full(slow: Any) -> Any:
    """The public ``full``: ``slow`` behind a fast path as :func:`_filled`'s (a number as the fill value)."""
    @functools.wraps(slow)
    def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
        if not requires_grad:
            dt = dtype
            if dt is None:
                dt = _FILL_DTYPES.get(type(fill_value))
                if dt is float:  # (the default float dtype; a dtype=float given by the caller is refused below)
                    dt = _default_float[0]
            shape = _shape_of((size,))
            dev = current_device() if device is None else device
            if (shape is not None and type(dt) is DType and type(dev) is _device_cls and dt in dev._dtypes
                    and (k := dev._kernels.get("full")) is not None):  # type: ignore[union-attr]
                try:  # (_made inlined)
                    data = k(shape, fill_value, dt)
                except Exception:  # (the checked path runs it again and reports the error in its own words)
                    data = None
                if data is not None:
                    t = _new_object(Tensor)
                    t._data = data
                    t._dtype = dt
                    t._device = dev
                    t._rg = False
                    t._vc = [0]
                    t.grad_fn = t._grad = t._base = t._hooks = t._retains = t._view = None
                    return t
        return slow(size, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)
    return full


def _arange(slow: Any) -> Any:
    """The public ``arange``: ``slow`` behind a fast path for Python ints (no dtype, no ``requires_grad``)."""
    @functools.wraps(slow)
    def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
        if end is None:
            first, last = 0, start
        else:
            first, last = start, end
        if (dtype is None and not requires_grad and type(first) is int and type(last) is int and type(step) is int
                and step and (last - first) * step >= 0):
            dev = current_device() if device is None else device
            data = _run("arange", dev, int64, (first, last, step, int64))
            if data is not None:
                return _wrap(data, int64, dev)
        return slow(start, end, step, dtype=dtype, device=device, requires_grad=requires_grad)
    return arange


#: NumPy's dtype of each ferro dtype ``tensor``'s fast path made (filled on first use: NumPy loads with the first op)
_NP_DTYPES: dict[Any, Any] = {}
#: NumPy's ``asarray``, once NumPy is loaded
_asarray: list[Any] = []


def _tensor(slow: Any) -> Any:
    """The public ``tensor``: ``slow`` behind a fast path for a list of Python numbers (floats, ints or bools;
    no dtype, no ``requires_grad``): one NumPy conversion, the dtype by its kind, as :func:`_host.infer`'s."""
    @functools.wraps(slow)
    def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
        if type(data) is list and dtype is None and not requires_grad:
            dev = current_device() if device is None else device
            if type(dev) is _device_cls and dev._backend is not None and _asarray:
                try:
                    arr = _asarray[0](data)
                except (TypeError, ValueError):  # (ragged, tensors on a device: the checked path says why)
                    arr = None
                kind = None if arr is None else arr.dtype.kind
                d = _default_float[0] if kind == "f" else int64 if kind == "i" else bool_ if kind == "b" else None
                if d is not None and d in dev._dtypes and (want := _NP_DTYPES.get(d)) is not None:
                    if arr.dtype != want:
                        arr = arr.astype(want)
                    t = _new_object(Tensor)
                    t._data, t._dtype, t._device, t._rg, t.grad_fn, t._vc = (
                        dev._backend.from_numpy(arr, dev.index), d, dev, False, None, [0])
                    t._grad = t._base = t._hooks = t._retains = t._view = None
                    return t
        r = slow(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if not _asarray and type(data) is list:  # NumPy is loaded now: the fast path's tools
            np = _host.np()
            _asarray.append(np.asarray)
            _NP_DTYPES.update((d, np.dtype(d.name)) for d in (_dtypes.float16, _dtypes.float32, _dtypes.float64,
                                                              int64, bool_))
        return r
    return tensor


#: full's dtype for a fill value of each Python type (``float``: the default float dtype, read at the call)
_FILL_DTYPES: dict[type, Any] = {bool: bool_, int: int64, float: float}

zeros = _filled(zeros, "full", 0)
ones = _filled(ones, "full", 1)
empty = _filled(empty, "empty", None)
full = _full(full)
tensor = _tensor(tensor)
arange = _arange(arange)

#: ``Tensor.new_tensor``, ``new_zeros``, ``new_ones``, ``new_empty``, ``new_full``, as PyTorch's.
NEW_METHODS: dict[str, Any] = {f"new_{n}": names_errors(f"new_{n}", _new(globals()[n]))
                               for n in ("tensor", "zeros", "ones", "empty", "full")}
