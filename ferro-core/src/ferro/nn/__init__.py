"""Neural-network building blocks. ``ferro.nn.functional`` holds the stateless functions."""

from . import functional

__all__ = ["functional"]
