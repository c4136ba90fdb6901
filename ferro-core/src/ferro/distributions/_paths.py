"""PyTorch's submodule paths (``torch.distributions.multivariate_normal``...) for the classes that live in
other modules here, so that ``from ferro.distributions.multivariate_normal import MultivariateNormal``
works as the PyTorch import does: each is a small alias module put in ``sys.modules``."""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["TORCH_PATHS", "install"]

#: PyTorch's submodule -> the names it exports (those with a module of the same name here are left out).
TORCH_PATHS: dict[str, tuple[str, ...]] = {
    "beta": ("Beta",), "binomial": ("Binomial",), "cauchy": ("Cauchy",), "chi2": ("Chi2",),
    "continuous_bernoulli": ("ContinuousBernoulli",), "dirichlet": ("Dirichlet",), "exponential": ("Exponential",),
    "fishersnedecor": ("FisherSnedecor",), "generalized_pareto": ("GeneralizedPareto",), "geometric": ("Geometric",),
    "gumbel": ("Gumbel",), "half_cauchy": ("HalfCauchy",), "half_normal": ("HalfNormal",),
    "independent": ("Independent",), "inverse_gamma": ("InverseGamma",), "kumaraswamy": ("Kumaraswamy",),
    "laplace": ("Laplace",), "lkj_cholesky": ("LKJCholesky",), "log_normal": ("LogNormal",),
    "logistic_normal": ("LogisticNormal",), "lowrank_multivariate_normal": ("LowRankMultivariateNormal",),
    "mixture_same_family": ("MixtureSameFamily",), "multinomial": ("Multinomial",),
    "multivariate_normal": ("MultivariateNormal",), "negative_binomial": ("NegativeBinomial",),
    "one_hot_categorical": ("OneHotCategorical", "OneHotCategoricalStraightThrough"), "pareto": ("Pareto",),
    "poisson": ("Poisson",), "relaxed_bernoulli": ("LogitRelaxedBernoulli", "RelaxedBernoulli"),
    "relaxed_categorical": ("ExpRelaxedCategorical", "RelaxedOneHotCategorical"), "studentT": ("StudentT",),
    "transformed_distribution": ("TransformedDistribution",), "von_mises": ("VonMises",), "weibull": ("Weibull",),
    "wishart": ("Wishart",),
}


def install(package: types.ModuleType, names: dict[str, Any]) -> None:
    """Put an alias module for each of :data:`TORCH_PATHS` under ``package``, holding ``names[...]``."""
    for sub, exported in TORCH_PATHS.items():
        full = f"{package.__name__}.{sub}"
        module = types.ModuleType(full, f"PyTorch's path ``torch.distributions.{sub}``: {', '.join(exported)}.")
        module.__all__ = list(exported)  # type: ignore[attr-defined]
        for name in exported:
            setattr(module, name, names[name])
        sys.modules.setdefault(full, module)
        setattr(package, sub, sys.modules[full])
