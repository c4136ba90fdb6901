"""``ferro.backends.mps``: Apple's Metal backend as ``torch.backends.mps`` asks for it; ferro has none.

>>> import ferro
>>> ferro.backends.mps.is_available()
False
"""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Whether MPS can run: ferro has no Metal backend, so never."""
    return False


def is_built() -> bool:
    """Whether ferro was built with MPS: no."""
    return False
