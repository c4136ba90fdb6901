"""16-bit floats on NumPy: kernels compute float16 and bfloat16 in float32 and round their results once.

ml_dtypes' bfloat16 ufunc loops convert element by element (an add costs ~50x float32's, a maximum
~100x). Its casts are fast both ways (float32 -> bfloat16 at about a third of a nanosecond an element,
as fast as rounding on the bits through uint32 views), so every 16-bit kernel here widens its operands
(exact), runs NumPy's float32 loop and rounds once. For one op this is the correctly rounded result of
``+ - * /`` and ``sqrt`` (float32 carries more than twice bfloat16's precision plus two bits) and what
ml_dtypes' own loops give, which compute each element in float32 too. For an op whose result is exact
in 16 bits (max, min, abs, relu, a max pool) rounding changes nothing: there the float32 result's top
16 bits are taken (two integer passes, several times faster than the cast; a NaN stays a NaN). NumPy's
own float16 loops compute in float32 element by element already (some with SIMD conversions), so plain
float16 ufuncs stay theirs; reductions, matmuls and fused kernels widen both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._half_fronts import PRECOMPILED

__all__ = ["Half"]

#: Fused kernels whose results are not all the op's values: the indices of those that are (rounded to the
#: 16-bit dtype); the rest is float32 state kept for the backward kernel (layer_norm's mean and 1/std,
#: cross_entropy's per-row losses, summed in float32 before the one rounding, nll_loss's total weight) or indices.
_VALUES = {"layer_norm_forward": (0,), "cross_entropy_forward": (), "max_pool2d_forward": (0,),
           "nll_loss_forward": (0,)}
#: Fused kernels whose 16-bit results are exact (they select among their inputs).
_EXACT = frozenset({"max_pool2d_forward"})


class Half:
    """The 16-bit tools of the cpu backend over NumPy ``np``: the native 16-bit dtypes, the one rounding,
    and wrappers that run float32 kernels on 16-bit operands."""

    def __init__(self, np: Any, bfloat16: Any = None) -> None:
        self.np = np
        self.f32 = np.dtype(np.float32)
        self.bf16: Any = None
        #: the native 16-bit float dtypes (float16 and ml_dtypes' bfloat16): sets that the kernels made here
        #: test membership in, so that bfloat16 can join them when ml_dtypes loads (:meth:`add_bfloat16`)
        self.dtypes: set[Any] = {np.dtype(np.float16)}
        #: those whose NumPy ufunc loops are slow: elementwise kernels widen them
        self.slow: set[Any] = set()
        if bfloat16 is not None:
            self.add_bfloat16(bfloat16)

    def add_bfloat16(self, bfloat16: Any) -> None:
        """Count ml_dtypes' bfloat16 among the 16-bit dtypes (the cpu backend calls it when it first makes one:
        ml_dtypes costs ~4 ms to import, which a program without bfloat16 does not pay)."""
        self.bf16 = bfloat16
        self.dtypes.add(bfloat16)
        self.slow.add(bfloat16)

    def round(self, x: Any, dtype: Any) -> Any:
        """The float32 array ``x`` rounded once (to nearest, ties to even) to the 16-bit ``dtype``."""
        return x.astype(dtype)

    def exact(self, x: Any, dtype: Any) -> Any:
        """The float32 array ``x``, whose values ``dtype`` holds exactly, in ``dtype`` (a new array): for
        bfloat16 the top 16 bits of each float32, which is what rounding would give."""
        if dtype is not self.bf16:
            return x.astype(dtype)
        np = self.np
        if not x.flags.c_contiguous:
            x = x.copy()
        return np.right_shift(x.view(np.uint32), 16, out=...).astype(np.uint16).view(dtype)

    def ufunc(self, ufunc: Any, exact: bool = False) -> Callable[..., Any]:
        """``ufunc`` on 16-bit operands (a Python number beside one, for a binary ufunc): computed in float32,
        a float result rounded once to the operands' dtype (a bool result, of a comparison or a test, as it
        is); always an array, 0-d included. ``exact``: the ufunc's 16-bit results are exact (max, abs...) when
        its operands are 16-bit arrays (a Python number beside one may not be: ``maximum(x, 0.1)``)."""
        halves, f32 = self.dtypes, self.f32
        back = self.exact if exact else self.round
        round_ = self.round

        if ufunc.nin == 1:
            def run1(x: Any) -> Any:
                r = ufunc(x.astype(f32), out=...)
                return back(r, x.dtype) if r.dtype == f32 else r
            return run1

        def run2(x: Any, y: Any) -> Any:
            dx, dy = getattr(x, "dtype", None), getattr(y, "dtype", None)
            r = ufunc(x.astype(f32) if dx in halves else x, y.astype(f32) if dy in halves else y, out=...)
            if r.dtype != f32:
                return r
            return (back if dx is dy else round_)(r, dx if dx in halves else dy)
        return run2

    def kernel(self, fn: Callable[..., Any], results: tuple[int, ...] | None = None, operands: int | None = None,
               dtypes: set[Any] | None = None, exact: bool = False) -> Callable[..., Any]:
        """The kernel ``fn`` run in float32 when its input is a 16-bit float: the 16-bit array arguments widened
        (the first ``operands`` arguments only, when given), and its results rounded once to that dtype -
        all of them, or those at ``results`` when ``fn`` returns a tuple (the others, a kernel's float32
        state for its backward, kept wide). Other dtypes (those outside ``dtypes``, when given) call ``fn`` as
        it is, through a front of ``fn``'s own parameters (see :func:`_front`). ``exact``: the kernel's 16-bit
        results are exact (a max pool's)."""
        halves, f32 = self.dtypes if dtypes is None else dtypes, self.f32
        back = self.exact if exact else self.round

        def rounded(x: Any, dtype: Any) -> Any:
            return back(x, dtype) if getattr(x, "dtype", None) == f32 else x
        count = operands

        def widened(*args: Any, **kwargs: Any) -> Any:  # keywords (a backward's kept=) pass as they are
            dt = None
            for a in args[:count]:
                d = getattr(a, "dtype", None)
                if d in halves:
                    dt = d
                    break
            if dt is None:
                return fn(*args, **kwargs)
            wide = [a.astype(f32) if getattr(a, "dtype", None) in halves else a for a in args[:count]]
            out = fn(*wide, *(args[count:] if count is not None else ()), **kwargs)
            if not isinstance(out, tuple):
                return rounded(out, dt)
            return tuple(o if o is None or (results is not None and i not in results) else rounded(o, dt)
                         for i, o in enumerate(out))
        run = _front(fn, widened, halves)
        run.__name__ = run.__qualname__ = getattr(fn, "__name__", "kernel")
        return run

    def kernels(self, table: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
        """Each kernel of ``table`` (fused kernels: conv2d, softmax, layer_norm...) through :meth:`kernel`."""
        out = {}
        for name, fn in table.items():
            out[name] = run = self.kernel(fn, _VALUES.get(name), exact=name in _EXACT)
            keeping = getattr(fn, "keeping", None)  # a forward's variant returning (y, float32 state kept)
            if keeping is not None:
                run.keeping = self.kernel(keeping, (0,))  # type: ignore[attr-defined]
        return out


#: The input that decides a kernel's dtype, by parameter name, before the first parameter: a backward kernel's
#: gradient may come wider than its input (cross_entropy's per-row gradient, divided by the total weight in
#: float32 for a 16-bit input).
_DECIDING = ("x", "y")

#: Front makers by (parameters, call, deciding parameter): compiled once per distinct signature. Those of the
#: cpu backend's own kernels come compiled with the package (``_half_fronts``, its bytecode cached like any
#: module's): compiling them at the device's binding cost about 1.1 ms of the first op (21 signatures).
_MAKERS: dict[tuple[str, str, str], Callable[..., Any]] = dict(PRECOMPILED)


def _front(fn: Callable[..., Any], widened: Callable[..., Any], halves: set[Any]) -> Callable[..., Any]:
    """A function of ``fn``'s own parameters (those below its decorators' ``__wrapped__``, defaults included)
    that calls ``widened`` when its input's dtype is in ``halves`` and ``fn`` straight otherwise: one
    attribute read and one set lookup on the way, where a wrapper of ``*args, **kwargs`` that looks for a
    16-bit operand among them costs about as much as a small kernel's NumPy call (measured: ~0.15 µs
    against ~0.01). ``widened`` itself (a generic wrapper) where ``fn`` has no Python signature to copy."""
    own = fn
    while hasattr(own, "__wrapped__"):
        own = own.__wrapped__
    code = getattr(own, "__code__", None)
    if code is None or not code.co_argcount:
        return widened
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    positional, keywords = names[:code.co_argcount], names[code.co_argcount:]
    decider = next((n for n in _DECIDING if n in positional), positional[0])
    defaults, kwdefaults = own.__defaults__ or (), own.__kwdefaults__ or {}
    first_default = len(positional) - len(defaults)
    params = [n if i < first_default else f"{n}=_d_[{i - first_default}]" for i, n in enumerate(positional)]
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    call = list(positional)
    rest = len(names)
    if code.co_flags & 0x04:  # CO_VARARGS
        params.append("*" + code.co_varnames[rest])
        call.append("*" + code.co_varnames[rest])
        rest += 1
    elif keywords:
        params.append("*")
    params += [f"{n}=_k_[{n!r}]" if n in kwdefaults else n for n in keywords]
    call += [f"{n}={n}" for n in keywords]
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        params.append("**" + code.co_varnames[rest])
        call.append("**" + code.co_varnames[rest])
    key = (", ".join(params), ", ".join(call), decider)
    make = _MAKERS.get(key)
    if make is None:
        scope: dict[str, Any] = {}
        exec(compile(maker_source(key), "<ferro_cpu 16-bit front>", "exec", dont_inherit=True), scope)
        make = _MAKERS[key] = scope["make"]
    front = make(fn, widened, halves, defaults, kwdefaults)
    # named as the kernel it fronts (the compiler and the error messages read these; exec'd code has no module)
    front.__module__, front.__doc__ = getattr(fn, "__module__", __name__), getattr(fn, "__doc__", None)
    front.__name__ = front.__qualname__ = getattr(fn, "__name__", "kernel")
    return front


def maker_source(key: tuple[str, str, str], name: str = "make") -> str:
    """The source of the front maker ``name`` for ``key`` (parameters, call, deciding parameter)."""
    return (f"def {name}(_fn_, _wide_, _halves_, _d_, _k_):\n"
            f"    def kernel({key[0]}):\n"
            f"        if {key[2]}.dtype in _halves_:\n"
            f"            return _wide_({key[1]})\n"
            f"        return _fn_({key[1]})\n"
            f"    return kernel\n")


def fronts_module(keys: list[tuple[str, str, str]]) -> str:
    """The text of ``_half_fronts.py``: the makers of ``keys``, compiled with the package."""
    head = ("# ruff: noqa: E501\n"  # (a kernel's signature is one line)
            '"""Generated by ``python -m ferro_cpu._half``: the 16-bit front makers of the cpu backend\'s kernels\n'
            '(see ``_half._front``). Only a cache: a signature missing here is compiled at the binding."""\n\n'
            "from collections.abc import Callable\nfrom typing import Any\n\n\n")
    makers = [maker_source(k, f"_m{i}") for i, k in enumerate(keys)]
    rows = "".join(f"    {k!r}:\n        _m{i},\n" for i, k in enumerate(keys))
    table = f"PRECOMPILED: dict[tuple[str, str, str], Callable[..., Any]] = {{\n{rows}}}\n"
    return head + "\n\n".join(makers) + "\n\n" + table


def _write() -> None:
    """Write ``_half_fronts.py`` from the signatures a cpu device's binding asks for."""
    import os

    import ferro
    from ferro_cpu import _half  # (run as __main__, this module is a copy of it)
    _half._MAKERS.clear()
    ferro.ones(1)  # binds the cpu device: every 16-bit front is made now
    path = os.path.join(os.path.dirname(__file__), "_half_fronts.py")
    with open(path, "w") as f:
        f.write(fronts_module(sorted(_half._MAKERS)))


if __name__ == "__main__":
    _write()
