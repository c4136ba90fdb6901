"""The logistic sigmoid and the fused silu on NumPy: ``sigmoid(x)``, ``silu(x)`` and ``silu_backward(grad, x)``
(the contract of the last two is in ``ferro/_ops/fused.py``).

Each is PyTorch's CPU formula, pass by pass: ``sigmoid = 1 / (1 + exp(-x))`` (exp overflows to inf below about
-88 in float32, giving 0, as PyTorch's kernel does; ``0.5 * tanh(0.5 * x) + 0.5``, a pass cheaper in NumPy,
loses all relative precision below about -17: sigmoid(-20) would be 0, and ``log(sigmoid(x))`` -inf),
``silu = x / (1 + exp(-x))`` and its gradient ``g * s * (1 + x * (1 - s))``. silu's decomposition,
``x * sigmoid(x)``, takes two ops forward and five backward (and as many graph nodes). The constants are 0-d
arrays of the operand's dtype (a ufunc takes them faster than a Python number); arrays of a megabyte or more
run block by block (:mod:`._blocked`); float16 and bfloat16 compute in float32 and round once. A float32 /
float64 sigmoid under a megabyte is ``1 / (2 + expm1(-x))``, the same quotient with NumPy's faster expm1
(the 16-bit dtypes keep ``exp``: their rounded values are PyTorch's bit for bit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._blocked import block_runner
from ._pool import MIN_BYTES
from ._quiet import ignoring

__all__ = ["sigmoid_kernels"]


def sigmoid_kernels(np: Any, pool: Any, half: Any) -> dict[str, Callable[..., Any]]:
    """``sigmoid``, ``silu`` and ``silu_backward`` over NumPy ``np``; ``half`` is the backend's 16-bit tools."""
    f32 = np.dtype(np.float32)
    negative, exp, expm1, add, divide, multiply, subtract = (np.negative, np.exp, np.expm1, np.add, np.divide,
                                                             np.multiply, np.subtract)
    quiet = ignoring(np)  # exp overflow, inf / inf and NaN inputs: PyTorch's values, no warnings
    ones = {dt: np.ones((), dt) for dt in (f32, np.dtype(np.float64))}
    blocked = block_runner(np, pool, scratches=1)

    def sigmoid_into(x: Any, out: Any, one: Any) -> Any:
        negative(x, out=out)
        exp(out, out=out)
        add(out, one, out=out)
        return divide(one, out, out=out)

    def sigmoid_block(x: Any, out: Any, _: Any) -> None:
        sigmoid_into(x, out, ones[x.dtype])

    def silu_block(x: Any, out: Any, _: Any) -> None:
        negative(x, out=out)
        exp(out, out=out)
        add(out, ones[x.dtype], out=out)
        divide(x, out, out=out)

    def silu_backward_block(g: Any, x: Any, out: Any, s: Any) -> None:
        one = ones[x.dtype]
        sigmoid_into(x, s, one)
        subtract(one, s, out=out)
        multiply(out, x, out=out)
        add(out, one, out=out)
        multiply(out, s, out=out)
        multiply(out, g, out=out)

    def run(block: Callable[..., None], *arrays: Any) -> Any:
        """``block`` over the arrays (the last one decides the result's shape and dtype): at once when small."""
        x = arrays[-1]
        if x.nbytes >= MIN_BYTES:
            return blocked(block, arrays)
        out = np.empty_like(x)
        block(*arrays, out, np.empty_like(x) if len(arrays) > 1 else None)
        return out

    def widened(fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` on float32 and float64; 16-bit floats computed in float32 and rounded once."""
        def kernel(*arrays: Any) -> Any:
            dt = arrays[-1].dtype
            if dt in half.dtypes:
                return half.round(fn(*(a.astype(f32) for a in arrays)), dt)
            return fn(*arrays)
        kernel.__name__ = kernel.__qualname__ = fn.__name__
        return kernel

    @quiet
    def sigmoid(x: Any) -> Any:
        if x.dtype.kind == "c":  # no sign to split on: the plain formula, as PyTorch
            return 1 / (1 + np.exp(-x))
        return run(sigmoid_block, x)

    @quiet
    def silu(x: Any) -> Any:
        return run(silu_block, x)

    @quiet
    def silu_backward(grad: Any, x: Any) -> Any:
        g = np.broadcast_to(grad, x.shape)
        if g.dtype != x.dtype:
            g = g.astype(x.dtype)
        return run(silu_backward_block, g, x)

    general = widened(sigmoid)

    one_two = {dt: (one, np.full((), 2, dt)) for dt, one in ones.items()}

    @quiet
    def small(x: Any, one: Any, two: Any) -> Any:
        # 1 / (2 + expm1(-x)), which is 1 / (1 + exp(-x)): NumPy's float32 expm1 runs about a quarter faster than
        # its exp (1.2 us against 1.5 for 64x64; against PyTorch's values within 4 ulp either way)
        out = negative(x)  # (the ufuncs' out given by position: no keywords to parse)
        expm1(out, out)
        add(out, two, out)
        return divide(one, out, out)

    def sigmoid_kernel(x: Any) -> Any:
        """A float32 / float64 array of at least one dim under a megabyte in one frame below the errstate (the
        others by the general kernel: blocks, 16-bit and complex dtypes)."""
        consts = one_two.get(x.dtype)
        if consts is None or x.nbytes >= MIN_BYTES or not x.ndim:  # (0-d: negative() would give a NumPy scalar)
            return general(x)
        return small(x, *consts)

    sigmoid_kernel.__name__ = sigmoid_kernel.__qualname__ = "sigmoid"
    return {"sigmoid": sigmoid_kernel, "silu": widened(silu), "silu_backward": widened(silu_backward)}
