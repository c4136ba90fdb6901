"""Optimizers (``torch.optim``-style) and learning-rate schedulers (:mod:`ferro.optim.lr_scheduler`).

``import ferro`` imports the optimizers whose update is a registered op (``adam_step``...: the op registry
is complete before a device binds its kernels); the others, and the schedulers, on first use.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from .._core.lazy import attributes
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

if _TYPE_CHECKING:  # what type checkers see: every optimizer, as if imported here
    from .adafactor import Adafactor
    from .lbfgs import LBFGS
    from .muon import Muon
    from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "Adadelta", "RAdam", "LBFGS",
           "Rprop", "ASGD", "SparseAdam", "Adafactor", "Muon",
           "lr_scheduler"]

_LATER = {"LBFGS": ".lbfgs", "Muon": ".muon", "Adafactor": ".adafactor", "SparseAdam": ".sparse_adam"}
__getattr__ = attributes(__name__, {**_LATER, "lr_scheduler": ".lr_scheduler"})


def __dir__() -> list[str]:
    for name in _LATER:  # every optimizer, as before they were loaded lazily
        __getattr__(name)
    return sorted(globals())
