"""The op-overhead table: ~30 small ops of a training loop, ferro cpu vs PyTorch CPU vs NumPy, in one run.

    python benchmarks/ops.py                       # 1 and 2 threads, every case
    python benchmarks/ops.py --threads 1 --case sum --rounds 7
    python benchmarks/ops.py --table models        # the model table (benchmarks/models.py)

Each case runs with and without ``requires_grad`` where that means something (the ``[grad]`` rows: the
inputs require grad, so ferro and PyTorch record the graph; NumPy has no column there). Every thread
count runs in a fresh interpreter whose BLAS/OpenMP pools are sized by the environment (and
``torch.set_num_threads``). Within it, ``ferro.bench.measure`` interleaves the contenders round by round
in shuffled order and ``paired_ratio`` takes the median of the per-round ratios, so the machine's drift
cancels: read the ratios, not the times. ``benchmarks/revisions.py --ops`` times these same cases on two
checkouts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

from ferro.bench._cases import Case, Target

TORCH = Target("torch", 1.0)


def _f(xp: Any) -> Any:
    return xp.nn.functional


def _np_softmax(xp: Any, a: Any) -> Any:
    e = xp.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_layer_norm(xp: Any, a: Any) -> Any:
    m = a.mean(axis=-1, keepdims=True)
    return (a - m) / xp.sqrt(a.var(axis=-1, keepdims=True) + 1e-5)


def _np_setitem(xp: Any, a: Any) -> Any:
    a[1:3] = 0.0
    return a


def _chain(xp: Any, a: Any, b: Any) -> Any:
    """Ten ops and a backward pass (the gradients are left to accumulate, as in a loop without zero_grad)."""
    y = a * b
    y = y + a
    y = y * 2.0
    y = xp.tanh(y)
    y = y - b
    y = y.exp()
    y = y / 3.0
    y = y.relu()
    y = y.sum(dim=1)
    loss = y.mean()
    if a.requires_grad:
        loss.backward()
    return loss


def _np_chain(xp: Any, a: Any, b: Any) -> Any:
    y = xp.maximum(xp.exp(xp.tanh((a * b + a) * 2.0) - b) / 3.0, 0.0)
    return y.sum(axis=1).mean()


def _backward(op: Any) -> Any:
    """``op`` and, on inputs that require grad, ``.sum().backward()`` through it (forward + backward rows)."""
    def run(xp: Any, *inputs: Any) -> Any:
        out = op(xp, *inputs)
        if any(getattr(a, "requires_grad", False) for a in inputs):
            out.sum().backward()
        return out
    return run


S = (64, 64)
# (name, shapes, op, numpy's op or None when NumPy has no such op, whether a [grad] row is run: True, False, or
# "only" for the forward + backward rows)
_ROWS: list[tuple[str, tuple[tuple[int, ...], ...], Any, Any, bool | str]] = [
    ("zeros(64, 64)", (), lambda xp: xp.zeros((64, 64)), "same", False),
    ("ones(64, 64)", (), lambda xp: xp.ones((64, 64)), "same", False),
    ("empty(64, 64)", (), lambda xp: xp.empty((64, 64)), "same", False),
    ("full((64, 64), 2.0)", (), lambda xp: xp.full((64, 64), 2.0), "same", False),
    ("arange(1000)", (), lambda xp: xp.arange(1000), "same", False),
    ("tensor([1., 2., 3.])", (), lambda xp: xp.tensor([1.0, 2.0, 3.0]), lambda xp: xp.array([1.0, 2.0, 3.0]), False),
    ("a.sum() (64x64)", (S,), lambda xp, a: a.sum(), "same", True),
    ("a.sum(dim=1) (64x64)", (S,), lambda xp, a: a.sum(dim=1), lambda xp, a: a.sum(axis=1), True),
    ("a.mean(dim=-1) (64x64)", (S,), lambda xp, a: a.mean(dim=-1), lambda xp, a: a.mean(axis=-1), True),
    ("a.max() (64x64)", (S,), lambda xp, a: a.max(), "same", False),
    ("a[1:3]", (S,), lambda xp, a: a[1:3], "same", True),
    ("a[:, 1:3]", (S,), lambda xp, a: a[:, 1:3], "same", True),
    ("a[1:3] = 0.0", (S,), _np_setitem, "same", False),
    ("cat([a, b]) (8x8)", ((8, 8),) * 2, lambda xp, a, b: xp.cat([a, b]), lambda xp, a, b: xp.concatenate([a, b]),
     True),
    ("stack([a, b]) (8x8)", ((8, 8),) * 2, lambda xp, a, b: xp.stack([a, b]), "same", True),
    ("a.reshape(16, 256)", (S,), lambda xp, a: a.reshape(16, 256), "same", True),
    ("a.view(16, 256)", (S,), lambda xp, a: a.view(16, 256), None, True),
    ("a.permute(1, 0)", (S,), lambda xp, a: a.permute(1, 0), lambda xp, a: a.transpose(1, 0), True),
    ("a.T", (S,), lambda xp, a: a.T, "same", True),
    ("a.mT", (S,), lambda xp, a: a.mT, "same", True),
    ("a + b (64x64)", (S, S), lambda xp, a, b: a + b, "same", True),
    ("a * 2.0", (S,), lambda xp, a: a * 2.0, "same", True),
    ("a + 1", (S,), lambda xp, a: a + 1, "same", True),
    ("2.0 - a", (S,), lambda xp, a: 2.0 - a, "same", True),
    ("a / 3.0", (S,), lambda xp, a: a / 3.0, "same", True),
    ("a ** 2", (S,), lambda xp, a: a ** 2, "same", True),
    ("relu(a) (64x64)", (S,), lambda xp, a: _f(xp).relu(a), lambda xp, a: xp.maximum(a, 0.0), True),
    ("sigmoid(a) (64x64)", (S,), lambda xp, a: xp.sigmoid(a), None, True),
    ("softmax(a, -1) (64x64)", (S,), lambda xp, a: _f(xp).softmax(a, dim=-1), _np_softmax, True),
    ("softmax(a, -1) (4096x1024)", ((4096, 1024),), lambda xp, a: _f(xp).softmax(a, dim=-1), _np_softmax, True),
    ("layer_norm(a) (64x256)", ((64, 256),), lambda xp, a: _f(xp).layer_norm(a, (256,)), _np_layer_norm, True),
    ("a @ b (64x64)", (S, S), lambda xp, a, b: a @ b, "same", True),
    ("linear(x, w, b) (32x64, 64->64)", ((32, 64), (64, 64), (64,)),
     lambda xp, x, w, b: _f(xp).linear(x, w, b), lambda xp, x, w, b: x @ w.T + b, True),
    ("conv2d (8,3,16,16) 3x3->8", ((8, 3, 16, 16), (8, 3, 3, 3)), lambda xp, x, w: _f(xp).conv2d(x, w), None, True),
    ("conv2d (32,16,32,32) 3x3->16 fwd+bwd", ((32, 16, 32, 32), (16, 16, 3, 3)),
     _backward(lambda xp, x, w: _f(xp).conv2d(x, w, padding=1)), None, "only"),
    ("softmax (4096x1024) fwd+bwd", ((4096, 1024),), _backward(lambda xp, a: _f(xp).softmax(a, dim=-1)), None,
     "only"),
    ("layer_norm (4096x1024) fwd+bwd", ((4096, 1024),), _backward(lambda xp, a: _f(xp).layer_norm(a, (1024,))),
     None, "only"),
    ("a.sum().item()", (S,), lambda xp, a: a.sum().item(), "same", False),
    ("10-op chain + backward (64x64)", (S, S), _chain, _np_chain, True),
]


def _cases() -> list[Case]:
    out = []
    for name, shapes, op, np_op, grad in _ROWS:
        overrides = {} if np_op == "same" else {"numpy": np_op}
        if grad != "only":
            out.append(Case(name, shapes, op, TORCH, overrides=overrides))
        if grad:
            out.append(Case(name + " [grad]", shapes, op, TORCH, requires_grad=True))
    return out


#: Every row of the table (``revisions.py --ops`` reads this list).
OPS: list[Case] = _cases()


def _table(name: str) -> list[Case]:
    if name == "models":
        from models import MODELS  # benchmarks/models.py, beside this script
        return MODELS
    return OPS


def _run_one(args: argparse.Namespace) -> dict[str, Any]:
    """This interpreter's share: every selected case at the thread count the environment set."""
    import torch

    from ferro.bench._cases import selected
    from ferro.bench._harness import ferro_contender, measure, numpy_contender, paired_ratio, torch_contender
    torch.set_num_threads(args.threads[0])
    contenders = [numpy_contender(), torch_contender(), ferro_contender("cpu")]
    rows: dict[str, Any] = {}
    for case in selected(_table(args.table), args.case):
        res = measure(case, contenders, args.rounds, args.budget, args.pause)
        f = res.get("ferro:cpu")
        row: dict[str, Any] = {"us": {k: (r.stat("median") * 1e6 if r.seconds else r.error) for k, r in res.items()}}
        for ref in ("torch", "numpy"):
            if f and f.seconds and ref in res and res[ref].seconds:
                row[f"vs_{ref}"] = paired_ratio(case.target, f, res[ref])
        rows[case.name] = row
    return rows


def _first_op(runs: int) -> float:
    """Median over ``runs`` interleaved pairs of the time-to-first-op ratio ferro / NumPy (fresh interpreters)."""
    import statistics
    import time

    from ferro.bench._harness import _compile_ferro

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


def render(tables: dict[int, dict[str, Any]], first_op: float | None) -> str:
    """The markdown table: ferro's median time and the paired ratios at each thread count."""
    threads = sorted(tables)
    cols = (f"ferro µs ({t}t) | ferro/torch ({t}t) | ferro/numpy ({t}t)" for t in threads)
    head = "| case | " + " | ".join(cols) + " |"
    lines = [head, "|---|" + "---:|" * (3 * len(threads))]
    for name in tables[threads[0]]:
        cells = []
        for t in threads:
            row = tables[t].get(name, {})
            us = row.get("us", {}).get("ferro:cpu", "")
            cells += [f"{us:.1f}" if isinstance(us, float) else str(us)[:30],
                      f"{row['vs_torch']:.2f}x" if "vs_torch" in row else "",
                      f"{row['vs_numpy']:.2f}x" if "vs_numpy" in row else ""]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if first_op is not None:
        lines.append(f"\ntime to first op, ferro / NumPy (fresh interpreters, paired median): {first_op:.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the table at each thread count (a fresh interpreter each) and print it."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default="1,2", type=lambda s: [int(t) for t in s.split(",")])
    p.add_argument("--case", action="append", help="only cases whose name holds TEXT (repeatable)")
    p.add_argument("--table", choices=("ops", "models"), default="ops")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--budget", type=float, default=0.03, help="seconds per round and contender")
    p.add_argument("--pause", type=float, default=0.005)
    p.add_argument("--first-op-runs", type=int, default=7, help="0: no time-to-first-op row")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(_run_one(args)))
        return 0
    tables = {}
    for t in args.threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t),
                   FERRO_BACKEND="cpu")
        cmd = [sys.executable, __file__, "--child", "--threads", str(t), "--rounds", str(args.rounds),
               "--budget", str(args.budget), "--pause", str(args.pause), "--table", args.table]
        for c in args.case or []:
            cmd += ["--case", c]
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
        tables[t] = json.loads(out.strip().splitlines()[-1])
    first = _first_op(args.first_op_runs) if args.first_op_runs and args.table == "ops" else None
    print(render(tables, first))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": tables, "first_op_vs_numpy": first}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
