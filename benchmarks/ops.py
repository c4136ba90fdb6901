"""The op-overhead and model tables, ferro cpu vs PyTorch CPU vs NumPy, in one run: ``ferro bench --models``.

    python benchmarks/ops.py                       # both tables at 1 and 2 threads
    python benchmarks/ops.py --table ops --threads 1 --case sum --rounds 7
    python benchmarks/ops.py --table models        # the model table only

A script over ``ferro.bench._tables`` (the runner), ``ferro.bench._optable`` (the op rows, ``OPS``) and
``ferro.bench._models`` (the model rows); ``benchmarks/revisions.py --ops`` times the same rows on two
checkouts. ``benchmarks/README.md`` explains how they are measured.
"""

from __future__ import annotations

from ferro.bench._optable import OPS  # noqa: F401  (the rows, for scripts that read them from here)
from ferro.bench._tables import main

if __name__ == "__main__":
    raise SystemExit(main())
