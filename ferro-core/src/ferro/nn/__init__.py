"""Neural-network building blocks, as ``torch.nn``: ``Module``, ``Parameter``, containers and layers.

``ferro.nn.functional`` holds the stateless functions, ``ferro.nn.init`` the
initializations and ``ferro.nn.utils`` gradient clipping.
"""

from . import functional, init, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter

__all__ = ["functional", "init", "utils", "Parameter", "Buffer", *_modules_all]
