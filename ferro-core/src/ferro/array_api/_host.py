"""The few functions no registry op can express, computed on the host.

``nextafter`` reads the bits of floats, which no ferro op does. It is rare
and off every hot path, so the values travel to NumPy and back to the
array's device; the result keeps the device and dtype.
"""

from __future__ import annotations

from .._api import tensor
from .._core.host import np
from .._core.tensor import Tensor


def host_binary(name: str, x1: Tensor, x2: Tensor) -> Tensor:
    """NumPy's ``name`` of two arrays of one dtype and device, returned on that device."""
    a, b = x1.detach().numpy(), x2.detach().numpy()
    return tensor(getattr(np(), name)(a, b), dtype=x1.dtype, device=x1.device)
