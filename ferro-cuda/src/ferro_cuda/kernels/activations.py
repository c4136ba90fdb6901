"""One table of fused activations, forward and backward, and the CUDA C generated from it.

Each row gives an activation's parameters (with PyTorch's defaults) and two
C statement lists over ``x`` (the input, of type ``T``) and the parameters
(also of type ``T``): ``forward`` ends by assigning ``y``, ``derivative`` by
assigning ``d = dy/dx``. :func:`activation_source` turns the table into one
CUDA C source with, per activation, a template and two ``extern "C"``
entry points per dtype::

    ferro_<name>_forward_<sfx>(const T* x, T* y, long long n, T param...)
    ferro_<name>_backward_<sfx>(const T* grad, const T* x, T* dx, long long n, T param...)

so no activation kernel is written by hand, and the compile check in CI
covers all of them at once. ``ferro_sigmoid`` is core's helper (``ferro/_core/c_helpers.py``, the one the
``sigmoid`` op's expression calls on every backend), defined for float and double.
"""

from __future__ import annotations

from typing import NamedTuple

from ferro._core.c_helpers import SIGMOID
from ferro.backends import CUDA, helper_source

__all__ = ["Activation", "ACTIVATIONS", "activation_source"]


class Activation(NamedTuple):
    """An elementwise activation: its parameters, forward and derivative as C statements."""

    params: tuple[tuple[str, float], ...]
    forward: str
    derivative: str


_SQRT1_2 = "0.70710678118654752440"
_INV_SQRT_2PI = "0.39894228040143267794"
_SQRT_2_OVER_PI = "0.79788456080286535588"
_SELU = "const T alpha = T(1.6732632423543772848); const T scale = T(1.0507009873554804934);"

#: ferro.nn.functional name -> its fused kernel. ``gelu_tanh`` is gelu(approximate="tanh").
ACTIVATIONS: dict[str, Activation] = {
    "gelu": Activation((), f"y = T(0.5) * x * (T(1) + erf(x * T({_SQRT1_2})));",
                       f"d = T(0.5) * (T(1) + erf(x * T({_SQRT1_2})))"
                       f" + x * T({_INV_SQRT_2PI}) * exp(T(-0.5) * x * x);"),
    "gelu_tanh": Activation(
        (), f"const T t = tanh(T({_SQRT_2_OVER_PI}) * (x + T(0.044715) * x * x * x)); y = T(0.5) * x * (T(1) + t);",
        f"const T t = tanh(T({_SQRT_2_OVER_PI}) * (x + T(0.044715) * x * x * x));"
        f" d = T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * T({_SQRT_2_OVER_PI})"
        " * (T(1) + T(3) * T(0.044715) * x * x);"),
    "silu": Activation((), "y = x * ferro_sigmoid(x);",
                       "const T s = ferro_sigmoid(x); d = s * (T(1) + x * (T(1) - s));"),
    "softplus": Activation((("beta", 1.0), ("threshold", 20.0)),
                           "const T bx = x * beta; y = bx > threshold ? x : log1p(exp(bx)) / beta;",
                           "const T bx = x * beta; d = bx > threshold ? T(1) : ferro_sigmoid(bx);"),
    "mish": Activation((), "const T sp = x > T(20) ? x : log1p(exp(x)); y = x * tanh(sp);",
                       "const T t = tanh(x > T(20) ? x : log1p(exp(x)));"
                       " d = t + x * (T(1) - t * t) * ferro_sigmoid(x);"),
    "elu": Activation((("alpha", 1.0),), "y = x > T(0) ? x : alpha * expm1(x);",
                      "d = x > T(0) ? T(1) : alpha * exp(x);"),
    "celu": Activation((("alpha", 1.0),), "y = x > T(0) ? x : alpha * expm1(x / alpha);",
                       "d = x > T(0) ? T(1) : exp(x / alpha);"),
    "selu": Activation((), _SELU + " y = scale * (x > T(0) ? x : alpha * expm1(x));",
                       _SELU + " d = scale * (x > T(0) ? T(1) : alpha * exp(x));"),
    "leaky_relu": Activation((("negative_slope", 0.01),), "y = x > T(0) ? x : x * negative_slope;",
                             "d = x > T(0) ? T(1) : negative_slope;"),
    "hardtanh": Activation((("min_val", -1.0), ("max_val", 1.0)),
                           "y = x <= min_val ? min_val : (x >= max_val ? max_val : x);",
                           "d = (x > min_val && x < max_val) ? T(1) : T(0);"),
    "relu6": Activation((), "y = x <= T(0) ? T(0) : (x >= T(6) ? T(6) : x);",
                        "d = (x > T(0) && x < T(6)) ? T(1) : T(0);"),
    "hardsigmoid": Activation((), "y = x <= T(-3) ? T(0) : (x >= T(3) ? T(1) : x / T(6) + T(0.5));",
                              "d = (x > T(-3) && x < T(3)) ? T(1) / T(6) : T(0);"),
    "hardswish": Activation((), "y = x * (x <= T(-3) ? T(0) : (x >= T(3) ? T(1) : x / T(6) + T(0.5)));",
                            "d = x <= T(-3) ? T(0) : (x < T(3) ? x / T(3) + T(0.5) : T(1));"),
    "softsign": Activation((), "y = x / (T(1) + fabs(x));", "const T a = T(1) + fabs(x); d = T(1) / (a * a);"),
    "logsigmoid": Activation((), "y = (x < T(0) ? x : T(0)) - log1p(exp(-fabs(x)));", "d = ferro_sigmoid(-x);"),
    "tanhshrink": Activation((), "y = x - tanh(x);", "const T t = tanh(x); d = t * t;"),
}


def _template(name: str, act: Activation) -> str:
    params = "".join(f", T {p}" for p, _ in act.params)
    return (f"template <typename T>\n__device__ void {name}_forward(const T* xs, T* ys, long long n{params}) {{\n"
            f"    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
            f"         i += (long long)blockDim.x * gridDim.x) {{\n"
            f"        const T x = xs[i];\n        T y;\n        {{ {act.forward} }}\n        ys[i] = y;\n    }}\n}}\n\n"
            f"template <typename T>\n__device__ void {name}_backward(const T* grad, const T* xs, T* dx, "
            f"long long n{params}) {{\n"
            f"    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
            f"         i += (long long)blockDim.x * gridDim.x) {{\n"
            f"        const T x = xs[i];\n        T d;\n        {{ {act.derivative} }}\n"
            f"        dx[i] = grad[i] * d;\n    }}\n}}\n")


def _entry_points(name: str, act: Activation) -> str:
    params = "".join(f", T {p}" for p, _ in act.params)
    names = "".join(f", {p}" for p, _ in act.params)
    return (f'    extern "C" __global__ void ferro_{name}_forward_##SUFFIX(const T* x, T* y, long long n{params}) {{ '
            f"{name}_forward<T>(x, y, n{names}); }} \\\n"
            f'    extern "C" __global__ void ferro_{name}_backward_##SUFFIX(const T* grad, const T* x, T* dx, '
            f"long long n{params}) {{ {name}_backward<T>(grad, x, dx, n{names}); }}")


def activation_source() -> str:
    """The CUDA C of every activation in :data:`ACTIVATIONS`, with its ``FERRO_INSTANTIATE`` macro."""
    head = ("// Generated by ferro_cuda.kernels.activations from its ACTIVATIONS table; do not edit.\n\n"
            + "".join(helper_source(f"{SIGMOID.name}(x)", [SIGMOID], t, CUDA) for t in ("float", "double")) + "\n")
    body = "\n".join(_template(name, act) for name, act in ACTIVATIONS.items())
    macro = "#define FERRO_INSTANTIATE(T, SUFFIX) \\\n" + " \\\n".join(
        _entry_points(name, act) for name, act in ACTIVATIONS.items()) + "\n"
    return head + body + "\n" + macro
