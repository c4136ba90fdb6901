"""``ferro bench --models``: the model table and the op-overhead table, ferro cpu vs PyTorch CPU vs NumPy, in one run.

Each thread count runs in a fresh interpreter (``python -m ferro.bench._tables --child``) whose BLAS/OpenMP
pools are sized by the environment (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``) and
``torch.set_num_threads``. Within it, ``measure`` interleaves the contenders round by round in shuffled order
and ``paired_ratio`` takes the median of the per-round ratios, so the machine's drift cancels: read the
ratios, not the times. The children also fix glibc's heap thresholds (:data:`HEAP_ENV`): by default glibc
gives the top of the heap back after each step and faults it in again on the next, and whether it does
depends on what the process freed before (PyTorch's conv2d backward measured 10.4 ms with 4065 page faults a
step, 3.2 ms with none), so a row's ratio depended on the rows run before it. Fixed thresholds measure the
kernels, the same for every contender in the process. The op table ends with the time to first op against
NumPy's (fresh interpreters, paired). The rows are in ``_models.py`` and ``_optable.py``; ``benchmarks/ops.py``
is a script over this.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from ._cases import Case, selected
from ._harness import _compile_ferro, ferro_contender, measure, numpy_contender, paired_ratio, torch_contender
from ._models import MODELS
from ._optable import OPS

TABLES: dict[str, list[Case]] = {"models": MODELS, "ops": OPS}

#: glibc's heap settings for the children: blocks below 64 MiB from the heap, whose top stays mapped.
HEAP_ENV = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def run_child(table: str, threads: int, cases: list[str] | None, rounds: int, budget: float,
              pause: float) -> dict[str, Any]:
    """This interpreter's share: every selected case of ``table`` at the thread count the environment set."""
    import torch

    torch.set_num_threads(threads)
    contenders = [numpy_contender(), torch_contender(), ferro_contender("cpu")]
    rows: dict[str, Any] = {}
    for case in selected(TABLES[table], cases):
        print(f"  timing {case.name} ({threads} thread{'s' * (threads > 1)}) ...", file=sys.stderr, flush=True)
        res = measure(case, contenders, rounds, budget, pause)
        f = res.get("ferro:cpu")
        row: dict[str, Any] = {"us": {k: (r.stat("median") * 1e6 if r.seconds else r.error) for k, r in res.items()}}
        for ref in ("torch", "numpy"):
            if f and f.seconds and ref in res and res[ref].seconds:
                row[f"vs_{ref}"] = paired_ratio(case.target, f, res[ref])
        rows[case.name] = row
    return rows


def first_op(runs: int) -> float:
    """Median over ``runs`` interleaved pairs of the time-to-first-op ratio ferro / NumPy (fresh interpreters)."""
    def once(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - t0
    _compile_ferro()
    f, n = "import ferro; ferro.ones(2) + 1", "import numpy; numpy.ones(2) + 1"
    once(f), once(n)
    ratios = []
    for r in range(runs):
        if r % 2:
            tn, tf = once(n), once(f)
        else:
            tf, tn = once(f), once(n)
        ratios.append(tf / tn)
    return statistics.median(ratios)


def run_table(table: str, threads: list[int], cases: list[str] | None = None, rounds: int = 7,
              budget: float = 0.03, pause: float = 0.005) -> dict[int, dict[str, Any]]:
    """``table`` ("models" or "ops") at each thread count, each in a fresh interpreter: threads -> case -> row."""
    out = {}
    for t in threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t),
                   FERRO_BACKEND="cpu", **HEAP_ENV)
        cmd = [sys.executable, "-m", "ferro.bench._tables", "--child", "--table", table, "--threads", str(t),
               "--rounds", str(rounds), "--budget", str(budget), "--pause", str(pause)]
        for c in cases or []:
            cmd += ["--case", c]
        stdout = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
        out[t] = json.loads(stdout.strip().splitlines()[-1])
    return out


def render(tables: dict[int, dict[str, Any]], first: float | None = None, unit: str = "µs") -> str:
    """The markdown table: ferro's median time and the paired ratios at each thread count."""
    threads = sorted(tables)
    scale = 1e-3 if unit == "ms" else 1.0
    cols = (f"ferro {unit} ({t}t) | ferro/torch ({t}t) | ferro/numpy ({t}t)" for t in threads)
    lines = ["| case | " + " | ".join(cols) + " |", "|---|" + "---:|" * (3 * len(threads))]
    for name in tables[threads[0]] if threads else []:
        cells = []
        for t in threads:
            row = tables[t].get(name, {})
            us = row.get("us", {}).get("ferro:cpu", "")
            cells += [f"{us * scale:.1f}" if isinstance(us, float) else str(us)[:30],
                      f"{row['vs_torch']:.2f}x" if "vs_torch" in row else "",
                      f"{row['vs_numpy']:.2f}x" if "vs_numpy" in row else ""]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if first is not None:
        lines.append(f"\ntime to first op, ferro / NumPy (fresh interpreters, paired median): {first:.2f}x")
    return "\n".join(lines)


def plot_ratios(report: dict[str, Any], path: str) -> None:
    """A horizontal bar chart of ferro / PyTorch per row of each table (one bar per thread count) into ``path``.

    ``report`` is :func:`run_tables`' result (or its JSON). Needs matplotlib, imported here only.
    """
    from matplotlib.figure import Figure

    tables = [(name, report["tables"][name]) for name in ("models", "ops") if name in report["tables"]]
    heights = [max(2, len(next(iter(t.values()), {}))) for _, t in tables]
    fig = Figure(figsize=(10, 0.28 * sum(heights) + 1.5 * len(tables) + 0.5), layout="constrained")
    axes = fig.subplots(len(tables), 1, squeeze=False, height_ratios=heights or None).ravel()
    for ax, (name, by_threads) in zip(axes, tables):
        threads = sorted(by_threads, key=int)
        rows = list(by_threads[threads[0]]) if threads else []
        width = 0.8 / max(1, len(threads))
        ax.set_xscale("log")
        seen = [v for t in threads for r in by_threads[t].values() if (v := r.get("vs_torch"))]
        left = min([0.1, *(v / 2 for v in seen)])  # log scale: the bars start from one left edge
        for i, t in enumerate(threads):
            vals = [by_threads[t].get(r, {}).get("vs_torch") for r in rows]
            ys = [j + i * width for j in range(len(rows))]
            bars = ax.barh(ys, [(v or left) - left for v in vals], left=left, height=width,
                           label=f"{t} thread{'s' * (int(t) > 1)}")
            for bar, v in zip(bars, vals):
                ax.text(v or left, bar.get_y() + bar.get_height() / 2, f" {v:.2f}x" if v else " n/a",
                        va="center", fontsize=6)
        ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xlim(left, max([2.0, *(v * 2 for v in seen)]))
        ax.set_yticks([j + width * (len(threads) - 1) / 2 for j in range(len(rows))], rows, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("ferro / PyTorch, paired median (lower is better; dashed: target 1.0)", fontsize=8)
        ax.set_title(f"{name} table", fontsize=9)
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=100)


def run_tables(threads: list[int], cases: list[str] | None = None, rounds: int = 7, budget: float = 0.03,
               pause: float = 0.005, first_op_runs: int = 7, tables: tuple[str, ...] = ("models", "ops")
               ) -> dict[str, Any]:
    """Every table in ``tables`` at each thread count, and the time to first op with the op table."""
    out: dict[str, Any] = {"tables": {}, "first_op_vs_numpy": None}
    for name in tables:
        if not selected(TABLES[name], cases):
            continue
        out["tables"][name] = run_table(name, threads, cases, rounds, budget, pause)
    if "ops" in tables and first_op_runs:
        out["first_op_vs_numpy"] = first_op(first_op_runs)
    return out


def render_tables(report: dict[str, Any]) -> str:
    """:func:`run_tables`' result as markdown: the model table (ms), then the op table (µs) and first op."""
    parts = []
    for name, unit in (("models", "ms"), ("ops", "µs")):
        if name in report["tables"]:
            first = report["first_op_vs_numpy"] if name == "ops" else None
            parts.append(f"## {name}\n\n" + render(report["tables"][name], first, unit))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """``python -m ferro.bench._tables``: the tables (``--child``: one thread count, JSON on stdout)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_table_arguments(p)
    p.add_argument("--table", choices=("ops", "models", "both"), default="both")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--plot", metavar="FILE", help="also draw the ratios as a bar chart (PNG; needs matplotlib)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.table, args.threads[0], args.case, args.rounds, args.budget, args.pause)))
        return 0
    return run_and_print(args, ("models", "ops") if args.table == "both" else (args.table,), args.first_op_runs,
                         "python -m ferro.bench._tables")


def add_table_arguments(p: argparse.ArgumentParser) -> None:
    """The options the tables read, for ``ferro bench --models`` and this module's own command line."""
    p.add_argument("--threads", default=[1, 2], type=lambda s: [int(t) for t in s.split(",")],
                   help="thread counts, separated by commas (default 1,2)")
    p.add_argument("--case", action="append", metavar="TEXT", help="only rows whose name holds TEXT (repeatable)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--budget", type=float, default=0.03, help="seconds per round and contender")
    p.add_argument("--pause", type=float, default=0.005)
    p.add_argument("--first-op-runs", type=int, default=7, help="0: no time-to-first-op row")


def run_and_print(args: argparse.Namespace, tables: tuple[str, ...], first_op_runs: int, prog: str) -> int:
    """Run ``tables`` with ``args``' options (threads, case, rounds, budget, pause), print them, and write
    ``args.json`` and ``args.plot`` when given; returns the exit status."""
    report = run_tables(args.threads, args.case, args.rounds, args.budget, args.pause, first_op_runs, tables)
    print(render_tables(report))
    if getattr(args, "json", None):
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if getattr(args, "plot", None):
        plot_ratios(report, args.plot)
        print(f"{prog}: plot written to {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
