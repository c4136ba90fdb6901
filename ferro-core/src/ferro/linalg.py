"""Linear algebra, as ``torch.linalg``: ``ferro.linalg.inv``, ``solve``, ``det``, ``svd``...

The registry names these ops ``linalg.<name>`` (``ferro ops`` lists them).
"""

from ._ops.linalg_ext import FUNCTIONS as _FUNCTIONS
from ._ops.linalg_ext import EighResult, LUFactorResult, LUResult, QRResult, SlogdetResult, SVDResult
from ._ops.norms import LINALG_FUNCTIONS as _NORMS

globals().update(_FUNCTIONS)
globals().update(_NORMS)

__all__ = ["EighResult", "LUFactorResult", "LUResult", "QRResult", "SVDResult", "SlogdetResult",
           *sorted({*_FUNCTIONS, *_NORMS})]
