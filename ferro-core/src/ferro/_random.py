"""Random number generation state: one generator per device, kept by its backend."""

from __future__ import annotations

from typing import Any

from ._core.device import device as device_cls
from ._core.dtypes import uint8
from ._core.host import np
from ._core.tensor import Tensor, from_host
from .backends import _registry

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "Generator", "using"]


def manual_seed(seed: int) -> None:
    """Seed the generators of every device, now and of devices first used later."""
    _registry.seed_all(int(seed))


def seed() -> int:
    """Seed every device from the OS's entropy and return the seed used."""
    import secrets
    s = secrets.randbits(63)
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The last seed given to :func:`manual_seed` (0 when never called)."""
    return _registry.last_seed() or 0


def _resolve(dev: Any) -> device_cls:
    d = device_cls(dev if dev is not None else "cpu")
    d.backend  # noqa: B018
    return d


def get_rng_state(device: Any = None) -> Tensor:
    """The generator state of ``device`` (default ``cpu``) as a uint8 tensor on the CPU."""
    d = _resolve(device)
    return _bytes_tensor(d._backend.get_rng_state(d.index))


def set_rng_state(state: Tensor, device: Any = None) -> None:
    """Restore a state from :func:`get_rng_state` on ``device`` (default ``cpu``)."""
    d = _resolve(device)
    d._backend.set_rng_state(bytes(state.numpy().astype("uint8").tobytes()), d.index)


def _bytes_tensor(raw: bytes) -> Tensor:
    """A generator state as a uint8 tensor on the CPU."""
    return from_host(np().frombuffer(raw, dtype=np().uint8).copy(), uint8, device_cls("cpu"))


class Generator:
    """An independent random stream on one device, as ``torch.Generator``.

    Works on every backend through its state save/restore: drawing with a
    generator swaps its state into the device's generator for the call.
    """

    def __init__(self, device: Any = "cpu") -> None:
        self.device = device_cls(device)
        self._seed = 0
        self._state = self._fresh_state(0)

    def _fresh_state(self, seed: int) -> bytes:
        backend = self.device.backend
        saved = backend.get_rng_state(self.device.index)
        backend.manual_seed(seed, self.device.index)
        state = backend.get_rng_state(self.device.index)
        backend.set_rng_state(saved, self.device.index)
        return state

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed``; returns self."""
        self._seed = int(seed)
        self._state = self._fresh_state(self._seed)
        return self

    def seed(self) -> int:
        """Seed from the OS's entropy; returns the seed."""
        import secrets
        s = secrets.randbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the stream started from."""
        return self._seed

    def get_state(self) -> Tensor:
        """The stream's state as a uint8 CPU tensor."""
        return _bytes_tensor(self._state)

    def set_state(self, state: Tensor) -> Generator:
        """Restore a state from :meth:`get_state`; returns self."""
        self._state = bytes(state.numpy().astype("uint8").tobytes())
        return self

    def __repr__(self) -> str:
        return f"<ferro.Generator device={self.device}>"


class using:  # noqa: N801
    """Within the block, draws on ``generator.device`` come from ``generator`` (None: the device's own)."""

    def __init__(self, generator: Generator | None, dev: Any = None) -> None:
        self.gen = generator
        if generator is not None and dev is not None and generator.device is not dev:
            raise RuntimeError(f"the generator is on {generator.device}, the tensor on {dev}")

    def __enter__(self) -> None:
        g = self.gen
        if g is not None:
            backend = g.device.backend
            self.saved = backend.get_rng_state(g.device.index)
            backend.set_rng_state(g._state, g.device.index)

    def __exit__(self, *exc: object) -> None:
        g = self.gen
        if g is not None:
            backend = g.device.backend
            g._state = backend.get_rng_state(g.device.index)
            backend.set_rng_state(self.saved, g.device.index)
