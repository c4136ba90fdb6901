"""``ExponentialFamily``: distributions whose density is ``exp(<t(x), theta> - F(theta) + k(x))``; their
entropy follows from the log-normalizer ``F`` by autograd (a Bregman divergence), as PyTorch."""

from __future__ import annotations

from .. import autograd
from .._api import Tensor
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """The base of the exponential-family distributions: subclasses give ``_natural_params``,
    ``_log_normalizer`` and ``_mean_carrier_measure``."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, from the gradient of the log-normalizer at the natural parameters."""
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = lg_normal - self._mean_carrier_measure
        for p, g in zip(nparams, gradients, strict=True):
            result = result - (p * g).reshape((*tuple(self._batch_shape), -1)).sum(-1)
        return result
