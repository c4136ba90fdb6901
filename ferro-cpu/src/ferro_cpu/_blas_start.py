"""NumPy, imported with OpenBLAS starting on one thread where ferro-cpu is what imports it.

ferro-cpu keeps NumPy's OpenBLAS pool at one thread (``_threads``: its products are split by ferro-cpu's own
block pool instead). Imported with OpenBLAS's default, NumPy starts a thread per core, which ferro-cpu parks
as soon as its device binds; on a machine whose cores are busy, starting those threads and their spinning cost
the import tens of milliseconds (``import numpy; numpy.ones(2) + 1`` at 2 cores under a load of 2 to 3:
66 ms on one thread against 120). So where NumPy is not imported yet and ``OPENBLAS_NUM_THREADS`` is not set,
it is set to 1 for NumPy's import only (OpenBLAS reads it once, when it loads) and removed again: the
pool is the one thread ferro-cpu sets anyway, the program's environment and its children's stay as they were,
and ``threadpoolctl`` or ``openblas_set_num_threads`` can still grow the pool. A program that imported NumPy
first, or set the variable, keeps what it chose until the device binds.
"""

from __future__ import annotations

import os
import sys

__all__ = ["np"]

_VAR = "OPENBLAS_NUM_THREADS"

if "numpy" not in sys.modules and _VAR not in os.environ:
    os.environ[_VAR] = "1"
    try:
        import numpy as np
    finally:
        os.environ.pop(_VAR, None)
else:
    import numpy as np
