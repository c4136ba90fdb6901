"""The model table's rows (``MODELS``): training steps of small models, built from the same code for ferro and
PyTorch. They live in ``ferro.bench._models``; ``python benchmarks/ops.py --table models`` or
``ferro bench --models`` runs them.
"""

from __future__ import annotations

from ferro.bench._models import MODELS, STEPS  # noqa: F401
