"""``ferro.compile``'s compiled function: a cache of captured graphs keyed by guards, warm-up, capture, replay.

A call whose guards (:mod:`.guards`) are new runs eagerly once (the warm-up: an optimizer makes its state
and a model its first gradients on the first step, which later steps do not repeat); the next call with
the same guards runs under the tracer (:mod:`.trace`) and builds the replay (:mod:`.passes`,
:mod:`.replay`); later calls replay. A call whose capture broke runs eagerly from then on.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._core.tensor import Tensor
from ..nn.modules.module import Module
from . import guards
from .graph import Graph
from .passes import optimize
from .replay import GuardFailed, generate
from .trace import Tracer, tracing

__all__ = ["CompiledFunction", "MODES", "compile_callable"]

#: mode -> whether elementwise chains are fused (the other passes always run; without fusion, replay runs the
#: kernels eager execution ran, so results are bitwise eager).
MODES = {"default": False, "reduce-overhead": False, "max-fusion": True, "max-autotune": False,
         "max-autotune-no-cudagraphs": False}
#: How many guard sets one function keeps graphs for (``torch._dynamo.config.cache_size_limit``).
CACHE_SIZE_LIMIT = 8
#: How many graphs one guard key keeps for different states of the gradients (accumulating over calls).
STATE_VARIANTS = 4


@dataclass
class Entry:
    """What is known for one guard key."""

    calls: int = 0
    replays: list[Callable[[list[Any]], Any]] = field(default_factory=list)
    graphs: list[Graph] = field(default_factory=list)
    breaks: list[tuple[str, str]] = field(default_factory=list)
    eager: bool = False


class CompiledFunction:
    """``fn`` compiled: called as ``fn``; see the module's docstring for what a call does."""

    def __init__(self, fn: Callable[..., Any], *, fullgraph: bool = False, mode: str | None = None,
                 module: Any = None) -> None:
        self.fn = fn
        self.fullgraph = fullgraph
        self.mode = mode or "default"
        self.fuse = MODES[self.mode]
        self.module = module
        self.cache: dict[tuple[Any, ...], Entry] = {}
        self.captures = 0
        self._warned = False
        self._lock = threading.Lock()  # one replay at a time: a graph's planned buffers have one user
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if tracing():  # inside another capture: run eagerly, so that the outer graph records the kernels
            return self.fn(*args, **kwargs)
        tensors: list[Tensor] = []
        key = guards.key(args, kwargs, tensors)
        if self.module is not None:
            key += (self.module.training,)
        e = self.cache.get(key)
        if e is not None and e.replays:
            if not self._lock.acquire(blocking=False):  # a replay runs in another thread: its planned buffers
                return self.fn(*args, **kwargs)
            try:
                arrays = [t._data for t in tensors]
                for replay in e.replays:
                    try:
                        return replay(arrays)
                    except GuardFailed:  # state differs (a gradient there or not): the next graph, or capture
                        continue
            finally:
                self._lock.release()
            if len(e.replays) >= STATE_VARIANTS:
                return self.fn(*args, **kwargs)
        if e is None:
            if len(self.cache) >= CACHE_SIZE_LIMIT:
                if not self._warned:
                    self._warned = True
                    warnings.warn(f"ferro.compile: {getattr(self.fn, '__qualname__', self.fn)} hit the cache size "
                                  f"limit ({CACHE_SIZE_LIMIT} guard sets: shapes, dtypes, devices, arguments); new "
                                  "ones run eagerly", RuntimeWarning, stacklevel=2)
                return self.fn(*args, **kwargs)
            e = self.cache[key] = Entry()
        e.calls += 1
        if e.eager or e.calls == 1:
            return self.fn(*args, **kwargs)
        return self.capture(e, args, kwargs, tensors)

    def capture(self, e: Entry, args: tuple[Any, ...], kwargs: dict[str, Any], tensors: list[Tensor]) -> Any:
        """Run the call under the tracer and build the entry's replay (or mark it eager where it broke)."""
        tracer = Tracer(self.fullgraph)
        for t in tensors:
            tracer.add_input(t)
        self.captures += 1
        tracer.install()
        try:
            result = self.fn(*args, **kwargs)
        finally:
            tracer.uninstall()
        if tracer.broken is None:
            tracer.finish(result)
            if _requires_grad(result) and (self.module is not None or not tracer.params_written):
                tracer.broken = ("the result requires grad and no backward ran inside: its backward needs the eager "
                                 "graph (compile the whole training step instead)", "")
        if tracer.broken is not None:
            e.eager = True
            e.breaks.append(tracer.broken)
            return result
        graph, frees = optimize(tracer.graph, self.fuse, tracer.shapes() if self.fuse else None, tracer.arrays())
        tracer.release()
        e.graphs.append(graph)
        e.replays.append(generate(graph, frees))
        return result


def _requires_grad(x: Any) -> bool:
    if isinstance(x, Tensor):
        return x._rg
    if type(x) in (tuple, list):
        return any(_requires_grad(y) for y in x)
    if type(x) is dict:
        return any(_requires_grad(y) for y in x.values())
    return False


def compile_callable(model: Any, *, fullgraph: bool = False, mode: str | None = None) -> Any:
    """A function compiled, or a Module whose ``forward`` is compiled in place (returned itself)."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"compile(): unknown mode {mode!r}; the modes are {', '.join(MODES)}")
    if isinstance(model, Module):
        forward = model.forward
        if isinstance(forward, CompiledFunction):
            return model
        object.__setattr__(model, "forward", CompiledFunction(forward, fullgraph=fullgraph, mode=mode,
                                                              module=model))
        return model
    return CompiledFunction(model, fullgraph=fullgraph, mode=mode)
