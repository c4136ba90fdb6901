"""The constraints a distribution's parameters and samples satisfy, as ``torch.distributions.constraints``.

Each ``check(value)`` is a bool tensor of the value's batch shape: True where the value is allowed.
"""

from __future__ import annotations

from typing import Any

from .._api import Tensor

__all__ = ["Constraint", "real", "positive", "unit_interval", "boolean", "simplex", "interval", "half_open_interval",
           "integer_interval", "nonnegative_integer", "greater_than", "less_than", "real_vector", "dependent"]


class Constraint:
    """A region of values; ``event_dim`` dims on the right form one event (1 for a simplex)."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """True where ``value`` lies in the region (one answer per event)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__[1:]}()"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value


class _RealVector(_Real):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value == value).all(-1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: float) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{type(self).__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: int) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Dependent(Constraint):
    """A constraint that depends on other parameters (``Uniform``'s bounds): checked by the distribution."""

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("cannot determine validity of dependent constraint")


real = _Real()
real_vector = _RealVector()
positive = _GreaterThan(0.0)
unit_interval = _Interval(0.0, 1.0)
boolean = _Boolean()
simplex = _Simplex()
nonnegative_integer = _IntegerGreaterThan(0)
dependent = _Dependent()
interval = _Interval
greater_than = _GreaterThan
less_than = _LessThan
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
