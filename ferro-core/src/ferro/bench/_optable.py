"""The op-overhead table's rows: ~30 small ops of a training loop, each with and without ``requires_grad``.

Each row is one op written once as ``op(xp, *inputs)`` for ferro, PyTorch and NumPy (NumPy's own spelling
where it differs, no NumPy cell where it has no such op). A ``[grad]`` row is the same op on inputs that
require grad, so ferro and PyTorch record the graph; NumPy has no column there.

Only absolute imports of names every checkout has: ``benchmarks/revisions.py --ops`` runs this file
(``runpy``) against an older ferro too.
"""

from __future__ import annotations

from typing import Any

from ferro.bench._cases import Case, Target

TORCH = Target("torch", 1.0)


def _f(xp: Any) -> Any:
    return xp.nn.functional


def _np_softmax(xp: Any, a: Any) -> Any:
    e = xp.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_layer_norm(xp: Any, a: Any) -> Any:
    m = a.mean(axis=-1, keepdims=True)
    return (a - m) / xp.sqrt(a.var(axis=-1, keepdims=True) + 1e-5)


def _np_setitem(xp: Any, a: Any) -> Any:
    a[1:3] = 0.0
    return a


def _chain(xp: Any, a: Any, b: Any) -> Any:
    """Ten ops and a backward pass (the gradients are left to accumulate, as in a loop without zero_grad)."""
    y = a * b
    y = y + a
    y = y * 2.0
    y = xp.tanh(y)
    y = y - b
    y = y.exp()
    y = y / 3.0
    y = y.relu()
    y = y.sum(dim=1)
    loss = y.mean()
    if a.requires_grad:
        loss.backward()
    return loss


def _np_chain(xp: Any, a: Any, b: Any) -> Any:
    y = xp.maximum(xp.exp(xp.tanh((a * b + a) * 2.0) - b) / 3.0, 0.0)
    return y.sum(axis=1).mean()


def _backward(op: Any) -> Any:
    """``op`` and, on inputs that require grad, ``.sum().backward()`` through it (forward + backward rows)."""
    def run(xp: Any, *inputs: Any) -> Any:
        out = op(xp, *inputs)
        if any(getattr(a, "requires_grad", False) for a in inputs):
            out.sum().backward()
        return out
    return run


S = (64, 64)
# (name, shapes, op, numpy's op or None when NumPy has no such op, whether a [grad] row is run: True, False, or
# "only" for the forward + backward rows)
_ROWS: list[tuple[str, tuple[tuple[int, ...], ...], Any, Any, bool | str]] = [
    ("zeros(64, 64)", (), lambda xp: xp.zeros((64, 64)), "same", False),
    ("ones(64, 64)", (), lambda xp: xp.ones((64, 64)), "same", False),
    ("empty(64, 64)", (), lambda xp: xp.empty((64, 64)), "same", False),
    ("full((64, 64), 2.0)", (), lambda xp: xp.full((64, 64), 2.0), "same", False),
    ("arange(1000)", (), lambda xp: xp.arange(1000), "same", False),
    ("tensor([1., 2., 3.])", (), lambda xp: xp.tensor([1.0, 2.0, 3.0]), lambda xp: xp.array([1.0, 2.0, 3.0]), False),
    ("a.sum() (64x64)", (S,), lambda xp, a: a.sum(), "same", True),
    ("a.sum(dim=1) (64x64)", (S,), lambda xp, a: a.sum(dim=1), lambda xp, a: a.sum(axis=1), True),
    ("a.mean(dim=-1) (64x64)", (S,), lambda xp, a: a.mean(dim=-1), lambda xp, a: a.mean(axis=-1), True),
    ("a.max() (64x64)", (S,), lambda xp, a: a.max(), "same", False),
    ("a[1:3]", (S,), lambda xp, a: a[1:3], "same", True),
    ("a[:, 1:3]", (S,), lambda xp, a: a[:, 1:3], "same", True),
    ("a[1:3] = 0.0", (S,), _np_setitem, "same", False),
    ("cat([a, b]) (8x8)", ((8, 8),) * 2, lambda xp, a, b: xp.cat([a, b]), lambda xp, a, b: xp.concatenate([a, b]),
     True),
    ("stack([a, b]) (8x8)", ((8, 8),) * 2, lambda xp, a, b: xp.stack([a, b]), "same", True),
    ("a.reshape(16, 256)", (S,), lambda xp, a: a.reshape(16, 256), "same", True),
    ("a.view(16, 256)", (S,), lambda xp, a: a.view(16, 256), None, True),
    ("a.permute(1, 0)", (S,), lambda xp, a: a.permute(1, 0), lambda xp, a: a.transpose(1, 0), True),
    ("a.T", (S,), lambda xp, a: a.T, "same", True),
    ("a.mT", (S,), lambda xp, a: a.mT, "same", True),
    ("a + b (64x64)", (S, S), lambda xp, a, b: a + b, "same", True),
    ("a * 2.0", (S,), lambda xp, a: a * 2.0, "same", True),
    ("a + 1", (S,), lambda xp, a: a + 1, "same", True),
    ("2.0 - a", (S,), lambda xp, a: 2.0 - a, "same", True),
    ("a / 3.0", (S,), lambda xp, a: a / 3.0, "same", True),
    ("a ** 2", (S,), lambda xp, a: a ** 2, "same", True),
    ("relu(a) (64x64)", (S,), lambda xp, a: _f(xp).relu(a), lambda xp, a: xp.maximum(a, 0.0), True),
    ("sigmoid(a) (64x64)", (S,), lambda xp, a: xp.sigmoid(a), None, True),
    ("softmax(a, -1) (64x64)", (S,), lambda xp, a: _f(xp).softmax(a, dim=-1), _np_softmax, True),
    ("softmax(a, -1) (4096x1024)", ((4096, 1024),), lambda xp, a: _f(xp).softmax(a, dim=-1), _np_softmax, True),
    ("layer_norm(a) (64x256)", ((64, 256),), lambda xp, a: _f(xp).layer_norm(a, (256,)), _np_layer_norm, True),
    ("a @ b (64x64)", (S, S), lambda xp, a, b: a @ b, "same", True),
    ("linear(x, w, b) (32x64, 64->64)", ((32, 64), (64, 64), (64,)),
     lambda xp, x, w, b: _f(xp).linear(x, w, b), lambda xp, x, w, b: x @ w.T + b, True),
    ("conv2d (8,3,16,16) 3x3->8", ((8, 3, 16, 16), (8, 3, 3, 3)), lambda xp, x, w: _f(xp).conv2d(x, w), None, True),
    ("conv2d (32,16,32,32) 3x3->16 fwd+bwd", ((32, 16, 32, 32), (16, 16, 3, 3)),
     _backward(lambda xp, x, w: _f(xp).conv2d(x, w, padding=1)), None, "only"),
    ("softmax (4096x1024) fwd+bwd", ((4096, 1024),), _backward(lambda xp, a: _f(xp).softmax(a, dim=-1)), None,
     "only"),
    ("layer_norm (4096x1024) fwd+bwd", ((4096, 1024),), _backward(lambda xp, a: _f(xp).layer_norm(a, (1024,))),
     None, "only"),
    ("a.sum().item()", (S,), lambda xp, a: a.sum().item(), "same", False),
    ("10-op chain + backward (64x64)", (S, S), _chain, _np_chain, True),
]


def _cases() -> list[Case]:
    out = []
    for name, shapes, op, np_op, grad in _ROWS:
        overrides = {} if np_op == "same" else {"numpy": np_op}
        if grad != "only":
            out.append(Case(name, shapes, op, TORCH, overrides=overrides))
        if grad:
            out.append(Case(name + " [grad]", shapes, op, TORCH, requires_grad=True))
    return out


#: Every row of the table (``revisions.py --ops`` reads this list).
OPS: list[Case] = _cases()
