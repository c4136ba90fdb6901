"""The quantized dtypes (``ferro.qint8``, ``ferro.quint8``, ``ferro.qint32``) and quantization schemes
(``ferro.per_tensor_affine``...), as PyTorch names them.

A quantized dtype is not one of the dense dtypes of the op registry: a quantized tensor stores its integer
values in the dense dtype :attr:`QDType.storage` and answers ``dtype`` with the quantized one.
"""

from __future__ import annotations

from .._core.dtypes import DType, int8, int32, uint8

__all__ = ["QDType", "qint8", "quint8", "qint32", "QScheme", "per_tensor_affine", "per_channel_affine",
           "per_tensor_symmetric", "per_channel_symmetric", "per_block_symmetric", "QDTYPES", "QSCHEMES"]


class QDType:
    """A quantized dtype: integer values of ``storage`` dtype in ``[qmin, qmax]``, read with a scale and a
    zero point."""

    __slots__ = ("name", "qmax", "qmin", "storage")
    is_floating_point = False
    is_complex = False

    def __init__(self, name: str, storage: DType, qmin: int, qmax: int) -> None:
        self.name, self.storage, self.qmin, self.qmax = name, storage, qmin, qmax

    @property
    def is_signed(self) -> bool:
        """Whether the values may be negative."""
        return self.qmin < 0

    @property
    def itemsize(self) -> int:
        """Bytes per value (those of the storage dtype)."""
        return self.storage.itemsize

    def __repr__(self) -> str:
        return f"ferro.{self.name}"

    def __reduce__(self) -> str:
        return self.name


qint8 = QDType("qint8", int8, -128, 127)
quint8 = QDType("quint8", uint8, 0, 255)
qint32 = QDType("qint32", int32, -(2 ** 31), 2 ** 31 - 1)
QDTYPES: dict[str, QDType] = {d.name: d for d in (qint8, quint8, qint32)}


class QScheme:
    """How a quantized tensor's values map to reals: ``ferro.per_tensor_affine`` (one scale and zero point),
    ``ferro.per_channel_affine`` (one per index along an axis), ``ferro.per_block_symmetric`` (ferro's own: one
    scale per block of ``block_size`` consecutive values along the last dimension, zero point 0)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ferro.{self.name}"

    def __reduce__(self) -> str:
        return self.name


per_tensor_affine = QScheme("per_tensor_affine")
per_channel_affine = QScheme("per_channel_affine")
per_tensor_symmetric = QScheme("per_tensor_symmetric")
per_channel_symmetric = QScheme("per_channel_symmetric")
per_block_symmetric = QScheme("per_block_symmetric")
QSCHEMES: dict[str, QScheme] = {s.name: s for s in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                                                     per_channel_symmetric, per_block_symmetric)}
