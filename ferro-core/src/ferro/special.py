"""``ferro.special``: ``torch.special``'s names for ferro's special functions.

Each name is the ferro op it stands for (``special.expit`` is ``ferro.sigmoid``, ``special.gammaln`` is
``ferro.lgamma``...): one line of :data:`NAMES`, no code of its own.

>>> import ferro
>>> ferro.special.expit(ferro.tensor([0.0])).item()
0.5
"""

from __future__ import annotations

from . import _api

#: ``torch.special`` name -> the ferro function it is.
NAMES: dict[str, str] = {
    "expit": "sigmoid", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv", "exp2": "exp2", "expm1": "expm1",
    "log1p": "log1p", "logit": "logit", "logsumexp": "logsumexp", "softmax": "softmax",
    "log_softmax": "log_softmax", "digamma": "digamma", "psi": "digamma", "gammaln": "lgamma", "round": "round",
    "xlogy": "xlogy", "sinc": "sinc", "entr": "entr", "ndtr": "ndtr", "ndtri": "ndtri", "log_ndtr": "log_ndtr",
    "xlog1py": "xlog1py", "polygamma": "polygamma", "multigammaln": "multigammaln", "i0": "i0", "i0e": "i0e",
    "i1": "i1", "i1e": "i1e", "modified_bessel_i0": "i0", "modified_bessel_i1": "i1", "erfcx": "erfcx",
    "zeta": "zeta", "gammainc": "gammainc", "gammaincc": "gammaincc",
    **{n: n for n in ("modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                      "scaled_modified_bessel_k1", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
                      "spherical_bessel_j0", "airy_ai", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
                      "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                      "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                      "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                      "laguerre_polynomial_l", "legendre_polynomial_p")},
}

__all__ = ["NAMES", *NAMES]

globals().update({name: getattr(_api, target) if hasattr(_api, target) else getattr(_api.ops, target)
                 for name, target in NAMES.items()})
