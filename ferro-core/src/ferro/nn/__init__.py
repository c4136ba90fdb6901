"""Neural-network building blocks, as ``torch.nn``: ``Module``, ``Parameter``, containers and layers.

``ferro.nn.functional`` holds the stateless functions, ``ferro.nn.init`` the
initializations and ``ferro.nn.utils`` gradient clipping.

The layers (:mod:`ferro.nn.modules`, some thirty modules), ``init`` and ``utils`` are imported when one of
their names is first asked for: ``import ferro`` needs only ``functional`` and ``Parameter`` here, and a
program's first op should not pay for ``Transformer``.
"""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import functional as functional
from .parameter import Buffer as Buffer
from .parameter import Parameter as Parameter

if _TYPE_CHECKING:  # what type checkers see: everything, as if imported here
    from . import init as init
    from . import utils as utils
    from .modules import *  # noqa: F403

_EAGER = ["functional", "init", "utils", "Parameter", "Buffer"]


def _load_layers() -> list[str]:
    """Import ``init``, ``utils`` and :mod:`ferro.nn.modules`, and put the layers' names here (once); returns
    ``__all__``."""
    for sub in ("init", "utils"):
        _importlib.import_module(f".{sub}", __name__)
    layers = _importlib.import_module(".modules", __name__)
    names = [n for n in layers.__all__ if n not in _EAGER]
    globals().update({n: getattr(layers, n) for n in names})
    globals()["__all__"] = all_ = [*_EAGER, *names]
    return all_


def __getattr__(name: str) -> _Any:
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    _load_layers()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'") from None


def __dir__() -> list[str]:
    if "__all__" not in globals():
        _load_layers()
    return sorted(globals())
