"""Fused optimizer kernels on NumPy: one call updates one parameter and its state in place (and ferro.amp's
``fused_amp_unscale``, all of a device's gradients of one dtype in one call).

Their contract is in ``docs/plugins.md`` (``fused_sgd``, ``fused_adam``,
``fused_rmsprop``, ``fused_adagrad``, ``fused_adamax``, ``fused_nadam``).
Each runs exactly the sequence of operations of ferro's unfused update (the
functions ``_sgd``, ``_adam``... in ``ferro.optim``) with the same NumPy
ufuncs in the parameter's dtype, so both paths give bitwise-equal results;
the gain is the Python and allocation overhead of a dozen ferro ops per
parameter (temporaries are reused through ``out=``). Hyperparameters are
cast to the parameter's dtype first, as ferro's ops do with Python scalars.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._quiet import ignoring

__all__ = ["fused_kernels"]


def fused_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """The fused kernels over the NumPy-compatible namespace ``np`` (ufuncs taking ``out=``)."""
    multiply, add, subtract, divide, sqrt = np.multiply, np.add, np.subtract, np.divide, np.sqrt

    def quiet(fn: Callable[..., Any]) -> Callable[..., Any]:
        return ignoring(np)(fn)  # as ferro's guarded kernels: no warnings (PyTorch gives none)

    def decayed(param: Any, grad: Any, weight_decay: float, maximize: bool, c: Any) -> Any:
        """ferro.optim.optimizer.decayed_grad: -grad to maximize, plus weight_decay * param (a new array)."""
        g = np.negative(grad) if maximize else grad
        if weight_decay:
            t = multiply(param, c(weight_decay))
            g = add(g, t, out=t)
        return g

    def lerp_(a: Any, b: Any, weight: float, t: Any, c: Any) -> None:
        """a += weight * (b - a) in place (ferro's lerp), with t as scratch."""
        subtract(b, a, out=t)
        add(a, multiply(t, c(weight), out=t), out=a)

    def ema_sq_(v: Any, g: Any, beta: float, t: Any, c: Any) -> None:
        """v = beta * v + g * g * (1 - beta) in place, with t as scratch."""
        multiply(v, c(beta), out=v)
        multiply(g, g, out=t)
        add(v, multiply(t, c(1 - beta), out=t), out=v)

    def add_scaled_(param: Any, t: Any, scale: float, c: Any) -> None:
        """param += t * scale (t is overwritten)."""
        add(param, multiply(t, c(scale), out=t), out=param)

    @quiet
    def fused_sgd(param: Any, grad: Any, momentum_buffer: Any, lr: float, momentum: float, dampening: float,
                  weight_decay: float, nesterov: bool, maximize: bool, first_step: bool) -> None:
        c = param.dtype.type
        g = decayed(param, grad, weight_decay, maximize, c)
        if momentum:
            buf = momentum_buffer
            if first_step:
                np.copyto(buf, g)
            else:
                multiply(buf, c(momentum), out=buf)
                add(buf, multiply(g, c(1 - dampening)) if dampening else g, out=buf)
            g = add(g, multiply(buf, c(momentum))) if nesterov else buf
        add(param, multiply(g, c(-lr)), out=param)

    def moments(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, lr: float, beta1: float, beta2: float,
                weight_decay: float, decoupled: bool, maximize: bool, c: Any) -> tuple[Any, Any]:
        """ferro.optim.adam.moments on arrays, op for op: returns the decayed gradient and a scratch array."""
        if decoupled:
            g = decayed(param, grad, 0, maximize, c)
            if weight_decay:
                multiply(param, c(1 - lr * weight_decay), out=param)
        else:
            g = decayed(param, grad, weight_decay, maximize, c)
        t = np.empty_like(param)
        lerp_(exp_avg, g, 1 - beta1, t, c)
        ema_sq_(exp_avg_sq, g, beta2, t, c)
        return g, t

    @quiet
    def fused_adam(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any, step: float,
                   lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                   decoupled_weight_decay: bool, amsgrad: bool, maximize: bool) -> None:
        c = param.dtype.type
        _, t = moments(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, weight_decay, decoupled_weight_decay,
                       maximize, c)
        v = exp_avg_sq
        if amsgrad:
            np.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            v = max_exp_avg_sq
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        sqrt(v, out=t)
        add(divide(t, c(bias_correction2_sqrt), out=t), c(eps), out=t)
        add_scaled_(param, divide(exp_avg, t, out=t), -step_size, c)

    @quiet
    def fused_rmsprop(param: Any, grad: Any, square_avg: Any, grad_avg: Any, momentum_buffer: Any, lr: float,
                      alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool,
                      maximize: bool) -> None:
        c = param.dtype.type
        g = decayed(param, grad, weight_decay, maximize, c)
        t = np.empty_like(param)
        ema_sq_(square_avg, g, alpha, t, c)
        if centered:
            lerp_(grad_avg, g, 1 - alpha, t, c)
            avg = subtract(square_avg, multiply(grad_avg, grad_avg))
            sqrt(avg, out=avg)
        else:
            avg = sqrt(square_avg)
        add(avg, c(eps), out=avg)
        if momentum > 0:
            multiply(momentum_buffer, c(momentum), out=momentum_buffer)
            add(momentum_buffer, divide(g, avg, out=t), out=momentum_buffer)
            add(param, multiply(momentum_buffer, c(-lr), out=t), out=param)
        else:
            add_scaled_(param, divide(g, avg, out=t), -lr, c)

    @quiet
    def fused_adagrad(param: Any, grad: Any, state_sum: Any, step: float, lr: float, lr_decay: float,
                      weight_decay: float, eps: float, maximize: bool) -> None:
        c = param.dtype.type
        g = decayed(param, grad, weight_decay, maximize, c)
        clr = lr / (1 + (step - 1) * lr_decay)
        t = multiply(g, g)
        add(state_sum, t, out=state_sum)
        add(sqrt(state_sum, out=t), c(eps), out=t)
        add_scaled_(param, divide(g, t, out=t), -clr, c)

    @quiet
    def fused_adamax(param: Any, grad: Any, exp_avg: Any, exp_inf: Any, step: float, lr: float, beta1: float,
                     beta2: float, eps: float, weight_decay: float, maximize: bool) -> None:
        c = param.dtype.type
        g = decayed(param, grad, weight_decay, maximize, c)
        t = np.empty_like(param)
        lerp_(exp_avg, g, 1 - beta1, t, c)
        multiply(exp_inf, c(beta2), out=exp_inf)
        np.maximum(exp_inf, add(np.abs(g, out=t), c(eps), out=t), out=exp_inf)
        add_scaled_(param, divide(exp_avg, exp_inf, out=t), -(lr / (1 - beta1 ** step)), c)

    @quiet
    def fused_nadam(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, step: float, lr: float, beta1: float,
                    beta2: float, eps: float, weight_decay: float, mu: float, mu_next: float, mu_product: float,
                    decoupled_weight_decay: bool, maximize: bool) -> None:
        c = param.dtype.type
        g, t = moments(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, weight_decay, decoupled_weight_decay,
                       maximize, c)
        denom = divide(exp_avg_sq, c(1 - beta2 ** step))
        add(sqrt(denom, out=denom), c(eps), out=denom)
        add_scaled_(param, divide(g, denom, out=t), -lr * (1.0 - mu) / (1.0 - mu_product), c)
        add_scaled_(param, divide(exp_avg, denom, out=t), (-lr * mu_next) / (1.0 - mu_product * mu_next), c)

    @quiet
    def fused_amp_unscale(grads: list[Any], found_inf: Any, inv_scale: float) -> None:
        """ferro.amp's check for inf/nan and unscale: a gradient's max and min are finite exactly when all of its
        values are (nan propagates through both); 16-bit gradients are multiplied in float32 and rounded once."""
        bad = False
        for g in grads:
            if not g.size:
                continue
            x = g.astype(np.float32) if g.itemsize == 2 else g
            bad = bad or not (np.isfinite(x.max()) and np.isfinite(x.min()))
            if inv_scale != 1.0:
                multiply(x, x.dtype.type(inv_scale), out=x)
                if x is not g:
                    np.copyto(g, x, casting="unsafe")
        if bad:
            found_inf[...] = 1

    return {"fused_amp_unscale": fused_amp_unscale,
            "fused_sgd": fused_sgd, "fused_adam": fused_adam, "fused_rmsprop": fused_rmsprop,
            "fused_adagrad": fused_adagrad, "fused_adamax": fused_adamax, "fused_nadam": fused_nadam}
