"""Read-only ``arange(n)`` arrays made once per ``n``: the row index of the loss kernels' per-sample picks
(``x[rows, target]``), which every call of a loss over the same batch size needs again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["row_indices"]


def row_indices(np: Any) -> Callable[[int], Any]:
    """A function of ``n`` giving ``np.arange(n)``, read-only, made once per ``n``."""
    aranges: dict[int, Any] = {}

    def row_index(n: int) -> Any:
        idx = aranges.get(n)
        if idx is None:
            idx = aranges[n] = np.arange(n)
            idx.flags.writeable = False
        return idx
    return row_index
