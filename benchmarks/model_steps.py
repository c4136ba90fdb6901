"""Rows of the model table, ferro cpu vs PyTorch CPU, one thread, one process: ``python benchmarks/model_steps.py``.

The same steps (``ferro.bench._models``), contenders, interleaving (``measure``) and paired ratios
(``paired_ratio``) as ``ferro bench --models``, for a quick look at a few rows (``--case``) while working on
them. ``--clock thread`` times by this thread's CPU time instead of the wall clock: on a machine shared with
other jobs the wall clock counts the time a step waits for a core, which swamps differences of a few per cent;
the CPU clock does not (it counts only the calling thread, hence one thread only; cache and memory contention
from neighbours still count). ``--baseline PATH`` also runs the rows with another checkout's ferro (its
``ferro-core/src`` and ``ferro-cpu/src`` first on the path) in a subprocess and prints both, so that a
before / after pair comes from one invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before NumPy loads its BLAS
    os.environ[_var] = "1"


def rows(cases: list[str] | None, rounds: int, budget: float, clock: str) -> dict[str, float]:
    """Row -> ferro / torch, the paired median over ``rounds`` rounds."""
    import time
    import types

    import torch

    from ferro.bench import _harness
    from ferro.bench._cases import selected
    from ferro.bench._models import MODELS
    torch.set_num_threads(1)
    if clock == "thread":
        _harness.clock = time.thread_time
        if _harness._per_call.__code__.co_names.count("perf_counter"):  # an older harness (a --baseline checkout)
            _harness.time = types.SimpleNamespace(perf_counter=time.thread_time, sleep=time.sleep)
    contenders = [_harness.torch_contender(), _harness.ferro_contender("cpu")]
    out = {}
    for case in selected(MODELS, cases):
        res = _harness.measure(case, contenders, rounds, budget, 0.005)
        out[case.name] = _harness.paired_ratio(case.target, res["ferro:cpu"], res["torch"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", action="append", help="only rows whose name holds TEXT (repeatable)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--budget", type=float, default=0.05, help="seconds per contender per round")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall")
    parser.add_argument("--baseline", metavar="PATH", help="a checkout to compare with (run first)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    mine = rows(args.case, args.rounds, args.budget, args.clock) if not args.baseline else None
    if args.child:
        print(json.dumps(mine))
        return 0
    if args.baseline:
        cmd = [sys.executable, __file__, "--child", "--rounds", str(args.rounds), "--budget", str(args.budget),
               "--clock", args.clock, *(a for c in args.case or [] for a in ("--case", c))]
        base_path = os.pathsep.join(os.path.join(args.baseline, p, "src") for p in ("ferro-core", "ferro-cpu"))
        env = {**os.environ, "PYTHONPATH": base_path + os.pathsep + os.environ.get("PYTHONPATH", "")}
        before = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
        mine = rows(args.case, args.rounds, args.budget, args.clock)
    print(f"ferro / torch, 1 thread, {args.rounds} rounds, {args.clock} clock; paired medians")
    print("| training step | " + ("baseline | " if args.baseline else "") + "ferro / torch |")
    print("|---|" + ("---:|" if args.baseline else "") + "---:|")
    for name, ratio in mine.items():
        print(f"| {name} | " + (f"{before[name]:.2f}x | " if args.baseline else "") + f"{ratio:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
