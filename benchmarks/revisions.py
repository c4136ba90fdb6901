"""Two ferro checkouts side by side in one run: is a change slower on the cases of ``run.py``?

    git worktree add ../before <base commit>
    python benchmarks/revisions.py ../before .          # every ferro case of run.py, ferro:cpu
    python benchmarks/revisions.py ../before . --case "a + b" --threshold 1.05
    python benchmarks/revisions.py ../before . --backend opencl --case "a + b"   # ferro:opencl
    python benchmarks/revisions.py ../before . --case none --stmt "x[0]" --stmt "x.add_(1)"
    python benchmarks/revisions.py ../before . --ops --case "a * 2.0"   # the rows of ferro bench --models

A worker process per checkout (its sources first on ``sys.path``) builds each case's ferro contender;
the two are timed in alternating rounds, the order swapped every round, and each round's ratio
after / before is taken from the two times of that round, so that the machine's drift cancels
(``ferro.bench.paired_ratio``'s method). A case whose median ratio exceeds ``--threshold`` is a
regression: the exit status is 1.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

_WORKER = r'''
import functools, json, os, runpy, sys
import numpy as np
from ferro.bench._cases import CASES
from ferro.bench._harness import _loops_for, _per_call, ferro_contender
cases = {c.name: c for c in CASES}
for rows in filter(None, os.environ.get("FERRO_BENCH_OPS", "").split(os.pathsep)):  # the after checkout's rows
    ns = runpy.run_path(rows)                                                        # on both sides
    cases.update((c.name, c) for c in ns.get("OPS", []) + ns.get("MODELS", []))
c = ferro_contender(sys.argv[1])
built = {}
for line in sys.stdin:
    req = json.loads(line)
    name = req["case"]
    if name not in built:
        if name.startswith("stmt: "):  # --stmt: an expression of x, y (64x64 float32 tensors) and ferro
            import ferro
            x, y = (ferro.tensor(np.random.default_rng(i).standard_normal((64, 64), dtype=np.float32)) for i in (0, 1))
            fn = eval("lambda: " + name[6:], {"ferro": ferro, "x": x, "y": y})
        else:
            case = cases[name]
            host = [np.random.default_rng(0).standard_normal(s, dtype=np.float32) for s in case.shapes]
            fn = functools.partial(case.op, c.xp, *(c.to_native(a, case.requires_grad) for a in host))
        for _ in range(3):
            fn()
        built[name] = (fn, req.get("loops") or _loops_for(fn, c.sync, req["budget"]))
    fn, loops = built[name]
    print(json.dumps({"t": _per_call(fn, c.sync, loops), "loops": loops}), flush=True)
'''


def _row_files(root: Path) -> list[str]:
    """The files holding the op and model rows in checkout ``root`` (``ferro.bench``'s, or the older scripts')."""
    bench = root / "ferro-core" / "src" / "ferro" / "bench"
    if (bench / "_optable.py").exists():
        return [str(bench / "_optable.py"), str(bench / "_models.py")]
    return [str(root / "benchmarks" / "ops.py"), str(root / "benchmarks" / "models.py")]


def _src_path(root: Path) -> str:
    return os.pathsep.join(str(root / d / "src") for d in ("ferro-core", "ferro-cpu", "ferro-opencl", "ferro-cuda"))


class Worker:
    """A Python process timing ferro cases from one checkout."""

    def __init__(self, root: Path, threads: int, backend: str = "cpu", ops: str = "") -> None:
        env = dict(os.environ, FERRO_BENCH_OPS=ops, PYTHONPATH=_src_path(root), OMP_NUM_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), FERRO_BACKEND=backend)
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER, backend], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def time(self, case: str, budget: float, loops: int | None = None) -> float:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"case": case, "budget": budget, "loops": loops}) + "\n")
        self.proc.stdin.flush()
        return float(json.loads(self.proc.stdout.readline())["t"])

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


#: Rows timed as fresh interpreters (run.py's import row, and the first op after it): name -> code.
INTERPRETER = {"python -c 'import ferro'": "import ferro",
               "first op (import ferro; ferro.ones(2) + 1)": "import ferro; ferro.ones(2) + 1"}


def _fresh(root: Path, code: str) -> float:
    """Wall time of a fresh interpreter running ``code`` with ``root``'s ferro."""
    env = dict(os.environ, PYTHONPATH=_src_path(root))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def compare(before: Path, after: Path, cases: list[str], rounds: int, budget: float,
            threads: int, backend: str = "cpu", ops: str = "") -> dict[str, list[float]]:
    """Per case, the ratio after / before of each round."""
    out: dict[str, list[float]] = {}
    for name, code in INTERPRETER.items():
        if name in cases:
            cases = [c for c in cases if c != name]
            ratios = []
            for r in range(rounds):  # the order swapped every round
                if r % 2:
                    tb = _fresh(after, code)
                    ta = _fresh(before, code)
                else:
                    ta = _fresh(before, code)
                    tb = _fresh(after, code)
                ratios.append(tb / ta)
            out[name] = ratios
    a, b = Worker(before, threads, backend, ops), Worker(after, threads, backend, ops)
    try:
        for case in cases:
            a.time(case, budget), b.time(case, budget)  # warm up both
            ratios = []
            for r in range(rounds):
                if r % 2:
                    tb = b.time(case, budget)
                    ta = a.time(case, budget)
                else:
                    ta = a.time(case, budget)
                    tb = b.time(case, budget)
                ratios.append(tb / ta)
            out[case] = ratios
    finally:
        a.close()
        b.close()
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; print one row per case; exit 1 on a regression past the threshold."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("--case", action="append", default=[], help="only cases whose name holds TEXT (repeatable)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--budget", type=float, default=0.2, help="seconds per round and contender")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--threshold", type=float, default=1.05)
    p.add_argument("--backend", default="cpu", help="the ferro backend the cases run on (default cpu)")
    p.add_argument("--stmt", action="append", default=[],
                   help="also time this expression of x, y (64x64 float32 tensors) and ferro, e.g. 'x.add_(1)'")
    p.add_argument("--ops", action="store_true", help="the rows of the op and model tables "
                   "(ferro bench --models) instead of run.py's")
    args = p.parse_args(argv)
    for root in (args.before, args.after):  # bytecode for both, or a tree without it pays compiling in every row
        for src in _src_path(root).split(os.pathsep):  # (PYTHONDONTWRITEBYTECODE=1 would keep it from appearing)
            compileall.compile_dir(src, quiet=1)
    sys.path[:0] = _src_path(args.after).split(os.pathsep)
    from ferro.bench._cases import CASES
    ops = os.pathsep.join(_row_files(args.after.resolve())) if args.ops else ""
    if ops:
        import runpy
        names = []
        for rows in ops.split(os.pathsep):
            ns = runpy.run_path(rows)
            names += [c.name for c in ns.get("OPS", []) + ns.get("MODELS", [])]
    else:
        names = [c.name for c in CASES] + list(INTERPRETER)
    names = [n for n in names if not args.case or any(t in n for t in args.case)] + [f"stmt: {e}" for e in args.stmt]
    got = compare(args.before.resolve(), args.after.resolve(), names, args.rounds, args.budget, args.threads,
                  args.backend, ops)
    worst = 0.0
    print(f"{'case':45s} {'after/before (median)':>22s} {'q1':>7s} {'q3':>7s}   threads={args.threads} "
          f"ferro:{args.backend}")
    for case, ratios in got.items():
        q = statistics.quantiles(ratios, n=4)
        med = statistics.median(ratios)
        worst = max(worst, med)
        flag = "  SLOWER" if med > args.threshold else ""
        print(f"{case:45s} {med:22.3f} {q[0]:7.3f} {q[2]:7.3f}{flag}")
    return 1 if worst > args.threshold else 0


if __name__ == "__main__":
    raise SystemExit(main())
