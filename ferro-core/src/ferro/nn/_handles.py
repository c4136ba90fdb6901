"""The handle a ``register_*_hook`` method returns, and the arguments a pre-hook hands back: shared by the
layers (:mod:`ferro.nn.modules.module`) and the optimizers, which ``import ferro`` loads without the layers."""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["RemovableHandle", "new_args"]


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` (or leaving a ``with`` block) takes the hook back."""

    _next_id = itertools.count()

    def __init__(self, *hook_dicts: dict[int, Any]) -> None:
        self.id = next(RemovableHandle._next_id)
        self._dicts = hook_dicts

    def remove(self) -> None:
        """Take the hook back (a second call does nothing)."""
        for d in self._dicts:
            if isinstance(d, set):
                d.discard(self.id)
            else:
                d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


RemovableHandle.__module__ = "ferro.nn.modules.module"  # its public home (docs, stubs, pickles), as before the move


def new_args(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
             what: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The ``(args, kwargs)`` a pre-hook that takes both returned: ``result``, or the old ones for None."""
    if result is None:
        return args, kwargs
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{what} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
    return result
