"""The FFT ops behind :mod:`ferro.fft`: three primitives with kernels, and ``torch.fft``'s functions on them.

The primitives (kernels in the generic Array API backend, over ``xp.fft``),
as PyTorch's ``_fft_c2c`` / ``_fft_r2c`` / ``_fft_c2r``. They keep the
transformed sizes (padding and trimming for ``n`` / ``s`` are done before, in
ops, so their gradients come from those ops):

- ``fft_c2c(x, dims, norm, forward)``: complex to complex;
- ``fft_r2c(x, dims, norm)``: real to the onesided half spectrum (``n // 2 + 1``
  along ``dims[-1]``);
- ``fft_c2r(x, dims, norm, n)``: onesided half spectrum to real, ``n`` long along
  ``dims[-1]``.

``norm`` is NumPy's word for the transform computed: ``"backward"`` scales
the inverse by ``1/n``, ``"forward"`` the forward one, ``"ortho"`` both by
``1/sqrt(n)``. Gradients (complex ones in PyTorch's convention) are adjoints:
the adjoint of ``fftn`` with norm ``m`` is ``ifftn`` with ``m`` swapped
(``backward`` <-> ``forward``), and the other way round. ``r2c``'s adjoint
pads the half spectrum with zeros back to ``n`` and keeps the real part of
the inverse; ``c2r``'s is ``r2c`` of the gradient with the bins whose mirror
image lies outside the half spectrum doubled (PyTorch's derivation).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import DType, bfloat16, complex64, complex128, float16, float32, float64, get_default_dtype
from .._core.records import DTYPE_RULES, OpDef, register, register_composites
from .._core.tensor import Tensor, _wrap_dim
from ..dispatch._dispatch import finish, kernel_for, reported_as, run_elsewhere
from ..errors import DTypeError, ShapeError
from .complex import conj, real
from .movement import narrow, roll
from .shape import cat

__all__ = ["FUNCTIONS"]

_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_COMPLEX_OF = {float32: complex64, float64: complex128}
_REAL_OF = {complex64: float32, complex128: float64}


def _default_complex() -> DType:
    return complex128 if get_default_dtype() is float64 else complex64


# -- dtype rules: input dtype -> (compute, result) -------------------------------------------------


def _complex_only(d: DType) -> tuple[DType, DType] | None:
    return (d, d) if d.is_complex else None


def _real_to_complex(d: DType) -> tuple[DType, DType] | None:
    return (d, _COMPLEX_OF[d]) if d in _COMPLEX_OF else None


def _to_complex(d: DType) -> tuple[DType, DType] | None:
    """What a c2c transform computes in: complex as is, float32/64 their complex, integers the default."""
    if d in (float16, bfloat16):
        return None
    c = d if d.is_complex else _COMPLEX_OF.get(d) or _default_complex()
    return (c, c)


def _to_real(d: DType) -> tuple[DType, DType] | None:
    """What an r2c transform takes: float32/64 as is, integers the default float dtype."""
    if d.is_complex or d in (float16, bfloat16):
        return None
    f = d if d.is_floating_point else get_default_dtype()
    return (f, f)


DTYPE_RULES.setdefault("complex", (_complex_only, "complex dtypes"))
DTYPE_RULES.setdefault("real_to_complex", (_real_to_complex, "float32 and float64 (the result is complex)"))
DTYPE_RULES.setdefault("fft_complex", (_to_complex, "any dtype but float16 and bfloat16 (computed in complex)"))
DTYPE_RULES.setdefault("fft_real", (_to_real, "real dtypes but float16 and bfloat16"))


# -- the primitives ----------------------------------------------------------------------------------


def _c2c_grad(g: Tensor, *, dims: tuple[int, ...], norm: str, forward: bool) -> Tensor:
    return _c2c(g, dims, _SWAP[norm], not forward)


def _r2c_grad(g: Tensor, *, dims: tuple[int, ...], norm: str, n: int) -> Tensor:
    return real(_c2c(_resize(g, dims[-1], n), dims, _SWAP[norm], False))


def _c2r_grad(g: Tensor, *, dims: tuple[int, ...], norm: str, n: int) -> Tensor:
    gi = _r2c(g, dims, _SWAP[norm])
    # Bins 1 .. n - (n // 2 + 1) stand for themselves and their mirror images: their gradient counts twice.
    half = gi.shape[dims[-1]]
    double = n - half
    if double <= 0:
        return gi
    from .._creation import ones
    w = ones(half, dtype=_REAL_OF[gi._dtype], device=gi.device)
    w = cat([w[:1], w[1:1 + double] * 2, w[1 + double:]])
    return gi * w.reshape([half if i == dims[-1] else 1 for i in range(gi.ndim)])


_C2C = register(OpDef("fft_c2c", "fft", "FFT primitive: complex to complex over dims (forward or inverse).",
                      dtype_rule="complex", grads=(_c2c_grad,)))
_R2C = register(OpDef("fft_r2c", "fft", "FFT primitive: real to the onesided half spectrum over dims.",
                      dtype_rule="real_to_complex", grads=(_r2c_grad,)))
_C2R = register(OpDef("fft_c2r", "fft", "FFT primitive: the onesided half spectrum to a real signal over dims.",
                      dtype_rule="complex_to_real", grads=(_c2r_grad,)))


def _check_dims(op: OpDef, x: Tensor, dims: tuple[int, ...]) -> None:
    """The primitive's dims, checked before the shape or a kernel is indexed with them (an IndexError naming
    the op and the dim, not a tuple's or NumPy's)."""
    for d in dims:
        _wrap_dim(d, x.ndim, op.name)


def _run(op: OpDef, x: Tensor, args: tuple[Any, ...], attrs: dict[str, Any]) -> Tensor:
    _check_dims(op, x, args[0])
    dev = x._device
    k = kernel_for(op, dev, x._dtype)
    if k is None:
        return run_elsewhere(op, dev, x._dtype, (x, *args), {})
    return finish(op, k(x._data, *args), op.table[x._dtype][1], dev, (x,), (), attrs)


def _c2c(x: Tensor, dims: tuple[int, ...], norm: str, forward: bool) -> Tensor:
    return _run(_C2C, x, (dims, norm, forward), {"dims": dims, "norm": norm, "forward": forward})


def _r2c(x: Tensor, dims: tuple[int, ...], norm: str) -> Tensor:
    _check_dims(_R2C, x, dims)
    return _run(_R2C, x, (dims, norm), {"dims": dims, "norm": norm, "n": x.shape[dims[-1]]})


def _c2r(x: Tensor, dims: tuple[int, ...], norm: str, n: int) -> Tensor:
    return _run(_C2R, x, (dims, norm, n), {"dims": dims, "norm": norm, "n": n})


_C2C.fn, _R2C.fn, _C2R.fn = _c2c, _r2c, _c2r


# -- arguments -----------------------------------------------------------------------------------------


def _norm(name: str, norm: str | None) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f"fft.{name}: invalid normalization mode {norm!r}; expected one of {list(_NORMS)} or None")
    return norm


def _check(name: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"fft.{name}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    if x._dtype in (float16, bfloat16):
        raise DTypeError(f"fft.{name}: {x._dtype} is not supported; convert to float32 first")


def _as_complex(name: str, x: Tensor) -> Tensor:
    _check(name, x)
    if x._dtype.is_complex:
        return x
    return x.to(_COMPLEX_OF.get(x._dtype) or _default_complex())


def _as_real(name: str, x: Tensor) -> Tensor:
    _check(name, x)
    if x._dtype.is_complex:
        raise DTypeError(f"fft.{name} expects a real input tensor, but got {x._dtype}")
    return x if x._dtype.is_floating_point else x.to(get_default_dtype())


def _resize(x: Tensor, dim: int, n: int) -> Tensor:
    """``x`` trimmed or zero-padded to ``n`` along ``dim``."""
    have = x.shape[dim]
    if n == have:
        return x
    if n < have:
        return narrow(x, dim, 0, n)
    from .._creation import zeros
    shape = list(x.shape)
    shape[dim] = n - have
    return cat([x, zeros(shape, dtype=x.dtype, device=x.device)], dim)


def _plan(name: str, x: Tensor, s: Sequence[int] | None, dim: int | Sequence[int] | None,
          ) -> tuple[tuple[int, ...], list[int | None]]:
    """The dims transformed and the size asked for along each (None: keep), as torch.fft reads ``s`` and ``dim``."""
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None:
        s = list(s)
        if dim is None:
            if len(s) > x.ndim:
                raise ShapeError(f"fft.{name}: got {len(s)} sizes in s for a {x.ndim}-d input")
            dim = range(x.ndim - len(s), x.ndim)
        elif len(s) != len(dim):
            raise ShapeError(f"fft.{name}: s and dim must have the same length, got s={s} and dim={list(dim)}")
    elif dim is None:
        dim = range(x.ndim)
    dims = tuple(_wrap_dim(d, x.ndim, f"fft.{name}") for d in dim)
    if x.ndim == 0:
        raise ShapeError(f"fft.{name}: expected a tensor with at least one dimension, got a 0-d tensor")
    if len(set(dims)) != len(dims):
        raise ShapeError(f"fft.{name}: dims {list(dims)} must be unique")
    if not dims:
        raise ShapeError(f"fft.{name}: no dimension to transform")
    sizes: list[int | None] = [None if s is None or s[i] == -1 else s[i] for i in range(len(dims))]
    for d, n in zip(dims, sizes):
        if (x.shape[d] if n is None else n) < 1:
            raise ValueError(f"fft.{name}: invalid number of data points ({x.shape[d] if n is None else n}) "
                             f"specified for dim {d}")
    return dims, sizes


def _resized(x: Tensor, dims: tuple[int, ...], sizes: Sequence[int | None]) -> Tensor:
    for d, n in zip(dims, sizes):
        if n is not None:
            x = _resize(x, d, n)
    return x


# -- torch.fft's functions ----------------------------------------------------------------------------------


def _public(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``fn``, whose missing kernels (a primitive, a complex cast) are reported under its own name."""
    return reported_as(f"fft.{fn.__name__}", fn)


def _c2c_n(name: str, x: Tensor, s: Sequence[int] | None, dim: Any, norm: str | None, forward: bool) -> Tensor:
    x = _as_complex(name, x)
    dims, sizes = _plan(name, x, s, dim)
    return _c2c(_resized(x, dims, sizes), dims, _norm(name, norm), forward)


def _r2c_n(name: str, x: Tensor, s: Sequence[int] | None, dim: Any, norm: str | None) -> Tensor:
    x = _as_real(name, x)
    dims, sizes = _plan(name, x, s, dim)
    return _r2c(_resized(x, dims, sizes), dims, _norm(name, norm))


def _c2r_n(name: str, x: Tensor, s: Sequence[int] | None, dim: Any, norm: str | None) -> Tensor:
    x = _as_complex(name, x)
    dims, sizes = _plan(name, x, s, dim)
    last = sizes[-1] if sizes[-1] is not None else 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise ValueError(f"fft.{name}: invalid number of data points ({last}) specified for the output")
    x = _resized(x, dims, [*sizes[:-1], last // 2 + 1])
    return _c2r(x, dims, _norm(name, norm), last)


def _one(n: int | None) -> list[int] | None:
    return None if n is None else [n]


@_public
def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim`` (trimmed or padded to ``n``)."""
    return _c2c_n("fft", input, _one(n), dim, norm, True)


@_public
def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional inverse discrete Fourier transform along ``dim``."""
    return _c2c_n("ifft", input, _one(n), dim, norm, False)


@_public
def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The FFT of a real signal along ``dim``: the ``n // 2 + 1`` non-negative frequencies."""
    return _r2c_n("rfft", input, _one(n), dim, norm)


@_public
def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal of ``n`` points (default ``2 * (size - 1)``)."""
    return _c2r_n("irfft", input, _one(n), dim, norm)


@_public
def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The FFT of a Hermitian-symmetric signal given by its first half: a real spectrum of ``n`` points."""
    return _c2r_n("hfft", conj(_as_complex("hfft", input)), _one(n), dim, _SWAP[_norm("hfft", norm)])


@_public
def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfft`: the first half of the Hermitian spectrum of a real signal."""
    return conj(_r2c_n("ihfft", input, _one(n), dim, _SWAP[_norm("ihfft", norm)]))


@_public
def fft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Tensor:
    """The two-dimensional discrete Fourier transform over ``dim``."""
    return _c2c_n("fft2", input, s, dim, norm, True)


@_public
def ifft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Tensor:
    """The two-dimensional inverse discrete Fourier transform over ``dim``."""
    return _c2c_n("ifft2", input, s, dim, norm, False)


@_public
def rfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Tensor:
    """The two-dimensional FFT of a real signal (onesided along the last of ``dim``)."""
    return _r2c_n("rfft2", input, s, dim, norm)


@_public
def irfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft2`."""
    return _c2r_n("irfft2", input, s, dim, norm)


@_public
def fftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
         norm: str | None = None) -> Tensor:
    """The N-dimensional discrete Fourier transform over ``dim`` (all dims, or the last ``len(s)``)."""
    return _c2c_n("fftn", input, s, dim, norm, True)


@_public
def ifftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The N-dimensional inverse discrete Fourier transform."""
    return _c2c_n("ifftn", input, s, dim, norm, False)


@_public
def rfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The N-dimensional FFT of a real signal (onesided along the last transformed dim)."""
    return _r2c_n("rfftn", input, s, dim, norm)


@_public
def irfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfftn`: a real signal (the last size ``2 * (size - 1)`` unless ``s`` says)."""
    return _c2r_n("irfftn", input, s, dim, norm)


@_public
def hfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Tensor:
    """The two-dimensional :func:`hfftn`: a real spectrum from the first half of a Hermitian signal."""
    return _c2r_n("hfft2", conj(_as_complex("hfft2", input)), s, dim, _SWAP[_norm("hfft2", norm)])


@_public
def ihfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfft2`: the first half of the Hermitian spectrum of a real signal."""
    return conj(_r2c_n("ihfft2", input, s, dim, _SWAP[_norm("ihfft2", norm)]))


@_public
def hfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The N-dimensional FFT of a Hermitian-symmetric signal given by its first half along the last of ``dim``:
    ``irfftn`` of its conjugate with the normalization mirrored (the last size ``2 * (size - 1)`` unless ``s``
    says)."""
    return _c2r_n("hfftn", conj(_as_complex("hfftn", input)), s, dim, _SWAP[_norm("hfftn", norm)])


@_public
def ihfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfftn`: the conjugate of ``rfftn`` with the normalization mirrored."""
    return conj(_r2c_n("ihfftn", input, s, dim, _SWAP[_norm("ihfftn", norm)]))


def _shift(name: str, x: Tensor, dim: int | Sequence[int] | None, sign: int) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"fft.{name}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    dims = list(range(x.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, x.ndim, f"fft.{name}") for d in dims]
    if not dims:
        return x
    return roll(x, [sign * (x.shape[d] // 2) for d in dims], dims)


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Move the zero frequency to the middle of ``dim`` (all dims by default)."""
    return _shift("fftshift", input, dim, 1)


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    return _shift("ifftshift", input, dim, -1)


def _freq_args(name: str, n: int, d: float, dtype: DType | None) -> DType:
    if isinstance(n, builtins.bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"fft.{name}: n must be a non-negative integer, got {n!r}")
    dtype = dtype or get_default_dtype()
    if not dtype.is_floating_point:
        raise DTypeError(f"fft.{name}: dtype must be a floating dtype, got {dtype}")
    return dtype


def fftfreq(n: int, d: float = 1.0, *, dtype: DType | None = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of :func:`fft` for ``n`` points spaced ``d`` apart: ``[0, 1, ..., -1] / (d n)``."""
    from .._creation import arange
    dtype = _freq_args("fftfreq", n, d, dtype)
    with _no_grad():
        k = arange(n, dtype=dtype, device=device)
        out = (k - (k >= (n + 1) // 2) * n) / (d * n) if n else k
    return out.requires_grad_(requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype: DType | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of :func:`rfft` for ``n`` points spaced ``d`` apart: ``[0, ..., n // 2] / (d n)``."""
    from .._creation import arange
    dtype = _freq_args("rfftfreq", n, d, dtype)
    with _no_grad():
        k = arange(n // 2 + 1, dtype=dtype, device=device)
        out = k / (d * n) if n else k
    return out.requires_grad_(requires_grad)


def _no_grad() -> Any:
    from ..autograd import no_grad
    return no_grad()


_ROWS: list[tuple[str, Callable[..., Any], str]] = [
    *((n, f, "fft_complex") for n, f in (("fft", fft), ("ifft", ifft), ("fft2", fft2), ("ifft2", ifft2),
                                         ("fftn", fftn), ("ifftn", ifftn), ("irfft", irfft), ("irfft2", irfft2),
                                         ("irfftn", irfftn), ("hfft", hfft),
                                         ("hfft2", hfft2), ("hfftn", hfftn))),
    *((n, f, "fft_real") for n, f in (("rfft", rfft), ("rfft2", rfft2), ("rfftn", rfftn), ("ihfft", ihfft),
                                      ("ihfft2", ihfft2), ("ihfftn", ihfftn))),
    ("fftshift", fftshift, "same"), ("ifftshift", ifftshift, "same"),
    ("fftfreq", fftfreq, "real_floating"), ("rfftfreq", rfftfreq, "real_floating"),
]
FUNCTIONS: dict[str, Callable[..., Any]] = {}
for _name, _fn, _rule in _ROWS:
    FUNCTIONS.update(register_composites("fft", [(_name, _fn)], dtype_rule=_rule, prefix="fft."))
