"""ferro side by side with NumPy and PyTorch CPU, in one run: ``python benchmarks/run.py``.

The same as ``ferro bench`` (same options, plus ``--plot out.png``): the harness,
the cases and the report live in ``ferro.bench`` so that an installed ferro can
run them. Every case runs every contender (NumPy, PyTorch, one column per ferro
backend) in this one process, interleaved round by round in shuffled order, and
reports the best round (``--stat median`` for the median); ratios compare
ferro's default backend with the reference the foundation issue names, and are
marked PASS or FAIL against its targets. Import times are taken from fresh
interpreters. ``benchmarks/README.md`` explains each row.

Scripts beside this one (``opencl.py``) import the harness from here; every
name this module has always had is still importable from it.
"""

from __future__ import annotations

from ferro.bench._cases import (  # noqa: F401  (re-exported for the scripts beside this one)
    CASES,
    F32,
    IMPORTS,
    NOT_AT_IMPORT,
    Case,
    N,
    Op,
    Target,
    _add,
    _exp,
    _matmul,
)
from ferro.bench._command import add_arguments
from ferro.bench._command import main as _main
from ferro.bench._harness import (  # noqa: F401
    REFERENCES,
    Contender,
    Result,
    _compile_ferro,
    _loops_for,
    _nothing,
    _per_call,
    ferro_contender,
    harness_overhead,
    import_check,
    import_times,
    measure,
    numpy_contender,
    paired_ratio,
    select_contenders,
    torch_contender,
)
from ferro.bench._report import (  # noqa: F401
    _ENV_OF_NOTE,
    _cell,
    _fmt_time,
    _load,
    _meta,
    _throughputs,
    build_report,
    render,
)

__all__ = ["add_arguments", "main"]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (``ferro bench``'s options); returns the exit status."""
    return _main(argv, prog="run.py")


if __name__ == "__main__":
    raise SystemExit(main())
