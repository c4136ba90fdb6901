"""Optimizers (``torch.optim``-style) and learning-rate schedulers (:mod:`ferro.optim.lr_scheduler`)."""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
