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
    "xlog1py": "xlog1py",
}

__all__ = ["NAMES", *NAMES]

globals().update({name: getattr(_api, target) if hasattr(_api, target) else getattr(_api.ops, target)
                 for name, target in NAMES.items()})
