"""ferro's errors are caught by the ``except`` clauses written for PyTorch (docs/errors.md lists the differences)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import ferro
from ferro.errors import DTypeError, ShapeError

#: A mistake, spelled for a module ``m`` that is torch or ferro, and the ferro error it raises.
MISTAKES: dict[str, tuple[Callable[[Any], Any], type[Exception]]] = {
    "add: shapes do not broadcast": (lambda m: m.ones(2) + m.ones(3), ShapeError),
    "matmul: inner sizes differ": (lambda m: m.ones(2, 3) @ m.ones(2, 3), ShapeError),
    "reshape: wrong element count": (lambda m: m.ones(6).reshape(4), ShapeError),
    "cat: sizes differ": (lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]), ShapeError),
    "expand: size mismatch": (lambda m: m.ones(3).expand(4), ShapeError),
    "view: not viewable": (lambda m: m.ones(2, 3).t().view(6), ShapeError),
    "add_: float result into int64": (lambda m: m.ones(2, dtype=m.int64).add_(m.ones(2)), DTypeError),
    "bitwise_and: floats": (lambda m: m.ones(2) & m.ones(2), DTypeError),
    "getitem: index out of range": (lambda m: m.ones(3)[5], IndexError),
    "getitem: tensor index out of range": (lambda m: m.ones(3)[m.tensor([5])], IndexError),
    "sum: dim out of range": (lambda m: m.ones(3).sum(dim=4), IndexError),
    "squeeze: dim out of range": (lambda m: m.ones(2).squeeze(3), IndexError),
}


def _raised(make: Callable[[], Any]) -> BaseException:
    try:
        make()
    except Exception as e:
        return e
    raise AssertionError("no error")


@pytest.mark.parametrize("case", list(MISTAKES))
def test_pytorchs_except_clause_catches_ferros_error(case: str) -> None:
    make, ferro_error = MISTAKES[case]
    theirs = _raised(lambda: make(torch))
    ours = _raised(lambda: make(ferro))
    assert isinstance(ours, ferro_error), repr(ours)
    # The clause PyTorch code writes for this mistake: the most specific built-in torch raised.
    caught_by = type(theirs) if type(theirs) in (RuntimeError, IndexError, NotImplementedError) else RuntimeError
    assert isinstance(theirs, caught_by)
    if caught_by is NotImplementedError:  # torch's "not implemented for 'Float'": a RuntimeError as well
        caught_by = RuntimeError
    assert isinstance(ours, caught_by), f"{case}: `except {caught_by.__name__}` misses ferro's {ours!r}"


def test_shape_and_dtype_errors_keep_their_python_bases() -> None:
    with pytest.raises(ValueError, match=r"add: shapes \[2\], \[3\] cannot be broadcast"):
        ferro.ones(2) + ferro.ones(3)
    with pytest.raises(TypeError):
        ferro.ones(2) & ferro.ones(2)
    assert issubclass(ShapeError, ferro.errors.FerroError) and issubclass(DTypeError, ferro.errors.FerroError)


def test_a_failed_op_caught_as_runtime_error_left_its_inputs_alone() -> None:
    a = ferro.arange(3.0)
    try:
        a.add_(ferro.ones(4))
    except RuntimeError:
        pass
    assert a.tolist() == [0.0, 1.0, 2.0]
