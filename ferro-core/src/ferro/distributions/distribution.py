"""The base of every distribution: shapes, argument validation, sampling, as ``torch.distributions``.

A distribution has a ``batch_shape`` (independent distributions side by side, from broadcasting its
parameters) and an ``event_shape`` (the shape of one draw). ``sample(sample_shape)`` has shape
``sample_shape + batch_shape + event_shape`` and no gradient; ``rsample`` (where ``has_rsample``) is the
reparameterized draw that gradients flow through.

With validation on (the default, as PyTorch's ``__debug__``), a parameter outside its constraint and a
value outside the support given to ``log_prob`` raise ``ValueError``, in PyTorch's words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from numbers import Number
from typing import Any, ClassVar

from .. import _api as api
from .._api import Size, Tensor
from . import constraints
from .utils import broadcast_all

__all__ = ["Distribution", "broadcast_all"]


class Distribution:
    """The base class; subclasses give ``arg_constraints``, ``support`` and the methods they have."""

    has_rsample: ClassVar[bool] = False
    has_enumerate_support: ClassVar[bool] = False
    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}
    support: Any = None
    _validate_args: ClassVar[bool] = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution made afterwards."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if not self._validate_args:
            return
        for name, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # checked by the subclass
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None), cached_property):
                continue  # a parameter computed lazily from the one given
            value = getattr(self, name)
            if not bool(constraint.check(value).all()):
                raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to satisfy the constraint {constraint!r}, but found "
                                 f"invalid values:\n{value}")

    def _set_params(self, validate_args: bool | None, event_shape: Sequence[int] = (), **params: Any) -> None:
        """Broadcast the parameters together, set them as attributes and initialize: the batch shape is
        theirs (``()`` where all are numbers)."""
        tensors = broadcast_all(*params.values())
        for name, value in zip(params, tensors, strict=True):
            setattr(self, name, value)
        scalar = all(isinstance(v, Number) for v in params.values())
        Distribution.__init__(self, Size() if scalar else tensors[0].shape, event_shape, validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Distribution:
        """The same distribution broadcast to ``batch_shape`` (the parameters are expanded, not copied, and
        not checked again)."""
        batch_shape = Size(batch_shape)
        new = self.__new__(type(self)) if _instance is None else _instance
        new.__dict__.update(self.__dict__)
        nb = len(self._batch_shape)
        for name in self.arg_constraints:
            value = self.__dict__.get(name)
            if isinstance(value, Tensor):
                new.__dict__[name] = value.expand(tuple(batch_shape) + tuple(value.shape[nb:]))
        for name in [k for k in new.__dict__ if k not in self.arg_constraints]:
            if isinstance(getattr(type(self), name, None), cached_property):
                del new.__dict__[name]  # a cached value of the old shape: computed again on use
        new._batch_shape = batch_shape
        new._expanded(self, batch_shape)
        return new

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        """A new, uninitialized instance for the ``expand`` of a subclass written as PyTorch's are."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expanded(self, source: Distribution, batch_shape: Size) -> None:
        """Adjust what :meth:`expand` copied from ``source`` beyond the parameters (nothing by default)."""

    @property
    def batch_shape(self) -> Size:
        """The shape of the batch of distributions."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of one draw."""
        return self._event_shape

    @property
    def mean(self) -> Tensor:
        """The mean of each distribution."""
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self) -> Tensor:
        """The most likely value of each distribution."""
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self) -> Tensor:
        """The variance of each distribution."""
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of each distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """Draws of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with api.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """Reparameterized draws: gradients flow to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample (its draws are not differentiable)")

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))``."""
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} has no log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of the cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support along a new first dim."""
        raise NotImplementedError(f"{type(self).__name__} has no enumerate_support")

    def entropy(self) -> Tensor:
        """The entropy of each distribution (in nats)."""
        raise NotImplementedError(f"{type(self).__name__} has no entropy")

    def perplexity(self) -> Tensor:
        """``exp(entropy)``."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: Sequence[int] = ()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = value.ndim - len(self._event_shape)
        if tuple(value.shape[start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(tuple(value.shape)), reversed(expected), strict=False):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {value.shape} vs "
                                 f"{Size(expected)}.")
        if not bool(self.support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({self.support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _checked(self, value: Tensor) -> Tensor:
        """``value`` after :meth:`_validate_sample` where validation is on."""
        if self._validate_args:
            self._validate_sample(value)
        return value

    def _param_like(self) -> Tensor:
        """A parameter tensor, whose dtype and device new tensors take."""
        return next(v for k in self.arg_constraints if isinstance(v := self.__dict__.get(k), Tensor))

    def __repr__(self) -> str:
        shown = [f"{k}: {v if v.numel() == 1 else v.shape}" for k in self.arg_constraints
                 if isinstance(v := self.__dict__.get(k), Tensor)]
        return f"{type(self).__name__}({', '.join(shown)})"


#: ``log(sqrt(2 pi))``, of the normal density.
LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class LocCentered:
    """A distribution whose mean and mode are its ``loc`` (Normal, Laplace, VonMises, the multivariate normals)."""

    loc: Tensor

    @property
    def mean(self) -> Tensor:
        """The mean: ``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """The mode: ``loc``."""
        return self.loc
