"""The ``ferro`` namespace's helpers that are not ops, as PyTorch's top level has them: type objects
(``dtype``, ``memory_format``), creation from buffers and layouts (``asarray``, ``frombuffer``,
``empty_permuted``), ``result_type``, ``to_dlpack``, ``detach``, and eager forms of PyTorch's control-flow
and batching functions (``cond``, ``while_loop``, ``vmap``).

>>> import ferro
>>> ferro.result_type(ferro.tensor([1, 2]), 1.5)
ferro.float32
>>> ferro.vmap(lambda row: row.sum())(ferro.ones(3, 4))
tensor([4., 4., 4.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtypes import DType, as_dtype
from .._core.dtypes import result_type as _result_type
from .._core.tensor import Tensor
from .._creation import as_tensor, empty, from_numpy, tensor
from ..autograd._anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from .shape import stack

__all__ = ["dtype", "memory_format", "contiguous_format", "preserve_format", "channels_last",
           "channels_last_3d", "asarray", "frombuffer", "empty_permuted", "result_type", "to_dlpack", "detach",
           "is_inference", "is_distributed", "init_num_threads", "cond", "while_loop", "vmap", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]

#: ``torch.dtype``: the class of ferro's dtypes (``isinstance(x.dtype, ferro.dtype)``).
dtype = DType


class memory_format:  # noqa: N801  (spelled as PyTorch spells it)
    """A memory layout a tensor may be asked for (``x.contiguous(memory_format=...)``): ferro's tensors are
    laid out row-major or as views of such storage, so only ``contiguous_format`` and ``preserve_format``
    are layouts ferro makes."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ferro.{self.name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def asarray(obj: Any, *, dtype: DType | None = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """``obj`` (a tensor, an array, a buffer, a DLPack capsule holder, a sequence) as a tensor, sharing its
    memory where it can unless ``copy=True``; ``copy=False`` refuses to copy."""
    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None or device is not None:
            out = obj.to(device=device or obj.device, dtype=as_dtype(dtype, "asarray") if dtype else obj.dtype)
            if copy is False and out is not obj:
                raise ValueError("asarray(): a copy is needed to change the dtype or device, but copy=False")
        if copy:
            out = out.clone() if out is obj else out
    elif copy:
        out = tensor(obj, dtype=dtype, device=device)
    else:
        out = as_tensor(obj, dtype=dtype, device=device)
        if copy is False and not _shares(out, obj):
            raise ValueError("asarray(): cannot share memory with this object (copy=False)")
    if requires_grad:
        out.requires_grad_(True)
    return out


def _shares(t: Tensor, obj: Any) -> bool:
    interface = getattr(obj, "__array_interface__", None)
    mine = getattr(t._data, "__array_interface__", None)
    return interface is not None and mine is not None and interface["data"][0] == mine["data"][0]


def frombuffer(buffer: Any, *, dtype: DType, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor over the bytes of ``buffer`` (an object with the buffer protocol), sharing them:
    ``count`` elements (-1: to the end) from byte ``offset``."""
    import numpy as np
    dt = as_dtype(dtype, "frombuffer")
    if dt.name == "bfloat16":
        raise TypeError("frombuffer(): bfloat16 has no NumPy dtype to read a buffer as; read it as int16 and "
                        "convert")
    array = np.frombuffer(buffer, dtype=np.dtype(dt.name if dt.name != "bool" else "bool"), count=count,
                          offset=offset)
    out = from_numpy(array)
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: DType | None = None,
                   device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """An uninitialized tensor of ``size`` whose dimensions lie in memory in the order ``physical_layout``
    (outermost first)."""
    size, layout = tuple(size), tuple(physical_layout)
    if sorted(layout) != list(range(len(size))):
        raise ValueError(f"empty_permuted(): physical_layout {list(layout)} is not a permutation of the "
                         f"{len(size)} dimensions")
    inverse = [layout.index(i) for i in range(len(size))]
    out = empty(*(size[i] for i in layout), dtype=dtype, device=device).permute(*inverse)
    return out.requires_grad_(True) if requires_grad else out


def result_type(tensor1: Any, tensor2: Any) -> DType:
    """The dtype an op on the two operands (tensors or Python numbers) computes in, by PyTorch's promotion."""
    dims, zero_dims, scalars = [], [], []
    for v in (tensor1, tensor2):
        if isinstance(v, Tensor):
            (dims if v.ndim else zero_dims).append(v.dtype)
        else:
            scalars.append(v)
    return _result_type(dims, zero_dims, scalars)


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule of ``tensor``'s memory (``tensor.__dlpack__()``)."""
    return tensor.__dlpack__()


def detach(input: Tensor) -> Tensor:
    """``input.detach()``: the same values, outside the graph."""
    return input.detach()


def is_inference(input: Tensor) -> bool:
    """``input.is_inference()``: whether it was made in inference mode."""
    return input.is_inference()


def is_distributed(input: Tensor) -> bool:
    """False: a ferro tensor lives on one device (``ferro.distributed`` moves values between processes)."""
    return False


def init_num_threads() -> None:
    """Nothing to do: ferro's backends keep their thread pools themselves (``ferro.set_num_threads``)."""


def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], operands: Sequence[Any] = (),
         **_: Any) -> Any:
    """``true_fn(*operands)`` if ``pred`` (a bool or a one-element tensor) is true, else ``false_fn(*operands)``:
    PyTorch's ``torch.cond``, run eagerly."""
    if isinstance(pred, Tensor) and pred.numel() != 1:
        raise ValueError(f"cond(): pred must be a bool or a tensor with one element, got shape {list(pred.shape)}")
    return true_fn(*operands) if bool(pred) else false_fn(*operands)


def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any], carried_inputs: Sequence[Any],
               **_: Any) -> tuple[Any, ...]:
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` is true; returns the carried values:
    PyTorch's ``torch.while_loop``, run eagerly."""
    carried = tuple(carried_inputs)
    while bool(cond_fn(*carried)):
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(carried) != len(carried_inputs):
            raise ValueError(f"while_loop(): body_fn returned {len(carried)} values for {len(carried_inputs)} "
                             "carried inputs")
    return carried


def _dims(spec: Any, n: int, name: str) -> tuple[Any, ...]:
    if isinstance(spec, (tuple, list)):
        if len(spec) != n:
            raise ValueError(f"vmap: {name} has {len(spec)} entries for {n} values")
        return tuple(spec)
    return (spec,) * n


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """``func`` mapped over a dimension of its tensor arguments: PyTorch's ``torch.vmap``, run as a loop over
    the batch (each call sees one slice; the results are stacked at ``out_dims``). ``in_dims``: the batch
    dimension of each argument (None: not batched)."""
    def mapped(*args: Any, **kwargs: Any) -> Any:  # keyword arguments are passed whole, as torch.vmap does
        dims = _dims(in_dims, len(args), "in_dims")
        sizes = {a.shape[d] for a, d in zip(args, dims) if d is not None and isinstance(a, Tensor)}
        if len(sizes) != 1:
            raise ValueError(f"vmap: expected the batched arguments to have one batch size, got {sorted(sizes)}"
                             if sizes else "vmap: at least one argument must be a tensor with a batch dimension")
        (n,) = sizes
        results = [func(*(a.select(d, i) if d is not None and isinstance(a, Tensor) else a
                          for a, d in zip(args, dims)), **kwargs) for i in range(n)]
        if isinstance(results[0], (tuple, list)):
            outs = _dims(out_dims, len(results[0]), "out_dims")
            return type(results[0])(stack([r[k] for r in results], outs[k]) for k in range(len(outs)))
        return stack(results, out_dims)
    mapped.__name__ = getattr(func, "__name__", "vmapped")
    mapped.__doc__ = func.__doc__
    return mapped


FUNCTIONS: dict[str, Any] = {
    "dtype": dtype, "memory_format": memory_format, "asarray": asarray, "frombuffer": frombuffer,
    "empty_permuted": empty_permuted, "result_type": result_type, "to_dlpack": to_dlpack, "detach": detach,
    "is_inference": is_inference, "is_distributed": is_distributed, "init_num_threads": init_num_threads,
    "cond": cond, "while_loop": while_loop, "vmap": vmap, "contiguous_format": contiguous_format,
    "preserve_format": preserve_format, "channels_last": channels_last, "channels_last_3d": channels_last_3d,
    "is_anomaly_enabled": is_anomaly_enabled, "is_anomaly_check_nan_enabled": is_anomaly_check_nan_enabled,
    "set_anomaly_enabled": set_anomaly_enabled,
}
