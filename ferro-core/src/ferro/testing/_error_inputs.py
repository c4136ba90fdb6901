"""Error inputs of the op database: calls every backend must refuse, with the exception and the message.

:func:`error_inputs` gives, for one :class:`~ferro.testing._opinfo.OpInfo`,
the calls that must fail: an input that is not a tensor (every op), shapes
that do not broadcast (elementwise binary ops), a dimension out of range (ops
with a ``dim`` argument), and the op's own cases from :data:`SPECIFIC`
(indices out of range, mismatched batches, non-square matrices...). Each names
the exception class and a regex its message must match: the user's op and the
argument. The conformance suite also checks that a failed call leaves its
tensor inputs as they were, after the device has synchronized (a backend that
reports errors late must not have written part of a result into an input).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ._opinfo import OpInfo, _prim

__all__ = ["ErrorInput", "SPECIFIC", "error_inputs", "public_function"]


@dataclass
class ErrorInput:
    """One call that must fail. ``args`` are NumPy arrays (made tensors on the device) or plain values."""

    note: str
    call: Callable[..., Any]  # (ferro, *args) -> anything; must raise
    args: tuple[Any, ...]
    exc: type[BaseException] | tuple[type[BaseException], ...]
    match: str
    kwargs: dict[str, Any] = field(default_factory=dict)


def _np() -> Any:
    import numpy
    return numpy


def _a(*shape: int, dtype: str = "float32") -> Any:
    np = _np()
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) if shape else np.asarray(1.0, dtype)


def _errors() -> Any:
    from .. import errors
    return errors


def public_function(ferro: Any, name: str) -> Callable[..., Any] | None:
    """The public function of op ``name`` (``ferro.X``, ``ferro.nn.functional.X``, ``ferro.linalg.X``..., else
    ``ferro.ops.X``, where every op of the registry is, plugins' too)."""
    for ns in (ferro, ferro.nn.functional, ferro.ops):
        obj = ns
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if callable(obj):
            return obj
    return None


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class _Lazy:
    """An exception class looked up when first needed (ferro.errors is not imported at module load)."""

    def __init__(self, name: str) -> None:
        self.name = name


def _exc(e: Any) -> Any:
    if isinstance(e, _Lazy):
        return getattr(_errors(), e.name)
    if isinstance(e, tuple):
        return tuple(_exc(x) for x in e)
    return e


SHAPE, DTYPE = _Lazy("ShapeError"), _Lazy("DTypeError")


def _t(f: Any, x: Any, v: Any) -> Any:
    return f.tensor(v, device=x.device)


def _index_put_oob(f: Any, x: Any) -> Any:
    x[_t(f, x, [1, 5])] = 1.0  # the out-of-range index after a valid one: nothing may be written


def _floor_divide_by_zero(f: Any, x: Any) -> Any:
    x //= _t(f, x, [1, 0, 1]).to(x.dtype)


#: The op's own error inputs: op name -> [(note, call(ferro, *tensors), args, exception, regex)].
SPECIFIC: dict[str, list[tuple[str, Callable[..., Any], tuple[Any, ...], Any, str]]] = {
    "narrow": [("past the end", lambda f, x: f.narrow(x, 1, 3, 2), (_a(3, 4),), SHAPE, r"narrow.*start.*length")],
    "select": [("index out of range", lambda f, x: f.select(x, 1, 4), (_a(3, 4),), IndexError, r"select.*index")],
    "gather": [("index out of range", lambda f, x: f.gather(x, 0, _t(f, x, [[3, 0]])), (_a(3, 4),), IndexError,
                r"gather.*index"),
               ("negative index", lambda f, x: f.gather(x, 0, _t(f, x, [[-1, 0]])), (_a(3, 4),), IndexError,
                r"gather.*index")],
    "index_select": [("index out of range", lambda f, x: f.index_select(x, 1, _t(f, x, [4])), (_a(3, 4),),
                      IndexError, r"index_select.*index")],
    "embedding": [("negative index", lambda f, x: f.nn.functional.embedding(_t(f, x, [0, -1]), x), (_a(3, 4),),
                   IndexError, r"embedding.*index")],
    "one_hot": [("class out of range", lambda f, x: f.nn.functional.one_hot(_t(f, x, [0, 3]), 3), (_a(3),),
                 (ValueError, IndexError), r"one_hot.*(class|num_classes)")],
    "cross_entropy": [("batch mismatch", lambda f, x: f.nn.functional.cross_entropy(x, _t(f, x, [0, 1, 2, 0])),
                       (_a(8, 3),), SHAPE, r"cross_entropy.*(batch|target)")],
    "nll_loss": [("batch mismatch", lambda f, x: f.nn.functional.nll_loss(x, _t(f, x, [0, 1])), (_a(4, 3),),
                  SHAPE, r"nll_loss.*(batch|target)")],
    "batch_norm": [("running_mean of the wrong size", lambda f, x: f.nn.functional.batch_norm(
        x, f.zeros(3, device=x.device), f.ones(3, device=x.device)), (_a(4, 2, 3),), SHAPE,
        r"batch_norm.*running_mean")],
    "index_put": [("index out of range, no partial write", _index_put_oob, (_a(3),), IndexError, r"index")],
    "getitem": [("index out of range", lambda f, x: x[5], (_a(3, 4),), IndexError, r"index 5")],
    "floor_divide": [("integer division by zero, no partial write", _floor_divide_by_zero,
                      (_a(3, dtype="int32"),), ZeroDivisionError, r"(floor_divide|division).*zero")],
    "fmod": [("integer fmod by zero", lambda f, x: f.fmod(x, 0), (_a(3, dtype="int32"),), ZeroDivisionError,
              r"fmod.*zero")],
    "reshape": [("size mismatch", lambda f, x: f.reshape(x, (5, -1)), (_a(3, 4),), SHAPE, r"reshape.*shape")],
    "view": [("size mismatch", lambda f, x: x.view(5, 3), (_a(3, 4),), SHAPE, r"view.*shape")],
    "expand": [("not a broadcast", lambda f, x: x.expand(2, 5), (_a(3),), SHAPE, r"expand.*")],
    "permute": [("not a permutation", lambda f, x: f.permute(x, (0, 0)), (_a(3, 4),), (ValueError, IndexError),
                 r"permute.*dim")],
    "cat": [("sizes differ", lambda f, x, y: f.cat([x, y], 0), (_a(3, 4), _a(2, 3)), SHAPE, r"cat.*size")],
    "stack": [("shapes differ", lambda f, x, y: f.stack([x, y]), (_a(3, 4), _a(2, 3)), SHAPE, r"stack.*shape")],
    "matmul": [("inner sizes differ", lambda f, x, y: f.matmul(x, y), (_a(3, 4), _a(3)), SHAPE, r"matmul.*shape")],
    "linear": [("features differ", lambda f, x, w: f.nn.functional.linear(x, w), (_a(3, 4), _a(2, 5)), SHAPE,
                r"linear.*feature")],
    "conv2d": [("channels differ", lambda f, x, w: f.nn.functional.conv2d(x, w), (_a(1, 2, 4, 4), _a(3, 1, 3, 3)),
                SHAPE, r"conv2d.*channel")],
    "conv1d": [("channels differ", lambda f, x, w: f.nn.functional.conv1d(x, w), (_a(1, 2, 5), _a(3, 1, 3)),
                SHAPE, r"conv1d.*channel")],
    "topk": [("k too large", lambda f, x: f.topk(x, 5), (_a(3, 4),), SHAPE, r"topk.*k")],
    "kthvalue": [("k too large", lambda f, x: f.kthvalue(x, 5), (_a(3, 4),), (ValueError, IndexError),
                  r"kthvalue.*k")],
    "sort": [("dim out of range", lambda f, x: f.sort(x, 2), (_a(3, 4),), IndexError, r"sort.*dim")],
    "argsort": [("dim out of range", lambda f, x: f.argsort(x, 2), (_a(3, 4),), IndexError, r"argsort.*dim")],
    "cumsum": [("dim out of range", lambda f, x: f.cumsum(x, 2), (_a(3, 4),), IndexError, r"cumsum.*dim")],
    "cummax": [("dim out of range", lambda f, x: f.cummax(x, 2), (_a(3, 4),), IndexError, r"cummax.*dim")],
    "median": [("dim out of range", lambda f, x: f.median(x, 2), (_a(3, 4),), IndexError, r"median.*dim")],
    "diagonal": [("same dims", lambda f, x: f.diagonal(x, 0, 1, 1), (_a(3, 4),), (ValueError, IndexError),
                  r"diagonal.*dim")],
    **{f"linalg.{n}": [("not square", lambda f, x, _n=n: getattr(f.linalg, _n)(x), (_a(2, 3),), SHAPE,
                        rf"linalg\.{n}.*square")] for n in ("inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh")},
    "linalg.solve": [("sizes differ", lambda f, a, b: f.linalg.solve(a, b), (_a(3, 3), _a(4)), SHAPE,
                      r"linalg\.solve")],
    "linalg.cross": [("not 3 components", lambda f, x: f.linalg.cross(x, x), (_a(2, 4),), SHAPE, r"cross.*3")],
    "softmax": [("dim out of range", lambda f, x: f.softmax(x, 2), (_a(3, 4),), IndexError, r"softmax.*dim")],
    "log_softmax": [("dim out of range", lambda f, x: f.log_softmax(x, 2), (_a(3, 4),), IndexError,
                     r"log_softmax.*dim")],
    "multinomial": [("more samples than categories", lambda f, x: f.multinomial(x, 5), (_a(2, 4) + 1,),
                     (ValueError, RuntimeError), r"multinomial.*sample")],
    "cast": [("not a dtype", lambda f, x: x.to("float32x"), (_a(3),), (TypeError, ValueError), r"float32x")],
    "contiguous": [("memory_format", lambda f, x: x.contiguous(memory_format="channels_sideways"), (_a(3),),
                    (TypeError, ValueError), r"contiguous")],
    "fft_c2c": [("dim out of range", lambda f, x: _prim("fft_c2c")(x, (3,), "backward", True),
                 (_a(4, dtype="complex64"),), IndexError, r"dim")],
    "fft_r2c": [("dim out of range", lambda f, x: _prim("fft_r2c")(x, (3,), "backward"), (_a(4),), IndexError,
                 r"dim")],
    "fft_c2r": [("dim out of range", lambda f, x: _prim("fft_c2r")(x, (3,), "backward", 6),
                 (_a(4, dtype="complex64"),), IndexError, r"dim")],
    "einsum": [("operand count", lambda f, x: f.einsum("ij,jk->ik", x), (_a(3, 4),), SHAPE, r"einsum.*operand")],
    "fft.fftfreq": [("n not a length", lambda f: f.fft.fftfreq("8"), (), (TypeError, ValueError), r"fftfreq.*n")],
    "fft.rfftfreq": [("n not a length", lambda f: f.fft.rfftfreq(-1), (), (TypeError, ValueError),
                      r"rfftfreq.*n")],
    "randperm": [("negative n", lambda f: f.randperm(-1), (), (TypeError, ValueError), r"randperm.*n")],
    "normal": [("negative std", lambda f, x: f.normal(x, -1.0), (_a(3),), (ValueError, RuntimeError),
                r"normal.*std")],
    "dropout": [("p out of range", lambda f, x: f.nn.functional.dropout(x, 1.5), (_a(3),), ValueError,
                 r"dropout.*p")],
}


#: Ops reached only through a method or an operator, or primitives: their error inputs are all in SPECIFIC.
NO_PUBLIC_FUNCTION = frozenset({"getitem", "index_put", "cast", "view", "contiguous", "fft_c2c", "fft_r2c",
                                "fft_c2r"})


#: Ops whose first argument is not a tensor (an equation, a length, a mean that may be a number).
FIRST_ARG_NOT_A_TENSOR = frozenset({"einsum", "fft.fftfreq", "fft.rfftfreq", "randperm", "normal"})
#: Ops documented as another op's alias: the message may use either name.
ALIASES = {"true_divide": "(true_divide|div)"}


def _takes_float32(name: str) -> bool:
    from .._core.dtypes import float32
    from .._ops import REGISTRY
    return float32 in REGISTRY[name].table


def _direct(info: OpInfo) -> bool:
    return info.call is None


def error_inputs(info: OpInfo) -> Iterator[ErrorInput]:
    """The error inputs of ``info``: the generic ones its kind implies, then its own from :data:`SPECIFIC`."""
    short = ALIASES.get(info.name, _short(info.name))
    if info.name not in NO_PUBLIC_FUNCTION and info.name not in FIRST_ARG_NOT_A_TENSOR:
        yield ErrorInput("not a tensor", lambda f, _n=info.name: public_function(f, _n)("not a tensor"), (),
                         TypeError, rf"{short}")
    if _direct(info) and info.arity == 2 and not info.shapes:
        dt = "float32" if _takes_float32(info.name) else "int64"
        yield ErrorInput("shapes that do not broadcast", lambda f, x, y, _i=info: _i(f, x, y),
                         (_a(3, 4, dtype=dt), _a(5, dtype=dt)), _exc(SHAPE), rf"{short}.*\[3, 4\].*\[5\]")
    for kw in info.kwargs:
        if "dim" in kw and isinstance(kw["dim"], int):
            yield ErrorInput("dim out of range", lambda f, x, _i=info, _k=kw: _i(f, x, **{**_k, "dim": 5}),
                             (_a(3, 4),), IndexError, rf"{short}.*dim")
            break
    for note, call, args, exc, match in SPECIFIC.get(info.name, ()):
        yield ErrorInput(note, call, args, _exc(exc), match)
