"""``ferro.ao.quantization``: :mod:`ferro.quantization` under PyTorch's ``torch.ao.quantization`` name."""

from __future__ import annotations

from ...quantization import *  # noqa: F403
from ...quantization import __all__  # noqa: F401
