"""The backend contract: every kernel a backend may put in its table, with its typed signature.

A backend's kernel table maps kernel names to functions on the backend's
native arrays. This module is the closed list of those names:

- the **required primitives** (:data:`REQUIRED`): about forty signatures
  (elementwise by name, reductions, matmul, movement, indexing, gather /
  scatter, scans and sorting, casts, creation, random numbers). A backend
  with all of them (``complete = True``) runs every op of the registry:
  everything else is a decomposition into these;
- **optional groups** (:data:`GROUPS`) that cannot sensibly be decomposed
  (special functions, complex parts, linear algebra factorizations, FFT),
  which a backend declares in ``optional_groups`` or lacks; ops needing a
  missing group are reported unsupported by the capability queries;
- **fused kernels** (group ``fused``): the kernels of ordinary registry ops
  that also have a decomposition (``softmax``, ``conv2d``, ``cross_entropy``,
  the optimizers' steps...). Where a table has them, they run instead of the
  decomposition, resolved and reported exactly like any other kernel.

Kernel names an op registers for itself (``OpDef.kernels``, an op added by
a plugin through ``ferro_register_ops``) are accepted too. Kernels receive
inputs already checked, promoted and cast by the op registry, and every
kernel that creates an array receives the result ``dtype`` it must return.

:func:`validate_table` checks a table against the contract (the plugin
manager calls it when a table is handed over), :func:`check_backend` checks a
backend's claims, and ``python -m ferro.backends.contract --markdown`` prints
the table of ``docs/plugins.md``.

>>> "matmul" in KERNELS and KERNELS["matmul"].group == "required"
True
>>> validate_table({"add": len, "frobnicate": len})
["unknown kernel 'frobnicate': not in ferro.backends.contract (nor the kernel of a registered op)"]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol, runtime_checkable

from .._core.records import REGISTRY

__all__ = [
    "Param", "Primitive", "Group", "PRIMITIVES", "REQUIRED", "GROUPS", "KERNELS", "FUSED_PAIRS",
    "validate_table", "check_signatures", "check_backend", "op_kernels", "kernel_names", "markdown",
    "DeviceRuntime", "NativeStream", "NativeEvent", "VIEW_OPS", "ArgumentCheck", "UNCHECKED_OPS",
    "check_view_copies", "check_argument_checks", "FusedCompiler",
]

#: The group of the primitives every complete backend has.
REQUIRED = "required"


class Param(NamedTuple):
    """One parameter of a kernel: its name, its type (as written in Python annotations), what it means."""

    name: str
    type: str
    doc: str = ""

    def __str__(self) -> str:
        return f"{self.name}: {self.type}"


class Primitive(NamedTuple):
    """One signature of the contract and the kernel names that have it.

    ``kernels`` share ``params`` and ``returns``; ``group`` is :data:`REQUIRED`
    or the name of an optional group in :data:`GROUPS`; ``op`` names the
    registry op whose kernels they are, for fused kernels.
    """

    name: str
    kernels: tuple[str, ...]
    params: tuple[Param, ...]
    returns: str
    doc: str
    group: str = REQUIRED
    op: str = ""

    def signature(self, kernel: str | None = None) -> str:
        """``k(x: Array, dims: ...) -> Array`` for one of the kernels (default: the first)."""
        return f"{kernel or self.kernels[0]}({', '.join(map(str, self.params))}) -> {self.returns}"


class Group(NamedTuple):
    """An optional group of kernels: all or nothing where ``whole`` is set (a backend declaring it
    must have every member), else each member stands alone (fused kernels)."""

    name: str
    doc: str
    whole: bool = True
    members: tuple[str, ...] = ()


def _p(spec: str) -> tuple[Param, ...]:
    """Params from ``"x: Array; dims: tuple[int, ...] | None"``."""
    out = []
    for part in filter(None, (s.strip() for s in spec.split(";"))):
        name, _, typ = part.partition(":")
        out.append(Param(name.strip(), typ.strip()))
    return tuple(out)


_UNARY = ("neg", "positive", "abs", "sign", "exp", "log", "sqrt", "square", "sin", "cos", "tan", "tanh", "asin",
          "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p", "expm1", "log2", "log10", "sigmoid",
          "relu", "floor", "ceil", "trunc", "round", "isnan", "isinf", "isfinite", "logical_not", "bitwise_not")
_BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "hypot", "logaddexp", "floor_divide",
           "remainder", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift")
_ACTIVATIONS = ("gelu", "silu", "softplus", "mish", "elu", "celu", "selu", "leaky_relu", "hardtanh", "relu6",
                "hardsigmoid", "hardswish", "softsign", "logsigmoid", "tanhshrink")
_OPTIMIZERS = {"sgd": "momentum_buffer", "adam": "exp_avg, exp_avg_sq, max_exp_avg_sq",
               "rmsprop": "square_avg, grad_avg, momentum_buffer", "adagrad": "state_sum",
               "adamax": "exp_avg, exp_inf", "nadam": "exp_avg, exp_avg_sq"}

A = "Array"
_R = REQUIRED

#: Every signature of the contract, required ones first.
PRIMITIVES: tuple[Primitive, ...] = (
    # -- elementwise ---------------------------------------------------------------------------------
    Primitive("unary", _UNARY, _p("x: Array"), A,
              "Elementwise function of one array, by name; the result has x's dtype (bool for isnan, isinf, "
              "isfinite, logical_not)."),
    Primitive("binary", _BINARY, _p("x: Array | Scalar; y: Array | Scalar"), A,
              "Elementwise function of two operands of one dtype (a Python scalar on either side), broadcast "
              "with NumPy's rules; bool results for comparisons and logical ops."),
    Primitive("where", ("where",), _p("cond: Array; x: Array | Scalar; y: Array | Scalar"), A,
              "x where cond else y, broadcast."),
    Primitive("cast", ("cast",), _p("x: Array; dtype: DType"), A, "x converted to dtype (C casting rules)."),
    # -- reductions ----------------------------------------------------------------------------------
    Primitive("sum", ("sum",), _p("x: Array; dims: tuple[int, ...] | None; keepdim: bool; dtype: DType"), A,
              "Sum over the sorted dims (None: all) in the result dtype; 16-bit floats accumulate in float32."),
    Primitive("reduce", ("mean", "prod", "amax", "amin", "any", "all"),
              _p("x: Array; dims: tuple[int, ...] | None; keepdim: bool"), A,
              "Reduction over the sorted dims (None: all), in x's dtype (bool for any/all)."),
    Primitive("arg_reduce", ("argmax", "argmin"), _p("x: Array; dim: int | None; keepdim: bool"), A,
              "int64 position of the first extreme along dim (None: of the flattened array)."),
    Primitive("matmul", ("matmul",), _p("x: Array; y: Array"), A,
              "Matrix product with NumPy's batching rules, in x's dtype."),
    # -- movement ------------------------------------------------------------------------------------
    Primitive("reshape", ("reshape",), _p("x: Array; shape: tuple[int, ...]"), A,
              "x with a new shape; a view where possible, else a copy."),
    Primitive("view", ("view",), _p("x: Array; shape: tuple[int, ...]"), A,
              "x with a new shape sharing its storage; raises when no view is possible."),
    Primitive("permute", ("permute",), _p("x: Array; dims: tuple[int, ...]"), A, "The axes reordered (a view)."),
    Primitive("expand", ("expand",), _p("x: Array; shape: tuple[int, ...]"), A, "x broadcast to shape (a view)."),
    Primitive("join", ("cat", "stack"), _p("xs: Sequence[Array]; dim: int"), A,
              "Arrays of one dtype joined along an existing (cat) or new (stack) axis."),
    Primitive("copy", ("contiguous", "clone"), _p("x: Array"), A,
              "A row-major array of x's values: contiguous may return x itself, clone never does."),
    # -- indexing, gather and scatter ----------------------------------------------------------------
    Primitive("getitem", ("getitem",), _p("x: Array; key: IndexKey"), A,
              "x[key] for a normalized key of ints, slices, None, Ellipsis and int64/bool index arrays."),
    Primitive("setitem", ("setitem",), _p("x: Array; key: IndexKey; value: Array | Scalar"), "None",
              "x[key] = value, in place."),
    Primitive("index_put", ("index_put",), _p("x: Array; key: IndexKey; value: Array | Scalar; accumulate: bool"),
              "None", "x[key] = value (or += with accumulate, repeated indices summed), in place."),
    Primitive("copy_", ("copy_",), _p("dst: Array; src: Array"), "None", "dst[...] = src, in place."),
    Primitive("index_reduce", ("index_reduce",),
              _p("x: Array; key: IndexKey; value: Array; how: str; include_self: bool"), "None",
              "x[key] = reduce(x[key], value) with repeated indices reduced too; how is amax, amin or prod."),
    Primitive("nonzero", ("nonzero",), _p("x: Array"), A, "The (n, ndim) int64 coordinates of nonzero elements."),
    # -- creation and random numbers -------------------------------------------------------------------
    Primitive("empty", ("empty",), _p("shape: tuple[int, ...]; dtype: DType"), A, "Uninitialized array."),
    Primitive("full", ("full",), _p("shape: tuple[int, ...]; value: Scalar; dtype: DType"), A,
              "Array filled with value."),
    Primitive("arange", ("arange",), _p("start: Scalar; stop: Scalar; step: Scalar; dtype: DType"), A,
              "start, start + step, ... below stop."),
    Primitive("linspace", ("linspace",), _p("start: float; stop: float; num: int; dtype: DType"), A,
              "num evenly spaced values from start to stop inclusive."),
    Primitive("eye", ("eye",), _p("n: int; m: int; dtype: DType"), A, "Ones on the diagonal of an n x m array."),
    Primitive("random", ("rand", "randn"), _p("shape: tuple[int, ...]; dtype: DType"), A,
              "Uniform [0, 1) or standard normal draws from the device's generator (seeded by manual_seed)."),
    Primitive("randint", ("randint",), _p("shape: tuple[int, ...]; dtype: DType; low: int; high: int"), A,
              "Uniform integers in [low, high)."),
    # -- scans, sorting, searching -------------------------------------------------------------------
    Primitive("scan", ("cumsum", "cumprod"), _p("x: Array; dim: int"), A,
              "Running sum or product along dim, in x's dtype (16-bit floats accumulate in float32)."),
    Primitive("scan_extreme", ("cummax", "cummin"), _p("x: Array; dim: int"), "tuple[Array, Array]",
              "Running extreme and the int64 index of the last element equal to it."),
    Primitive("argsort", ("argsort",), _p("x: Array; dim: int; descending: bool"), A,
              "Stable int64 sorting permutation along dim."),
    Primitive("searchsorted", ("searchsorted",), _p("seq: Array; values: Array; right: bool"), A,
              "int64 insertion points of values in the sorted last axis of seq."),
    Primitive("unique", ("unique",), _p("x: Array; consecutive: bool"), "tuple[Array, Array, Array]",
              "(sorted or consecutive-run values, int64 inverse of x's shape, int64 counts)."),
    Primitive("histc", ("histc",), _p("x: Array; bins: int; lo: float; hi: float"), A,
              "Counts in bins equal-width bins over [lo, hi] (both 0: x's range), in x's dtype."),
    Primitive("bincount", ("bincount",), _p("x: Array; weights: Array | None; minlength: int"), A,
              "Occurrences (or summed weights) of each non-negative integer."),
    # -- optional: special functions, complex parts ----------------------------------------------------
    Primitive("special", ("erf", "erfc", "erfinv", "lgamma", "digamma"), _p("x: Array"), A,
              "Special functions of floating x, in x's dtype.", group="special"),
    Primitive("complex_part", ("real", "imag", "conj", "angle"), _p("x: Array"), A,
              "Parts of complex x (real and imag as views where possible) in the real dtype; conj keeps "
              "x's dtype; angle of a real x is 0 or pi.", group="complex"),
    # -- optional: linear algebra ----------------------------------------------------------------------
    Primitive("linalg_unary", ("linalg_inv", "linalg_det", "linalg_cholesky", "linalg_pinv"), _p("x: Array"), A,
              "Inverse, determinant, lower Cholesky factor, pseudo-inverse of (batches of) matrices.",
              group="linalg"),
    Primitive("linalg_slogdet", ("linalg_slogdet",), _p("x: Array"), "tuple[Array, Array]",
              "(sign, log|det|).", group="linalg"),
    Primitive("linalg_solve", ("linalg_solve",), _p("a: Array; b: Array"), A, "x with a @ x = b.", group="linalg"),
    Primitive("linalg_qr", ("linalg_qr",), _p("x: Array; mode: str"), "tuple[Array, Array]",
              "(q, r); mode is reduced or complete.", group="linalg"),
    Primitive("linalg_eigh", ("linalg_eigh",), _p("x: Array"), "tuple[Array, Array]",
              "(eigenvalues ascending, eigenvectors) of a Hermitian matrix.", group="linalg"),
    Primitive("linalg_svd", ("linalg_svd",), _p("x: Array; full_matrices: bool"), "tuple[Array, Array, Array]",
              "(u, s, vh).", group="linalg"),
    Primitive("linalg_lu_factor", ("linalg_lu_factor",), _p("x: Array"), "tuple[Array, Array]",
              "(LU packed, 1-based int32 pivots) as LAPACK's getrf.", group="linalg"),
    Primitive("linalg_eig", ("linalg_eig",), _p("x: Array"), "tuple[Array, Array]",
              "(eigenvalues, eigenvectors of norm 1) of a general square matrix, complex (or real where all are), "
              "as LAPACK's geev.", group="linalg_eig"),
    Primitive("linalg_ldl_factor", ("linalg_ldl_factor",), _p("x: Array; hermitian: bool"),
              "tuple[Array, Array, Array]", "(LD with zeros above the diagonal, int32 pivots, int32 info) of the lower "
              "triangle as LAPACK's sytrf (hetrf with hermitian), over the batch.", group="linalg_ldl"),
    Primitive("linalg_ldl_solve", ("linalg_ldl_solve",), _p("ld: Array; pivots: Array; b: Array; hermitian: bool"), A,
              "x with a @ x = b from linalg_ldl_factor's LD and pivots, as LAPACK's sytrs (hetrs), over the batch.",
              group="linalg_ldl"),
    # -- optional: FFT ---------------------------------------------------------------------------------
    Primitive("fft_c2c", ("fft_c2c",), _p("x: Array; dims: tuple[int, ...]; norm: str; forward: bool"), A,
              "Complex-to-complex transform over dims, in x's dtype.", group="fft"),
    Primitive("fft_r2c", ("fft_r2c",), _p("x: Array; dims: tuple[int, ...]; norm: str"), A,
              "Real to the onesided half spectrum (complex of x's precision).", group="fft"),
    Primitive("fft_c2r", ("fft_c2r",), _p("x: Array; dims: tuple[int, ...]; norm: str; last_dim_size: int"), A,
              "Half spectrum to real, the last transformed axis of last_dim_size.", group="fft"),
    # -- optional: strided views of memory -------------------------------------------------------------
    Primitive("as_strided", ("as_strided",),
              _p("base: Array; size: tuple[int, ...]; stride: tuple[int, ...]; offset: int"), A,
              "A view of the contiguous base's memory, strides and offset in elements (bounds checked by core).",
              group="strided"),
    Primitive("storage_layout", ("storage_layout",), _p("base: Array; x: Array"), "tuple[tuple[int, ...], int]",
              "The strides and offset (in elements) of x, a view of base, in base's memory.", group="strided"),
    # -- fused kernels of registry ops (each runs instead of the op's decomposition) -------------------
    Primitive("activation", _ACTIVATIONS, _p("x: Array; *params: float"), A,
              "The activation op of that name, its parameters as the op takes them.", group="fused"),
    Primitive("activation_backward", tuple(f"{n}_backward" for n in _ACTIVATIONS),
              _p("grad: Array; x: Array; *params: float"), A,
              "dx of the activation (leaky_relu with a slope >= 0 gets its output in place of x: positive "
              "where x is).", group="fused"),
    Primitive("output_backward", ("relu_backward", "tanh_backward", "sigmoid_backward"),
              _p("grad: Array; y: Array"), A,
              "dx of relu / tanh / sigmoid from the op's output y, as PyTorch's threshold_backward (0 where "
              "y <= 0, else grad), tanh_backward and sigmoid_backward; float16, bfloat16, float32, float64 "
              "(ferro/_ops/output_grads.py).", group="fused"),
    Primitive("accumulate_", ("accumulate_",), _p("dst: Array; src: Array"), "bool",
              "dst += src in place (same dtype and shape; a gradient added into .grad by backward), True where "
              "it was done; False (dst untouched) where the kernel does not take the arrays.", group="fused"),
    Primitive("softmax", ("softmax", "log_softmax"), _p("x: Array; dim: int"), A,
              "softmax / log_softmax along dim.", group="fused"),
    Primitive("softmax_backward", ("softmax_backward", "log_softmax_backward"),
              _p("grad: Array; y: Array; dim: int"), A, "dx from the forward's output y.", group="fused"),
    Primitive("layer_norm_forward", ("layer_norm_forward",),
              _p("x: Array; shape: tuple[int, ...]; weight: Array | None; bias: Array | None; eps: float"),
              "tuple[Array, Array, Array]", "(y, mean, rstd) over the trailing shape.", group="fused",
              op="layer_norm"),
    Primitive("layer_norm_backward", ("layer_norm_backward",),
              _p("grad: Array; x: Array; shape: tuple[int, ...]; weight: Array | None; mean: Array; rstd: Array"),
              "tuple[Array, Array | None, Array]", "(dx, dweight, dbias).", group="fused", op="layer_norm"),
    Primitive("cross_entropy_forward", ("cross_entropy_forward",),
              _p("x: Array; target: Array; weight: Array | None; ignore_index: int"), "tuple[Array, Array, Array]",
              "Per-row (loss, logsumexp, target weight) for class-index targets, classes on axis 1.",
              group="fused", op="cross_entropy"),
    Primitive("cross_entropy_backward", ("cross_entropy_backward",),
              _p("grad_rows: Array; x: Array; target: Array; weight: Array | None; lse: Array; ignore_index: int"),
              A, "dx from the per-row gradients (the reduction already applied).", group="fused",
              op="cross_entropy"),
    Primitive("nll_loss_forward", ("nll_loss_forward",),
              _p("x: Array; target: Array; weight: Array | None; ignore_index: int; reduction: str"),
              "tuple[Array, Array]",
              "(loss, total weight) of log-probabilities x, classes on axis 1; IndexError for a target out of range.",
              group="fused", op="nll_loss"),
    Primitive("nll_loss_backward", ("nll_loss_backward",),
              _p("grad: Array; x: Array; target: Array; weight: Array | None; ignore_index: int; reduction: str; "
                 "total_weight: Array"), A, "dx: -weight * grad at each target (over total_weight for 'mean').",
              group="fused", op="nll_loss"),
    Primitive("binary_cross_entropy_forward", ("binary_cross_entropy_forward",),
              _p("x: Array; target: Array; weight: Array | None; reduction: str"), A,
              "The loss of probabilities x (logs clamped at -100), times weight (broadcast to x), reduced.",
              group="fused", op="binary_cross_entropy"),
    Primitive("binary_cross_entropy_backward", ("binary_cross_entropy_backward",),
              _p("grad: Array; x: Array; target: Array; weight: Array | None; reduction: str"), A,
              "dx: grad * (x - target) / max((1 - x) * x, eps) * weight (over x's size for 'mean').",
              group="fused", op="binary_cross_entropy"),
    Primitive("linear_forward", ("linear_forward",), _p("x: Array; weight: Array; bias: Array | None"), A,
              "x @ weight.T + bias over x's last axis, weight (out_features, in_features).", group="fused",
              op="linear"),
    Primitive("linear_backward", ("linear_backward",),
              _p("grad: Array; x: Array; weight: Array; needs: tuple[bool, bool, bool]"),
              "tuple[Array | None, Array | None, Array | None]",
              "(dx, dweight, dbias), None where needs says it is not wanted.", group="fused", op="linear"),
    Primitive("conv2d_forward", ("conv2d_forward",),
              _p("x: Array; weight: Array; bias: Array | None; stride: tuple[int, int]; padding: tuple[int, int]; "
                 "dilation: tuple[int, int]; groups: int"), A,
              "Batched 2-D convolution, symmetric padding. It may carry a variant ``.keeping`` (same arguments) "
              "returning (y, kept), run where the weight's gradient will be wanted; kept goes to conv2d_backward "
              "as kept=.", group="fused", op="conv2d"),
    Primitive("conv2d_backward", ("conv2d_backward",),
              _p("grad: Array; x: Array; weight: Array; has_bias: bool; stride: tuple[int, int]; "
                 "padding: tuple[int, int]; dilation: tuple[int, int]; groups: int; needs: tuple[bool, bool, bool]; "
                 "kept: Any = None"),
              "tuple[Array | None, Array | None, Array | None]",
              "(gx, gw, gb), None where needs says it is not wanted (kept: what conv2d_forward.keeping returned, "
              "given only where it ran).", group="fused", op="conv2d"),
    Primitive("conv_transpose2d_forward", ("conv_transpose2d_forward",),
              _p("x: Array; weight: Array; bias: Array | None; stride: tuple[int, int]; padding: tuple[int, int]; "
                 "output_padding: tuple[int, int]; groups: int; dilation: tuple[int, int]"), A,
              "Batched transposed 2-D convolution (the adjoint of conv2d in its input); weight is "
              "(C_in, C_out/groups, kH, kW).", group="fused", op="conv_transpose2d"),
    Primitive("conv_transpose2d_backward", ("conv_transpose2d_backward",),
              _p("grad: Array; x: Array; weight: Array; has_bias: bool; stride: tuple[int, int]; "
                 "padding: tuple[int, int]; output_padding: tuple[int, int]; groups: int; dilation: tuple[int, int]; "
                 "needs: tuple[bool, bool, bool]"),
              "tuple[Array | None, Array | None, Array | None]",
              "(gx, gw, gb), None where needs says it is not wanted.", group="fused", op="conv_transpose2d"),
    Primitive("max_pool2d_forward", ("max_pool2d_forward",),
              _p("x: Array; kernel: tuple[int, int]; stride: tuple[int, int]; padding: tuple[int, int]; "
                 "dilation: tuple[int, int]"), "tuple[Array, Array]",
              "(y, position of the first maximum within its window, row-major).", group="fused", op="max_pool2d"),
    Primitive("max_pool2d_backward", ("max_pool2d_backward",),
              _p("grad: Array; x: Array; argmax: Array; kernel: tuple[int, int]; stride: tuple[int, int]; "
                 "padding: tuple[int, int]; dilation: tuple[int, int]"), A, "gx.", group="fused", op="max_pool2d"),
    Primitive("batch_norm_forward", ("batch_norm_forward",),
              _p("x: Array; weight: Array | None; bias: Array | None; running_mean: Array | None; "
                 "running_var: Array | None; training: bool; momentum: float; eps: float"),
              "tuple[Array, Array, Array]",
              "(y, mean, rstd) per channel (axis 1): the batch's statistics in training (the running ones "
              "updated in place), the running ones otherwise.", group="fused", op="batch_norm"),
    Primitive("batch_norm_backward", ("batch_norm_backward",),
              _p("grad: Array; x: Array; weight: Array | None; mean: Array; rstd: Array; training: bool; "
                 "needs: tuple[bool, bool, bool]"), "tuple[Array | None, Array | None, Array | None]",
              "(gx, gweight, gbias), None where needs says it is not wanted.", group="fused", op="batch_norm"),
    Primitive("rnn_sequence_forward", ("lstm_sequence_forward", "gru_sequence_forward"),
              _p("x: Array; h0: Array; c0: Array | None; w_ih: Array; w_hh: Array; b_ih: Array | None; "
                 "b_hh: Array | None; reverse: bool"), "tuple[Array | None, ...]",
              "One direction of one LSTM / GRU layer over a time-major (T, B, F) sequence, PyTorch's gate order "
              "and formulas (GRU: b_hn inside r * (...); c0 None): (out (T, B, H), h_n, c_n or None, *saved), "
              "saved the arrays the backward needs, handed back to it as a tuple (flat: ferro.compile records "
              "them as outputs).", group="fused", op="nn.LSTM, nn.GRU"),
    Primitive("rnn_sequence_backward", ("lstm_sequence_backward", "gru_sequence_backward"),
              _p("d_out: Array | None; d_hn: Array | None; d_cn: Array | None; x: Array; w_ih: Array; "
                 "w_hh: Array; has_bias: bool; saved: tuple[Array, ...]; reverse: bool; needs: tuple[bool, ...]"),
              "tuple[Array | None, ...]",
              "(dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh): dx and the weights' None where needs (a flag per "
              "x, h0, c0, w_ih, w_hh, b_ih, b_hh) says it is not wanted, dc0 None for GRU; a None incoming "
              "gradient is zero.", group="fused",
              op="nn.LSTM, nn.GRU"),
    Primitive("whole_op", ("layer_norm", "cross_entropy"), _p("x: Array; *args: Any"), A,
              "ferro-cuda's one-call forward of the op with the op's own arguments (core runs the "
              "*_forward / *_backward pair).", group="fused"),
    *(Primitive(f"fused_{n}", (f"fused_{n}",), _p(f"param: Array; grad: Array; {state}; *hyper: Scalar"), "None",
                f"One {n} step of one parameter, in place, with the values of the unfused {n}_step "
                "(docs/plugins.md gives the hyperparameters' order).", group="fused", op=f"{n}_step")
      for n, state in _OPTIMIZERS.items()),
    Primitive("fused_amp_unscale", ("fused_amp_unscale",),
              _p("grads: Sequence[Array]; found_inf: Array; inv_scale: float"), "None",
              "Every gradient (one device, one dtype) multiplied by inv_scale in place, computed in float32 for "
              "16-bit floats and rounded once; found_inf (one float32 element) set to 1 where any held inf or "
              "nan, else left as it was (torch._amp_foreach_non_finite_check_and_unscale_).", group="fused",
              op="amp_unscale_"),
    Primitive("int8_matmul", ("int8_matmul",), _p("x: Array; y: Array"), A,
              "x @ y of int8 matrices (M, K) and (K, N) as an int32 (M, N) array, every product and sum exact in "
              "int32 (never through floats): the product of ferro.quantization's dynamic int8 Linear layers.",
              group="quantized", op="int8_matmul"),
)

#: Kernel name -> its primitive.
KERNELS: dict[str, Primitive] = {k: p for p in PRIMITIVES for k in p.kernels}

#: Optional groups by name.
GROUPS: dict[str, Group] = {
    "special": Group("special", "Special functions; ops built on them (erf, gelu...) are unsupported without."),
    "complex": Group("complex", "Parts of complex numbers (views where the arrays have them); without them the "
                     "parts decompose into casts, exact for finite values only, so a backend lacking them had "
                     "better have no complex dtypes."),
    "linalg": Group("linalg", "Factorizations (torch.linalg); no decomposition into primitives."),
    "linalg_eig": Group("linalg_eig", "The eigen-decomposition of general matrices (linalg.eig, linalg.eigvals), "
                        "outside the Array API standard: a backend offers it where its library has it.", whole=False),
    "linalg_ldl": Group("linalg_ldl", "The Bunch-Kaufman LDL factorization (linalg.ldl_factor, ldl_solve) in "
                        "LAPACK's format, outside the Array API standard.", whole=False),
    "fft": Group("fft", "Fast Fourier transforms; no decomposition into primitives."),
    "strided": Group("strided", "Views by explicit strides: as_strided, stride(), storage_offset() need them."),
    "quantized": Group("quantized", "int8 products accumulated in int32 (ferro.quantization); no decomposition "
                       "into primitives."),
    "fused": Group("fused", "Kernels of ops that also have a decomposition, each optional on its own.", whole=False),
}
GROUPS = {n: g._replace(members=tuple(k for p in PRIMITIVES if p.group == n for k in p.kernels))
          for n, g in GROUPS.items()}

#: Fused forward kernel -> the backward kernel it needs beside it.
FUSED_PAIRS: dict[str, str] = {
    **{n: f"{n}_backward" for n in (*_ACTIVATIONS, "softmax", "log_softmax")},
    **{f"{n}_forward": f"{n}_backward" for n in ("layer_norm", "cross_entropy", "linear", "conv2d",
                                                  "conv_transpose2d", "max_pool2d", "lstm_sequence",
                                                  "gru_sequence")},
}

#: The ops whose result is a view of their input, sharing its memory. A backend whose arrays cannot alias
#: names, in ``Backend.view_copies``, those whose kernel returns a copy instead: core then keeps PyTorch's
#: write-through semantics itself (``docs/plugins.md``, "Views on backends that copy").
VIEW_OPS: frozenset[str] = frozenset(("reshape", "view", "permute", "expand", "getitem", "real", "imag", "diagonal",
                                      "view_as_real", "as_strided"))


class ArgumentCheck(NamedTuple):
    """Argument values a backend's kernel for one op does not take (``Backend.argument_checks``).

    ``check`` receives the op's arguments as the op's public function takes them (the same values the
    op's decomposition and the CPU fallback receive) and returns None where the kernel takes them, else
    ``(argument name, why not)``; ``doc`` says in words what is refused, for ``ferro.backends.explain``.
    Refused arguments run the op's decomposition if it has one, else the opt-in CPU fallback, else raise
    ``UnsupportedOperationError`` naming the op, the argument and ``why``. Only the ops a backend checks
    pay for the check (their kernel is bound off the fast path).

    >>> stable_only = ArgumentCheck(lambda x, dim=-1, descending=False, stable=False:
    ...                             None if stable else ("stable", "this sort is not stable"), "stable=False")
    >>> stable_only.check(None, stable=False)
    ('stable', 'this sort is not stable')
    """

    check: Callable[..., tuple[str, str] | None]
    doc: str = ""


#: Ops whose kernel ferro calls by name from inside ops (``argsort`` from ``sort``, ``cast`` from ``to``...),
#: not through the op table: their arguments cannot be checked, and ``argument_checks`` may not name them
#: (``tests/test_argument_checks.py`` checks that every other op asks its check).
UNCHECKED_OPS: frozenset[str] = frozenset(("argsort", "bincount", "cast", "cummax", "cummin", "histc", "prod",
                                           "searchsorted", "unique", "view_as_real"))


def check_view_copies(names: Any) -> list[str]:
    """What is wrong with a backend's ``view_copies`` answer (empty: nothing): a set of :data:`VIEW_OPS`
    (``reshape`` and ``view`` both or neither).

    >>> check_view_copies({"permute", "view", "reshape"})
    []
    """
    if not isinstance(names, (set, frozenset, tuple, list)):
        return [f"view_copies() must return a set of view op names, got {type(names).__name__}"]
    problems = [f"view_copies(): '{n}' is not a view op (known: {', '.join(sorted(VIEW_OPS))})"
                for n in names if n not in VIEW_OPS]
    if len({"reshape", "view"} & set(names)) == 1:  # reshape runs the view kernel where it can
        problems.append("view_copies(): 'reshape' and 'view' go together (reshape runs the view kernel)")
    return problems


def check_argument_checks(checks: Any) -> list[str]:
    """What is wrong with a backend's ``argument_checks`` answer (empty: nothing): registered op names
    mapped to :class:`ArgumentCheck` with a callable ``check``."""
    if not isinstance(checks, Mapping):
        return [f"argument_checks() must return a dict of op name -> ArgumentCheck, got {type(checks).__name__}"]
    problems = []
    for name, c in checks.items():
        if name not in REGISTRY:
            problems.append(f"argument_checks(): no op named {name!r} in the registry")
        elif name in UNCHECKED_OPS:
            problems.append(f"argument_checks(): the kernel of '{name}' is called by name from other ops, so its "
                            "arguments cannot be checked (check the ops calling it, or refuse a dtype instead)")
        elif not isinstance(c, ArgumentCheck) or not callable(c.check):
            problems.append(f"argument_checks(): the check of '{name}' is {type(c).__name__}, not an ArgumentCheck "
                            "with a callable check")
    return problems


def op_kernels() -> set[str]:
    """The kernel names the registered ops name (``OpDef.kernels``), plugins' ops included."""
    return {k for op in REGISTRY.values() for k in op.kernels}


def kernel_names(group: str | None = None) -> list[str]:
    """Every kernel name of the contract, or those of one group (``"required"``, ``"linalg"``...)."""
    return [k for p in PRIMITIVES if group is None or p.group == group for k in p.kernels]


def validate_table(table: Mapping[str, Any]) -> list[str]:
    """What is wrong with a kernel table handed over by a backend or plugin (empty: nothing).

    A name the contract does not know (and no registered op claims), a value
    that is not callable, or a fused forward kernel without its backward.
    """
    if not isinstance(table, Mapping):
        return [f"a kernel table must be a dict of kernel name -> callable, got {type(table).__name__}"]
    problems = []
    ops = None
    for name, kernel in table.items():
        if not isinstance(name, str):
            problems.append(f"kernel name {name!r} is not a string")
            continue
        if name not in KERNELS and name not in (ops := op_kernels() if ops is None else ops):
            problems.append(f"unknown kernel '{name}': not in ferro.backends.contract (nor the kernel of a "
                            "registered op)")
        elif not callable(kernel):
            problems.append(f"kernel '{name}' is {type(kernel).__name__}, not callable")
        backward = FUSED_PAIRS.get(name)
        if backward is not None and backward not in table:
            problems.append(f"fused kernel '{name}' comes without '{backward}'")
    return problems


def check_signatures(table: Mapping[str, Any]) -> list[str]:
    """Kernels whose Python signature cannot take their primitive's parameters, positionally.

    Kernels without an inspectable signature (NumPy ufuncs, C functions) and
    primitives with variadic parameters are not checked.
    """
    import inspect  # slow to import; only these checks need it, never ``import ferro``
    problems = []
    for name, kernel in table.items():
        p = KERNELS.get(name)
        if p is None or any(q.name.startswith("*") for q in p.params):
            continue
        try:
            sig = inspect.signature(kernel)
        except (TypeError, ValueError):
            continue
        try:
            sig.bind(*p.params)
        except TypeError as e:
            problems.append(f"kernel '{name}' ({', '.join(sig.parameters)}) cannot be called as "
                            f"{p.signature(name)}: {e}")
    return problems


def check_backend(table: Mapping[str, Any], complete: bool, groups: Iterable[str]) -> list[str]:
    """What a backend claiming ``complete`` (every required primitive) and the optional ``groups``
    lacks in ``table``, plus what :func:`validate_table` and :func:`check_signatures` find."""
    problems = validate_table(table) + check_signatures(table)
    if complete:
        problems += [f"required primitive kernel '{k}' is missing" for k in kernel_names(REQUIRED) if k not in table]
    for g in groups:
        group = GROUPS.get(g)
        if group is None:
            problems.append(f"unknown optional group '{g}' (known: {', '.join(GROUPS)})")
        elif group.whole:
            problems += [f"group '{g}' is declared but kernel '{k}' is missing" for k in group.members
                         if k not in table]
    return problems


# -- the device runtime: optional, for backends with queues and memory pools (ferro.cuda delegates to it) --


class NativeEvent(Protocol):
    """A backend's event, as a :class:`DeviceRuntime` hands it out; ``native`` is the library's own object."""

    native: Any

    def record(self, stream: NativeStream | None) -> None:
        """Record the event on ``stream`` (None: the current stream)."""

    def synchronize(self) -> None:
        """Wait until the work before the event has finished."""

    def query(self) -> bool:
        """Whether the work before the event has finished."""

    def elapsed_time(self, end: NativeEvent) -> float:
        """Milliseconds from this event to ``end``."""


class NativeStream(Protocol):
    """A backend's stream (an ordered queue of work on one device), as a :class:`DeviceRuntime` hands it out."""

    native: Any
    device_index: int

    @property
    def handle(self) -> int:
        """A number identifying the stream (equal streams, equal handles)."""

    def synchronize(self) -> None:
        """Wait until the work queued on the stream has finished."""

    def query(self) -> bool:
        """Whether the work queued on the stream has finished."""

    def wait_event(self, event: NativeEvent) -> None:
        """Make work queued later on this stream wait for ``event``."""

    def record(self) -> NativeEvent:
        """A new event recorded on this stream now."""


@runtime_checkable
class DeviceRuntime(Protocol):
    """What a backend with streams, events and a memory pool offers; ``ferro.cuda`` calls only these
    (ferro-cuda's ``CudaBackend`` implements it over CuPy).

    Optional: a backend without it simply has no such runtime (its
    ``synchronize`` and ``memory_stats`` come from ``Backend``).
    """

    def synchronize(self, index: int) -> None:
        """Wait for all work queued on device ``index``."""

    def memory_stats(self, index: int) -> dict[str, int]:
        """Allocator statistics of device ``index`` in bytes (allocated, cached, reserved, peak...)."""

    def new_stream(self, index: int, priority: int = 0) -> NativeStream:
        """A new stream on device ``index``."""

    def current_stream(self, index: int) -> NativeStream:
        """The stream device ``index`` queues work on now."""

    def default_stream(self, index: int) -> NativeStream:
        """Device ``index``'s default stream."""

    def use_stream(self, stream: NativeStream) -> AbstractContextManager[None]:
        """A context manager queueing work on ``stream`` (on its device) inside the block."""

    def new_event(self, enable_timing: bool, blocking: bool) -> NativeEvent:
        """A new event."""

    def memory_allocated(self, index: int) -> int:
        """Bytes held by arrays on device ``index``."""

    def max_memory_allocated(self, index: int) -> int:
        """Peak of :meth:`memory_allocated` since the start or the last reset."""

    def reset_peak_memory_stats(self, index: int) -> None:
        """Restart the peak from what is in use now."""

    def memory_reserved(self, index: int) -> int:
        """Bytes the pool holds on device ``index`` (in use and cached)."""

    def empty_cache(self) -> None:
        """Give cached, unused blocks back to the driver."""


# -- the compile hook: optional, for backends that generate one kernel per fused group (ferro.compile) -----


@runtime_checkable
class FusedCompiler(Protocol):
    """A backend's optional ``compile`` hook: ``Backend.compile_fused``. ``ferro.compile`` cuts a captured
    step into chains of elementwise ops (:class:`ferro.backends.fusion.FusedGroup`: the ops' names, operands
    and dtypes; their C expressions are in the ops' records, ``OpDef.expr``) and lowers each through
    :func:`ferro.backends.fusion.lower`: this hook where it returns a callable, else the group's steps replayed
    through the kernel table (results within the ops' tolerances either way)."""

    def compile_fused(self, group: Any, index: int | None = None) -> Callable[..., Any] | None:
        """One kernel for ``group`` on device ``index``: ``f(*input_arrays) -> list of output arrays``, or None
        for a group the backend does not take."""


# -- the docs' table -------------------------------------------------------------------------------------


def _rows() -> Iterator[str]:
    yield "| group | primitive | kernels | signature | returns |"
    yield "|---|---|---|---|---|"
    for p in PRIMITIVES:
        names = " ".join(f"`{k}`" for k in p.kernels)
        params = ", ".join(f"{q.name}: {q.type}" for q in p.params).replace("|", "\\|")
        yield f"| {p.group} | {p.name} | {names} | `k({params})` | `{p.returns.replace('|', chr(92) + '|')}` |"


def markdown() -> str:
    """The contract as the Markdown table of ``docs/plugins.md`` (between its contract markers)."""
    groups = "".join(f"- `{g.name}`: {g.doc}\n" for g in GROUPS.values())
    docs = "".join(f"- **{p.name}**: {p.doc}\n" for p in PRIMITIVES)
    return "\n".join(_rows()) + "\n\nOptional groups:\n\n" + groups + "\nWhat each primitive computes:\n\n" + docs


#: The markers around the generated table in ``docs/plugins.md``.
BEGIN, END = "<!-- contract-table: generated by python -m ferro.backends.contract --write docs/plugins.md -->", \
    "<!-- /contract-table -->"


def in_page(page: str) -> str:
    """The generated block of a docs page (what lies between :data:`BEGIN` and :data:`END`)."""
    start, stop = page.find(BEGIN), page.find(END)
    if start < 0 or stop < start:
        raise ValueError("the page has no contract-table markers")
    return page[start + len(BEGIN):stop].strip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m ferro.backends.contract [--markdown | --write PAGE]``: print the docs' table, or rewrite
    the block between the markers of ``PAGE``."""
    args = sys.argv[1:] if argv is None else argv
    if args in ([], ["--markdown"]):
        sys.stdout.write(markdown())
        return 0
    if len(args) == 2 and args[0] == "--write":
        with open(args[1], encoding="utf-8") as f:
            page = f.read()
        old = in_page(page)
        page = page.replace(old, markdown(), 1) if old.strip() else page.replace(BEGIN, BEGIN + "\n" + markdown(), 1)
        with open(args[1], "w", encoding="utf-8") as f:
            f.write(page)
        return 0
    print("usage: python -m ferro.backends.contract [--markdown | --write PAGE]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
