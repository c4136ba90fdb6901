"""ferro side by side with NumPy and PyTorch CPU, in one run: ``python benchmarks/run.py``.

Each case times every contender in the same process, interleaved round by
round, and reports the best round (the least disturbed by other load); ratios
compare ferro with the reference the issue names.
Options: ``--quick`` (fewer repeats), ``--json FILE``, ``--markdown``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Case:
    """One benchmark: contenders (name -> zero-argument callable) and how to report them."""

    name: str
    setup: Callable[[], dict[str, Callable[[], Any]]]
    unit: str = "us"  # us per call, or ms per call
    work: float = 0.0  # bytes or flops per call, for throughput
    work_unit: str = ""
    reference: str = "numpy"
    target: tuple[str, float] | None = None  # ("<=" | ">=", ratio ferro / reference)
    results: dict[str, float] = field(default_factory=dict)


def _median_time(fn: Callable[[], Any], number: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def _calibrate(fn: Callable[[], Any], budget: float) -> int:
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t0 > budget / 10 or n > 1_000_000:
            return max(1, n)
        n *= 4


def run_case(case: Case, repeat: int, budget: float) -> None:
    """Time every contender of ``case``, interleaved round by round."""
    fns = case.setup()
    for fn in fns.values():
        fn()  # warm up (and bind devices)
    numbers = {k: _calibrate(f, budget) for k, f in fns.items()}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    order = list(fns)
    for r in range(repeat):
        # Rotate who goes first: PyTorch's OpenMP threads spin on after an op and slow down
        # whoever runs right after them.
        for k in order[r % len(order):] + order[:r % len(order)]:
            samples[k].append(_median_time(fns[k], numbers[k], 1))
    case.results = {k: min(v) for k, v in samples.items()}  # the least disturbed round


# -- the cases --------------------------------------------------------------------------


def _tiny(requires_grad: bool) -> Callable[[], dict[str, Callable[[], Any]]]:
    def setup() -> dict[str, Callable[[], Any]]:
        import torch

        import ferro
        a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
        b = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
        fa, fb = ferro.tensor(a, requires_grad=requires_grad), ferro.tensor(b, requires_grad=requires_grad)
        ta = torch.tensor(a, requires_grad=requires_grad)
        tb = torch.tensor(b, requires_grad=requires_grad)
        out = {"ferro": lambda: fa + fb, "torch": lambda: ta + tb}
        if not requires_grad:
            out["numpy"] = lambda: a + b
        return out
    return setup


def _big(op: str) -> Callable[[], dict[str, Callable[[], Any]]]:
    def setup() -> dict[str, Callable[[], Any]]:
        import torch

        import ferro
        a = np.random.default_rng(0).standard_normal(10_000_000).astype(np.float32)
        b = np.random.default_rng(1).standard_normal(10_000_000).astype(np.float32)
        fa, fb, ta, tb = ferro.tensor(a), ferro.tensor(b), torch.from_numpy(a), torch.from_numpy(b)
        if op == "add":
            return {"ferro": lambda: fa + fb, "numpy": lambda: a + b, "torch": lambda: ta + tb}
        return {"ferro": lambda: fa.exp(), "numpy": lambda: np.exp(a), "torch": lambda: ta.exp()}
    return setup


def _matmul() -> dict[str, Callable[[], Any]]:
    import torch

    import ferro
    a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)
    fa, fb, ta, tb = ferro.tensor(a), ferro.tensor(b), torch.from_numpy(a), torch.from_numpy(b)
    return {"ferro": lambda: fa @ fb, "numpy": lambda: a @ b, "torch": lambda: ta @ tb}


def _import_times(runs: int) -> dict[str, float]:
    out = {}
    for name, code in (("python", "pass"), ("numpy", "import numpy"), ("ferro", "import ferro"),
                       ("torch", "import torch")):
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            ts.append(time.perf_counter() - t0)
        out[name] = statistics.median(ts)
    return out


def _import_check() -> list[str]:
    code = ("import sys, ferro; print(','.join(m for m in ('numpy', 'cupy', 'pyopencl', 'torch', 'ml_dtypes') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    return [m for m in out.split(",") if m]


CASES = [
    Case("a + b (64x64 f32)", _tiny(False), reference="torch", target=("<=", 1.2)),
    Case("a + b (64x64 f32, requires_grad)", _tiny(True), reference="torch", target=("<=", 1.5)),
    Case("a + b (10M f32)", _big("add"), unit="ms", work=3 * 4e7, work_unit="GB/s", target=(">=", 0.95)),
    Case("exp(a) (10M f32)", _big("exp"), unit="ms", work=2 * 4e7, work_unit="GB/s", target=(">=", 0.95)),
    Case("matmul 1024^3 f32", _matmul, unit="ms", work=2 * 1024**3, work_unit="GFLOP/s", target=(">=", 0.95)),
]


def _fmt_time(seconds: float, unit: str) -> str:
    return f"{seconds * 1e6:.2f} us" if unit == "us" else f"{seconds * 1e3:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    """Run every case and print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = p.parse_args(argv)
    repeat, budget, import_runs = (3, 0.05, 3) if args.quick else (15, 0.3, 15)

    import torch
    rows = []
    for case in CASES:
        run_case(case, repeat, budget)
        ferro_t, ref_t = case.results["ferro"], case.results[case.reference]
        if case.target is not None and case.target[0] == ">=":
            ratio = ref_t / ferro_t  # throughput ratio
            label = f"throughput ferro/{case.reference} {ratio:.2f}x (target >= {case.target[1]})"
            ok = ratio >= case.target[1]
        else:
            ratio = ferro_t / ref_t
            label = f"time ferro/{case.reference} {ratio:.2f}x (target <= {case.target[1] if case.target else '-'})"
            ok = case.target is None or ratio <= case.target[1]
        cells = {k: _fmt_time(v, case.unit) + (f" ({case.work / v / 1e9:.1f} {case.work_unit})" if case.work
                                                else "") for k, v in case.results.items()}
        rows.append((case.name, cells.get("ferro", "-"), cells.get("numpy", "-"), cells.get("torch", "-"), label,
                     "PASS" if ok else "FAIL"))
    imports = _import_times(import_runs)
    ratio = imports["ferro"] / imports["numpy"]
    rows.append(("python -c 'import X'", f"{imports['ferro'] * 1e3:.0f} ms", f"{imports['numpy'] * 1e3:.0f} ms",
                 f"{imports['torch'] * 1e3:.0f} ms", f"ferro/numpy {ratio:.2f}x (target <= 1.25; bare python "
                 f"{imports['python'] * 1e3:.0f} ms)", "PASS" if ratio <= 1.25 else "FAIL"))
    leaked = _import_check()
    rows.append(("libraries imported by `import ferro`", ", ".join(leaked) or "none", "", "", "expected: none",
                 "PASS" if not leaked else "FAIL"))

    header = ("case", "ferro", "numpy", "torch", "ratio", "")
    print(f"# ferro benchmarks (numpy {np.__version__}, torch {torch.__version__}, "
          f"torch threads {torch.get_num_threads()})")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        for r in [header, *rows]:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": {c.name: c.results for c in CASES}, "imports": imports, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
