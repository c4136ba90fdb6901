"""``ferro.distributions``: probability distributions with PyTorch's API (``torch.distributions``).

>>> import ferro
>>> from ferro.distributions import Categorical, Normal
>>> d = Normal(ferro.zeros(3), ferro.ones(3))
>>> d.sample((5,)).shape
ferro.Size([5, 3])
>>> round(Categorical(logits=ferro.zeros(4)).entropy().item(), 4)  # log(4)
1.3863

``sample`` draws without gradient; ``rsample`` (Normal, Uniform) is the reparameterized draw that
gradients flow through; ``log_prob``, ``entropy``, ``mean``, ``variance``, ``stddev``, ``cdf`` where it
exists. Parameters are validated against their constraints as in PyTorch (``validate_args=False`` or
``Distribution.set_default_validate_args(False)`` turns it off).
"""

from __future__ import annotations

from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "Uniform", "constraints"]
