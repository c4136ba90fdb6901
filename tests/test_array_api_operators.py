"""``ferro.array_api``'s Python operators follow the standard, as its functions do, checked against array-api-strict.

For every operator and every pair of the namespace's dtypes, with 0-d and
n-d operands in each order, the result dtype (or the TypeError) is
array-api-strict's (where the standard leaves it to the library and
array-api-strict refuses, such as mixed kinds, the namespace's function's);
values are compared where a 0-d operand holds a value the
other operand's dtype cannot, so PyTorch's promotion (0-d operands do not
widen) would give a different answer. NumPy 2 promotes the same way, checked too.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import array_api_strict as strict
import numpy as np
import pytest

import ferro
import ferro.array_api as xp

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64", "complex64", "complex128"]

#: operator -> which dtype kinds it takes (b: bool, i: integer, f: real floating, c: complex).
OPERATORS: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
    "+": (operator.add, "ifc"), "-": (operator.sub, "ifc"), "*": (operator.mul, "ifc"),
    "/": (operator.truediv, "ifc"), "//": (operator.floordiv, "if"), "%": (operator.mod, "if"),
    "**": (operator.pow, "ifc"), "&": (operator.and_, "bi"), "|": (operator.or_, "bi"),
    "^": (operator.xor, "bi"), "<<": (operator.lshift, "i"), ">>": (operator.rshift, "i"),
    "==": (operator.eq, "bifc"), "!=": (operator.ne, "bifc"), "<": (operator.lt, "if"),
    "<=": (operator.le, "if"), ">": (operator.gt, "if"), ">=": (operator.ge, "if"),
}
#: operator -> the namespace's function.
FUNCTIONS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide", "%": "remainder",
             "**": "pow", "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor", "<<": "bitwise_left_shift",
             ">>": "bitwise_right_shift", "==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal",
             ">": "greater", ">=": "greater_equal"}
#: A value each dtype holds that the narrower dtypes of its kind do not (so wrong promotion shows in values).
WIDE = {"bool": True, "int8": 100, "int16": 300, "int32": 17133, "int64": 2**40 + 7, "uint8": 200,
        "float32": 3.0e38, "float64": 1.0e300, "complex64": 3.0e38 + 1j, "complex128": 1.0e300 + 1j}
#: A small value each dtype holds, for the other operand.
SMALL = {"bool": True, "int8": 3, "int16": 3, "int32": 3, "int64": 3, "uint8": 3, "float32": 1.5, "float64": 1.5,
         "complex64": 1.5 + 0.5j, "complex128": 1.5 + 0.5j}
SHAPES = [((), (2,)), ((2,), ()), ((), ()), ((2,), (2,))]


def _kind(dtype: str) -> str:
    return {"bool": "b", "complex64": "c", "complex128": "c"}.get(dtype, "f" if dtype.startswith("float") else "i")


def _make(lib: Any, value: Any, dtype: str, shape: tuple[int, ...]) -> Any:
    return lib.asarray(value if not shape else [value] * shape[0], dtype=getattr(lib, dtype))


def _outcome(lib: Any, op: Callable[[Any, Any], Any], a: tuple[Any, str, tuple[int, ...]],
             b: tuple[Any, str, tuple[int, ...]]) -> tuple[str, Any]:
    try:
        out = op(_make(lib, *a), _make(lib, *b))
    except TypeError:
        return "TypeError", None
    name = str(out.dtype).rpartition(".")[2]
    return name, np.asarray(out.tolist() if lib is xp else strict.asarray(out)._array, dtype=name).tolist() \
        if out.ndim else np.asarray(out.tolist() if lib is xp else out._array, dtype=name).tolist()


def _pairs(kinds: str) -> list[tuple[str, str]]:
    return [(d1, d2) for d1 in DTYPES for d2 in DTYPES if _kind(d1) in kinds or _kind(d2) in kinds]


@pytest.mark.parametrize("symbol", list(OPERATORS))
def test_operators_promote_as_the_standard(symbol: str) -> None:
    op, kinds = OPERATORS[symbol]
    wrong = []
    for d1, d2 in _pairs(kinds):
        for s1, s2 in SHAPES:
            for v1, v2 in ((SMALL[d1], SMALL[d2]),) + (((WIDE[d1], SMALL[d2]),) if s1 == () else ()) \
                    + (((SMALL[d1], WIDE[d2]),) if s2 == () else ()):
                if symbol in ("<<", ">>", "**") and v2 is not SMALL[d2]:
                    continue  # a shift count or exponent past the width is undefined in the standard
                with np.errstate(all="ignore"):
                    want = _outcome(strict, op, (v1, d1, s1), (v2, d2, s2))
                if want[0] == "TypeError":
                    # What the standard leaves to the library (mixed kinds, integer division: array-api-strict
                    # refuses them): the operator must do what the namespace's function does.
                    want = _outcome(xp, getattr(xp, FUNCTIONS[symbol]), (v1, d1, s1), (v2, d2, s2))
                got = _outcome(xp, op, (v1, d1, s1), (v2, d2, s2))
                if got[0] != want[0] or (want[1] is not None and not np.allclose(got[1], want[1], equal_nan=True)):
                    wrong.append(f"{d1}{list(s1)}={v1!r} {symbol} {d2}{list(s2)}={v2!r}: ferro {got}, standard {want}")
    assert not wrong, f"{len(wrong)} cases differ, e.g.:\n" + "\n".join(wrong[:10])


def test_numpy_2_agrees_with_the_reference_on_zero_d_operands() -> None:
    """The issue's example, in NumPy 2, array-api-strict, the namespace's function and operator."""
    assert (np.asarray(17133, np.int32) + np.asarray([3], np.int8)).tolist() == [17136]
    assert (strict.asarray(17133, dtype=strict.int32) + strict.asarray([3], dtype=strict.int8)).dtype == strict.int32
    a, b = xp.asarray(17133, dtype=xp.int32), xp.asarray([3], dtype=xp.int8)
    for out in (a + b, xp.add(a, b), b + a):
        assert out.dtype == xp.int32 and out.tolist() == [17136]
    assert isinstance(a, xp.Array) and isinstance(a, ferro.Tensor)


def test_operators_promote_zero_d_operands_on_every_backend(device: ferro.device) -> None:
    a, b = xp.asarray(17133, dtype=xp.int32, device=device), xp.asarray([3, -5], dtype=xp.int8, device=device)
    ref_a, ref_b = strict.asarray(17133, dtype=strict.int32), strict.asarray([3, -5], dtype=strict.int8)
    for op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.eq, operator.gt, operator.and_):
        for got, want in ((op(a, b), op(ref_a, ref_b)), (op(b, a), op(ref_b, ref_a))):
            assert got.device == device and str(got.dtype).rpartition(".")[2] == str(want.dtype).rpartition(".")[2]
            assert got.tolist() == want._array.tolist(), (op.__name__, got, want)
    x = xp.asarray([1, 2], dtype=xp.int32, device=device)
    x += xp.asarray(7, dtype=xp.int8, device=device)
    assert isinstance(x, xp.Array) and x.tolist() == [8, 9] and x.device == device


def test_plain_tensors_keep_pytorchs_operators() -> None:
    import torch
    a, b = ferro.tensor(17133, dtype=ferro.int32), ferro.tensor([3], dtype=ferro.int8)
    ref = torch.tensor(17133, dtype=torch.int32) + torch.tensor([3], dtype=torch.int8)
    assert (a + b).dtype == ferro.int8 and (a + b).tolist() == ref.tolist() == [-16]
    assert (xp.asarray(a) + b).tolist() == [17136], "one array of the namespace makes the operator the standard's"
    assert (a + xp.asarray(b)).tolist() == [17136]


@pytest.mark.parametrize("symbol", ["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>"])
def test_in_place_operators_keep_the_dtype_or_refuse(symbol: str) -> None:
    """``x1 op= x2`` writes ``x1 op x2`` into x1 where that has x1's dtype, else raises TypeError (as array-api-strict
    does where it computes the pair at all)."""
    op, kinds = OPERATORS[symbol]
    iop = getattr(operator, {"&": "iand", "|": "ior", "^": "ixor"}.get(symbol, f"i{op.__name__}"))
    for d1, d2 in _pairs(kinds):
        outcomes = []
        for lib in (strict, xp):
            x = _make(lib, SMALL[d1], d1, (2,))
            try:
                y = iop(x, _make(lib, SMALL[d2], d2, ()))
            except TypeError:
                outcomes.append("TypeError")
            else:
                assert y is x, "in place"
                outcomes.append(x.tolist() if lib is xp else x._array.tolist())
        want, got = outcomes
        plain = _outcome(xp, getattr(xp, FUNCTIONS[symbol]), (SMALL[d1], d1, (2,)), (SMALL[d2], d2, ()))
        if want == "TypeError" and plain[0] == d1:  # the library's choice (mixed kinds): computed, written
            want = plain[1]
        assert (got == want == "TypeError") or ("TypeError" not in (got, want) and np.allclose(got, want)), \
            (d1, symbol, d2, got, want)


def test_results_are_arrays_and_views_stay_views() -> None:
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    for out in (x[0], x.T, x.mT, -x, abs(x), x @ x, xp.sum(x, axis=0), xp.linalg.inv(x), xp.unique_values(x),
                x.to_device("cpu"), xp.fft.fft(x)):
        assert isinstance(out, xp.Array), type(out)
    row = x[0]
    row[0] = 9.0
    assert x.tolist() == [[9.0, 2.0], [3.0, 4.0]], "an Array view writes through"
    t = ferro.tensor([1.0, 2.0], requires_grad=True)
    a = xp.asarray(t)
    assert type(t) is ferro.Tensor, "the caller's tensor keeps its class"
    (a * a).sum().backward()
    assert t.grad.tolist() == [2.0, 4.0], "gradients flow to the tensor asarray was given"


NUMPY_SCALARS = [np.bool_(True), np.int8(-3), np.int16(300), np.int32(17133), np.int64(2**40), np.uint8(200),
                 np.float16(1.5), np.float32(1.5), np.float64(1.5), np.complex64(1 + 2j), np.complex128(1 + 2j)]


@pytest.mark.parametrize("value", NUMPY_SCALARS, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("zero_d", [False, True], ids=["scalar", "0-d array"])
def test_asarray_takes_numpy_scalars_and_zero_d_arrays(value: Any, zero_d: bool) -> None:
    obj = np.asarray(value) if zero_d else value
    out = xp.asarray(obj)
    assert str(out.dtype) == f"ferro.{np.asarray(value).dtype.name}" and out.shape == ()
    assert out.item() == value.item()
    if np.asarray(value).dtype.kind != "c":
        as_f64 = xp.asarray(obj, dtype=xp.float64)
        assert as_f64.dtype == xp.float64 and as_f64.item() == float(value)
