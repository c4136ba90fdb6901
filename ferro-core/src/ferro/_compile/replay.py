"""Replay: a captured graph as one straight-line Python function over native arrays.

The function's body is the graph's kernel calls in order, each value a local variable, each kernel and
constant a global of the function: no dispatch, no tensors, no autograd nodes, only the kernels. It
reads the external arrays (parameters, gradients, buffers) from their tensors when called, writes the
tensors' new gradients and data back where the graph says (:class:`~.graph.Sync`), reruns the host
calls (:class:`~.graph.Host`), frees each value after its last use (:mod:`.passes.memory`) and returns
the function's result with new tensors around the arrays.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from .._core.tensor import _wrap
from .graph import Call, Check, Graph, Host, Sync, V, values_in

__all__ = ["GuardFailed", "generate"]


class GuardFailed(Exception):
    """The state the graph reads is not as it was when it was captured (a gradient gone): capture again."""


class _Source:
    def __init__(self) -> None:
        self.globals: dict[str, Any] = {"_wrap": _wrap, "GuardFailed": GuardFailed}
        self.names: dict[int, str] = {}
        self.lines: list[str] = []

    def const(self, obj: Any, prefix: str = "c") -> str:
        t = type(obj)
        if obj is None or t in (bool, int, str) or (t is float and math.isfinite(obj)):
            return repr(obj)
        name = self.names.get(id(obj))
        if name is None:
            name = self.names[id(obj)] = f"{prefix}{len(self.names)}"
            self.globals[name] = obj
        return name

    def expr(self, x: Any) -> str:
        if isinstance(x, V):
            return f"v{x.n}"
        if type(x) is tuple:
            return "(" + "".join(self.expr(y) + ", " for y in x) + ")"
        if type(x) is list:
            return "[" + ", ".join(self.expr(y) for y in x) + "]"
        return self.const(x)

    def output(self, out: Any) -> str:
        kind, *rest = out
        if kind == "tensor":
            v, dt, dev = rest
            return f"_wrap(v{v.n}, {self.const(dt, 'd')}, {self.const(dev, 'e')})"
        if kind in ("tuple", "list"):
            inner = "".join(self.output(o) + ", " for o in rest[0])
            return f"({inner})" if kind == "tuple" else f"[{inner}]"
        if kind == "dict":
            return "{" + ", ".join(f"{self.const(k)}: {self.output(o)}" for k, o in rest[0].items()) + "}"
        return self.const(rest[0])


def _check(src: _Source, node: Check) -> str:
    return f"if ({src.const(node.tensor, 't')}._grad is None) is not {node.grad_is_none}: raise GuardFailed"


def generate(graph: Graph, frees: dict[int, list[int]] | None = None) -> Callable[[list[Any]], Any]:
    """The graph as a function of its inputs' native arrays (a list) returning the traced function's result.
    ``frees[i]``: the values to drop after node ``i``."""
    src = _Source()
    body = src.lines
    used = set(values_in(graph.output))
    for node in graph.nodes:
        if isinstance(node, (Call, Host)):
            used.update(values_in((node.args, node.kwargs)))
        elif isinstance(node, Sync):
            used.update(n for _, _, n, _, _ in node.writes if n is not None)
    for n, source in enumerate(graph.sources):
        if n not in used:
            continue
        if source[0] == "in":
            body.append(f"v{n} = inputs[{source[1]}]")
        elif source[0] == "ext":
            t = src.const(source[1], "t")
            if source[2] == "grad":
                body.append(f"if {t}._grad is None: raise GuardFailed")
                body.append(f"v{n} = {t}._grad._data")
            else:
                body.append(f"v{n} = {t}._data")
    # The checks before the first host call see the state the call starts with: checked first, before any kernel
    # writes anything (a buffer updated in place), so that a graph that does not fit fails before doing anything.
    first_host = next((i for i, node in enumerate(graph.nodes) if isinstance(node, Host)), len(graph.nodes))
    early = [node for node in graph.nodes[:first_host] if isinstance(node, Check)]
    for node in early:
        body.insert(0, _check(src, node))
    for i, node in enumerate(graph.nodes):
        if isinstance(node, Call):
            k = src.const(node.kernel, "k")
            args = ", ".join([*(src.expr(a) for a in node.args),
                              *(f"{key}={src.expr(v)}" for key, v in node.kwargs.items())])
            call = f"{k}({args})"
            if node.outs is None:
                body.append(call)
            elif isinstance(node.outs, int):
                body.append(f"v{node.outs} = {call}")
            else:
                body.append(f"_r = {call}")
                body.extend(f"v{o} = _r[{j}]" for j, o in enumerate(node.outs) if o is not None)
        elif isinstance(node, Sync):
            for t, attr, w, dt, dev in node.writes:
                name = src.const(t, "t")
                if attr == "data":
                    body.append(f"{name}._data = v{w}")
                elif w is None:
                    body.append(f"{name}._grad = None")
                else:
                    body.append(f"{name}._grad = _wrap(v{w}, {src.const(dt, 'd')}, {src.const(dev, 'e')})")
        elif isinstance(node, Host):
            body.append(f"{src.const(functools.partial(node.fn, *node.args, **node.kwargs), 'h')}()")
        elif isinstance(node, Check) and i >= first_host:
            body.append(_check(src, node))
        dead = (frees or {}).get(i)
        if dead:
            body.append("del " + ", ".join(f"v{n}" for n in dead))
    body.append(f"return {src.output(graph.output)}")
    code = "def replay(inputs):\n" + "".join(f"    {line}\n" for line in body)
    namespace = dict(src.globals)
    exec(compile(code, "<ferro.compile replay>", "exec"), namespace)
    fn = namespace["replay"]
    fn.source = code  # type: ignore[attr-defined]
    return fn  # type: ignore[no-any-return]
