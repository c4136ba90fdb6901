"""Variable-length sequences for the recurrent layers, as ``torch.nn.utils.rnn``.

A :class:`PackedSequence` holds a batch of sequences of different lengths without padding: sorted
by decreasing length, its ``data`` is time step 0 of every sequence, then step 1 of every sequence
still running, and so on; ``batch_sizes[t]`` says how many rows step ``t`` has. ``RNN``, ``LSTM``
and ``GRU`` accept one in place of a padded tensor and stop each sequence at its own last step.

Every function here moves tensor data with one gather (``index_select``) over the rows, so autograd
flows through and every backend runs it; only the indices of that gather are computed on the host,
from the lengths, which are small int64 CPU tensors as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any, NamedTuple

from ... import _api as ferro
from ..._core.dtypes import bfloat16, float16, float32, float64, int8, int16, int32, int64, uint8
from ..._core.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):  # noqa: N801 - PyTorch's name for the tuple base
    """The four fields of a :class:`PackedSequence`."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """A packed batch of variable-length sequences, as ``torch.nn.utils.rnn.PackedSequence``.

    Fields: ``data`` (the packed rows, any device and dtype), ``batch_sizes`` (an int64 CPU tensor,
    the rows of each time step), ``sorted_indices`` (the original batch index of each sorted
    sequence, or None when the batch came sorted) and ``unsorted_indices`` (its inverse). Build one
    with :func:`pack_padded_sequence` or :func:`pack_sequence` rather than by hand.

    >>> import ferro
    >>> from ferro.nn.utils.rnn import pack_sequence
    >>> p = pack_sequence([ferro.tensor([1, 2, 3]), ferro.tensor([4])])
    >>> p.data.tolist(), p.batch_sizes.tolist()
    ([1, 4, 2, 3], [2, 1, 1])
    """

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)), as PyTorch accepts
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise TypeError("PackedSequence: expected data and batch_sizes, or one (data, batch_sizes) pair")
            data, batch_sizes = data
        if not isinstance(data, Tensor) or not isinstance(batch_sizes, Tensor):
            raise TypeError(f"PackedSequence: data and batch_sizes must be ferro Tensors, got "
                            f"{type(data).__name__} and {type(batch_sizes).__name__}")
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data: Tensor) -> PackedSequence:
        """``self`` with ``data`` replaced; the indices follow it to its device, ``batch_sizes`` stays on CPU."""
        if data is self.data:
            return self

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data.to(*args, **kwargs)``, the indices on its device; ``self`` when nothing changes."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        """The sequence with ``data`` on the CPU backend."""
        return self._with_data(self.data.cpu())

    def cuda(self, device: int | None = None) -> PackedSequence:
        """The sequence with ``data`` on a CUDA device."""
        return self._with_data(self.data.cuda(device))


def _caster(dtype: Any) -> Any:
    def method(self: PackedSequence) -> PackedSequence:
        return self.to(dtype)
    method.__name__ = method.__qualname__ = dtype.name
    method.__doc__ = f"The sequence with ``data`` cast to ``ferro.{dtype.name}``."
    return method


for _name, _dtype in (("double", float64), ("float", float32), ("half", float16), ("bfloat16", bfloat16),
                      ("long", int64), ("int", int32), ("short", int16), ("char", int8), ("byte", uint8)):
    setattr(PackedSequence, _name, _caster(_dtype))


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of the 1-D index tensor ``permutation`` (None for None), on its device."""
    if permutation is None:
        return None
    positions = ferro.arange(permutation.shape[0], dtype=permutation.dtype, device=permutation.device)
    return ferro.zeros_like(permutation).index_copy(0, permutation, positions)


# -- the host-side index arithmetic ------------------------------------------------------------------


def _lengths_list(lengths: Any) -> list[int]:
    """``lengths`` (a 1-D tensor or a sequence of ints) as Python ints, as PyTorch casts them to int64."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D "
                               f"{lengths.device} {lengths.dtype} tensor")
        return [int(v) for v in lengths.to(int64).tolist()]
    return [int(v) for v in lengths]


def _gather(flat: Tensor, index: Tensor, shape: tuple[int, ...], padding_value: Any = None) -> Tensor:
    """Rows ``index`` (a CPU int64 tensor of ``shape``) of ``flat``; index ``len(flat)`` is a row of
    ``padding_value`` when one is given. One ``index_select``, so gradients reach ``flat``."""
    if padding_value is not None:
        pad = ferro.full((1, *flat.shape[1:]), padding_value, dtype=flat.dtype, device=flat.device)
        flat = ferro.cat([flat, pad])
    rows = flat.index_select(0, index.reshape(-1).to(flat.device))
    return rows.reshape(*shape, *flat.shape[1:])


# -- packing -----------------------------------------------------------------------------------------


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``input`` (T, B, *) ((B, T, *) with ``batch_first``) whose sequence ``b`` has
    ``lengths[b]`` steps. With ``enforce_sorted`` the lengths must be decreasing; else the batch is sorted
    here and the returned sequence remembers how to undo it.

    >>> import ferro
    >>> from ferro.nn.utils.rnn import pack_padded_sequence
    >>> x = ferro.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    >>> p = pack_padded_sequence(x, [2, 1, 3], batch_first=True, enforce_sorted=False)
    >>> p.data.tolist(), p.batch_sizes.tolist(), p.sorted_indices.tolist()
    ([4, 1, 3, 5, 2, 6], [3, 2, 1], [2, 0, 1])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pack_padded_sequence: expected input to be a ferro Tensor, got {type(input).__name__}")
    if input.ndim < 2:
        raise ValueError(f"pack_padded_sequence: expected input of shape (T, B, *) or (B, T, *) with batch_first, "
                         f"got {input.ndim}-D input of shape {list(input.shape)}")
    lens = _lengths_list(lengths)
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={batch})")
    order = list(range(batch)) if enforce_sorted else sorted(range(batch), key=lambda b: -lens[b])
    lens = [lens[b] for b in order]
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(a < b for a, b in pairwise(lens)):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if lens[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length of {lens[0]} is longer than the input's "
                           f"{steps} time steps (input shape {list(input.shape)}, batch_first={batch_first})")
    sorted_lengths, columns = ferro.tensor(lens), ferro.tensor(order)
    t = ferro.arange(lens[0])[:, None]
    alive = t < sorted_lengths[None, :]  # (T', B): row-major order of the True entries is the packed order
    flat_row = columns[None, :] * steps + t if batch_first else t * batch + columns[None, :]
    index = flat_row[alive]
    data = _gather(input.reshape(-1, *input.shape[2:]), index, (index.shape[0],))
    sorted_indices = None if enforce_sorted else columns.to(input.device)
    return PackedSequence(data, alive.sum(1), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``, padded (T, B, *) ((B, T, *) with
    ``batch_first``) with ``padding_value`` to the longest sequence or ``total_length`` steps, in the batch's
    original order; ``lengths`` an int64 CPU tensor.

    >>> import ferro
    >>> from ferro.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> padded, lengths = pad_packed_sequence(pack_sequence([ferro.tensor([1, 2]), ferro.tensor([3, 4, 5])],
    ...                                                     enforce_sorted=False), batch_first=True)
    >>> padded.tolist(), lengths.tolist()
    ([[1, 2, 0], [3, 4, 5]], [2, 3])
    """
    data, batch_sizes, _, unsorted_indices = sequence
    steps = batch_sizes.shape[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = int(batch_sizes[0])
    tail = ferro.zeros(steps - batch_sizes.shape[0], dtype=int64)  # the steps past the longest sequence
    sizes = ferro.cat([batch_sizes, tail])[:, None]
    starts = ferro.cat([ferro.cumsum(batch_sizes, 0) - batch_sizes, tail])[:, None]  # first row of each step
    b = ferro.arange(batch)[None, :]
    index = ferro.where(b < sizes, starts + b, data.shape[0])  # (T, B) in the sorted order; past the end: padding
    sorted_lengths = (b < batch_sizes[:, None]).sum(0)
    if unsorted_indices is not None:
        order = unsorted_indices.cpu()
        index, sorted_lengths = index.index_select(1, order), sorted_lengths.index_select(0, order)
    if batch_first:
        index = index.mT
    return _gather(data, index, tuple(index.shape), padding_value), sorted_lengths


def pad_sequence(sequences: Tensor | Iterable[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shape (L_i, *) into one (L_max, B, *) ((B, L_max, *) with ``batch_first``), padded with
    ``padding_value`` after each sequence (or before it, with ``padding_side="left"``).

    >>> import ferro
    >>> from ferro.nn.utils.rnn import pad_sequence
    >>> pad_sequence([ferro.tensor([1, 2, 3]), ferro.tensor([4])], batch_first=True, padding_side="left").tolist()
    [[1, 2, 3], [0, 0, 4]]
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = list(sequences.unbind(0) if isinstance(sequences, Tensor) else sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    for k, s in enumerate(seqs):
        if not isinstance(s, Tensor):
            raise TypeError(f"pad_sequence: expected a sequence of ferro Tensors, got {type(s).__name__} at {k}")
        if s.ndim == 0 or tuple(s.shape[1:]) != tuple(seqs[0].shape[1:]):
            raise ValueError(f"pad_sequence: every sequence must have shape (L, *) with the same trailing "
                             f"dimensions; sequence 0 has shape {list(seqs[0].shape)}, sequence {k} "
                             f"{list(s.shape)}")
    lengths = ferro.tensor([s.shape[0] for s in seqs])[None, :]
    flat = ferro.cat(seqs)
    steps = int(lengths.max())
    pos = ferro.arange(steps)[:, None] - (steps - lengths if padding_side == "left" else 0)  # step within each
    index = ferro.where((pos >= 0) & (pos < lengths), ferro.cumsum(lengths, 1) - lengths + pos, flat.shape[0])
    if batch_first:
        index = index.mT
    return _gather(flat, index, tuple(index.shape), padding_value)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """The inverse of :func:`pad_sequence` (right padding): the first ``lengths[b]`` steps of each sequence."""
    batch_major = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lens = _lengths_list(lengths)
    if len(lens) != batch_major.shape[0]:
        raise ValueError(f"unpad_sequence: got {len(lens)} lengths for a batch of {batch_major.shape[0]}")
    return [seq.narrow(0, 0, n) for seq, n in zip(batch_major.unbind(0), lens)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack tensors of shape (L_i, *): ``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of :func:`pack_sequence`: the list of sequences, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
