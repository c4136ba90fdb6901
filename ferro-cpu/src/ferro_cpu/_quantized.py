"""The int8 kernel of ferro.quantization on NumPy: ``int8_matmul``, accumulated in int32 (the contract's
optional group ``quantized``).

NumPy's ``matmul`` has no BLAS for integers and walks a slow generic loop; ``einsum`` over int32 operands
runs its vectorized sum-of-products loops (about 25x faster for a 64 x 1024 by 1024 x 1024 product here).
Every product of two int8 values and every sum of up to 2**17 of them is exact in int32: no float round trip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["quantized_kernels"]


def quantized_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """``int8_matmul`` over the NumPy namespace ``np``."""
    int32 = np.int32

    def int8_matmul(x: Any, y: Any) -> Any:
        # C order: einsum's inner loop then walks both operands' rows at unit stride (a transposed weight
        # view, as quantized Linear keeps it, would otherwise be read across its rows)
        return np.einsum("mk,kn->mn", x.astype(int32, order="C"), y.astype(int32, order="C"))
    return {"int8_matmul": int8_matmul}
