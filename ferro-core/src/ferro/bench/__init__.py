"""ferro's benchmark suite, behind ``ferro bench``: ferro's backends beside NumPy and PyTorch, in one run.

Every case runs every contender (NumPy, PyTorch, one column per ferro backend)
in one process, interleaved round by round in shuffled order, and reports the
best round (``--stat median`` for the median); ratios compare ferro's default
backend with the reference the foundation issue names and are marked PASS or
FAIL against its targets. Import times come from fresh interpreters.
``benchmarks/README.md`` explains each row and how it is measured.

The harness needs NumPy (it makes the inputs); PyTorch is a column when it is
importable; ``--plot`` needs matplotlib. ``pip install 'ferro-core[bench]'``
installs them. Names are imported on first use, so ``import ferro.bench``
imports none of them.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._command import add_arguments, main, run

__all__ = [
    "add_arguments", "main", "run",
    "Case", "Target", "CASES", "IMPORTS", "NOT_AT_IMPORT",
    "Contender", "Result", "REFERENCES", "numpy_contender", "torch_contender", "ferro_contender",
    "select_contenders", "measure", "harness_overhead", "import_times", "import_check",
    "build_report", "render", "plot",
]

_WHERE = {
    **dict.fromkeys(("Case", "Target", "CASES", "IMPORTS", "NOT_AT_IMPORT"), "_cases"),
    **dict.fromkeys(("Contender", "Result", "REFERENCES", "numpy_contender", "torch_contender", "ferro_contender",
                     "select_contenders", "measure", "harness_overhead", "import_times", "import_check"),
                    "_harness"),
    **dict.fromkeys(("build_report", "render"), "_report"),
    "plot": "_plot",
}


def __getattr__(name: str) -> Any:
    # The harness imports NumPy: it is loaded when one of its names is first asked for.
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
