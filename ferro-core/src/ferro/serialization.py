"""Saving and loading tensors and state dicts in the safetensors format (never pickle)."""

from __future__ import annotations

from typing import Any

__all__ = ["save", "load"]


def save(obj: Any, f: Any) -> None:
    """Save ``obj`` (a tensor or a nested dict of tensors) to ``f`` in the safetensors format."""
    raise NotImplementedError("ferro.save arrives with the serialization work of issue 4")


def load(f: Any, map_location: Any = None) -> Any:
    """Load what :func:`save` wrote."""
    raise NotImplementedError("ferro.load arrives with the serialization work of issue 4")
