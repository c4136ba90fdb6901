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


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the benchmark's options to ``p``."""
    p.add_argument("--backend", default="all", help="ferro backends to run: all (every available one), "
                   "or names separated by commas, e.g. cpu,opencl (default: all)")
    p.add_argument("--quick", action="store_true", help="a smoke run: 3 short rounds, 5 interpreter starts")
    p.add_argument("--json", metavar="FILE", help="also write every number (min, median, loops, throughputs)")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument("--plot", metavar="FILE", help="also draw one bar chart per case into FILE, e.g. out.png "
                   "(needs matplotlib: pip install 'ferro-core[bench]')")
    p.add_argument("--case", action="append", metavar="TEXT",
                   help="run only the cases whose name holds TEXT ('import' for the import rows); repeatable")
    p.add_argument("--stat", choices=("min", "median"), default="min", help="which round is reported (default: min)")
    p.add_argument("--rounds", type=_positive(int), default=15, help="rounds per contender (default 15)")
    p.add_argument("--budget", type=_positive(float), default=0.25,
                   help="seconds per round per contender (default 0.25)")
    p.add_argument("--import-runs", type=_positive(int), default=15,
                   help="fresh interpreters per import (default 15)")
    p.add_argument("--pause", type=float, default=0.05, help="seconds of rest before each timed round "
                   "(default 0.05)")


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


def main(argv: list[str] | None = None, prog: str = "ferro bench") -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) and :func:`run` the benchmark."""
    p = argparse.ArgumentParser(prog=prog, description="ferro side by side with NumPy and PyTorch, in one run")
    add_arguments(p)
    return run(p.parse_args(argv), prog)
