"""The backward pass: run nodes in topological order, accumulate into leaves.

Two extension points serve data-parallel training (``DistributedDataParallel``):
a leaf's post-accumulate hooks run as soon as its gradient is complete in
``.grad`` (while the rest of the graph is still running), and callbacks queued
during a backward run once it has finished. Neither costs anything while unused.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from sys import getrefcount as _refcount
from typing import Any

from .._core import grad_mode as _mode
from .._core.layouts import LayoutTensor
from .._core.modes import ARMED
from .._core.node import OUT, Node
from .._core.tensor import Tensor, _new, _wrap
from ._anomaly import STATE as ANOMALY
from ._anomaly import check as check_anomaly
from ._views import VIEW_OPS, after_inplace, refresh

__all__ = ["run_backward", "register_post_accumulate_grad_hook", "queue_callback", "store_grad"]

# id(leaf) -> (weak reference to it, its hooks); the leaf's own slots stay untouched.
_post_hooks: dict[int, tuple[weakref.ref[Any], list[Callable[[Any], None]]]] = {}
_running = threading.local()  # .queues: one callback list per backward running in this thread


class _PostHookHandle:
    """Returned by :func:`register_post_accumulate_grad_hook`; ``remove()`` takes the hook back."""

    def __init__(self, key: int, hook: Callable[[Any], None]) -> None:
        self._key, self._hook = key, hook

    def remove(self) -> None:
        """Take the hook back."""
        entry = _post_hooks.get(self._key)
        if entry is not None and self._hook in entry[1]:
            entry[1].remove(self._hook)
            if not entry[1]:
                del _post_hooks[self._key]


def register_post_accumulate_grad_hook(t: Tensor, hook: Callable[[Tensor], None]) -> _PostHookHandle:
    """Call ``hook(t)`` once ``t.grad`` holds this backward's gradient (``t`` a leaf that requires grad),
    as soon as no other part of the graph can add to it."""
    if t.grad_fn is not None or not t._rg:
        raise RuntimeError("post accumulate grad hooks can only be registered on leaf tensors that require grad")
    key = id(t)
    entry = _post_hooks.get(key)
    if entry is None or entry[0]() is not t:
        entry = _post_hooks[key] = (weakref.ref(t, lambda _r, k=key, hooks=_post_hooks: hooks.pop(k, None)), [])
    entry[1].append(hook)
    return _PostHookHandle(key, hook)


def queue_callback(fn: Callable[[], None]) -> None:
    """Run ``fn()`` when the backward now running in this thread has finished (from a hook)."""
    queues = getattr(_running, "queues", None)
    if not queues:
        raise RuntimeError("queue_callback: no backward is running in this thread; call it from a hook")
    queues[-1].append(fn)


def _leaf_counts(roots: list[Node]) -> dict[int, int]:
    """How many edges lead into each leaf reachable from ``roots``."""
    counts: dict[int, int] = {}
    stack, seen = list(roots), set(roots)
    while stack:
        for n in stack.pop().next:
            if isinstance(n, Node):
                if n not in seen:
                    seen.add(n)
                    stack.append(n)
            elif n is not None:
                counts[id(n)] = counts.get(id(n), 0) + 1
    return counts


def _store_leaf(leaf: Tensor, g: Tensor, create_graph: bool, unshared: bool = False) -> None:
    """Accumulate ``g`` into ``leaf.grad`` after the leaf's hooks, then run its post-accumulate hooks.
    ``unshared``: nothing but the engine holds ``g`` or its memory, so that a first gradient is stored
    as it is rather than copied (as PyTorch's AccumulateGrad steals it)."""
    if unshared and leaf._grad is None and not leaf._hooks:
        leaf._grad = g
    else:
        store_grad(leaf, _run_tensor_hooks(leaf, g), create_graph, True)
    if _post_hooks:
        entry = _post_hooks.get(id(leaf))
        if entry is not None and entry[0]() is leaf:
            for hook in list(entry[1]):
                hook(leaf)


class _Stub:
    """Stand-in for a native array and the owner of its memory (see :data:`_SOLE`)."""

    __slots__ = ("base",)


def _memory_refs(g: Any) -> tuple[int, int, tuple[int, ...]] | None:
    """References to gradient ``g`` (a local of the caller), to its native array and to what holds the array's
    memory: ``(0,)`` where the array owns it; ``(owner,)`` where an owner of another type does (a buffer pool's
    block); ``(base, inner)`` where the array is a view of another array ``base`` (NumPy points a view at the
    array that owns the memory, or that is itself a view of such an owner), ``inner`` being 0 where ``base``
    owns the memory, else the references to its owner. None where they cannot tell whether anything else sees
    the memory (the array has no ``base``, is read-only, or ``g`` is no plain tensor without a graph)."""
    if type(g) is not Tensor or g.grad_fn is not None:
        return None
    data = g._data
    base = getattr(data, "base", False)
    if base is False or not getattr(getattr(data, "flags", None), "writeable", True):
        return None
    if base is None:
        return _refcount(g), _refcount(data), (0,)
    if type(base) is not type(data):
        return _refcount(g), _refcount(data), (_refcount(base),)
    inner = base.base
    if inner is not None and type(inner) is type(data):
        return _refcount(g), _refcount(data), (-1,)  # (a deeper chain: not told)
    return _refcount(g), _refcount(data), (_refcount(base), 0 if inner is None else _refcount(inner))


def _calibrate() -> frozenset[tuple[int, int, tuple[int, ...]]]:
    """:func:`_memory_refs` of gradients held by one local only, whose array is held by it only and whose
    memory by the array only (owning it, through an owner of another type, or through another array that owns
    it or holds such an owner): the counts of a gradient nothing else sees, on this interpreter."""
    sole = set()
    for shape in ("own", "owner", "view", "view of owner"):
        data = _Stub()
        data.base = None if shape == "own" else object()  # an owner of another type than the array
        if shape.startswith("view"):
            base = _Stub()
            base.base = None if shape == "view" else data.base
            data.base = base
            del base
        g = _wrap(data, None, None)
        del data
        refs = _memory_refs(g)
        assert refs is not None
        sole.add(refs)
    return frozenset(sole)


def _topo_counts(roots: list[Node]) -> dict[Node, int]:
    """How many edges lead into each node reachable from ``roots`` (every such node is a key, roots too)."""
    deps: dict[Node, int] = dict.fromkeys(roots, 0)
    stack = list(deps)
    while stack:
        for n in stack.pop().next:
            if isinstance(n, Node):
                if n in deps:
                    deps[n] += 1
                else:
                    deps[n] = 1
                    stack.append(n)
    return deps


def _fit(g: Tensor, shape: tuple[int, ...], dtype: Any) -> Tensor:
    """Sum a broadcast gradient back to ``shape`` and cast it to the input's dtype."""
    gs = g._data.shape
    if gs != shape:  # sum over the dimensions broadcasting added
        lead = len(gs) - len(shape)
        dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gs[i + lead] != 1)
        g = (g.sum(dims, keepdim=True) if dims else g).reshape(shape)
    if g._dtype is not dtype:
        if g._dtype.is_complex and not dtype.is_complex:  # a real input's gradient is the real part (PyTorch)
            g = g.real
        g = g.to(dtype)
    return g


def _useful(roots: list[Node], wanted: dict[Node, int], wanted_leaves: set[int]) -> set[Node]:
    """The nodes whose backward must run so that a wanted node or leaf gets its gradient.

    ``autograd.grad`` runs only these: the rest of the graph is neither
    computed nor freed (as in PyTorch).
    """
    useful: set[Node] = set()
    leads: dict[Node, bool] = {}  # node -> whether a wanted node or leaf is reachable from it
    stack: list[tuple[Node, bool]] = [(n, False) for n in dict.fromkeys(roots)]
    while stack:
        node, done = stack.pop()
        if done:
            use = any((leads.get(n, False) if isinstance(n, Node) else id(n) in wanted_leaves)
                      for n in node.next if n is not None)
            if use:
                useful.add(node)
            leads[node] = use or node in wanted
            continue
        if node in leads:
            continue
        leads[node] = False  # in progress (graphs are acyclic)
        stack.append((node, True))
        stack.extend((n, False) for n in node.next if isinstance(n, Node) and n not in leads)
    return useful


def _owned(g: Tensor, create_graph: bool) -> Tensor:
    """A gradient to store in ``.grad``: never an alias of another tensor (the user's ``gradient``,
    another leaf's gradient, a read-only broadcast view), so in-place changes to it stay local."""
    if create_graph or isinstance(g, LayoutTensor):  # a sparse gradient (Embedding(sparse=True)): its own clone
        return g.clone()
    return _wrap(g._device._kernels["clone"](g._data), g._dtype, g._device)


def store_grad(t: Tensor, g: Tensor, create_graph: bool, leaf: bool = False) -> None:
    """Accumulate ``g`` into ``t.grad``: a leaf's existing gradient is added to in place where PyTorch's
    AccumulateGrad does it (no ``create_graph``), so that a reference to ``.grad`` sees the sum; otherwise
    (``create_graph``, a non-leaf's retained gradient, another dtype, a sparse or unwritable ``.grad``)
    ``.grad`` becomes a new tensor."""
    prev = t._grad
    if prev is None:
        t._grad = _owned(g, create_graph)
    elif not (leaf and not create_graph and _add_into(prev, g)):
        # (the engine runs with grad mode set to create_graph: without it, the sum records nothing)
        t._grad = prev + g


def _writable(data: Any) -> bool:
    """Whether an in-place write into native array ``data`` is possible and well defined (not read-only, no
    elements sharing memory); backends whose arrays have neither ``flags`` nor ``strides`` are not checked."""
    flags = getattr(data, "flags", None)
    if flags is not None and not getattr(flags, "writeable", True):
        return False
    strides = getattr(data, "strides", None)
    return strides is None or not any(n > 1 and st == 0 for n, st in zip(data.shape, strides))


def _add_into(prev: Tensor, g: Tensor) -> bool:
    """``prev += g`` in place, recording nothing (the device's ``accumulate_`` kernel, else the sum copied
    into ``prev``'s storage); False (nothing written) where it cannot be done in place."""
    if prev._dtype is not g._dtype or isinstance(prev, LayoutTensor) or isinstance(g, LayoutTensor):
        return False
    if ARMED[0]:  # a dispatch layer is on (ferro.compile's capture: a replayed step writes each .grad anew)
        return False
    kernels = prev._device._kernels
    kernel = kernels.get("accumulate_")
    if kernel is None or not kernel(prev._data, g._data):
        if not _writable(prev._data):
            return False
        kernels["copy_"](prev._data, (prev + g)._data)
    prev._vc[0] += 1
    if len(prev._vc) > 1:  # its storage has views that are copies: carry the write to them
        after_inplace(prev)
    return True


def _given(i: int, t: Tensor, g: Any) -> Tensor:
    """The gradient ``g`` given for output ``i`` (``t``), checked as PyTorch checks it: a tensor of ``t``'s
    shape, on ``t``'s device (nothing moves silently), complex exactly when ``t`` is; cast to ``t``'s dtype."""
    if getattr(g, "_dtype", None) is None:
        raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    if g._device is not t._device:
        raise RuntimeError(f"invalid gradient at index {i} - expected device {t._device} but got {g._device}")
    if g._data.shape != t._data.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g._data.shape)} and "
                           f"output[{i}] has a shape of {list(t._data.shape)}.")
    if g._dtype is not t._dtype:
        if g._dtype.is_complex or t._dtype.is_complex:
            raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                               f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g._dtype} and "
                               f"output[{i}] has a dtype of {t._dtype}.")
        g = g.to(t._dtype)
    return g


def _hooked(hook: Any, g: Tensor) -> Tensor:
    """``hook(g)``, or ``g`` where it returns None; a result of another shape, dtype or device is refused
    (PyTorch: "hook has changed the size / type of value") rather than carried into other gradients."""
    r = hook(g)
    if r is None:
        return g
    name = getattr(hook, "__name__", repr(hook))
    if getattr(r, "_dtype", None) is None:
        raise TypeError(f"hook '{name}' returned a {type(r).__name__}; a hook returns a Tensor or None")
    if r._data.shape != g._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value (was {list(g._data.shape)}, "
                           f"got {list(r._data.shape)})")
    if r._dtype is not g._dtype or r._device is not g._device:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {g._dtype} on {g._device}, got "
                           f"{r._dtype} on {r._device})")
    return r


def _accumulate(store: dict[Any, Any], key: Any, holder: Any, g: Tensor) -> None:
    prev = store.get(key)
    store[key] = (holder, g) if prev is None else (holder, prev[1] + g)


def run_backward(roots: Sequence[Tensor], grads: Sequence[Tensor], *, retain_graph: bool,
                 create_graph: bool, inputs: Sequence[Tensor] | None = None,
                 allow_unused: bool = True) -> list[Tensor | None] | None:
    """Backpropagate ``grads`` from ``roots``.

    With ``inputs`` None, gradients accumulate into the ``.grad`` of every
    leaf that requires grad (``Tensor.backward``); otherwise they are
    returned for ``inputs`` and no ``.grad`` is touched (``autograd.grad``).
    """
    node_grads: dict[Node, Tensor] = {}  # the gradient summed so far at the output of each node still waiting
    leaf_grads: dict[int, tuple[Tensor, Tensor]] = {}  # id(leaf) -> (leaf, its gradient summed so far)
    root_nodes: list[Node] = []
    for t in (*roots, *(inputs or ())):
        if t._rg and t.grad_fn is not None and t.grad_fn.name in VIEW_OPS:
            refresh(t)  # a view whose base changed in place since its graph position was set
    for i, (t, g) in enumerate(zip(roots, grads)):
        g = _given(i, t, g)
        gf = t.grad_fn
        if gf is not None:
            prev = node_grads.get(gf)
            node_grads[gf] = g if prev is None else prev + g
            root_nodes.append(gf)
        elif t._rg:
            _accumulate(leaf_grads, id(t), t, g)
        else:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")

    wanted_nodes: dict[Node, int] = {}
    useful: set[Node] | None = None
    if inputs is not None:
        for i, t in enumerate(inputs):
            if t.grad_fn is not None:
                wanted_nodes[t.grad_fn] = i
        useful = _useful(root_nodes, wanted_nodes, {id(t) for t in inputs if t.grad_fn is None})
    selective = inputs is not None  # autograd.grad: run only what leads to the wanted inputs

    deps = _topo_counts(root_nodes)
    ready = [(n, node_grads.pop(n)) for n in dict.fromkeys(root_nodes) if deps[n] == 0]  # (node, its gradient)
    captured: dict[int, Tensor] = {}
    # With post-accumulate hooks, a leaf is stored as soon as its last edge has delivered.
    leaf_deps = _leaf_counts(root_nodes) if _post_hooks and inputs is None else None
    queues = getattr(_running, "queues", None)
    if queues is None:
        queues = _running.queues = []
    queues.append([])
    prev_mode = _mode._state.enabled
    _mode._state.enabled = create_graph
    anomaly = ANOMALY.enabled
    try:
        while ready:
            node, g = ready.pop()
            if selective:
                if node not in useful and node not in wanted_nodes:  # type: ignore[operator]
                    continue  # autograd.grad: nothing wanted lies beyond this node
            if node.pre is not None:  # hooks, then retain_grad
                hooks, retain = node.pre
                if hooks:
                    for hook in hooks:
                        g = _hooked(hook, g)
                if retain is not None:
                    t = retain()
                    if t is not None:
                        store_grad(t, g, create_graph)
            if selective and node in wanted_nodes:
                captured[wanted_nodes[node]] = g
                if node not in useful:  # type: ignore[operator]
                    continue
            nexts = node.next
            direct = type(node) is Node and not anomaly  # run the formulas edge by edge (Node.apply, inlined)
            if direct:
                saved = node.saved
                held = False  # whether the node keeps a tensor to free after it ran (Node.release's test)
                if saved:
                    if len(saved) == 1 and saved[0] is OUT:  # exp, tanh, relu...: Node.unpack's steps, inlined
                        data, dtype, device, vc, version = node.out
                        if vc[0] != version:
                            saved = node.unpack()  # (it raises)
                        t = _new(Tensor)
                        t._data = data
                        t._dtype = dtype
                        t._device = device
                        t._rg = True
                        t.grad_fn = node
                        t._vc = vc
                        t._grad = t._base = t._hooks = t._retains = t._view = None
                        saved = (t,)
                        t = None
                        held = True
                    elif node.out is None:  # tensors and numbers as saved: their versions checked
                        for s, v in zip(saved, node.versions):
                            if v >= 0:
                                held = True
                                if s._vc[0] != v:
                                    node.unpack()  # (it raises)
                    else:
                        saved = node.unpack()
                        held = True
                elif saved is None:  # released: unpack says so
                    node.unpack()
                attrs = node.attrs
                items = node.fns
            else:
                items = node.apply(g)
                if anomaly:
                    check_anomaly(node, items)
            for nxt, meta, f in zip(nexts, node.meta, items):
                if nxt is None:
                    continue
                if not direct:
                    gi = f
                elif f is None:
                    gi = None
                elif attrs is None:
                    gi = f(g, *saved) if saved else f(g)
                else:
                    gi = f(g, *saved, **attrs)
                if gi is None:
                    if isinstance(nxt, Node) and nxt in deps:
                        _release_dep(nxt, deps, ready, node_grads)
                    continue
                if meta is None:  # the input has the output's shape and dtype, so the incoming gradient's
                    if gi is not g and (gi._dtype is not g._dtype or gi._data.shape != g._data.shape):
                        gi = _fit(gi, g._data.shape, g._dtype)
                elif gi._dtype is not meta[1] or gi._data.shape != meta[0]:
                    gi = _fit(gi, *meta)
                if isinstance(nxt, Node):
                    left = deps[nxt] - 1
                    deps[nxt] = left
                    if left:  # more edges to come: summed in arrival order
                        prev = node_grads.get(nxt)
                        node_grads[nxt] = gi if prev is None else prev + gi
                    else:  # (one edge, the usual case: no dict)
                        prev = node_grads.pop(nxt, None) if node_grads else None
                        ready.append((nxt, gi if prev is None else prev + gi))
                else:
                    if gi._device is not nxt._device:  # a custom backward's mistake: never store it silently
                        raise RuntimeError(f"Function {node.name} returned an invalid gradient - expected device "
                                           f"{nxt._device} but got {gi._device}")
                    key = id(nxt)
                    prev_leaf = leaf_grads.get(key)
                    leaf_grads[key] = (nxt, gi) if prev_leaf is None else (nxt, prev_leaf[1] + gi)
                    if leaf_deps is not None:
                        left = leaf_deps[key] = leaf_deps[key] - 1
                        if left == 0:
                            _store_leaf(nxt, leaf_grads.pop(key)[1], create_graph)
            if not retain_graph:
                if not direct:
                    node.release()
                elif held:  # Node.release's steps, inlined
                    node.saved = node.out = None
        if inputs is not None:
            result: list[Tensor | None] = []
            for i, t in enumerate(inputs):
                g = captured.get(i)
                if g is None and t.grad_fn is None:
                    entry = leaf_grads.get(id(t))
                    g = None if entry is None else _run_tensor_hooks(t, entry[1])
                if g is None and not allow_unused:
                    raise RuntimeError(
                        f"One of the differentiated Tensors (input {i}) appears to not have been used "
                        "in the graph. Set allow_unused=True if this is the desired behavior.")
                result.append(g if (g is None or create_graph) else g.detach())
            return result
        g = gi = f = items = prev = prev_leaf = None  # this frame holds no gradient but the one stored (_memory_refs)
        plain = not (create_graph or _post_hooks or ARMED[0])
        for key in list(leaf_grads):
            leaf, g = leaf_grads.pop(key)
            prev = leaf._grad
            if (plain and prev is not None and type(prev) is Tensor and type(g) is Tensor and not leaf._hooks
                    and prev._dtype is g._dtype):
                # _store_leaf -> store_grad -> _add_into's steps for a later gradient of a plain leaf, inlined
                kernel = prev._device._kernels.get("accumulate_")
                if kernel is not None and kernel(prev._data, g._data):
                    prev._vc[0] += 1
                    if len(prev._vc) > 1:  # its storage has views that are copies: carry the write to them
                        after_inplace(prev)
                    continue
            # (a later gradient is added into .grad: whether anything else sees it does not matter)
            refs = None if create_graph or prev is not None else _memory_refs(g)
            _store_leaf(leaf, g, create_graph, refs in _SOLE)
        _mode._state.enabled = prev_mode
        for fn in queues[-1]:
            fn()
        return None
    finally:
        _mode._state.enabled = prev_mode
        queues.pop()


def _release_dep(node: Node, deps: dict[Node, int], ready: list[tuple[Node, Any]],
                 node_grads: dict[Node, Any]) -> None:
    """An edge into ``node`` carried no gradient; once all edges are in, run it or skip it."""
    deps[node] -= 1
    if deps[node] == 0:
        if node in node_grads:
            ready.append((node, node_grads.pop(node)))
        else:  # nothing reached it: its own inputs lose one edge each
            for n in node.next:
                if isinstance(n, Node) and n in deps:
                    _release_dep(n, deps, ready, node_grads)


def _run_tensor_hooks(t: Tensor, g: Tensor) -> Tensor:
    hooks = t._hooks
    if hooks:
        for hook in hooks:
            g = _hooked(hook, g)
    return g


#: What :func:`_memory_refs` counts for a gradient that nothing but the engine sees, for each way its array may
#: hold its memory (measured, not assumed: the interpreter's own references differ between Python versions).
_SOLE = _calibrate()
