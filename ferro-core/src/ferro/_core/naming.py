"""Errors name the user's op: a failure inside a composite is reported under the op that was called.

A composite op (``batch_norm``, ``var``, ``conv2d``...) runs as other ops; when one of those fails, its
message names the inner op (``reshape``, ``gather``), which the user never called. The public function of
every composite is wrapped so that such a message is prefixed with the outer op's name
(``batch_norm: reshape: shape [1, 3] is invalid...``): the user reads which call failed and, after it,
which step. The exception keeps its type, attributes and traceback; only its message grows. ``try`` costs
nothing while no exception is raised.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["in_op", "names_errors"]

#: The exceptions whose message is prefixed (a KeyError's message is the repr of its key: left alone).
RENAMED = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError)


def in_op(name: str, err: BaseException) -> None:
    """Prefix ``err``'s message with ``name`` unless it already starts with it."""
    if isinstance(err, KeyError) or len(err.args) != 1 or not isinstance(err.args[0], str):
        return
    msg = err.args[0]
    if not msg.startswith(name):
        err.args = (f"{name}: {msg}",)


def names_errors(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its errors named after op ``name`` (see the module docstring)."""
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RENAMED as e:
            in_op(name, e)
            raise
    return op
