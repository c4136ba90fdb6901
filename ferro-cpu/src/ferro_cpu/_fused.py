"""Fused optimizer kernels on NumPy: one call updates one parameter and its state in place.

Their contract is in ``docs/plugins.md`` (``fused_sgd``, ``fused_adam``).
Each runs exactly the sequence of operations of ferro's unfused update
(``ferro.optim.sgd._sgd``, ``ferro.optim.adam._adam``) with the same NumPy
ufuncs in the parameter's dtype, so both paths give bitwise-equal results;
the gain is the Python and allocation overhead of a dozen ferro ops per
parameter (temporaries are reused through ``out=``). Hyperparameters are
cast to the parameter's dtype first, as ferro's ops do with Python scalars.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["fused_kernels"]


def fused_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """The fused kernels over the NumPy-compatible namespace ``np`` (ufuncs taking ``out=``)."""
    multiply, add, subtract, divide = np.multiply, np.add, np.subtract, np.divide

    @np.errstate(all="ignore")
    def fused_sgd(param: Any, grad: Any, momentum_buffer: Any, lr: float, momentum: float, dampening: float,
                  weight_decay: float, nesterov: bool, maximize: bool, first_step: bool) -> None:
        c = param.dtype.type
        g = np.negative(grad) if maximize else grad
        if weight_decay:
            t = multiply(param, c(weight_decay))
            g = add(g, t, out=t)
        if momentum:
            buf = momentum_buffer
            if first_step:
                np.copyto(buf, g)
            else:
                multiply(buf, c(momentum), out=buf)
                add(buf, multiply(g, c(1 - dampening)) if dampening else g, out=buf)
            g = add(g, multiply(buf, c(momentum))) if nesterov else buf
        add(param, multiply(g, c(-lr)), out=param)

    @np.errstate(all="ignore")
    def fused_adam(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any, step: float,
                   lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                   decoupled_weight_decay: bool, amsgrad: bool, maximize: bool) -> None:
        c = param.dtype.type
        g = np.negative(grad) if maximize else grad
        if weight_decay:
            if decoupled_weight_decay:
                multiply(param, c(1 - lr * weight_decay), out=param)
            else:
                t = multiply(param, c(weight_decay))
                g = add(g, t, out=t)
        t = subtract(g, exp_avg)  # lerp: exp_avg + (1 - beta1) * (g - exp_avg)
        add(exp_avg, multiply(t, c(1 - beta1), out=t), out=exp_avg)
        multiply(exp_avg_sq, c(beta2), out=exp_avg_sq)
        multiply(g, g, out=t)
        add(exp_avg_sq, multiply(t, c(1 - beta2), out=t), out=exp_avg_sq)
        v = exp_avg_sq
        if amsgrad:
            np.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            v = max_exp_avg_sq
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        np.sqrt(v, out=t)
        add(divide(t, c(bias_correction2_sqrt), out=t), c(eps), out=t)
        multiply(divide(exp_avg, t, out=t), c(-step_size), out=t)
        add(param, t, out=param)

    return {"fused_sgd": fused_sgd, "fused_adam": fused_adam}
