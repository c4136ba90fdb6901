"""The random state of every device, as one value: for training checkpoints and recomputation.

``ferro.get_rng_state(device)`` reads one device's generator; a checkpoint
needs all of them, plus the global seed that devices first used later are
seeded from. :func:`get_all_rng_states` gathers that into a dict of plain
values (bytes, ints, strings) that :func:`ferro.save` stores;
:func:`set_all_rng_states` puts it back, binding the devices it names.

>>> import ferro
>>> ferro.manual_seed(0)
>>> states = ferro.random.get_all_rng_states()
>>> a = ferro.rand(3)
>>> ferro.random.set_all_rng_states(states)
>>> bool((ferro.rand(3) == a).all())
True
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from ._random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .backends import _registry

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "Generator",
           "get_all_rng_states", "set_all_rng_states", "fork_rng"]


def _devices(devices: Iterable[Any] | None) -> list[Any]:
    from ._core.device import device
    from .backends._registry import bound_devices
    if devices is None:
        out = bound_devices()
        cpu = device("cpu")
        return out if cpu in out else [cpu, *out]
    return list(dict.fromkeys(device(d) for d in devices))


def get_all_rng_states(devices: Iterable[Any] | None = None) -> dict[str, Any]:
    """The generator state of every device in use (default), or of ``devices``, and the global seed.

    Returns ``{"seed": int | None, "devices": {"cpu": bytes, "opencl:0": bytes, ...}}``; the CPU is
    always included. ``"seed"`` is the last :func:`ferro.manual_seed` (None when never called), which
    devices first used after a restore are seeded from.
    """
    states = {}
    for d in _devices(devices):
        states[str(d)] = bytes(d.backend.get_rng_state(d.index))
    return {"seed": _registry.last_seed(), "devices": states}


def set_all_rng_states(states: dict[str, Any]) -> None:
    """Restore what :func:`get_all_rng_states` returned (devices it names are bound if need be).

    A device whose backend is not installed or cannot run here (a checkpoint written on a GPU machine,
    loaded on a laptop) is skipped with a warning naming it and the reason; the others are restored.
    """
    from ._core.device import device
    from .errors import BackendNotFoundError, BackendUnavailableError
    if not isinstance(states, dict) or not isinstance(states.get("devices"), dict):
        raise TypeError("set_all_rng_states() expects the dict returned by get_all_rng_states(), "
                        f"got {type(states).__name__}")
    s = states.get("seed")
    _registry.set_last_seed(None if s is None else int(s))
    for name, raw in states["devices"].items():
        if not isinstance(raw, (bytes, bytearray)):
            raise TypeError(f"the RNG state of device {name!r} must be bytes, got {type(raw).__name__}")
        try:
            d = device(name)
            backend = d.backend
        except (BackendNotFoundError, BackendUnavailableError) as e:
            warnings.warn(f"the RNG state of device {name!r} was not restored: {e}", RuntimeWarning, stacklevel=2)
            continue
        backend.set_rng_state(bytes(raw), d.index)


@contextlib.contextmanager
def fork_rng(devices: Iterable[Any] | None = None, enabled: bool = True) -> Iterator[None]:
    """Within the block draw freely: on exit the generators of ``devices`` (default: every device in
    use, and the CPU) are back to their state on entry, as ``torch.random.fork_rng``."""
    if not enabled:
        yield
        return
    saved = get_all_rng_states(devices)
    try:
        yield
    finally:
        set_all_rng_states(saved)
