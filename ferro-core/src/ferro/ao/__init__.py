"""``ferro.ao``: PyTorch's ``torch.ao`` names (``ferro.ao.quantization`` is :mod:`ferro.quantization`)."""

from __future__ import annotations

from . import quantization

__all__ = ["quantization"]
