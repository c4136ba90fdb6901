"""``ferro.backends.cudnn``: ``torch.backends.cudnn``'s switches, accepted and remembered, changing nothing.

>>> import ferro.backends.cudnn as cudnn
>>> cudnn.benchmark = True
>>> cudnn.deterministic
False
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from ._flags import backend_available

__all__ = ["enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit", "is_available", "version",
           "flags"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    """Whether ferro's CUDA backend can run here (ferro-cuda picks its convolution kernels itself)."""
    return backend_available("cuda")


def version() -> int | None:
    """PyTorch's cuDNN version; ferro links no cuDNN of its own: None."""
    return None


@contextmanager
def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True, **more: Any) -> Any:
    """Set the switches inside a ``with`` block, as ``torch.backends.cudnn.flags``, and restore them after."""
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    space = globals()
    old = {n: space[n] for n in names}
    space.update(zip(names, (enabled, benchmark, deterministic, allow_tf32), strict=True))
    try:
        yield
    finally:
        space.update(old)
