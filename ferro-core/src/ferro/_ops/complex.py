"""Complex numbers: ``real``, ``imag``, ``conj``, ``angle``, ``sgn``, ``complex``, ``polar``, ``view_as_real``...

Gradients follow PyTorch's convention: the gradient of a complex tensor is
the conjugate Wirtinger derivative (for ``y = x * w``, ``grad_x = g *
conj(w)``), and a real input that meets complex numbers gets the real part
of its gradient. Kernels (``real``, ``imag``, ``conj``, ``angle``) live in
the generic Array API backend; the rest is written in ops.

``real`` and ``imag`` are views on backends whose kernels return one (NumPy
and CuPy do): writing into ``x.real`` changes ``x``. ``conj`` returns a new
tensor: ferro has no lazy conjugate bit, so ``conj`` is ``conj_physical`` and
``resolve_conj`` / ``resolve_neg`` return their input.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.dtypes import DType, complex64, complex128, float32, float64, get_default_dtype
from .._core.naming import in_op
from .._core.records import DTYPE_RULES, REGISTRY, OpDef, register, register_composites
from .._core.tensor import Tensor
from ..dispatch._dispatch import finish, kernel_for, run_elsewhere
from ..errors import DTypeError, ShapeError
from .elementwise import build_unary, where

__all__ = ["FUNCTIONS", "METHODS", "real", "imag", "conj", "angle", "sgn", "complex", "polar"]

_REAL_OF = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float32: complex64, float64: complex128}


def _complex_to_real(d: DType) -> tuple[DType, DType] | None:
    return (d, _REAL_OF[d]) if d.is_complex else None


def _real_to_complex(d: DType) -> tuple[DType, DType] | None:
    c = _COMPLEX_OF.get(d)
    return None if c is None else (c, c)


def _to_real_float(d: DType) -> tuple[DType, DType] | None:
    if d.is_complex:
        return (d, _REAL_OF[d])
    f = d if d.is_floating_point else get_default_dtype()
    return (f, f)


# The dtype rules of this module, added next to the registry's own (keyed by name, as ops refer to them).
DTYPE_RULES.setdefault("complex_to_real", (_complex_to_real, "complex dtypes (the result is their real dtype)"))
DTYPE_RULES.setdefault("make_complex", (_real_to_complex, "float32 and float64 (computed in their complex dtype)"))
DTYPE_RULES.setdefault("to_real_float", (_to_real_float, "any dtype (complex gives its real dtype, integers "
                                                          "the default float dtype)"))


def _check(name: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, not {type(x).__name__}")


# -- decompositions into the required primitives, for a backend without the optional group "complex" --------
# The contract's cast converts as C does, keeping a complex number's real part, so the parts need no kernel of
# their own there (they are copies, not views). Real inputs never reach them: real(x) and conj(x) are x.
# Exact for finite values only: imag's product with -1j turns an infinite or nan real part into nan.


def _re(z: Tensor) -> Tensor:
    return z.to(_REAL_OF[z._dtype])


def _im(z: Tensor) -> Tensor:
    return (z * -1j).to(_REAL_OF[z._dtype])  # (a + bi)(-i) = b - ai


def _conj_decomposition(z: Tensor) -> Tensor:
    if not z._dtype.is_complex:
        return z
    return _re(z).to(z._dtype) + _im(z).to(z._dtype) * -1j


def _angle_decomposition(x: Tensor) -> Tensor:
    if x._dtype.is_complex:
        return _im(x).atan2(_re(x))
    f = x.to(_ANGLE.table[x._dtype][0])
    return where(f < 0, math.pi, where(f >= 0, 0.0, f))  # pi for negative reals, else 0; nan stays nan


# -- real and imag: views -------------------------------------------------------------------------

# The registry's op is the complex case; real(x) of a real x is x itself, with no kernel (as in PyTorch).
_REAL = register(OpDef("real", "complex", "The real part of a complex tensor (a view); a real tensor itself.",
                       dtype_rule="magnitude", grads=(lambda g: g,), decomposition=_re))
# d imag(x) = Im(dx): the gradient of a complex input is i * g.
_IMAG = register(OpDef("imag", "complex", "The imaginary part of a complex tensor (a view).",
                       dtype_rule="complex_to_real", grads=(lambda g: g * 1j,), decomposition=_im))


def _part(op: OpDef, x: Tensor) -> Tensor:
    dev = x._device
    k = kernel_for(op, dev, x._dtype)
    if k is None:
        return run_elsewhere(op, dev, x._dtype, (x,), {})
    return finish(op, k(x._data), op.table[x._dtype][1], dev, (x,), view_of=x)


def real(x: Tensor) -> Tensor:
    """The real part of ``x``: a view sharing its storage for complex ``x``, ``x`` itself otherwise."""
    _check("real", x)
    return _part(_REAL, x) if x._dtype.is_complex else x


def imag(x: Tensor) -> Tensor:
    """The imaginary part of a complex ``x``, as a view sharing its storage."""
    _check("imag", x)
    if not x._dtype.is_complex:
        raise DTypeError(f"imag is not implemented for tensors with non-complex dtypes (got {x._dtype})")
    return _part(_IMAG, x)


_REAL.fn, _IMAG.fn = real, imag


# -- conj and angle: elementwise ------------------------------------------------------------------

_CONJ = register(OpDef("conj", "unary", "The complex conjugate (a new tensor; real tensors are returned as is).",
                       dtype_rule="same", grads=(lambda g: conj(g),), decomposition=_conj_decomposition))
_conj_kernel = build_unary(_CONJ)


def conj(x: Tensor) -> Tensor:
    """The complex conjugate of ``x``; ``x`` itself when it is not complex (as in PyTorch)."""
    try:
        if not x._dtype.is_complex:
            return x
    except AttributeError:
        _check("conj", x)
    return _conj_kernel(x)


def _angle_grad(g: Tensor, x: Tensor) -> Tensor:
    if not x._dtype.is_complex:
        return g * 0
    # d angle = Im(dz / z): the gradient is i g z / |z|^2, and 0 at z == 0 (PyTorch).
    a2 = x.abs().square()
    zero = a2 == 0
    return where(zero, 0.0, g * x / where(zero, 1.0, a2) * 1j)


_ANGLE = register(OpDef("angle", "unary", "The argument of each complex element (pi for negative reals, else 0).",
                        dtype_rule="to_real_float", saves=(0,), grads=(_angle_grad,),
                        decomposition=_angle_decomposition))
angle = build_unary(_ANGLE)
angle.__doc__ = "The argument atan2(imag, real) of each element, in radians (real: pi where negative, else 0)."
_CONJ.fn, _ANGLE.fn = conj, angle


# -- written in other ops ---------------------------------------------------------------------------


def sgn(x: Tensor) -> Tensor:
    """``x / |x|`` for complex ``x`` (0 at 0); the sign for real ``x``."""
    _check("sgn", x)
    if not x._dtype.is_complex:
        return x.sign()
    a = x.abs()
    zero = a == 0
    return where(zero, 0.0, x / where(zero, 1.0, a))


def conj_physical(x: Tensor) -> Tensor:
    """The complex conjugate, computed (the same as :func:`conj` in ferro, which has no lazy conjugation)."""
    _check("conj_physical", x)
    return conj(x)


def resolve_conj(x: Tensor) -> Tensor:
    """``x`` itself: ferro never holds a lazily conjugated tensor."""
    _check("resolve_conj", x)
    return x


def resolve_neg(x: Tensor) -> Tensor:
    """``x`` itself: ferro never holds a lazily negated tensor."""
    _check("resolve_neg", x)
    return x


def _float_pair(name: str, a: Any, b: Any, what: tuple[str, str]) -> None:
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        raise TypeError(f"{name}(): expected Tensors for {what[0]} and {what[1]}, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    if a._dtype is not b._dtype or a._dtype not in _COMPLEX_OF:
        raise DTypeError(f"{name}: expected {what[0]} and {what[1]} to be float32 or float64 tensors of the same "
                         f"dtype, got {a._dtype} and {b._dtype}")


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor ``real + i imag`` (both float32 or both float64; shapes broadcast)."""
    _float_pair("complex", real, imag, ("real", "imag"))
    c = _COMPLEX_OF[real._dtype]
    try:
        return real.to(c) + imag.to(c) * 1j
    except ShapeError as e:  # the shapes of real and imag: the user's op, not the inner add
        in_op("complex", e)
        raise


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``."""
    _float_pair("polar", abs, angle, ("abs", "angle"))
    try:
        return complex(abs * angle.cos(), abs * angle.sin())
    except ShapeError as e:  # the shapes of abs and angle: the user's op, not the inner mul
        in_op("polar", e)
        raise


def view_as_real(x: Tensor) -> Tensor:
    """A complex tensor as a real one with a last dimension of 2 (real, imaginary): a view sharing its
    storage, as in PyTorch, where the backend has the ``view_as_real`` kernel (NumPy, CuPy), else a copy."""
    _check("view_as_real", x)
    if not x._dtype.is_complex:
        raise DTypeError(f"view_as_real is only supported for complex tensors, got {x._dtype}")
    dev = x._device
    if dev._kernels is None:
        dev.backend  # binds the device  # noqa: B018
    k = dev._kernels.get("view_as_real")
    if k is None:
        from .shape import stack
        return stack([real(x), imag(x)], -1)
    return finish(_VIEW_AS_REAL, k(x._data), _REAL.table[x._dtype][1], dev, (x,), attrs={"replay": view_as_real},
                  view_of=x)


def view_as_complex(x: Tensor) -> Tensor:
    """A real tensor whose last dimension of 2 holds (real, imaginary), as a complex one; a copy in ferro."""
    _check("view_as_complex", x)
    if x._dtype not in _COMPLEX_OF:
        raise DTypeError(f"view_as_complex is only supported for float32 and float64 tensors, got {x._dtype}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise ShapeError(f"view_as_complex: the last dimension must have size 2, got shape {list(x.shape)}")
    return complex(x[..., 0], x[..., 1])


def is_complex(x: Tensor) -> bool:
    """Whether ``x`` has a complex dtype."""
    return x._dtype.is_complex


def is_conj(x: Tensor) -> bool:
    """False: ferro has no lazily conjugated tensors."""
    return False


def is_neg(x: Tensor) -> bool:
    """False: ferro has no lazily negated tensors."""
    return False


_ANY_DTYPE: list[tuple[str, Callable[..., Any]]] = [
    ("sgn", sgn),
    ("conj_physical", conj_physical),
    ("resolve_conj", resolve_conj),
    ("resolve_neg", resolve_neg),
]
_FROM_REAL: list[tuple[str, Callable[..., Any]]] = [
    ("complex", complex),
    ("polar", polar),
    ("view_as_complex", view_as_complex),
]
# view_as_real uses its kernel where the device has one (cpu, which derives the uses, does): by hand, the rest
_COMPOSITES = _ANY_DTYPE + _FROM_REAL + [("view_as_real", view_as_real, ("real", "imag", "stack"))]
register_composites("complex", _ANY_DTYPE[:1], dtype_rule="numeric")  # sgn
register_composites("complex", _ANY_DTYPE[1:])
register_composites("complex", _FROM_REAL, dtype_rule="make_complex")
register_composites("complex", _COMPOSITES[-1:], dtype_rule="complex_to_real")
_VIEW_AS_REAL = REGISTRY["view_as_real"]
_VIEW_AS_REAL.grads = (lambda g, **_: view_as_complex(g.contiguous()),)  # of the view kernel's result

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "real": real, "imag": imag, "conj": conj, "angle": angle, **{n: f for n, f, *_ in _COMPOSITES},
    "is_complex": is_complex, "is_conj": is_conj, "is_neg": is_neg,
}
#: Tensor methods (``x.real`` and ``x.imag`` are properties, set in ``_tensor``).
METHODS: list[str] = ["conj", "angle", "sgn", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg"]
