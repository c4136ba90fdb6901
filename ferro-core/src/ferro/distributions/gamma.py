"""The distributions sampled through gamma draws (``_samplers.standard_gamma``, reparameterized): Gamma,
Chi2, Beta, Dirichlet, StudentT, FisherSnedecor."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Number

from .. import _api as api
from .._api import Size, Tensor
from ..nn import functional as nnf
from . import constraints
from ._samplers import standard_gamma
from ._special import gammainc
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma", "StudentT"]

_NAN, _INF = float("nan"), float("inf")


def _tiny(x: Tensor) -> Tensor:
    """``x`` kept above the smallest normal number of its dtype (a draw that underflowed)."""
    return x.clamp(min=api.finfo(x.dtype).tiny)


class Gamma(ExponentialFamily):
    """The gamma distribution of shape ``concentration`` (> 0) and ``rate`` (> 0)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, concentration=concentration, rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return _tiny(standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(api.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device))
        return (api.xlogy(self.concentration, self.rate) + api.xlogy(self.concentration - 1, value)
                - self.rate * value - self.concentration.lgamma())

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()


class Chi2(Gamma):
    """The chi-squared distribution of ``df`` (> 0) degrees of freedom: ``Gamma(df / 2, 1 / 2)``."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Tensor | float, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df) if not isinstance(df, Number) else (df,)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        """The degrees of freedom."""
        return self.concentration * 2

    def expand(self, batch_shape: Sequence[int], _instance: object = None) -> Chi2:
        new = self.__new__(Chi2)
        Gamma.__init__(new, self.concentration.expand(batch_shape), self.rate.expand(batch_shape),
                       validate_args=False)
        new._validate_args = self._validate_args
        return new


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex of the last dim, of ``concentration`` (> 0, at least 1-d)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        g = standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        return _tiny(g / g.sum(-1, keepdim=True))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        c = self.concentration
        return api.xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, keepdim=True)
        corner = nnf.one_hot(mode.argmax(-1), concm1.shape[-1]).to(mode.dtype)  # as PyTorch (NaN rows: 0)
        return api.where((self.concentration < 1).all(-1, keepdim=True), corner, mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k, a0 = c.shape[-1], c.sum(-1)
        return c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma() - ((c - 1.0) * c.digamma()).sum(-1)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()


class Beta(ExponentialFamily):
    """The beta distribution on ``[0, 1]`` of ``concentration1`` (alpha, > 0) and ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(api.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def _expanded(self, source: Distribution, batch_shape: Size) -> None:
        self._dirichlet = self._dirichlet.expand(batch_shape)  # type: ignore[assignment]

    @property
    def concentration1(self) -> Tensor:
        """alpha, the exponent of ``x``."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        """beta, the exponent of ``1 - x``."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        return self._dirichlet.log_prob(api.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return x.lgamma() + y.lgamma() - (x + y).lgamma()

    def __repr__(self) -> str:
        c1, c0 = self.concentration1, self.concentration0
        show = (lambda v: v if v.numel() == 1 else v.shape)
        return f"Beta(concentration1: {show(c1)}, concentration0: {show(c0)})"


class StudentT(Distribution):
    """Student's t distribution of ``df`` (> 0) degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Tensor | float, loc: Tensor | float = 0.0, scale: Tensor | float = 1.0,
                 validate_args: bool | None = None) -> None:
        self._set_params(validate_args, df=df, loc=loc, scale=scale)
        self._chi2 = Chi2(self.df)

    def _expanded(self, source: Distribution, batch_shape: Size) -> None:
        self._chi2 = self._chi2.expand(batch_shape)

    @property
    def mean(self) -> Tensor:
        return api.where(self.df > 1, self.loc, _NAN)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        return api.where(df > 2, finite, api.where(df > 1, _INF, _NAN))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = api.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + (0.5 * self.df).lgamma()
             - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        return (self.scale.log() + 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma() - (0.5 * df).digamma())
                + 0.5 * df.log() + lbeta)


class FisherSnedecor(Distribution):
    """The F distribution of ``df1`` and ``df2`` (> 0) degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Tensor | float, df2: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_params(validate_args, df1=df1, df2=df2)
        self._gamma1, self._gamma2 = Gamma(self.df1 * 0.5, self.df1), Gamma(self.df2 * 0.5, self.df2)

    def _expanded(self, source: Distribution, batch_shape: Size) -> None:
        self._gamma1, self._gamma2 = self._gamma1.expand(batch_shape), self._gamma2.expand(batch_shape)

    @property
    def mean(self) -> Tensor:
        return api.where(self.df2 > 2, self.df2 / (self.df2 - 2), _NAN)

    @property
    def mode(self) -> Tensor:
        m = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return api.where(self.df1 > 2, m, _NAN)

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        v = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return api.where(df2 > 4, v, _NAN)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        # X1 ~ Gamma(df1 / 2, 1 / df1), X2 ~ Gamma(df2 / 2, 1 / df2), Y = df2 * df1 * X1 / (df1 * df2 * X2)
        x1 = self._gamma1.rsample(sample_shape).reshape(self._extended_shape(sample_shape))
        x2 = _tiny(self._gamma2.rsample(sample_shape).reshape(self._extended_shape(sample_shape)))
        return _tiny(x1 / x2)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
