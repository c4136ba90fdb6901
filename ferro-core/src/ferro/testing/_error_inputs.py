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
    ``ferro.ops.X``, where every op of the registry is, plugins' too, under its whole name)."""
    for ns in (ferro, ferro.nn.functional, ferro.ops):
        obj = ns
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if callable(obj):
            return obj
    whole = getattr(ferro.ops, name, None)  # a registry name with a dot that is no namespace (nn.fold)
    return whole if callable(whole) else None


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
    "amp_unscale_": [
        ("integer gradients", lambda f, g: f.ops.amp_unscale_([g], f.zeros((), device=g.device), 0.5),
         (_a(3, 4, dtype="int64"),), DTYPE, r"amp_unscale_.*int64"),
        ("gradients of two dtypes", lambda f, a, b: f.ops.amp_unscale_([a, b], f.zeros((), device=a.device), 0.5),
         (_a(3, 4), _a(2, dtype="int32")), DTYPE, r"amp_unscale_.*one dtype|amp_unscale_.*int32"),
        ("an int64 found_inf", lambda f, g: f.ops.amp_unscale_([g], f.zeros((), dtype=f.int64, device=g.device),
                                                                 0.5), (_a(3, 4),), TypeError,
         r"amp_unscale_.*found_inf"),
    ],
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
    **{n: [("dim out of range", lambda f, x, _n=n: getattr(f, _n)(x, 2), (_a(3, 4),), IndexError, rf"{n}.*dim")]
       for n in ("flip", "cumprod", "cummin", "logcumsumexp", "var", "std", "prod", "count_nonzero", "mode", "any",
                 "all", "amax", "amin")},
    "roll": [("dim out of range", lambda f, x: f.roll(x, 1, 2), (_a(3, 4),), IndexError, r"roll.*dim")],
    "movedim": [("dim out of range", lambda f, x: f.movedim(x, 0, 2), (_a(3, 4),), IndexError, r"movedim.*dim")],
    "unbind": [("dim out of range", lambda f, x: f.unbind(x, 2), (_a(3, 4),), IndexError, r"unbind.*dim")],
    "norm": [("dim out of range", lambda f, x: f.norm(x, dim=2), (_a(3, 4),), IndexError, r"norm.*dim")],
    "tril": [("fewer than 2 dims", lambda f, x: f.tril(x), (_a(3),), SHAPE, r"tril.*dim")],
    "triu": [("fewer than 2 dims", lambda f, x: f.triu(x), (_a(3),), SHAPE, r"triu.*dim")],
    "repeat": [("fewer repeats than dims", lambda f, x: x.repeat(2), (_a(3, 4),), SHAPE, r"repeat.*dim")],
    "tile": [("dims not integers", lambda f, x: f.tile(x, "a"), (_a(3, 4),), (TypeError, ValueError), r"tile.*dims")],
    "unflatten": [("sizes do not multiply", lambda f, x: f.unflatten(x, 1, (2, 3)), (_a(3, 4),), SHAPE,
                   r"unflatten.*size")],
    "chunk": [("zero chunks", lambda f, x: f.chunk(x, 0), (_a(3, 4),), ValueError, r"chunk.*chunks")],
    "split": [("zero split size", lambda f, x: f.split(x, 0), (_a(3, 4),), ValueError, r"split.*split_size")],
    "take": [("index out of range", lambda f, x: f.take(x, _t(f, x, [12])), (_a(3, 4),), IndexError,
              r"take.*index")],
    "masked_fill": [("mask does not broadcast", lambda f, x: f.masked_fill(x, _t(f, x, [True] * 5), 1.0),
                     (_a(3, 4),), SHAPE, r"masked_fill.*mask")],
    "scatter": [("index out of range", lambda f, x: f.scatter(x, 0, _t(f, x, [[5]]), f.ones(1, 1, device=x.device)),
                 (_a(3, 4),), IndexError, r"scatter.*index")],
    "index_add": [("index out of range", lambda f, x: f.index_add(x, 1, _t(f, x, [5]), f.ones(3, 1, device=x.device)),
                   (_a(3, 4),), IndexError, r"index_add.*index")],
    "tensordot": [("contracted sizes differ", lambda f, x, y: f.tensordot(x, y, 1), (_a(3, 4), _a(5, 2)), SHAPE,
                   r"tensordot.*size")],
    "outer": [("not 1-D", lambda f, x, y: f.outer(x, y), (_a(3, 4), _a(3)), SHAPE, r"outer.*1-?D")],
    "histc": [("no bins", lambda f, x: f.histc(x, -1), (_a(4),), ValueError, r"histc.*bins")],
    "bincount": [("negative value", lambda f, x: f.bincount(x), (_a(3, dtype="int64") - 1,), ValueError,
                  r"bincount.*(negative|non-negative)")],
    "diag_embed": [("same dims", lambda f, x: f.diag_embed(x, dim1=0, dim2=0), (_a(3, 4),), (ValueError, IndexError),
                    r"diag_embed.*dim")],
    "diag": [("3-D input", lambda f, x: f.diag(x), (_a(2, 2, 2),), SHAPE, r"diag.*(1-D|2-D)")],
    "glu": [("odd size", lambda f, x: f.nn.functional.glu(x), (_a(2, 3),), SHAPE, r"glu.*(even|size)")],
    "pad": [("unknown mode", lambda f, x: f.nn.functional.pad(x, (1, 2), mode="bogus"), (_a(3, 4),), ValueError,
             r"pad.*mode")],
    "interpolate": [("unknown mode", lambda f, x: f.nn.functional.interpolate(x, scale_factor=2, mode="bogus"),
                     (_a(1, 1, 2, 2),), ValueError, r"interpolate.*mode")],
    "layer_norm": [("normalized_shape mismatch", lambda f, x: f.nn.functional.layer_norm(x, (4,)), (_a(4, 3),),
                    SHAPE, r"layer_norm.*normalized_shape")],
    "group_norm": [("channels not divisible", lambda f, x: f.nn.functional.group_norm(x, 3), (_a(2, 4, 3),), SHAPE,
                    r"group_norm.*group")],
    **{n: [("kernel larger than the input", lambda f, x, _n=n: getattr(f.nn.functional, _n)(x, 3),
            (_a(1, 1, 2, 2) if n.endswith("2d") else _a(1, 1, 2),), SHAPE, rf"{n}.*kernel")]
       for n in ("max_pool2d", "avg_pool2d", "max_pool1d", "avg_pool1d")},
    **{n: [("unknown reduction", lambda f, x, _n=n: getattr(f.nn.functional, _n)(x, x, reduction="bogus"),
            (_a(4, 3) / 12,), ValueError, rf"{n}.*reduction")]
       for n in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits", "kl_div")},
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
    from .._ops import REGISTRY
    return any(d.name == "float32" for d in REGISTRY[name].table)


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
