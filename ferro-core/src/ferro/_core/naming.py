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

from ..errors import BackendNotFoundError, BackendUnavailableError

__all__ = ["in_op", "names_errors", "wrong_argument", "wrong_type", "not_a_tensor"]


def not_a_tensor(op: str, arg: str, value: Any) -> TypeError:
    """The error for a value that is not a tensor where ``op`` takes one (raise it from an ``except
    AttributeError`` around the first use of the argument: free while nothing fails)."""
    return TypeError(f"{op}(): argument '{arg}' must be a Tensor, not {type(value).__name__}")

#: The exceptions whose message is prefixed (a KeyError's message is the repr of its key: left alone).
RENAMED = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError, MemoryError)


#: Errors about the machine rather than the call (a backend that cannot run here): their message stays whole.
_NOT_THE_CALL = (BackendUnavailableError, BackendNotFoundError)


def in_op(name: str, err: BaseException) -> None:
    """Prefix ``err``'s message with ``name`` unless it already starts with it."""
    if isinstance(err, (KeyError, *_NOT_THE_CALL)) or len(err.args) != 1 or not isinstance(err.args[0], str):
        return
    msg = err.args[0]
    if not msg.startswith((name, f"op '{name}'")):  # the message names the op already
        err.args = (f"{name}: {msg}",)


#: Python values that are never tensors (a list, a number, a string where a tensor was expected).
_PLAIN = (str, bytes, bool, int, float, complex, list, tuple, dict, set)


def wrong_argument(fn: Callable[..., Any], err: AttributeError, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> str | None:
    """The name of the argument of ``fn`` that lacks the attribute ``err`` asked for (a number or a string
    where a tensor was expected), or None when the object is none of the arguments."""
    obj = getattr(err, "obj", None)
    if not isinstance(obj, _PLAIN):  # a ferro object lacking an attribute is a bug of ferro's, not the caller's
        return None
    code = getattr(fn, "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    for i, a in enumerate(args):
        if a is obj:
            return names[i] if i < len(names) else f"#{i + 1}"
    return next((k for k, v in kwargs.items() if v is obj), None)


def wrong_type(name: str, fn: Callable[..., Any], err: AttributeError, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> TypeError | None:
    """The TypeError naming op ``name`` and the argument of ``fn`` whose wrong type ``err`` shows (a number or a
    string where a tensor was expected), or None when ``err`` is not about an argument."""
    arg = wrong_argument(fn, err, args, kwargs)
    if arg is None:
        return None
    obj = err.obj  # type: ignore[attr-defined]
    return TypeError(f"{name}(): argument '{arg}' must be a Tensor, not {type(obj).__name__} ({obj!r:.40})")


def names_errors(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its errors named after op ``name`` (see the module docstring); an argument of the wrong
    type that fails as an AttributeError inside (``'str' object has no attribute 'ndim'``) is a TypeError
    naming the op and the argument."""
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RENAMED as e:
            in_op(name, e)
            raise
        except AttributeError as e:
            named = wrong_type(name, fn, e, args, kwargs)
            if named is None:
                raise
            raise named from e
    return op
