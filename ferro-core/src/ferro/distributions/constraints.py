"""The constraints a distribution's parameters and samples satisfy, as ``torch.distributions.constraints``.

Each ``check(value)`` is a bool tensor of the value's batch shape: True where the value is allowed (the
``event_dim`` rightmost dims form one event and are reduced).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import _api as api
from .. import linalg
from .._api import Tensor
from ._linalg import is_positive_definite

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval", "is_dependent",
           "less_than", "lower_cholesky", "lower_triangular", "MixtureSameFamilyConstraint", "multinomial",
           "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_semidefinite",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex", "square", "stack",
           "symmetric", "unit_interval"]


class Constraint:
    """A region of values; ``event_dim`` dims on the right form one event (1 for a simplex)."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """True where ``value`` lies in the region (one answer per event)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__[1:]}()"


class _Dependent(Constraint):
    """A constraint that depends on other parameters (``Uniform``'s bounds): checked by the distribution."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return bool(self._is_discrete)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return int(self._event_dim)

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> _Dependent:
        return _Dependent(is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
                          event_dim=self._event_dim if event_dim is NotImplemented else event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a dependent one (checked by its distribution, not by itself)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """``@constraints.dependent_property``: a property on instances, a dependent constraint on the class."""

    def __init__(self, fn: Callable[..., Any] | None = None, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        self._is_discrete, self._event_dim = is_discrete, event_dim

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with ``reinterpreted_batch_ndims`` more dims reduced into one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.ndim < n:
            raise ValueError(f"Expected value.dim() >= {self.base_constraint.event_dim + n} but got {value.ndim}")
        return result.reshape((*tuple(result.shape[:result.ndim - n]), -1)).all(-1)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The support of a mixture: its components' support, checked per component."""

    def __init__(self, base_constraint: Constraint) -> None:
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        unsqueezed = value.unsqueeze(-1 - self.event_dim)
        result = self.base_constraint.check(unsqueezed)
        if value.ndim < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.ndim}")
        num_dim_to_keep = value.ndim - self.event_dim
        return result.reshape((*tuple(result.shape[:num_dim_to_keep]), -1)).all(-1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # False at NaN


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        is_boolean = ((value == 0) | (value == 1)).all(-1)
        return is_boolean & (value.sum(-1) == 1)


class _Bounded(Constraint):
    """A constraint with bounds, shown in its repr."""

    _bounds: tuple[str, ...] = ()

    def __repr__(self) -> str:
        shown = ", ".join(f"{b}={getattr(self, b)}" for b in self._bounds)
        return f"{type(self).__name__[1:]}({shown})"


class _IntegerInterval(_Bounded):
    is_discrete = True
    _bounds = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerLessThan(_Bounded):
    is_discrete = True
    _bounds = ("upper_bound",)

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value <= self.upper_bound)


class _IntegerGreaterThan(_Bounded):
    is_discrete = True
    _bounds = ("lower_bound",)

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)


class _GreaterThan(_Bounded):
    _bounds = ("lower_bound",)

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound < value) & (value == value)


class _GreaterThanEq(_GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value == value)


class _LessThan(_Bounded):
    _bounds = ("upper_bound",)

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value < self.upper_bound) & (value == value)


class _Interval(_Bounded):
    _bounds = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)


class _HalfOpenInterval(_Interval):
    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Non-negative counts summing to at most ``upper_bound`` (PyTorch's weaker check)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


def _flat_all(value: Tensor) -> Tensor:
    """All of the last two dims."""
    return value.reshape((*tuple(value.shape[:-2]), -1)).all(-1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _flat_all(value.tril() == value)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _flat_all(value.tril() == value) & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        tol = api.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = value.detach().pow(2).sum(-1).sqrt()
        return _LowerCholesky().check(value) & ((row_norm - 1.0).abs() <= tol).all(-1)


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return api.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=api.bool,
                        device=value.device)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        square = super().check(value)
        if not bool(square.all()):
            return square
        return api.isclose(value, value.transpose(-2, -1), atol=1e-6).all(-1).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return (linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return is_positive_definite(value)


class _Cat(Constraint):
    """Constraints ``cseq`` on consecutive pieces (of sizes ``lengths``) of dim ``dim``, as ``cat``."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0, lengths: Sequence[int] | None = None) -> None:
        self.cseq, self.dim = list(cseq), dim
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.cseq)

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths, strict=True):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return api.cat(checks, self.dim)


class _Stack(Constraint):
    """Constraints ``cseq`` on the slices of dim ``dim``, as ``stack``."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0) -> None:
        self.cseq, self.dim = list(cseq), dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value: Tensor) -> Tensor:
        vs = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return api.stack([c.check(v) for v, c in zip(vs, self.cseq, strict=True)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
