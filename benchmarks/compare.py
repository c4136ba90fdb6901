"""Two checkouts of ferro on the hot paths, paired round by round: ``python benchmarks/compare.py BEFORE AFTER``.

BEFORE and AFTER are repository roots (a worktree of the base commit and yours).
Each runs in its own worker interpreter with its own sources first on
``PYTHONPATH``; the driver asks them in turn, round after round, to time one
case for a fixed number of calls, so that both meet the machine in the same
state. Within a round each checkout times the case ``--repeat`` times,
alternating, and keeps its fastest (other tenants' bursts only ever slow a
timing down). Reported per case: the median over rounds of AFTER's time /
BEFORE's time in the same round (``ferro.bench.paired_ratio``'s rule), and
the spread of those ratios. A ratio above 1.05 is marked SLOWER.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap

#: name -> (setup, statement): run in the worker with ``ferro as F`` and ``numpy as np`` imported.
CASES: dict[str, tuple[str, str]] = {
    "a + b (64x64)": ("a = F.randn(64, 64); b = F.randn(64, 64)", "a + b"),
    "a + b (64x64, requires_grad)": ("a = F.randn(64, 64, requires_grad=True); b = F.randn(64, 64)", "a + b"),
    "exp(a) (64x64)": ("a = F.randn(64, 64)", "a.exp()"),
    "a.sum(1) (64x64)": ("a = F.randn(64, 64)", "a.sum(1)"),
    "a @ b (64x64)": ("a = F.randn(64, 64); b = F.randn(64, 64)", "a @ b"),
    "softmax (64x64)": ("a = F.randn(64, 64)", "a.softmax(-1)"),
    "gelu (64x64)": ("a = F.randn(64, 64); f = F.nn.functional.gelu", "f(a)"),
    "cross_entropy fwd+bwd (64x10)": (
        "x = F.randn(64, 10, requires_grad=True); t = F.tensor(np.arange(64) % 10); f = F.nn.functional.cross_entropy",
        "f(x, t).backward()"),
    "conv2d fwd (8x1x8x8, 4x1x3x3)": ("x = F.randn(8, 1, 8, 8); w = F.randn(4, 1, 3, 3); f = F.nn.functional.conv2d",
                                      "f(x, w, padding=1)"),
    "max_pool2d fwd (8x4x8x8)": ("x = F.randn(8, 4, 8, 8); f = F.nn.functional.max_pool2d", "f(x, 2)"),
    "Adam.step (4 params of 64x64)": (
        "ps = [F.randn(64, 64, requires_grad=True) for _ in range(4)]\n"
        "for p in ps: p.grad = F.randn(64, 64)\n"
        "opt = F.optim.Adam(ps)", "opt.step()"),
    "SGD.step momentum (4 params of 64x64)": (
        "ps = [F.randn(64, 64, requires_grad=True) for _ in range(4)]\n"
        "for p in ps: p.grad = F.randn(64, 64)\n"
        "opt = F.optim.SGD(ps, lr=0.01, momentum=0.9)", "opt.step()"),
    # one training step of benchmarks/training.py's models on a digits-sized batch
    "MLP train step (batch 64)": (
        "import ferro.nn as nn\n"
        "m = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))\n"
        "opt = F.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)\n"
        "x = F.randn(64, 64); t = F.tensor(np.arange(64) % 10); ce = F.nn.functional.cross_entropy",
        "opt.zero_grad(); ce(m(x), t).backward(); opt.step()"),
    "CNN train step (batch 64)": (
        "from ferro.demo import make_cnn\n"
        "m = make_cnn(); opt = F.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)\n"
        "x = F.randn(64, 1, 8, 8); t = F.tensor(np.arange(64) % 10); ce = F.nn.functional.cross_entropy",
        "opt.zero_grad(); ce(m(x), t).backward(); opt.step()"),
}

_WORKER = textwrap.dedent("""
    import json, sys, time, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import ferro as F
    cases = json.loads(sys.argv[1])
    env = {}
    for name, (setup, stmt) in cases.items():
        scope = {"F": F, "np": np}
        exec(setup, scope)
        code = compile(stmt, name, "exec")
        exec(code, scope)  # warm: binds devices, fills caches
        env[name] = (code, scope)
    print("ready", flush=True)
    for line in sys.stdin:
        name, loops = json.loads(line)
        code, scope = env[name]
        start = time.perf_counter()
        for _ in range(loops):
            exec(code, scope)
        print(json.dumps((time.perf_counter() - start) / loops), flush=True)
""")


def _pythonpath(root: str) -> str:
    parts = ("ferro-core/src", "ferro-cpu/src", "ferro-opencl/src", "ferro-cuda/src", "tests/plugins/src",
             "examples/ferro-backend-template/src")
    return os.pathsep.join(os.path.join(root, p) for p in parts)


class Worker:
    """One checkout's interpreter, timing cases on request."""

    def __init__(self, root: str, cases: dict[str, tuple[str, str]]) -> None:
        env = {**os.environ, "PYTHONPATH": _pythonpath(root)}
        env.pop("FERRO_BACKEND", None)
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER, json.dumps(cases)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=root)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready", root

    def time(self, name: str, loops: int) -> float:
        """Seconds per call of case ``name`` over ``loops`` calls."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps((name, loops)) + "\n")
        self.proc.stdin.flush()
        return float(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        """End the worker."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    """Compare BEFORE and AFTER; print one row per case; exit 1 if a case is slower by more than 5%."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--budget", type=float, default=0.02, help="seconds per timing")
    p.add_argument("--repeat", type=int, default=5, help="timings per checkout per round; the fastest counts")
    p.add_argument("--case", action="append", help="only cases whose name holds TEXT (repeatable)")
    args = p.parse_args(argv)
    cases = {k: v for k, v in CASES.items() if not args.case or any(t in k for t in args.case)}
    before, after = Worker(args.before, cases), Worker(args.after, cases)
    try:
        loops = {name: max(1, int(args.budget / max(before.time(name, 3), 1e-7))) for name in cases}
        ratios: dict[str, list[float]] = {name: [] for name in cases}
        for r in range(args.rounds):
            for name in cases:
                pair = (before, after) if r % 2 else (after, before)  # who goes first alternates
                best = {id(w): float("inf") for w in pair}
                for _ in range(args.repeat):
                    for w in pair:
                        best[id(w)] = min(best[id(w)], w.time(name, loops[name]))
                ratios[name].append(best[id(after)] / best[id(before)])
    finally:
        before.close()
        after.close()
    worst = 0.0
    print(f"{'case':<42} {'after/before':>12} {'spread (q1..q3)':>18}")
    for name, rs in ratios.items():
        med = statistics.median(rs)
        q = statistics.quantiles(rs, n=4) if len(rs) > 1 else [med, med, med]
        worst = max(worst, med)
        print(f"{name:<42} {med:>12.3f} {q[0]:>8.3f}..{q[2]:<8.3f} {'SLOWER' if med > 1.05 else ''}")
    return 1 if worst > 1.05 else 0


if __name__ == "__main__":
    raise SystemExit(main())
