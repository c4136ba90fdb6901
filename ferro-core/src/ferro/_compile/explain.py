"""``ferro.compile.explain(fn, *args)``: run ``fn`` once under the tracer and say what was captured and
where and why capture broke (as ``torch._dynamo.explain``). The call runs for real: a training step steps."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from . import guards
from .api import CompiledFunction
from .graph import Host
from .trace import Tracer

__all__ = ["ExplainOutput", "explain"]


@dataclass
class ExplainOutput:
    """What one traced call gave: the graph count, the breaks (reason, ``file:line: source``), the kernel
    calls captured, the ops they came from (by name, with their count), and the host calls kept."""

    graph_count: int
    graph_break_count: int
    break_reasons: list[tuple[str, str]] = field(default_factory=list)
    kernel_calls: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    host_calls: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"graphs: {self.graph_count}, graph breaks: {self.graph_break_count}, "
                 f"kernel calls captured: {self.kernel_calls}"]
        for reason, where in self.break_reasons:
            lines.append(f"  break: {reason}\n    at {where}")
        if self.ops:
            lines.append("  ops: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.ops.items())))
        if self.host_calls:
            lines.append("  rerun in Python at each replay: " + ", ".join(self.host_calls))
        return "\n".join(lines)


def explain(fn: Any, *args: Any, **kwargs: Any) -> ExplainOutput:
    """Trace one call of ``fn`` (a function, a Module, or a compiled one) and report it."""
    if isinstance(fn, CompiledFunction):
        fn = fn.fn
    elif isinstance(getattr(fn, "forward", None), CompiledFunction):
        fn = fn.forward.fn
    tracer = Tracer()
    tensors: list[Any] = []
    guards.key(args, kwargs, tensors)
    for t in tensors:
        tracer.add_input(t)
    tracer.install()
    try:
        fn(*args, **kwargs)
    finally:
        tracer.uninstall()
    calls = tracer.graph.calls()
    breaks = [tracer.broken] if tracer.broken else []
    return ExplainOutput(graph_count=0 if breaks else 1, graph_break_count=len(breaks), break_reasons=breaks,
                         kernel_calls=len(calls), ops=dict(Counter(c.op or c.name for c in calls)),
                         host_calls=[getattr(n.fn, "__qualname__", repr(n.fn)) for n in tracer.graph.nodes
                                     if isinstance(n, Host)])
