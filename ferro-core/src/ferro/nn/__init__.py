"""Neural-network building blocks, as ``torch.nn``: ``Module``, ``Parameter``, containers and layers.

``ferro.nn.functional`` holds the stateless functions, ``ferro.nn.init`` the
initializations and ``ferro.nn.utils`` gradient clipping.
"""

from . import functional, init, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .modules.attention import multi_head_attention_forward as _mha_forward
from .parameter import Buffer, Parameter

#: nn.functional's one function written with a layer: given to the lower module here, once (the layer imports it).
functional.multi_head_attention_forward = _mha_forward  # type: ignore[attr-defined]

__all__ = ["functional", "init", "utils", "Parameter", "Buffer", *_modules_all]
