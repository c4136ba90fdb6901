"""The CUDA column: ferro-cuda beside raw CuPy and PyTorch CUDA, in one run: ``python benchmarks/cuda_column.py``.

(Not ``cuda.py``: a script of that name would shadow the ``cuda`` package that CuPy imports.)

Rows (issue 6's targets): a 4096^3 matmul in float32 and bfloat16 (TFLOP/s,
ferro / CuPy >= 0.95), 100M-element add and exp (GB/s moved, ferro / CuPy >=
0.9), and a tiny op (64x64 add, µs per op, ferro / PyTorch <= 1.5). Each
timing synchronizes the device before and after a loop of calls and keeps the
best of several rounds; contenders alternate round by round.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _timer(fn: Callable[[], Any], sync: Callable[[], None], loops: int, rounds: int) -> float:
    fn()
    sync()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / loops)
    return best


def _contenders() -> dict[str, dict[str, Any]]:
    import cupy as cp
    import torch

    import ferro
    from ferro_cuda._bfloat16 import cupy_bfloat16
    out: dict[str, dict[str, Any]] = {}
    # CuPy's bfloat16 is ml_dtypes' (CuPy 14+); None where it has none, which makes the cell n/a
    out["cupy"] = {"up": lambda a, dt: cp.asarray(a).astype(dt), "sync": cp.cuda.Device().synchronize,
                   "dtypes": {"float32": cp.float32, "bfloat16": cupy_bfloat16(cp)},
                   "add": lambda x, y: x + y, "exp": cp.exp, "mm": cp.matmul}
    out["torch"] = {"up": lambda a, dt: torch.from_numpy(a).to("cuda", dt), "sync": torch.cuda.synchronize,
                    "dtypes": {"float32": torch.float32, "bfloat16": torch.bfloat16},
                    "add": lambda x, y: x + y, "exp": torch.exp, "mm": torch.matmul}
    b = ferro.backends.get("cuda")
    out["ferro:cuda"] = {"up": lambda a, dt: ferro.tensor(a, device="cuda").to(dt),
                         "sync": lambda: b.synchronize(0),
                         "dtypes": {"float32": ferro.float32, "bfloat16": ferro.bfloat16},
                         "add": lambda x, y: x + y, "exp": ferro.exp, "mm": ferro.matmul}
    return out


def run(rounds: int) -> list[dict[str, Any]]:
    cons = _contenders()
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []

    def row(name: str, ref: str, target: float, higher: bool, unit: str, work: float,
            make: Callable[[dict[str, Any], Any], Callable[[], Any]], dtype: str, loops: int) -> None:
        r: dict[str, Any] = {"case": name, "unit": unit, "reference": ref, "target": target, "higher": higher}
        for cname, c in cons.items():
            dt = c["dtypes"].get(dtype)
            try:
                if dt is None:
                    raise TypeError(f"{cname} has no {dtype}")
                fn = make(c, dt)
                t = _timer(fn, c["sync"], loops, rounds)
                r[cname] = work / t if higher else t * 1e6
            except Exception as e:  # a contender without the dtype or op: reported, not fatal
                r[cname] = f"n/a ({type(e).__name__}: {str(e).splitlines()[0][:80]})"
        ours, theirs = r.get("ferro:cuda"), r.get(ref)
        if isinstance(ours, float) and isinstance(theirs, float):
            r["ratio"] = ours / theirs
            r["verdict"] = "PASS" if (r["ratio"] >= target if higher else r["ratio"] <= target) else "FAIL"
        rows.append(r)

    n = 4096
    a, bm = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    for dt in ("float32", "bfloat16"):
        def mm(c: dict[str, Any], d: Any) -> Callable[[], Any]:
            x, y = c["up"](a, d), c["up"](bm, d)
            return lambda: c["mm"](x, y)
        row(f"matmul 4096^3 {dt}", "cupy", 0.95, True, "TFLOP/s", 2 * n ** 3 / 1e12, mm, dt, 10)
    big = rng.standard_normal(100_000_000, dtype=np.float32)
    big2 = rng.standard_normal(100_000_000, dtype=np.float32)

    def add(c: dict[str, Any], d: Any) -> Callable[[], Any]:
        x, y = c["up"](big, d), c["up"](big2, d)
        return lambda: c["add"](x, y)

    def exp(c: dict[str, Any], d: Any) -> Callable[[], Any]:
        x = c["up"](big, d)
        return lambda: c["exp"](x)
    row("add 100M float32", "cupy", 0.9, True, "GB/s", 3 * 4e8 / 1e9, add, "float32", 20)
    row("exp 100M float32", "cupy", 0.9, True, "GB/s", 2 * 4e8 / 1e9, exp, "float32", 20)
    small, small2 = rng.standard_normal((64, 64), dtype=np.float32), rng.standard_normal((64, 64), dtype=np.float32)

    def tiny(c: dict[str, Any], d: Any) -> Callable[[], Any]:
        x, y = c["up"](small, d), c["up"](small2, d)
        return lambda: c["add"](x, y)
    row("a + b 64x64 float32 (per op)", "torch", 1.5, False, "µs", 1.0, tiny, "float32", 2000)
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    names = ["ferro:cuda", "cupy", "torch"]
    lines = ["| case | " + " | ".join(names) + " | ratio | target |", "|---" * (len(names) + 3) + "|"]
    for r in rows:
        cells = [f"{r[c]:.3g} {r['unit']}" if isinstance(r[c], float) else str(r[c]) for c in names]
        ratio = f"{r['ratio']:.2f} {r['verdict']}" if "ratio" in r else "-"
        op = ">=" if r["higher"] else "<="
        lines.append(f"| {r['case']} | " + " | ".join(cells) + f" | {ratio} | ferro/{r['reference']} {op} "
                     f"{r['target']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", help="also write the rows to this file")
    args = p.parse_args(argv)
    import ferro
    avail = ferro.backends.get("cuda").availability() if "cuda" in ferro.backends.installed() else None
    if not avail:
        print(f"CUDA is unavailable here: {avail.reason if avail is not None else 'ferro-cuda is not installed'}; "
              "nothing to measure")
        return 1
    import cupy as cp
    import torch
    rows = run(args.rounds)
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, CuPy {cp.__version__}, "
          f"torch {torch.__version__}")
    print(render(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
