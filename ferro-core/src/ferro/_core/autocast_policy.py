"""Autocast's op policy: which ops run in lower precision, which in float32, which at the widest input dtype.

PyTorch's lists (``aten/src/ATen/autocast_mode.cpp``), by ferro op name, written once: every backend obeys
them through the autocast dispatch layer (``ferro.amp``). There are two policies, as in PyTorch: ``"cpu"``
for autocast on the CPU and ``"gpu"`` for every accelerator (cuda, opencl, and any other backend).
An op's record carries its categories (``OpDef.autocast``).

- ``lower``: floating tensors (not float64) are cast to the autocast dtype (matmuls, convolutions: the
  ops that gain speed and lose little accuracy);
- ``float32``: 16-bit floating tensors are cast to float32 (reductions, norms, losses, transcendental
  functions: the ops that lose accuracy in 16 bits);
- ``promote``: floating tensors are cast to the widest floating dtype among them (ops taking several
  tensors that must agree).
"""

from __future__ import annotations

__all__ = ["POLICIES", "CATEGORIES", "category"]

_CONV = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d")

_LINALG_FLOAT32 = ("linalg.cholesky", "linalg.inv", "linalg.solve", "linalg.svdvals", "linalg.svd",
                   "linalg.eigh", "linalg.eigvalsh", "linalg.qr", "linalg.lstsq", "linalg.lu_factor", "linalg.lu")
_FFT = ("fft.fft", "fft.ifft", "fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn", "fft.rfft", "fft.irfft",
        "fft.rfft2", "fft.irfft2", "fft.rfftn", "fft.irfftn", "fft.hfft", "fft.ihfft")
_LOSSES = ("mse_loss", "cosine_embedding_loss", "nll_loss", "smooth_l1_loss", "l1_loss", "huber_loss",
           "margin_ranking_loss", "kl_div", "binary_cross_entropy_with_logits", "cross_entropy")

#: policy -> category -> op names.
POLICIES: dict[str, dict[str, tuple[str, ...]]] = {
    "cpu": {
        "lower": (*_CONV, "matmul", "linear", "einsum", "scaled_dot_product_attention"),
        "float32": (*_LOSSES, "binary_cross_entropy", "polar", "prod", "linalg.cdist", "view_as_complex",
                    *_LINALG_FLOAT32, *_FFT),
        "promote": ("stack", "cat", "index_copy"),
    },
    "gpu": {
        "lower": (*_CONV, "matmul", "linear", "einsum", "scaled_dot_product_attention"),
        "float32": ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
                    "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "rms_norm",
                    "norm", "cosine_similarity", *_LOSSES, "linalg.cdist", "logsumexp", "softmax",
                    "log_softmax", "cumprod", "cumsum", "sum", "prod", "linalg.vector_norm", "linalg.matrix_norm"),
        "promote": ("atan2", "bilinear", "linalg.cross", "index_put", "scatter_add", "tensordot", "stack", "cat",
                    "index_copy"),
    },
}

#: The categories, in the words of the docs.
CATEGORIES: dict[str, str] = {
    "lower": "runs in the autocast dtype",
    "float32": "runs in float32",
    "promote": "runs at the widest floating dtype of its inputs",
}

_BY_OP: dict[str, dict[str, str]] = {}
for _policy, _table in POLICIES.items():
    for _category, _names in _table.items():
        for _name in _names:
            _BY_OP.setdefault(_name, {})[_policy] = _category


def category(name: str) -> dict[str, str] | None:
    """Op ``name``'s category under each policy that lists it (None: autocast leaves it alone)."""
    return _BY_OP.get(name)
