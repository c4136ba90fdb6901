"""The switches of ``torch.backends.cudnn`` / ``cuda`` / ``mps`` / ... as plain settings.

PyTorch scripts set them at startup (``torch.backends.cudnn.benchmark = True``); ferro's backends choose
their kernels themselves, so the settings are remembered, readable and changeable, and change nothing.
``is_available()`` answers for the ferro backend the library belongs to (cuDNN and cuBLAS: ``cuda``;
MPS and the others: never).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Flags", "backend_available"]


def backend_available(name: str) -> bool:
    """Whether the ferro backend ``name`` is installed and can run here (never raises)."""
    from . import _registry
    b = _registry.backends().get(name)
    return b is not None and bool(b.availability())


class Flags:
    """A namespace of settings with PyTorch's defaults; attributes not in the defaults are refused."""

    def __init__(self, name: str, **defaults: Any) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", dict(defaults))

    def __getattr__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"{self._name} has no setting {key!r} (ferro accepts: "
                                 f"{', '.join(sorted(self._values))})") from None

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in self._values:
            raise AttributeError(f"{self._name} has no setting {key!r} (ferro accepts: "
                                 f"{', '.join(sorted(self._values))})")
        self._values[key] = value

    def __repr__(self) -> str:
        return f"<{self._name}: {self._values}>"
