"""Gradient checks by finite differences, as ``torch.autograd.gradcheck``.

Complex numbers follow PyTorch's convention. For an output gradient ``v``,
the checked real-valued function is ``L = sum(Re(conj(v) * out))`` (for a
real output, ``sum(v * out)``), and the gradient of a complex input ``z =
a + ib`` is ``dL/da + i dL/db`` (the conjugate Wirtinger derivative, times
two): each element's real and imaginary parts are perturbed in turn. The
gradient of a real input is ``dL/da``, even where the function passes
through complex numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import promote_types
from .._core.records import ops
from .._core.tensor import from_host
from ._entry import grad

__all__ = ["gradcheck", "gradgradcheck"]


def _host(t: Any) -> Any:
    """A tensor's values as a float64 or complex128 NumPy array."""
    import numpy as np
    a = t.detach().numpy()
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def _random_like(out: Any, rng: Any) -> Any:
    """A random output gradient of ``out``'s shape: complex for a complex output."""
    shape = tuple(out.shape)
    v = rng.standard_normal(shape)
    return v + 1j * rng.standard_normal(shape) if out.dtype.is_complex else v


def _loss(out: Any, out_grad: Any) -> float:
    import numpy as np
    return float(np.real(np.conj(out_grad) * _host(out)).sum())


def _numerical(fn: Callable[..., Any], inputs: list[Any], i: int, eps: float, out_grad: Any) -> Any:
    """d(sum(Re(conj(out_grad) * fn(inputs)))) / d inputs[i], by central differences on the host."""
    import numpy as np

    x = inputs[i]
    base = _host(x)
    flat = base.reshape(-1)
    grad = np.zeros_like(flat)
    steps = (1.0, 1j) if np.iscomplexobj(base) else (1.0,)
    for j in range(flat.size):
        for step in steps:
            vals = []
            for sign in (1, -1):
                pert = flat.copy()
                pert[j] += sign * eps * step
                args = list(inputs)
                args[i] = from_host(pert.reshape(base.shape), x.dtype, x.device).requires_grad_(x.requires_grad)
                vals.append(_loss(fn(*args), out_grad))
            grad[j] += step * (vals[0] - vals[1]) / (2 * eps)
    return grad.reshape(base.shape)


def gradcheck(fn: Callable[..., Any], inputs: Sequence[Any], *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, seed: int = 0) -> bool:
    """Compare autograd's gradients of ``fn`` at ``inputs`` with central finite differences.

    Inputs that require grad should be float64 or complex128 for the check to
    be meaningful; complex inputs and outputs follow PyTorch's convention (see
    the module docstring). A random output gradient is used so that every
    output element is tested.
    """
    import numpy as np

    inputs = list(inputs)
    diff = [i for i, x in enumerate(inputs) if getattr(x, "requires_grad", False)]
    if not diff:
        raise ValueError("gradcheck: no input requires grad")
    out = fn(*inputs)
    rng = np.random.default_rng(seed)
    out_grad = _random_like(out, rng)
    if out.requires_grad:
        analytic = grad(out, [inputs[i] for i in diff],
                                 grad_outputs=from_host(out_grad, out.dtype, out.device),
                                 allow_unused=True)
    else:  # the output does not depend on the inputs (e.g. the gradient of a linear function)
        analytic = (None,) * len(diff)
    for k, i in enumerate(diff):
        num = _numerical(fn, inputs, i, eps, out_grad)
        got = np.zeros_like(num) if analytic[k] is None else _host(analytic[k])
        if got.dtype != num.dtype:
            if raise_exception:
                raise AssertionError(f"gradcheck: the gradient of input {i} is {analytic[k].dtype}, but the input "
                                     f"is {inputs[i].dtype}")
            return False
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

    inputs = list(inputs)
    diff = [i for i, x in enumerate(inputs) if getattr(x, "requires_grad", False)]
    out = fn(*inputs)
    v = from_host(_random_like(out, np.random.default_rng(seed + 1)), out.dtype, out.device)

    def first(*args: Any) -> Any:
        o = fn(*args)
        gs = grad(o, [args[i] for i in diff], grad_outputs=v, create_graph=True, allow_unused=True)
        total = None
        for g in gs:
            if g is not None:
                s = g.reshape(-1)
                total = s if total is None else _cat(total, s)
        return total

    return gradcheck(first, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception, seed=seed + 2)


def _cat(a: Any, b: Any) -> Any:
    if a.dtype is not b.dtype:  # real and complex inputs' gradients: one complex vector
        dt = promote_types(a.dtype, b.dtype)
        a, b = a.to(dt), b.to(dt)
    return ops.cat([a, b])
