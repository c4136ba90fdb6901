"""Distributions over vectors and matrices: MultivariateNormal, LowRankMultivariateNormal, Wishart (Bartlett
sampling through chi-squared draws) and LKJCholesky (the onion method through beta draws). Matrix work
goes through ``_linalg``, so that every backend runs them."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import cached_property
from numbers import Number
from typing import Any

from .. import _api as api
from .._api import Size, Tensor
from .._grids import tril_indices
from . import constraints
from ._linalg import cholesky, cholesky_inverse, logdet_pd, solve_lower
from .distribution import Distribution, LocCentered
from .exp_family import ExponentialFamily
from .gamma import Beta, Chi2
from .utils import broadcast_all

__all__ = ["LKJCholesky", "LowRankMultivariateNormal", "MultivariateNormal", "Wishart", "mvlgamma"]

_LOG_2 = math.log(2)


def mvlgamma(x: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``."""
    steps = api.arange(p, dtype=x.dtype, device=x.device) / 2
    return p * (p - 1) / 4 * math.log(math.pi) + (x.unsqueeze(-1) - steps).lgamma().sum(-1)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    steps = api.arange(p, dtype=x.dtype, device=x.device) / 2
    return (x.unsqueeze(-1) - steps).digamma().sum(-1)


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _mahalanobis(lower: Tensor, x: Tensor) -> Tensor:
    """``|L^-1 x|^2`` over the last dim, broadcasting ``L`` (``n x n``) against ``x``'s batch."""
    shape = api.broadcast_shapes(tuple(lower.shape[:-2]), tuple(x.shape[:-1]))
    n = x.shape[-1]
    lower = lower.expand((*shape, n, n))
    return solve_lower(lower, x.expand((*shape, n)).unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(p: Tensor) -> Tensor:
    lf = cholesky(p.flip((-2, -1)))
    l_inv = lf.flip((-2, -1)).transpose(-2, -1)
    eye = api.eye(p.shape[-1], dtype=p.dtype, device=p.device)
    return solve_lower(l_inv, eye.expand(l_inv.shape))


class _ScaleTril:
    """The three equivalent matrix parameters (covariance, precision, scale_tril) of MVN and Wishart: one
    is given, the others are computed from ``_unbroadcasted_scale_tril`` on first use."""

    _unbroadcasted_scale_tril: Tensor
    _batch_shape: Size
    _event_shape: Size

    def _matrix_shape(self) -> tuple[int, ...]:
        n = self._event_shape[-1]
        return (*self._batch_shape, n, n)

    @cached_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @cached_property
    def covariance_matrix(self) -> Tensor:
        """The covariance matrix."""
        s = self._unbroadcasted_scale_tril
        return (s @ s.transpose(-2, -1)).expand(self._matrix_shape())

    @cached_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the covariance matrix."""
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    def _set_matrix(self, covariance_matrix: Any, precision_matrix: Any, scale_tril: Any) -> tuple[str, Tensor]:
        given = [(k, v) for k, v in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if v is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        return given[0]

    def _factor(self, name: str, value: Tensor) -> Tensor:
        if name == "scale_tril":
            return value
        return cholesky(value) if name == "covariance_matrix" else _precision_to_scale_tril(value)


class MultivariateNormal(LocCentered, _ScaleTril, Distribution):
    """The multivariate normal of mean ``loc`` and one of ``covariance_matrix``, ``precision_matrix`` or
    ``scale_tril`` (the lower Cholesky factor of the covariance)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, value = self._set_matrix(covariance_matrix, precision_matrix, scale_tril)
        if value.ndim < 2:
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = api.broadcast_shapes(tuple(value.shape[:-2]), tuple(loc.shape[:-1]))
        self.__dict__[name] = value.expand((*batch_shape, -1, -1))
        self.loc = loc.expand((*batch_shape, -1))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = self._factor(name, value)

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand((*self._batch_shape, *self._event_shape))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = api.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        m = _mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self) -> Tensor:
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)


def _capacitance_tril(w: Tensor, d: Tensor) -> Tensor:
    """The Cholesky factor of ``I + W^T D^-1 W``."""
    m = w.shape[-1]
    k = (w.transpose(-2, -1) / d.unsqueeze(-2)) @ w
    return cholesky(k + api.eye(m, dtype=w.dtype, device=w.device))


class LowRankMultivariateNormal(LocCentered, Distribution):
    """The multivariate normal of mean ``loc`` and covariance ``cov_factor @ cov_factor.mT + diag(cov_diag)``
    (a low-rank factor plus a positive diagonal), whose densities need only an ``m x m`` factorization."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: bool | None = None) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.ndim < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = api.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                     cov_diag.unsqueeze(-1))
        except Exception as e:  # the shape error of broadcast_tensors, in PyTorch's words
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def _full(self, m: Tensor) -> Tensor:
        n = self._event_shape[0]
        return m.expand((*self._batch_shape, n, n))

    @cached_property
    def variance(self) -> Tensor:  # type: ignore[override]
        v = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return v.expand((*self._batch_shape, *self._event_shape))

    @cached_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance."""
        n = self._event_shape[0]
        dsqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        w = self._unbroadcasted_cov_factor / dsqrt
        k = w @ w.transpose(-2, -1) + api.eye(n, dtype=w.dtype, device=w.device)
        return self._full(dsqrt * cholesky(k))

    @cached_property
    def covariance_matrix(self) -> Tensor:
        """``W W^T + diag(D)``."""
        w = self._unbroadcasted_cov_factor
        return self._full(w @ w.transpose(-2, -1) + self._unbroadcasted_cov_diag.diag_embed())

    @cached_property
    def precision_matrix(self) -> Tensor:
        """The inverse covariance, by the Woodbury identity."""
        wt_dinv = self._unbroadcasted_cov_factor.transpose(-2, -1) / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = solve_lower(self._capacitance_tril.expand((*wt_dinv.shape[:-1], wt_dinv.shape[-2])), wt_dinv)
        return self._full(self._unbroadcasted_cov_diag.reciprocal().diag_embed() - a.transpose(-2, -1) @ a)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps_w = api.randn((*shape[:-1], self.cov_factor.shape[-1]), dtype=self.loc.dtype, device=self.loc.device)
        eps_d = api.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def _log_det(self) -> Tensor:
        return (2 * self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                + self._unbroadcasted_cov_diag.log().sum(-1))

    def log_prob(self, value: Tensor) -> Tensor:
        x = self._checked(value) - self.loc
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        wt_dinv_x = _batch_mv(w.transpose(-2, -1) / d.unsqueeze(-2), x)
        m = (x.pow(2) / d).sum(-1) - _mahalanobis(self._capacitance_tril, wt_dinv_x)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self) -> Tensor:
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)


class Wishart(_ScaleTril, ExponentialFamily):
    """The Wishart distribution over positive-definite matrices, of ``df`` degrees of freedom (> n - 1) and
    one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        """The matrix parameters and ``df > n - 1``."""
        return {"covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df: Tensor | float, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        name, param = self._set_matrix(covariance_matrix, precision_matrix, scale_tril)
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = api.tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = api.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        self.__dict__[name] = param.expand((*batch_shape, -1, -1))
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.", stacklevel=2)
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)  # for arg_constraints
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = self._factor(name, param)
        offsets = api.arange(p, dtype=param.dtype, device=param.device).expand((*batch_shape, p))
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - offsets)

    def _expanded(self, source: Distribution, batch_shape: Size) -> None:
        self.df = source.df.expand(batch_shape)  # type: ignore[attr-defined]
        p = self._event_shape[-1]
        offsets = api.arange(p, dtype=self.df.dtype, device=self.df.device).expand((*batch_shape, p))
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - offsets)

    def _df_matrix(self, df: Tensor) -> Tensor:
        return df.reshape((*self._batch_shape, 1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = api.where(factor <= 0, float("nan"), factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        v = self.covariance_matrix
        diag_v = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (v.pow(2) + diag_v.unsqueeze(-1) * diag_v.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: Sequence[int] = ()) -> Tensor:
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        diag = chi.clamp(min=api.finfo(chi.dtype).eps).diag_embed()
        rows, cols = tril_indices(p, p, offset=-1, device=chi.device)
        below = api.zeros(diag.shape, dtype=diag.dtype, device=diag.device)
        below[..., rows, cols] = api.randn((*sample_shape, *self._batch_shape, p * (p - 1) // 2), dtype=diag.dtype,
                                           device=diag.device)
        chol = self._unbroadcasted_scale_tril @ (diag + below)
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape: Sequence[int] = (), max_try_correction: int | None = None) -> Tensor:
        """Bartlett draws; a (rare) singular draw is drawn again, up to ``max_try_correction`` times."""
        sample = self._bartlett_sampling(sample_shape)
        for _ in range(10 if max_try_correction is None else max_try_correction):
            singular = ~self.support.check(sample)
            if not bool(singular.any()):
                break
            warnings.warn("Singular sample detected.", stacklevel=2)
            sample = api.where(singular.reshape((*singular.shape, 1, 1)), self._bartlett_sampling(sample_shape), sample)
        return sample

    def _trace_inv_cov_times(self, value: Tensor) -> Tensor:
        return (self.precision_matrix * value.transpose(-2, -1)).sum((-2, -1))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        nu, p = self.df, self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _LOG_2 / 2 + half_log_det) - mvlgamma(nu / 2, p) + (nu - p - 1) / 2 * logdet_pd(value)
                - self._trace_inv_cov_times(value) / 2)

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det) + mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        p = self._event_shape[-1]
        return (-self.precision_matrix / 2, (self.df - p - 1) / 2)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-logdet_pd(-2 * x) + _LOG_2 * p) + mvlgamma(y + (p + 1) / 2, p)


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors of ``dim x dim`` correlation matrices, of
    ``concentration`` (> 0; 1 is uniform over correlation matrices)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        self._beta = self._make_beta(self.concentration)
        super().__init__(self.concentration.shape, (dim, dim), validate_args)

    def _make_beta(self, concentration: Tensor) -> Beta:
        marginal_conc = concentration + 0.5 * (self.dim - 2)
        offset = api.arange(self.dim - 1, dtype=concentration.dtype, device=concentration.device)
        offset = api.cat([api.zeros(1, dtype=offset.dtype, device=offset.device), offset])
        return Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)

    def _expanded(self, source: Distribution, batch_shape: Size) -> None:
        self._beta = self._make_beta(self.concentration)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with api.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = api.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            u = u / u.pow(2).sum(-1, keepdim=True).sqrt()
            first_row = (api.arange(self.dim, device=u.device) == 0).reshape(self.dim, 1)
            u = api.where(first_row, 0.0, u)  # row 0 is (1, 0, ...) once the diagonal is added
            w = y.sqrt() * u
            diag = (1 - w.pow(2).sum(-1)).clamp(min=api.finfo(w.dtype).tiny).sqrt()
            return w + diag.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = api.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = 0.5 * dm1 * math.log(math.pi) + mvlgamma(alpha - 0.5, dm1) - alpha.lgamma() * dm1
        return unnormalized - normalize
