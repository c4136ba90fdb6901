"""``ferro.amp.autocast``: mixed precision as a dispatch layer, with PyTorch's op policy.

Inside ``with ferro.autocast("cpu"):``, the ops of the policy (``_core.autocast_policy``) run on that
device type in another dtype: matmuls and convolutions in bfloat16 (cpu) or float16 (accelerators),
reductions, norms and losses in float32. The casts are ordinary ``to(dtype)`` calls, recorded by autograd,
so gradients come back in each parameter's own dtype. Every backend obeys the same table: the layer
(``_core.modes``) decides dtypes before any kernel is chosen.

The state is per thread and per device type, as PyTorch's: a region sets the dtype of its device type
and restores what was there on exit, so regions nest (``enabled=False`` inside switches autocast off).
Casts of a parameter (a leaf that requires grad) to the lower dtype are kept while the outermost region
lasts, so a weight used by several matmuls is cast once per step.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .._api import Tensor, bfloat16, float16, float32, float64
from .._core import modes
from .._core.dtypes import DType, as_dtype
from .._ops.conversion import cast as _to_dtype  # Tensor.to's dtype step, without its argument parsing

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "LOWER_DTYPES", "STATE_FUNCTIONS"]

F = TypeVar("F", bound=Callable[..., Any])

#: The dtype a region uses when none is given: bfloat16 on the CPU (PyTorch's default), float16 elsewhere.
_DEFAULT = {"cpu": bfloat16}
#: The dtypes autocast may run lower-precision ops in.
LOWER_DTYPES = (bfloat16, float16)


class _State(threading.local):
    def __init__(self) -> None:
        self.dtypes: dict[str, DType] = {}  # device type -> autocast dtype, for the enabled device types
        self.depth = 0  # regions entered and not left
        self.cache: dict[int, tuple[Tensor, Tensor]] = {}  # id(parameter) -> (parameter, its cast)
        self.caching = True
        self.fast: dict[str, DType] = {}  # device type -> the dtype set_autocast_dtype gave
        self.last: tuple[Any, tuple[Any, ...], Any] | None = None  # (op, args, category) of the call handled


_state = _State()


def is_autocast_enabled(device_type: str = "cpu") -> bool:
    """Whether autocast is on for ``device_type`` on this thread."""
    return device_type in _state.dtypes


def get_autocast_dtype(device_type: str = "cpu") -> DType:
    """The dtype autocast uses on ``device_type`` (its default when no region sets one)."""
    return _state.dtypes.get(device_type) or _state.fast.get(device_type) or _DEFAULT.get(device_type, float16)


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turn autocast on or off for ``device_type`` on this thread, outside any region (what entering an
    ``autocast`` region does; the region restores its own state on exit)."""
    was_on = bool(_state.dtypes)
    if enabled:
        _state.dtypes[device_type] = get_autocast_dtype(device_type)
    else:
        _state.dtypes.pop(device_type, None)
    _sync_layer(was_on, bool(_state.dtypes))


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """The lower dtype autocast uses on ``device_type`` (bfloat16 or float16), now and when turned on."""
    dt = as_dtype(dtype, "set_autocast_dtype")
    if dt not in LOWER_DTYPES:
        raise ValueError(f"set_autocast_dtype(): dtype must be ferro.bfloat16 or ferro.float16, got {dt}")
    _state.fast[device_type] = dt
    if device_type in _state.dtypes:
        _state.dtypes[device_type] = dt


def is_autocast_cache_enabled() -> bool:
    """Whether autocast keeps the casts of parameters while a region lasts."""
    return _state.caching


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Keep (or stop keeping) the casts of parameters while autocast regions last."""
    _state.caching = bool(enabled)
    if not enabled:
        _state.cache.clear()


class _Layer(modes.Mode):
    """The autocast layer: casts an op's floating tensors by its category under the active policy.

    It runs on every call of an op of the policy inside a region, so its steps are written out plainly:
    one pass over the arguments to find the device, one to cast."""

    layer = "autocast"

    def wants(self, op: Any) -> bool:
        categories = op.autocast
        if categories is None:
            return False
        for t in _state.dtypes:
            if categories.get("cpu" if t == "cpu" else "gpu"):
                return True
        return False

    def sees_inside(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        last = _state.last  # the call handle() just saw (the dispatcher asks right after it)
        if last is not None and last[0] is op and last[1] is args:
            return last[2] is None
        return _category(op, args, kwargs) is None

    def handle(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]) -> Any:
        found = _category(op, args, kwargs)
        if found is None:
            return proceed(args, kwargs)
        how, dev_type = found
        if how == "lower":
            target = _state.dtypes[dev_type]
        elif how == "float32":
            target = float32
        else:
            dts = [t._dtype for t in _tensors(args, kwargs) if t._dtype.is_floating_point]
            if not dts:
                return proceed(args, kwargs)
            target = max(dts, key=lambda d: d.itemsize)
        new = tuple(_cast(v, how, target, dev_type) if isinstance(v, Tensor)
                    else _cast_all(v, how, target, dev_type) if isinstance(v, (list, tuple)) else v for v in args)
        if kwargs:
            kwargs = {k: _cast(v, how, target, dev_type) if isinstance(v, Tensor)
                      else _cast_all(v, how, target, dev_type) if isinstance(v, (list, tuple)) else v
                      for k, v in kwargs.items()}
        _state.last = (op, args, found)
        try:
            return proceed(new, kwargs)
        finally:
            _state.last = None


def _category(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """How autocast treats this call (category, device type), or None: it leaves the call alone."""
    categories = op.autocast
    if categories is None:
        return None
    dev = _first_device(args, kwargs)
    if dev is None:
        return None
    dev_type = dev.type
    if dev_type not in _state.dtypes:
        return None
    how = categories.get("cpu" if dev_type == "cpu" else "gpu")
    return None if how is None else (how, dev_type)

_LAYER = _Layer()


def _cast(t: Tensor, how: str, target: DType, dev_type: str) -> Tensor:
    dt = t._dtype
    if t._device.type != dev_type or not dt.is_floating_point or dt is float64 or dt is target:
        return t
    if how == "float32" and dt not in LOWER_DTYPES:
        return t
    if how == "lower" and _state.caching and t.grad_fn is None and t._rg:
        hit = _state.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1]._dtype is target:
            return hit[1]
        out = _to_dtype(t, target)
        _state.cache[id(t)] = (t, out)
        return out
    return _to_dtype(t, target)


def _cast_all(value: Any, how: str, target: DType, dev_type: str) -> Any:
    """A list or tuple with its tensors (at any depth) cast by :func:`_cast`; the same object if it has none."""
    if not any(isinstance(v, (Tensor, list, tuple)) for v in value):
        return value
    return type(value)(_cast(v, how, target, dev_type) if isinstance(v, Tensor)
                       else _cast_all(v, how, target, dev_type) if isinstance(v, (list, tuple)) else v for v in value)


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Tensor]:
    out: list[Tensor] = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(t for t in v if isinstance(t, Tensor))
    return out


def _first_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    for v in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(v, Tensor):
            return v._device
        if isinstance(v, (list, tuple)):
            for t in v:
                if isinstance(t, Tensor):
                    return t._device
    return None


class autocast:  # noqa: N801  (spelled as PyTorch spells it)
    """Run the ops of autocast's policy in mixed precision on ``device_type``, as ``torch.autocast``.

    >>> import ferro
    >>> w = ferro.randn(8, 8, requires_grad=True)
    >>> with ferro.autocast("cpu"):
    ...     y = ferro.randn(4, 8) @ w
    >>> y.dtype
    ferro.bfloat16

    Usable as a context manager and as a decorator; ``dtype`` defaults to bfloat16 on cpu and float16 on
    other device types; ``enabled=False`` turns autocast off inside an enclosing region; ``cache_enabled``
    keeps the casts of parameters for the region.
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise TypeError(f"autocast(): argument 'device_type' must be a string such as 'cpu', 'cuda' or "
                            f"'opencl', not {type(device_type).__name__}")
        self.device_type = device_type.partition(":")[0]
        self.fast_dtype = as_dtype(dtype, "autocast") if dtype is not None else get_autocast_dtype(self.device_type)
        if enabled and self.fast_dtype not in LOWER_DTYPES:
            raise ValueError(f"autocast(): dtype must be ferro.bfloat16 or ferro.float16, got {self.fast_dtype}")
        self.enabled = bool(enabled)
        self.cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        self._saved: list[tuple[DType | None, bool]] = []

    def __enter__(self) -> autocast:
        st = _state
        was_on = bool(st.dtypes)
        self._saved.append((st.dtypes.get(self.device_type), st.caching))
        if self.enabled:
            st.dtypes[self.device_type] = self.fast_dtype
        else:
            st.dtypes.pop(self.device_type, None)
        st.caching = st.caching and self.cache_enabled
        st.depth += 1
        _sync_layer(was_on, bool(st.dtypes))
        return self

    def __exit__(self, *exc: Any) -> None:
        st = _state
        was_on = bool(st.dtypes)
        previous, st.caching = self._saved.pop()
        if previous is None:
            st.dtypes.pop(self.device_type, None)
        else:
            st.dtypes[self.device_type] = previous
        st.depth -= 1
        if st.depth == 0:
            st.cache.clear()
        _sync_layer(was_on, bool(st.dtypes))

    def __call__(self, fn: F) -> F:
        """Use as a decorator: ``fn`` runs inside this region."""
        @functools.wraps(fn)
        def inside(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self.enabled, self.cache_enabled):
                return fn(*args, **kwargs)
        return inside  # type: ignore[return-value]


def _sync_layer(was_on: bool, now_on: bool) -> None:
    """The autocast layer is on the thread's stack while some device type has autocast on."""
    if now_on and not was_on:
        modes.push(_LAYER)
    elif was_on and not now_on:
        modes.pop(_LAYER)


#: The functions of autocast's state that ``ferro`` offers at its top level, as ``torch`` does.
STATE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    f.__name__: f for f in (is_autocast_enabled, get_autocast_dtype, set_autocast_enabled, set_autocast_dtype,
                            is_autocast_cache_enabled, set_autocast_cache_enabled)}
