"""Gradient checks by finite differences, as ``torch.autograd.gradcheck``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["gradcheck", "gradgradcheck"]


def _numerical(fn: Callable[..., Any], inputs: list[Any], i: int, eps: float, out_grad: Any) -> Any:
    """d(sum(fn(inputs) * out_grad)) / d inputs[i], by central differences on the host."""
    import numpy as np

    from .._creation import tensor
    x = inputs[i]
    base = x.detach().numpy().astype(np.float64)
    flat = base.reshape(-1)
    grad = np.zeros_like(flat)
    for j in range(flat.size):
        vals = []
        for sign in (1, -1):
            pert = flat.copy()
            pert[j] += sign * eps
            args = list(inputs)
            args[i] = tensor(pert.reshape(base.shape), dtype=x.dtype, device=x.device,
                             requires_grad=x.requires_grad)
            out = fn(*args)
            vals.append(float((out.detach().numpy().astype(np.float64) * out_grad).sum()))
        grad[j] = (vals[0] - vals[1]) / (2 * eps)
    return grad.reshape(base.shape)


def gradcheck(fn: Callable[..., Any], inputs: Sequence[Any], *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, seed: int = 0) -> bool:
    """Compare autograd's gradients of ``fn`` at ``inputs`` with central finite differences.

    Inputs that require grad should be float64 for the check to be meaningful.
    A random output gradient is used so that every output element is tested.
    """
    import numpy as np

    from .._creation import tensor
    from . import grad as autograd_grad
    inputs = list(inputs)
    diff = [i for i, x in enumerate(inputs) if getattr(x, "requires_grad", False)]
    if not diff:
        raise ValueError("gradcheck: no input requires grad")
    out = fn(*inputs)
    rng = np.random.default_rng(seed)
    out_grad = rng.standard_normal(tuple(out.shape))
    if out.requires_grad:
        analytic = autograd_grad(out, [inputs[i] for i in diff],
                                 grad_outputs=tensor(out_grad, dtype=out.dtype, device=out.device),
                                 allow_unused=True)
    else:  # the output does not depend on the inputs (e.g. the gradient of a linear function)
        analytic = (None,) * len(diff)
    for k, i in enumerate(diff):
        num = _numerical(fn, inputs, i, eps, out_grad)
        got = np.zeros_like(num) if analytic[k] is None else analytic[k].detach().numpy().astype(np.float64)
        if not np.allclose(got, num, atol=atol, rtol=rtol):
            if raise_exception:
                worst = np.abs(got - num).max()
                raise AssertionError(f"gradcheck: Jacobian mismatch for input {i} (max abs difference {worst:.3g})\n"
                                     f"numerical:\n{num}\nanalytical:\n{got}")
            return False
    return True


def gradgradcheck(fn: Callable[..., Any], inputs: Sequence[Any], *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, seed: int = 0) -> bool:
    """Check second derivatives: gradcheck of the function ``inputs -> grad(fn(inputs) . v, inputs)``."""
    import numpy as np

    from .._creation import tensor
    from . import grad as autograd_grad
    inputs = list(inputs)
    diff = [i for i, x in enumerate(inputs) if getattr(x, "requires_grad", False)]
    out = fn(*inputs)
    v = tensor(np.random.default_rng(seed + 1).standard_normal(tuple(out.shape)), dtype=out.dtype, device=out.device)

    def first(*args: Any) -> Any:
        o = fn(*args)
        gs = autograd_grad(o, [args[i] for i in diff], grad_outputs=v, create_graph=True, allow_unused=True)
        total = None
        for g in gs:
            if g is not None:
                s = g.reshape(-1)
                total = s if total is None else _cat(total, s)
        return total

    return gradcheck(first, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception, seed=seed + 2)


def _cat(a: Any, b: Any) -> Any:
    from .._ops.shape import cat
    return cat([a, b])
