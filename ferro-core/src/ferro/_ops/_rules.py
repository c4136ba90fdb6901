"""The dtype check of ops written in other ops: their record's rule refuses a dtype before any op runs."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from .._core.dtypes import DType
from .._core.records import REGISTRY, register_composites
from .._core.tensor import Tensor
from ..errors import DTypeError

__all__ = ["check_rule", "check_dtype", "register_ruled"]


def check_rule(name: str, *tensors: Any) -> None:
    """Raise DTypeError naming op ``name`` when a tensor's dtype is outside the op's dtype rule."""
    for t in tensors:
        if isinstance(t, Tensor):
            check_dtype(name, t._dtype)


def check_dtype(name: str, dtype: DType) -> None:
    """Raise DTypeError naming op ``name`` when ``dtype`` (an input's, or the ``dtype=`` a factory is asked
    for) is outside the op's dtype rule."""
    op = REGISTRY[name]
    if dtype not in op.table:
        raise DTypeError(f"{name}: not defined for dtype {dtype}; it takes {op.dtype_words}")


def _checked(name: str, fn: Callable[..., Any], first_only: bool) -> Callable[..., Any]:
    """``fn`` behind the dtype rule of op ``name``, checked on its tensor arguments (only the first: the input,
    where the others are indices or weights of their own dtypes)."""
    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        check_rule(name, *(tensors[:1] if first_only else tensors))
        return fn(*args, **kwargs)
    return checked


def register_ruled(kind: str, rows: Sequence[tuple[Any, ...]], rules: Mapping[str, str], *, prefix: str = "",
                   first_only: Collection[str] = ()) -> dict[str, Callable[..., Any]]:
    """:func:`~ferro._core.records.register_composites` with a dtype rule per op: ``rules`` maps a row's name
    to its rule (a name of ``DTYPE_RULES``; rows not named take ``"same"``), and the op's entry refuses a
    tensor argument outside its rule (``DTypeError`` naming the op, the dtype and what it takes) before the
    decomposition runs, so the rule, the capability queries and the call agree. For the rows named in
    ``first_only`` the rule covers the first tensor argument only (``nll_loss``'s target is an index tensor).
    Returns name -> public function, in the rows' order."""
    out: dict[str, Callable[..., Any]] = {}
    for name, fn, *uses in rows:
        rule = rules.get(name, "same")
        row = (name, fn if rule == "same" else _checked(prefix + name, fn, name in first_only), *uses)
        out.update(register_composites(kind, [row], dtype_rule=rule, prefix=prefix))
    return out
