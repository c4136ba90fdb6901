"""The ``probs`` / ``logits`` parameterization shared by the binary-outcome distributions (Bernoulli,
Binomial, Geometric, NegativeBinomial, ContinuousBernoulli): exactly one is given, the other is computed
on first use."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from .._api import Size, Tensor
from .utils import broadcast_all, logits_to_probs, probs_to_logits

__all__ = ["BinaryParams", "one_of"]


def one_of(probs: Any, logits: Any) -> tuple[str, Any]:
    """``("probs", probs)`` or ``("logits", logits)``: the one given; both or neither raise as PyTorch."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


class BinaryParams:
    """``probs`` (of the outcome 1) and ``logits`` (its log-odds), one given and the other derived."""

    _given: str

    @cached_property
    def probs(self) -> Tensor:
        """The probability of success."""
        return logits_to_probs(self.logits, is_binary=True)

    @cached_property
    def logits(self) -> Tensor:
        """``log(p / (1 - p))``."""
        return probs_to_logits(self.probs, is_binary=True)

    @property
    def _param(self) -> Tensor:
        return self.__dict__[self._given]

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given."""
        return self._param.shape

    def _set_binary(self, probs: Any, logits: Any, *others: Any) -> tuple[Tensor, ...]:
        """Set the parameter given, broadcast with ``others``; return the broadcast ``others``."""
        self._given, value = one_of(probs, logits)
        param, *rest = broadcast_all(value, *others)
        self.__dict__[self._given] = param
        return tuple(rest)
