"""Optimizers (``torch.optim``-style) and learning-rate schedulers (:mod:`ferro.optim.lr_scheduler`)."""

from .._core.lazy import attributes
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "Adadelta", "RAdam", "LBFGS",
           "Rprop", "ASGD", "SparseAdam", "Adafactor", "Muon",
           "lr_scheduler"]

__getattr__ = attributes(__name__, {"lr_scheduler": ".lr_scheduler"})  # loaded by the scripts that schedule
