"""``biject_to(constraint)`` / ``transform_to(constraint)``: a transform from the unconstrained reals onto a
constraint's region (bijective for ``biject_to``, for HMC; maybe overparameterized for ``transform_to``, for
unconstrained optimization), as ``torch.distributions.constraint_registry``. ``register`` adds a factory
for a constraint class or instance."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Number
from typing import Any

from . import constraints
from . import transforms as tf

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

Factory = Callable[[Any], tf.Transform]


class ConstraintRegistry:
    """Constraint classes to the factories of their transforms."""

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint: Any, factory: Factory | None = None) -> Any:
        """Register ``factory`` for ``constraint`` (a Constraint subclass or instance); a decorator without
        ``factory``."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: Any) -> tf.Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(*cs: Any) -> Callable[[Factory], Factory]:
    def deco(f: Factory) -> Factory:
        for c in cs:
            biject_to.register(c, f)
            transform_to.register(c, f)
        return f
    return deco


@_both(constraints.real)
def _to_real(constraint: Any) -> tf.Transform:
    return tf.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: Any) -> tf.Transform:
    return tf.IndependentTransform(biject_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: Any) -> tf.Transform:
    return tf.IndependentTransform(transform_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@_both(constraints.greater_than, constraints.greater_than_eq)
def _to_greater_than(constraint: Any) -> tf.Transform:
    return tf.ComposeTransform([tf.ExpTransform(), tf.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint: Any) -> tf.Transform:
    return tf.ComposeTransform([tf.ExpTransform(), tf.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval, constraints.half_open_interval)
def _to_interval(constraint: Any) -> tf.Transform:
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if isinstance(lower, Number) and lower == 0 and isinstance(upper, Number) and upper == 1:
        return tf.SigmoidTransform()
    return tf.ComposeTransform([tf.SigmoidTransform(), tf.AffineTransform(lower, upper - lower)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: Any) -> tf.Transform:
    return tf.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: Any) -> tf.Transform:
    return tf.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: Any) -> tf.Transform:
    return tf.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint: Any) -> tf.Transform:
    return tf.PositiveDefiniteTransform()


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint: Any) -> tf.Transform:
    return tf.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint: Any) -> tf.Transform:
    return tf.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint: Any) -> tf.Transform:
    return tf.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint: Any) -> tf.Transform:
    return tf.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint: Any) -> tf.Transform:
    return tf.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
