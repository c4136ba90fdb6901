"""Linear algebra, as ``torch.linalg``: ``ferro.linalg.inv``, ``solve``, ``det``, ``svd``...

The registry names these ops ``linalg.<name>`` (``ferro ops`` lists them).
"""

from ._ops.linalg import FUNCTIONS as _PRODUCTS
from ._ops.linalg_ext import FUNCTIONS as _FUNCTIONS
from ._ops.linalg_ext import EighResult, LUFactorResult, LUResult, QRResult, SlogdetResult, SVDResult
from ._ops.linalg_more import FUNCTIONS as _MORE
from ._ops.linalg_solvers import FUNCTIONS as _SOLVERS
from ._ops.linalg_solvers import (
    CholeskyExResult,
    EigResult,
    InvExResult,
    LDLFactorExResult,
    LDLFactorResult,
    LUFactorExResult,
    SolveExResult,
)
from ._ops.norms import LINALG_FUNCTIONS as _NORMS
from .errors import LinAlgError

globals().update(_FUNCTIONS)
globals().update(_NORMS)
globals().update(_MORE)
globals().update(_SOLVERS)
matmul = _PRODUCTS["matmul"]  # torch.linalg.matmul is torch.matmul

__all__ = ["EighResult", "LUFactorResult", "LUResult", "QRResult", "SVDResult", "SlogdetResult", "CholeskyExResult",
           "EigResult", "InvExResult", "LUFactorExResult", "SolveExResult", "LDLFactorResult", "LDLFactorExResult",
           "LinAlgError",
           *sorted({*_FUNCTIONS, *_NORMS, *_MORE, *_SOLVERS, "matmul"})]
