"""PyTorch's alias names: one line each, naming the op (or ``linalg.`` function) they are.

:data:`ALIASES` become ``ferro.<alias>``, and ``Tensor.<alias>`` / ``Tensor.<alias>_`` wherever the op
has the method / in-place method; :data:`TORCH_INPLACE` are the in-place functions PyTorch offers at
the top level (``torch.abs_(x)`` is ``x.abs_()``). Installed by ``ferro._api``; the ops themselves, with
their records and tests, are the targets, so an alias adds no code of its own.
"""

from __future__ import annotations

__all__ = ["ALIASES", "OPS_INPLACE", "TORCH_INPLACE", "INPLACE"]

#: alias -> the op it is (``linalg.X``: ``ferro.linalg.X``).
ALIASES: dict[str, str] = {
    "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh", "arctan": "atan",
    "arctan2": "atan2", "arctanh": "atanh", "absolute": "abs", "negative": "neg", "clip": "clamp", "fix": "trunc",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne", "ger": "outer",
    "row_stack": "vstack", "det": "linalg.det", "inverse": "linalg.inv", "slogdet": "linalg.slogdet",
    "matrix_power": "linalg.matrix_power", "matrix_exp": "linalg.matrix_exp", "unsafe_chunk": "chunk",
    "unsafe_split": "split", "unsafe_split_with_sizes": "split_with_sizes",
    # torch.special's functions under their older top-level and Tensor names (``ops.``: the registry op)
    "i0": "ops.i0", "igamma": "ops.gammainc", "igammac": "ops.gammaincc", "mvlgamma": "ops.multigammaln",
    "prelu": "ops.prelu",
}

#: Aliases of registry ops (``ops.X`` above) with PyTorch's in-place method ``alias_``.
OPS_INPLACE: tuple[str, ...] = ("i0", "igamma", "igammac", "mvlgamma")

#: Ops whose in-place method (``x.put_(...)``) PyTorch has, beyond those their family lists.
INPLACE: tuple[str, ...] = ("put", "conj_physical")

#: ``torch.<name>_(x, ...)`` functions: the Tensor's in-place method, called as a function.
TORCH_INPLACE: tuple[str, ...] = (
    "abs_", "acos_", "acosh_", "asin_", "asinh_", "atan_", "atanh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_",
    "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "log10_", "log1p_", "log2_",
    "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_",
    "selu_", "celu_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_",
    "zero_", "detach_", "index_put_", "ldexp_", "gcd_", "lcm_", "i0_", "conj_physical_", "addmv_", "resize_as_",
    "as_strided_",
)
