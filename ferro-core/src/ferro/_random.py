"""Random number generation state: one generator per device, kept by its backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._device import device
    from ._tensor import Tensor

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"]

_seed: list[int | None] = [None]


def manual_seed(seed: int) -> None:
    """Seed the generators of every device, now and of devices first used later."""
    seed = int(seed)
    _seed[0] = seed
    from .backends._registry import bound_devices
    for dev in bound_devices():
        dev._backend.manual_seed(seed, dev.index)


def seed() -> int:
    """Seed every device from the OS's entropy and return the seed used."""
    import secrets
    s = secrets.randbits(63)
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The last seed given to :func:`manual_seed` (0 when never called)."""
    return _seed[0] or 0


def seed_new_device(dev: device, backend: Any) -> None:
    """Called when a device is first bound: apply the last manual seed to it."""
    backend.manual_seed(_seed[0] or 0, dev.index)


def _resolve(dev: Any) -> device:
    from ._device import device as device_cls
    d = device_cls(dev if dev is not None else "cpu")
    d.backend  # noqa: B018
    return d


def get_rng_state(device: Any = None) -> Tensor:
    """The generator state of ``device`` (default ``cpu``) as a uint8 tensor on the CPU."""
    from ._creation import tensor
    d = _resolve(device)
    import numpy as np
    raw = d._backend.get_rng_state(d.index)
    return tensor(np.frombuffer(raw, dtype=np.uint8).copy(), device="cpu")


def set_rng_state(state: Tensor, device: Any = None) -> None:
    """Restore a state from :func:`get_rng_state` on ``device`` (default ``cpu``)."""
    d = _resolve(device)
    d._backend.set_rng_state(bytes(state.numpy().astype("uint8").tobytes()), d.index)
