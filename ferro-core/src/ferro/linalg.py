"""Linear algebra, as ``torch.linalg``: ``ferro.linalg.inv``, ``solve``, ``det``, ``svd``...

The registry names these ops ``linalg.<name>`` (``ferro ops`` lists them).
"""

from ._ops.linalg_ext import FUNCTIONS as _FUNCTIONS
from ._ops.linalg_ext import EighResult, QRResult, SlogdetResult, SVDResult

globals().update(_FUNCTIONS)

__all__ = ["EighResult", "QRResult", "SVDResult", "SlogdetResult", *sorted(_FUNCTIONS)]
