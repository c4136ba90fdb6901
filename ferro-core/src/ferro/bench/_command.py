"""The options of ``ferro bench`` (shared with ``benchmarks/run.py``) and the command itself.

This module imports neither NumPy nor matplotlib, so that ``ferro --help`` stays light:
the harness is imported when the command runs, matplotlib only when ``--plot`` is given.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Callable


def _positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """An argparse type: ``kind`` parsed from the text, refused unless positive."""
    def parse(text: str) -> int | float:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value
    parse.__name__ = kind.__name__  # argparse names the type in its error messages
    return parse


def _thread_counts(text: str) -> list[int]:
    """An argparse type: positive thread counts separated by commas."""
    try:
        counts = [int(t) for t in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, e.g. 1,2; got {text!r}")
    return counts


# (rounds, budget, import runs, pause): the defaults of the suite and of the --models tables; --quick's for the tables.
_DEFAULTS = {False: (15, 0.25, 15, 0.05), True: (7, 0.03, 7, 0.005)}
_QUICK_TABLES = (3, 0.01, 3, 0.005)


def _resolve_defaults(args: argparse.Namespace) -> None:
    models = bool(getattr(args, "models", False))
    defaults = _QUICK_TABLES if models and args.quick else _DEFAULTS[models]
    for name, value in zip(("rounds", "budget", "import_runs", "pause"), defaults):
        if getattr(args, name, None) is None:
            setattr(args, name, value)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the benchmark's options to ``p``."""
    p.add_argument("--backend", default="all", help="ferro backends to run: all (every available one), "
                   "or names separated by commas, e.g. cpu,opencl (default: all)")
    p.add_argument("--models", action="store_true", help="the model table (training steps) and the op-overhead "
                   "table instead: ferro cpu vs PyTorch vs NumPy, paired-ratio medians, a fresh interpreter per "
                   "thread count; --plot draws the ratios")
    p.add_argument("--threads", default=[1, 2], type=_thread_counts, metavar="N,M",
                   help="with --models: the thread counts, separated by commas (default 1,2)")
    p.add_argument("--quick", action="store_true", help="a smoke run: 3 short rounds, 5 interpreter starts")
    p.add_argument("--json", metavar="FILE", help="also write every number (min, median, loops, throughputs)")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument("--plot", metavar="FILE", help="also draw one bar chart per case into FILE, e.g. out.png "
                   "(needs matplotlib: pip install 'ferro-core[bench]')")
    p.add_argument("--case", action="append", metavar="TEXT",
                   help="run only the cases whose name holds TEXT ('import' for the import rows); repeatable")
    p.add_argument("--stat", choices=("min", "median"), default="min", help="which round is reported (default: min)")
    p.add_argument("--rounds", type=_positive(int), help="rounds per contender (default 15; 7 with --models)")
    p.add_argument("--budget", type=_positive(float),
                   help="seconds per round per contender (default 0.25; 0.03 with --models)")
    p.add_argument("--import-runs", type=_positive(int),
                   help="fresh interpreters per import (default 15; with --models: pairs for the first op, 7)")
    p.add_argument("--pause", type=float, help="seconds of rest before each timed round "
                   "(default 0.05; 0.005 with --models)")


def _problem(args: argparse.Namespace) -> str | None:
    """What stops the run before anything is timed, or None."""
    if importlib.util.find_spec("numpy") is None:
        return "NumPy is not installed; the benchmark makes its inputs with it (pip install 'ferro-core[bench]')"
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        return "--plot needs matplotlib, which is not installed (pip install 'ferro-core[bench]')"
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            return f"{option} {path}: its folder does not exist"
    return None


def run(args: argparse.Namespace, prog: str = "ferro bench") -> int:
    """Run the benchmark that ``args`` describes, print its table, write ``--json`` and ``--plot``.

    Returns the exit status: 0, or 2 (with the reason on stderr) when a requested ferro
    backend is not installed or cannot run here, or a library that an option needs is missing.
    """
    if problem := _problem(args):
        print(f"{prog}: {problem}", file=sys.stderr)
        return 2
    _resolve_defaults(args)
    if getattr(args, "models", False):
        return _run_tables(args, prog)
    from ferro.errors import BackendNotFoundError, BackendUnavailableError

    from ._harness import select_contenders
    from ._report import build_report, render
    try:
        contenders, notes = select_contenders(args.backend)
    except (BackendNotFoundError, BackendUnavailableError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    report = build_report(args, contenders, notes)
    print(render(report, contenders, args.markdown))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if args.plot:
        from ._plot import plot
        plot(report, args.plot)
        print(f"{prog}: plot written to {args.plot}", file=sys.stderr)
    return 0


def _run_tables(args: argparse.Namespace, prog: str) -> int:
    """``--models``: the model and op tables on ferro cpu (PyTorch must be installed)."""
    if importlib.util.find_spec("torch") is None:
        print(f"{prog}: --models compares with PyTorch, which is not installed (pip install torch)", file=sys.stderr)
        return 2
    from ._tables import run_and_print
    return run_and_print(args, ("models", "ops"), args.import_runs, prog)


def main(argv: list[str] | None = None, prog: str = "ferro bench") -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) and :func:`run` the benchmark."""
    p = argparse.ArgumentParser(prog=prog, description="ferro side by side with NumPy and PyTorch, in one run")
    add_arguments(p)
    return run(p.parse_args(argv), prog)
