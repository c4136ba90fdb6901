"""The tracing layer: run a function once, recording every kernel call its ops make into a :class:`Graph`.

Recording happens where ops meet the backend: while tracing, each bound device's kernel tables
(``_ops``, ``_kernels``, ``_checked``; the hot path's ``_fast`` follows) hand out recording wrappers of
their kernels, so the graph holds the very kernels eager execution ran (replay is bitwise eager). The
dispatcher's ``trace`` layer (:class:`TraceMode`) sees every op, inner ones included: it names the tensors
the function reaches without receiving them (parameters, gradients, buffers), which replay reads afresh,
and it tells :mod:`.explain` which op and which line of user code each kernel call came from.

What cannot be replayed ends the capture: a host read of a tensor's values (``.item()``, ``bool(t)``,
printing, ``.numpy()``, ``.tolist()``), and kernels whose result's shape depends on values (``nonzero``,
``unique``). The call then finishes eagerly and the break is remembered (or raised, with ``fullgraph``).
An optimizer's or LR scheduler's ``step`` is kept as a :class:`~.graph.Host` node: Python reruns it at
each replay (its hyperparameters and step counts are Python numbers that change from call to call); so is
``zero_grad`` (of an optimizer or a module), whose effect is on Python state (gradients set to None).
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import threading
from types import FrameType
from typing import Any

from .._core import modes
from .._core.dtypes import by_name
from .._core.layouts import LayoutTensor
from .._core.tensor import Tensor
from ..nn.modules.module import Module
from ..optim._lr_base import LRScheduler
from ..optim.optimizer import Optimizer
from .graph import Call, Check, Graph, Host, Sync, V

__all__ = ["GraphBreak", "TraceMode", "Tracer", "arraylike", "tracing", "user_line"]

_FERRO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Kernels whose result's shape depends on the values: what follows them cannot be replayed.
VALUE_SHAPED = frozenset({"nonzero", "unique", "bincount"})
#: What user code called when a host read happened, by the function of ferro's that read.
#: ferro's argument checks that read values on the host only to raise an error (embedding's refusal of negative
#: indices on the CPU): they run at capture and are not repeated at replay; not graph breaks.
_CHECKS = frozenset({"refuse_negative"})
_HOST_READS = {"item": ".item()", "__bool__": "bool(tensor) (Python control flow on a tensor's value)",
               "tolist": ".tolist()", "numpy": ".numpy()", "__array__": "numpy.asarray(tensor)",
               "format_tensor": "printing a tensor (repr)", "__float__": "float(tensor)", "__int__": "int(tensor)",
               "__index__": "using a tensor as an index", "__format__": "formatting a tensor"}


_active = threading.local()


def tracing() -> bool:
    """Whether a capture is running on this thread."""
    return getattr(_active, "tracer", None) is not None


class GraphBreak(RuntimeError):
    """What ``ferro.compile(..., fullgraph=True)`` raises where a function cannot be captured whole."""


def user_line() -> str:
    """``file:line: source`` of the innermost frame of the caller's stack outside ferro."""
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_FERRO_DIR):
        f = f.f_back
    if f is None:
        return "<unknown>"
    import linecache
    src = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"{f.f_code.co_filename}:{f.f_lineno}: {src}"


def _host_read() -> str | None:
    """What the user's code did that read values on the host (the outermost of ferro's functions that did), or
    None for one of ferro's argument checks."""
    found = "reading a tensor's values on the host"
    f: FrameType | None = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_FERRO_DIR):
        if f.f_code.co_name in _CHECKS:
            return None
        found = _HOST_READS.get(f.f_code.co_name, found)
        f = f.f_back
    return found


def _family(cls: type) -> list[type]:
    """``cls`` and its subclasses (each defining its own ``step`` is a host call too: LBFGS, CyclicLR...)."""
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        if c not in out:
            out.append(c)
            todo.extend(c.__subclasses__())
    return out


def arraylike(x: Any) -> bool:
    """Whether ``x`` is a native array (of any backend)."""
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, (int, float, complex, bool, Tensor))


class TraceMode(modes.Mode):
    """The dispatcher's ``trace`` layer: shows the tracer every op call, inner ones included."""

    layer = "trace"
    inner = True

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.depth = 0

    def handle(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], proceed: Any) -> Any:
        tr = self.tracer
        if tr.recording():
            tr.see_all(args)
            tr.see_all(kwargs)
        if self.depth == 0:
            tr.op, tr.where = op.name, (user_line() if tr.recording() else "")
        self.depth += 1
        try:
            return proceed(args, kwargs)
        finally:
            self.depth -= 1
            if self.depth == 0:
                tr.op = ""


class _Recording(dict):  # type: ignore[type-arg]
    """A device's kernel table while tracing: the same entries, their kernels wrapped by the tracer."""

    def __init__(self, table: dict[str, Any], wrap: Any) -> None:
        super().__init__(table)
        self.wrap = wrap

    def __getitem__(self, name: str) -> Any:
        return self.wrap(name, dict.__getitem__(self, name))

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        v = dict.get(self, name)
        return default if v is None else self.wrap(name, v)


class Tracer:
    """One capture: install it, run the function, uninstall it; the graph is in :attr:`graph`."""

    def __init__(self, fullgraph: bool = False) -> None:
        self.graph = Graph()
        self.fullgraph = fullgraph
        self.ids: dict[int, int] = {}  # id(native array) -> value
        self.keep: list[Any] = []  # every array numbered, alive while tracing, so that ids stay unique
        self.params: dict[int, Tensor] = {}  # leaves that require grad: their .grad is written back
        self.grad_owner: dict[int, Tensor] = {}  # id(grad tensor) -> its leaf
        self.synced: dict[tuple[int, str], Any] = {}
        self.params_written = False  # some gradient or parameter is written back (a backward ran inside)
        self.thread = threading.get_ident()
        self.paused = 0
        self.in_kernel = False
        self.broken: tuple[str, str] | None = None
        self.op = self.where = ""
        self.mode = TraceMode(self)
        self._wrapped: dict[tuple[int, Any], Any] = {}
        self._shapes: dict[int, Any] = {}
        self._arrays: dict[int, Any] = {}  # value -> its array as captured (copy elision reads their layout)
        self._live: dict[int, Tensor] | None = None  # id(array) -> live tensor holding it, made on first need
        self._undo: list[Any] = []

    # -- state ----------------------------------------------------------------------------------

    def recording(self) -> bool:
        """Whether kernel calls on this thread are being recorded now."""
        return (self.broken is None and not self.paused and not self.in_kernel
                and threading.get_ident() == self.thread)

    def number(self, arr: Any, source: tuple[Any, ...]) -> int:
        """Number ``arr`` as a new value."""
        n = self.graph.new_value(source)
        self.ids[id(arr)] = n
        self.keep.append(arr)
        self._shapes[n] = (tuple(arr.shape), by_name.get(getattr(arr.dtype, "name", str(arr.dtype))))
        self._arrays[n] = arr
        return n

    def add_input(self, t: Tensor) -> None:
        """Number an argument tensor's data as the next input."""
        if id(t._data) not in self.ids:
            self.number(t._data, ("in", self.graph.n_inputs))
        self.graph.n_inputs += 1

    def see(self, t: Tensor) -> None:
        """A tensor reached by an op: name its data (and a leaf's gradient) if the graph does not know it."""
        if t.grad_fn is None and t._rg and id(t) not in self.params:
            self.params[id(t)] = t
            g = t._grad
            self.graph.nodes.append(Check(t, g is None))
            if g is not None:
                self.grad_owner[id(g)] = t
                if id(g._data) not in self.ids:
                    self.number(g._data, ("ext", t, "grad"))
        if id(t._data) not in self.ids:
            owner = self.grad_owner.get(id(t))
            self.number(t._data, ("ext", owner, "grad") if owner is not None else ("ext", t, "data"))

    def see_all(self, x: Any) -> None:
        """:meth:`see` every tensor in ``x`` (nested in tuples, lists and dicts)."""
        if isinstance(x, Tensor):
            self.see(x)
        elif type(x) in (tuple, list):
            for y in x:
                self.see_all(y)
        elif type(x) is dict:
            for y in x.values():
                self.see_all(y)

    def encode(self, x: Any) -> Any:
        """A kernel argument with the arrays the graph knows replaced by values."""
        n = self.ids.get(id(x))
        if n is not None:
            return V(n)
        if type(x) is tuple or type(x) is list:
            enc = [self.encode(y) for y in x]
            return enc if type(x) is list else tuple(enc)
        if arraylike(x):
            found = self._owner(x)
            if found is not None:
                return V(self.ids[id(x)])
            self.keep.append(x)  # made outside the trace and held by no tensor: a constant, kept alive
        return x

    def _owner(self, arr: Any) -> Tensor | None:
        """The live tensor holding ``arr`` as its data or gradient's data, numbered as an external (kernels
        reached without an op, as inside an ``autograd.Function``, pass tensors the layer never saw)."""
        if self._live is None:
            self._live = {}
            for obj in gc.get_objects():
                # type(), not isinstance(): no attribute of the object is read (a dead weak proxy raises)
                if issubclass(type(obj), Tensor) and getattr(obj, "_data", None) is not None:
                    best = self._live.get(id(obj._data))
                    if best is None or (obj._rg and obj.grad_fn is None):  # a parameter over its aliases
                        self._live[id(obj._data)] = obj
                    g = getattr(obj, "_grad", None)  # (a sparse tensor leaves the slot unset)
                    if g is not None and obj.grad_fn is None:
                        self._live[id(g._data)] = obj
        t = self._live.get(id(arr))
        if t is None:
            return None
        if t._data is arr:
            self.see(t)
        elif t._grad is not None and t._grad._data is arr:
            self.see(t)
            if id(arr) not in self.ids:
                self.number(arr, ("ext", t, "grad"))
        else:
            return None
        return t if id(arr) in self.ids else None

    def _outputs(self, out: Any) -> Any:
        if arraylike(out):
            return self.number(out, ("call",))
        if isinstance(out, (tuple, list)):
            return tuple(self.number(o, ("call",)) if arraylike(o) else None for o in out)
        return None

    def record(self, name: str, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
               device: Any = None) -> None:
        """Add one kernel call (of ``device``'s tables) to the graph."""
        enc = self.encode(args)
        kw = {k: self.encode(v) for k, v in kwargs.items()}
        outs = self._outputs(out)
        self.graph.nodes.append(Call(name, kernel, enc, kw, outs, self.op, self.where, device))

    def break_(self, reason: str) -> None:
        """The capture cannot go on: raise (``fullgraph``) or finish the call eagerly and remember why."""
        where = user_line()
        if self.fullgraph:
            raise GraphBreak(f"ferro.compile(fullgraph=True): graph break at {where}: {reason}; "
                             "the function must be captured whole (see ferro.compile.explain)")
        self.broken = (reason, where)

    def sync(self) -> None:
        """Record the gradients and data of the leaves as they are now (before a host call, at the end)."""
        writes = []
        for p in self.params.values():
            for attr in ("grad", "data"):
                if attr == "grad":
                    g = p._grad
                    if isinstance(g, LayoutTensor):
                        self.break_(f"a {g.describes} gradient (nn.Embedding(sparse=True)) is not replayed")
                        return
                    arr, dt, dev = (None, None, None) if g is None else (g._data, g._dtype, g._device)
                else:
                    arr, dt, dev = p._data, p._dtype, p._device
                n = None if arr is None else self.ids.get(id(arr))
                if arr is not None and (n is None or self.graph.sources[n] == ("ext", p, attr)):
                    continue  # unchanged (or made where the graph cannot see: left as it is)
                key = (id(p), attr)
                if self.synced.get(key, "unset") == n:
                    continue
                self.synced[key] = n
                writes.append((p, attr, n, dt, dev))
                self.params_written = True
        if writes:
            self.graph.nodes.append(Sync(writes))

    # -- installing -----------------------------------------------------------------------------

    def _wrap(self, dev: Any, name: str, entry: Any) -> Any:
        if isinstance(entry, tuple):  # (kernel or kernels, dtype table[, check])
            k = entry[0]
            if isinstance(k, tuple):  # a fused op's kernels (forward, backward...)
                k = tuple(self._kernel(dev, name, x) if callable(x) else x for x in k)
            elif callable(k):
                k = self._kernel(dev, name, k)
            return (k, *entry[1:])
        return self._kernel(dev, name, entry) if callable(entry) else entry

    def _kernel(self, dev: Any, name: str, k: Any) -> Any:
        w = self._wrapped.get((id(k), dev))
        if w is not None:
            return w
        tracer = self

        def recorded(*args: Any, **kwargs: Any) -> Any:
            if not tracer.recording():
                return k(*args, **kwargs)
            if name in VALUE_SHAPED:
                tracer.break_(f"'{name}' gives a result whose shape depends on the values")
                return k(*args, **kwargs)
            tracer.in_kernel = True
            try:
                out = k(*args, **kwargs)
            finally:
                tracer.in_kernel = False
            tracer.record(name, k, args, kwargs, out, dev)
            return out
        self._wrapped[(id(k), dev)] = recorded
        self.keep.append(k)
        return recorded

    def _patch(self, obj: Any, attr: str, value: Any) -> None:
        had = attr in vars(obj)
        self._undo.append((obj, attr, vars(obj)[attr] if had else None, had))
        setattr(obj, attr, value)

    def install(self) -> None:
        """Start recording on this thread."""
        try:
            for dev in list(modes._devices):
                if dev._ops is None:
                    continue
                for attr in ("_ops", "_kernels", "_checked"):
                    table = getattr(dev, attr)
                    self._undo.append((dev, attr, table, True))
                    setattr(dev, attr, _Recording(table, functools.partial(self._wrap, dev)))
                modes.bind_fast(dev)
                backend = dev._backend
                if backend is not None and "to_numpy" not in vars(backend):
                    self._patch(backend, "to_numpy", self._host_reader(backend.to_numpy))
            for base, name in ((Optimizer, "step"), (LRScheduler, "step"), (Optimizer, "zero_grad"),
                               (Module, "zero_grad")):
                for cls in _family(base):
                    if name in vars(cls):
                        self._patch(cls, name, self._host_step(vars(cls)[name]))
            modes.push(self.mode)
            _active.tracer = self
        except BaseException:
            self.uninstall()
            raise

    def uninstall(self) -> None:
        """Stop recording; every table and method is as it was."""
        _active.tracer = None
        if self.mode in modes.active():
            modes.pop(self.mode)
        for obj, attr, old, had in reversed(self._undo):
            if had:
                setattr(obj, attr, old)
            else:
                delattr(obj, attr)
        self._undo.clear()
        for dev in list(modes._devices):
            if dev._ops is not None:
                modes.bind_fast(dev)

    def _host_reader(self, to_numpy: Any) -> Any:
        tracer = self

        def read(*args: Any, **kwargs: Any) -> Any:
            if tracer.recording() and (what := _host_read()) is not None:
                tracer.break_(f"{what} reads a tensor's values on the host")
            return to_numpy(*args, **kwargs)
        return read

    def _host_step(self, step: Any) -> Any:
        tracer = self

        def host_step(obj: Any, *args: Any, **kwargs: Any) -> Any:
            if not tracer.recording():
                return step(obj, *args, **kwargs)
            tracer.sync()
            tracer.graph.nodes.append(Host(step.__get__(obj), args, kwargs))
            tracer.paused += 1
            try:
                return step(obj, *args, **kwargs)
            finally:
                tracer.paused -= 1
        return host_step

    def finish(self, result: Any) -> None:
        """Record the final state and what the function returned."""
        self.sync()
        self.graph.output = self._out(result)

    def release(self) -> None:
        """Drop the arrays held for the capture (a capture's references would keep a backend from seeing that
        nothing else holds an array)."""
        self.keep.clear()
        self.ids.clear()
        self._arrays = {}
        self._live = None

    def shapes(self) -> dict[int, Any]:
        """Each value's ``(shape, ferro dtype or None)`` as captured."""
        return self._shapes

    def arrays(self) -> dict[int, Any]:
        """Each value's array as captured."""
        return self._arrays

    def _out(self, x: Any) -> Any:
        if isinstance(x, Tensor):
            n = self.ids.get(id(x._data))
            if n is None or self.graph.sources[n][0] == "ext":
                return ("same", x)
            return ("tensor", V(n), x._dtype, x._device)
        if type(x) in (tuple, list):
            return (type(x).__name__, [self._out(y) for y in x])
        if type(x) is dict:
            return ("dict", {k: self._out(v) for k, v in x.items()})
        return ("same", x)
