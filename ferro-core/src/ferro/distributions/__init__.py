"""``ferro.distributions``: probability distributions with PyTorch's API (``torch.distributions``).

>>> import ferro
>>> from ferro.distributions import Categorical, Normal
>>> d = Normal(ferro.zeros(3), ferro.ones(3))
>>> d.sample((5,)).shape
ferro.Size([5, 3])
>>> round(Categorical(logits=ferro.zeros(4)).entropy().item(), 4)  # log(4)
1.3863

Every distribution has ``batch_shape`` / ``event_shape``, ``sample`` (no gradient), ``log_prob``, and,
where PyTorch has them, ``rsample`` (the reparameterized draw gradients flow through), ``cdf``, ``icdf``,
``entropy``, ``mean``, ``mode``, ``variance``, ``stddev``, ``enumerate_support`` and ``expand``.
Parameters are validated against their ``constraints`` as in PyTorch (``validate_args=False`` or
``Distribution.set_default_validate_args(False)`` turns it off). ``transforms`` and
``TransformedDistribution`` build new distributions from old; ``kl_divergence`` has PyTorch's pairs and
``register_kl`` adds more; ``biject_to`` / ``transform_to`` map unconstrained reals onto a constraint.
Everything is written in ferro ops, so it runs on every backend, with autograd.
"""

from __future__ import annotations

import sys

from . import _paths, constraints, transforms
from .bernoulli import Bernoulli
from .categorical import Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .compound import Independent, MixtureSameFamily
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, ContinuousBernoulli, Exponential, GeneralizedPareto, Laplace, VonMises
from .discrete import Binomial, Geometric, Multinomial, NegativeBinomial, Poisson
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma, StudentT
from .kl import kl_divergence, register_kl
from .multivariate import LKJCholesky, LowRankMultivariateNormal, MultivariateNormal, Wishart
from .normal import Normal
from .transformed import (  # noqa: F401 - for PyTorch's submodule paths
    ExpRelaxedCategorical,
    Gumbel,
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
    LogitRelaxedBernoulli,
    LogNormal,
    Pareto,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
    TransformedDistribution,
    Weibull,
)
from .transforms import *  # noqa: F403 - PyTorch re-exports the transforms here
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
           "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto",
           "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy",
           "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily",
           "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "Poisson", "Uniform", "VonMises", "Weibull", "Wishart", "TransformedDistribution", "biject_to",
           "kl_divergence", "register_kl", "transform_to", "constraints", "transforms", *transforms.__all__]

_paths.install(sys.modules[__name__], globals())
