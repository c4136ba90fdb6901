"""The dispatcher's layers: the mode stack that autocast, layouts, tracing and batching step into.

An op call passes through the layers active on the calling thread, outermost first in the fixed order of
:data:`ORDER`, then runs its own implementation (which records the autograd node and calls the kernel).
A layer is a :class:`Mode`: its :meth:`Mode.handle` sees the op's record and arguments and either answers
itself or passes (possibly changed) arguments on with ``proceed``. The implementation runs below every
layer: an op that calls other ops (a composite) calls them without the layers, unless a layer asks to
see them (:meth:`Mode.sees_inside`): a layout sees every op, autocast the insides of the ops it leaves alone.

Nothing of this costs anything while no layer is active anywhere:

- an elementwise op's hot path reads ``device._fast[name]``, which is the device's kernel table itself;
  while some thread has a layer active ("armed"), every bound device's ``_fast`` is an :class:`_Armed`
  view of it, which misses (into the op's slow path, which asks :func:`active`) for the ops a layer of
  the calling thread wants;
- every other op's public function is :func:`entry`'s wrapper, which also names errors after the op
  (see ``naming``); it reads one flag before calling the implementation.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from .naming import RENAMED, in_op, wrong_type

__all__ = ["ORDER", "Mode", "ARMED", "active", "push", "pop", "push_global", "pop_global", "entry", "run",
           "bind_fast", "layered", "numpy_keywords"]

#: The layers, outermost first: batching (vmap) sees the user's call, then autocast chooses dtypes,
#: then a layout (sparse, quantized) picks its kernels, and tracing records what finally runs.
ORDER: tuple[str, ...] = ("batch", "autocast", "layout", "trace")


class Mode:
    """One active layer. Subclasses set ``layer`` (one of :data:`ORDER`) and implement :meth:`handle`."""

    layer: str = ""
    #: Whether the layer also sees the ops an op's implementation calls (a layout must: a composite over
    #: sparse tensors calls ops on sparse tensors). See :meth:`sees_inside`.
    inner: bool = False

    def sees_inside(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether the layer stays active while ``op``'s implementation runs on ``args`` (default:
        :attr:`inner`).
        Autocast answers False for the ops it casts and True for the others, as PyTorch's, whose
        composites not on its lists run their insides under autocast."""
        return self.inner

    def wants(self, op: Any) -> bool:
        """Whether the layer handles ``op`` at all (default: every op). A layer that does not is skipped,
        and stays active inside the op: autocast wants only the ops of its policy."""
        return True

    def cares(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether the layer has anything to do with this call of an op it wants (default: yes). A layout
        answers no when none of the arguments is of its layout: the op then runs as if the layer were not
        there, which keeps dense ops cheap while a layout tensor lives."""
        return True

    def handle(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]) -> Any:
        """Run ``op`` on ``args``: return ``proceed(args, kwargs)``, with the arguments changed or not, or
        an answer of the layer's own."""
        return proceed(args, kwargs)


class _Stack(threading.local):
    def __init__(self) -> None:
        self.modes: tuple[Mode, ...] = ()


_stack = _Stack()
_lock = threading.Lock()
#: ``ARMED[0]``: the number of layers active over all threads (nonzero: op calls look at the stack).
ARMED: list[int] = [0]
#: Every device ever bound, so that arming reaches them (see :func:`bind_fast`).
_devices: list[Any] = []
#: The op records by name (``records.REGISTRY``, handed over by ``records`` when it loads).
_records: dict[str, Any] = {}
#: Layers active on every thread (a layout's, while tensors of that layout exist): see :func:`push_global`.
_globals: tuple[Mode, ...] = ()


def _ordered(modes: tuple[Mode, ...]) -> tuple[Mode, ...]:
    return tuple(sorted(modes, key=lambda m: ORDER.index(m.layer)))  # stable: a layer's newest stays inner


class _Armed(dict):  # type: ignore[type-arg]
    """A device's hot-path table while some thread has a layer active: the device's kernel table for the
    ops no layer of the calling thread wants, a miss (into the op's slow path, which asks the layers) for
    the others."""

    __slots__ = ("ops",)

    def __init__(self, ops: dict[str, Any]) -> None:
        super().__init__()
        self.ops = ops

    def __getitem__(self, name: str) -> Any:
        modes = active()
        if modes:
            op = _records.get(name)
            if op is None or any(m.wants(op) for m in modes):
                raise KeyError(name)
        return self.ops[name]


def active() -> tuple[Mode, ...]:
    """The layers active on this thread (its own and the global ones), outermost first."""
    modes = _stack.modes
    if not modes:
        return _globals
    if _globals:
        extra = tuple(g for g in _globals if g not in modes)
        if extra:
            return _ordered(modes + extra)
    return modes


def push(mode: Mode) -> None:
    """Activate ``mode`` on this thread (it takes its place in :data:`ORDER`; of one layer, the newest is
    inner, so nested autocast regions behave as PyTorch's)."""
    if mode.layer not in ORDER:
        raise ValueError(f"unknown dispatch layer {mode.layer!r}; the layers are {', '.join(ORDER)}")
    rank = ORDER.index(mode.layer)
    modes = _stack.modes
    i = len(modes)
    while i and ORDER.index(modes[i - 1].layer) > rank:
        i -= 1
    _stack.modes = (*modes[:i], mode, *modes[i:])
    with _lock:
        _arm(1)


def pop(mode: Mode) -> None:
    """Deactivate ``mode`` on this thread."""
    modes = _stack.modes
    if mode not in modes:
        raise RuntimeError(f"the {mode.layer} layer {mode!r} is not active on this thread")
    i = len(modes) - 1 - modes[::-1].index(mode)
    _stack.modes = modes[:i] + modes[i + 1:]
    with _lock:
        _arm(-1)


def push_global(mode: Mode) -> None:
    """Activate ``mode`` on every thread, present and future, until :func:`pop_global`. Only for layers that
    see inside every op (``inner``): a layout, whose tensors may reach any op on any thread."""
    global _globals
    if not mode.inner:
        raise ValueError("push_global(): only a layer that sees inside every op (inner = True) can be global")
    if mode.layer not in ORDER:
        raise ValueError(f"unknown dispatch layer {mode.layer!r}; the layers are {', '.join(ORDER)}")
    with _lock:
        _globals = _ordered((*_globals, mode))
        _arm(1)


def pop_global(mode: Mode) -> None:
    """Deactivate a layer activated by :func:`push_global`."""
    global _globals
    with _lock:
        if mode not in _globals:
            raise RuntimeError(f"the {mode.layer} layer {mode!r} is not globally active")
        _globals = tuple(m for m in _globals if m is not mode)
        _arm(-1)


def _arm(step: int) -> None:
    """Count a layer in or out (under ``_lock``); the first in and the last out switch every device's hot-path
    table."""
    ARMED[0] += step
    if ARMED[0] == step == 1:
        for dev in _devices:
            dev._fast = _Armed(dev._ops)
    elif ARMED[0] == 0:
        for dev in _devices:
            dev._fast = dev._ops


def bind_fast(dev: Any) -> None:
    """Point a newly bound device's hot-path table at its kernel table (or at nothing while armed)."""
    with _lock:
        if dev not in _devices:
            _devices.append(dev)
        dev._fast = _Armed(dev._ops) if ARMED[0] else dev._ops


def run(op: Any, impl: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call ``op`` (implemented by ``impl``) through the layers active on this thread that want it."""
    every = active()
    modes = tuple(m for m in every if m.wants(op) and m.cares(args, kwargs))
    if not modes:
        return impl(*args, **kwargs)

    def proceed_at(i: int) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
        def proceed(a: tuple[Any, ...], k: dict[str, Any]) -> Any:
            if i < len(modes):
                return modes[i].handle(op, a, k, proceed_at(i + 1))
            saved = _stack.modes
            _stack.modes = tuple(m for m in every if m not in modes or m.sees_inside(op, args, kwargs))
            try:
                return impl(*a, **k)
            finally:
                _stack.modes = saved
        return proceed
    return proceed_at(0)(args, kwargs)


def layered(op: Any, impl: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """For an elementwise op's slow path: ``impl(*args)`` through the layers, or None when no layer active
    on this thread wants the op (the caller then goes on as usual)."""
    modes = active()
    if not modes or not any(m.wants(op) and m.cares(args, {}) for m in modes):
        return None
    return run(op, impl, args, {})


#: NumPy's keyword -> PyTorch's, both accepted by PyTorch wherever it takes the latter (``x.mean(axis=0)``).
NUMPY_KEYWORDS = {"axis": "dim", "keepdims": "keepdim"}


def _numpy_keywords(op: Any, impl: Callable[..., Any]) -> tuple[tuple[str, str], ...]:
    """The (NumPy name, PyTorch name) pairs ``impl`` (or the decomposition it runs) takes under PyTorch's
    name only."""
    params: set[str] = set()
    for fn in (impl, getattr(op, "decomposition", None)):
        while hasattr(fn, "__wrapped__"):  # the function under its wrappers (functools.wraps) declares them
            fn = fn.__wrapped__
        code = getattr(fn, "__code__", None)
        if code is not None:
            params.update(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    return tuple((np_name, name) for np_name, name in NUMPY_KEYWORDS.items() if name in params
                 and np_name not in params)


def _renamed(label: str, kwargs: dict[str, Any], aliases: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    for np_name, name in aliases:
        if np_name in kwargs:
            if name in kwargs:
                raise TypeError(f"{label}(): got '{name}' and its alias '{np_name}'; pass one of them")
            kwargs[name] = kwargs.pop(np_name)
    return kwargs


def numpy_keywords(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a public function that is not an op's entry: ``max``, ``squeeze``...) taking ``axis=`` /
    ``keepdims=`` for its ``dim`` / ``keepdim``, as :func:`entry` does for the ops."""
    aliases = _numpy_keywords(None, fn)
    if not aliases:
        return fn

    np_names = frozenset(n for n, _ in aliases)

    @functools.wraps(fn)
    def accepting(*args: Any, **kwargs: Any) -> Any:
        if kwargs and not np_names.isdisjoint(kwargs):
            kwargs = _renamed(fn.__name__, kwargs, aliases)
        return fn(*args, **kwargs)
    return accepting


def entry(op: Any, impl: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """The public function of ``op``: ``impl`` through the active layers, its errors named after the op.

    ``axis=`` / ``keepdims=`` are accepted for ``dim`` / ``keepdim`` as PyTorch does. An error raised
    inside keeps its type and traceback, its message prefixed with the op's name; an
    argument of the wrong type that fails as an AttributeError inside (``'str' object has no attribute
    'ndim'``) is a TypeError naming the op and the argument.
    """
    label = name or op.name
    aliases = _numpy_keywords(op, impl)
    np_names = frozenset(n for n, _ in aliases)

    @functools.wraps(impl)
    def fn(*args: Any, **kwargs: Any) -> Any:
        if kwargs and not np_names.isdisjoint(kwargs):  # (one C call where no NumPy keyword was given)
            kwargs = _renamed(label, kwargs, aliases)
        try:
            if ARMED[0] and (_stack.modes or _globals):
                return run(op, impl, args, kwargs)
            return impl(*args, **kwargs)
        except RENAMED as e:
            in_op(label, e)
            raise
        except AttributeError as e:
            named = wrong_type(label, impl, e, args, kwargs)
            if named is None:
                raise
            raise named from e
    fn.__wrapped_op__ = op  # type: ignore[attr-defined]
    return fn
