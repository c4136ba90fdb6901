"""The recurrent model steps against their floors, one run: ``python benchmarks/recurrent.py``.

The LSTM, GRU and LSTM language model rows of the model table (``ferro.bench._models``: the same model code
for ferro and PyTorch, forward + loss + ``zero_grad`` + backward + optimizer step), timed side by side,
interleaved round by round (``ferro.bench._harness.measure``), at one thread (``--threads``):

- ``ferro``: eager, on the cpu backend (its LSTM / GRU layers run the fused sequence kernels,
  ``ferro_cpu/_recurrent.py``);
- ``torch``: PyTorch eager (its CPU LSTM is oneDNN's fused RNN; its GRU is not);
- ``torch no-oneDNN``: the same with ``torch.backends.mkldnn`` off (PyTorch's per-op recurrence);
- ``BLAS floor``: only the matrix products that ferro's step runs (input projection, one hidden product
  per step each way, the weight gradients, the other layers' products) on NumPy, nothing else: no
  elementwise op, no Python beyond the loop. ferro's step cannot be faster than this on NumPy's BLAS.

Reported: each contender's median time per step and the paired ratios (``paired_ratio``: the median over
rounds of the ratio within a round) against ``torch``.

``--kernels PATH`` adds a contender ``ferro (PATH)``: the same ferro, whose cpu device runs the sequence kernels
of another checkout's ``ferro-cpu/src/ferro_cpu/_recurrent.py`` for its steps, in the same process and rounds,
so that a before / after pair of the kernels is not two runs on a shared machine apart. ``--clock thread``
times by this thread's CPU time (as ``benchmarks/model_steps.py``); ``--case TEXT`` keeps the rows holding TEXT.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from typing import Any

_THREADS = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv[:-1] else "1"
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before NumPy loads its BLAS
    os.environ.setdefault(_var, _THREADS)

import numpy as np  # noqa: E402

ROWS = {  # row -> (steps, batch, features, hidden, gates, layers, dx wanted, extra products (m, k, n))
    "LSTM step (hidden 128, seq 50, batch 32)": (50, 32, 32, 128, 4, 1, False, [(32, 128, 10)] * 3),
    "GRU step (hidden 128, seq 50, batch 32)": (50, 32, 32, 128, 3, 1, False, [(32, 128, 10)] * 3),
    "LSTM language model step (2 layers, 128, bptt 35, batch 20)": (35, 20, 128, 128, 4, 2, True,
                                                                    [(700, 128, 1000)] * 3),
}


def _blas_floor(row: str) -> Callable[[Any], Any]:
    """The products of ferro's step for ``row``, on NumPy float32."""
    steps, batch, feat, hidden, gates, layers, dx, extra = ROWS[row]
    rng = np.random.default_rng(0)

    def f(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)
    g = gates * hidden
    xs = [f(steps * batch, feat if k == 0 else hidden) for k in range(layers)]
    w_ih = [f(g, x.shape[1]) for x in xs]
    w_hh, h, d, dpre, hp = f(g, hidden), f(batch, hidden), f(batch, g), f(steps * batch, g), f(steps * batch, hidden)
    others = [(f(m, k), f(k, n)) for m, k, n in extra]

    def op(xp: Any) -> None:
        for x, w in zip(xs, w_ih):
            x @ w.T
            for _ in range(steps):
                h @ w_hh.T
            for _ in range(steps):
                d @ w_hh
            dpre.T @ hp
            dpre.T @ x
            if dx:
                dpre @ w
        for a, b in others:
            a @ b
    return op


def _step(row: str, one_dnn: bool = True) -> Callable[[Any], Any]:
    """One training step of ``row`` in namespace ``xp``, its model built on the first call."""
    from ferro.bench._models import STEPS
    made: list[Callable[[], Any]] = []

    def op(xp: Any) -> Any:
        if not made:
            made.append(STEPS[row].make(xp))
        if one_dnn:
            return made[0]()
        with xp.backends.mkldnn.flags(enabled=False):
            return made[0]()
    return op


def _with_kernels(op: Callable[[Any], Any], path: str) -> Callable[[Any], Any]:
    """``op`` with the cpu device's sequence kernels taken, for its call, from checkout ``path``'s module."""
    import ferro
    spec = importlib.util.spec_from_file_location(
        "_other_recurrent", os.path.join(path, "ferro-cpu", "src", "ferro_cpu", "_recurrent.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    device = ferro.tensor([0.0])._device
    table = device._kernels
    theirs = module.recurrent_kernels(np, device.backend.pool)

    def run(xp: Any) -> Any:
        ours = {name: table[name] for name in theirs}
        table.update(theirs)
        try:
            return op(xp)
        finally:
            table.update(ours)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per contender per round")
    parser.add_argument("--pause", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=1, help="BLAS / PyTorch threads (set before NumPy loads)")
    parser.add_argument("--kernels", metavar="PATH", help="also run another checkout's sequence kernels")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall")
    parser.add_argument("--case", action="append", help="only rows whose name holds TEXT (repeatable)")
    args = parser.parse_args(argv)
    import torch

    import ferro
    from ferro.bench import _harness
    from ferro.bench._cases import Case, Target
    from ferro.bench._harness import Contender, measure, paired_ratio
    torch.set_num_threads(args.threads)
    ferro.set_backend("cpu")
    if args.clock == "thread":
        _harness.clock = time.thread_time

    def same(a: Any, rg: bool) -> Any:
        return a
    contenders = [Contender("ferro", ferro, same), Contender("torch", torch, same),
                  Contender("torch no-oneDNN", torch, same), Contender("BLAS floor", np, same)]
    other = f"ferro ({args.kernels})" if args.kernels else None
    if other:
        contenders.insert(1, Contender(other, ferro, same))
    names = [c.name for c in contenders]
    print(f"recurrent model steps, {args.threads} thread(s): {args.rounds} rounds, {args.budget}s per contender "
          "per round; ms per step (median round), ratios paired per round")
    print("| model | " + " | ".join(names) + " | " + " | ".join(f"{n} / torch" for n in names if n != "torch") + " |")
    print("|---" * (1 + 2 * len(names) - 1) + "|")
    for row in ROWS:
        if args.case and not any(text in row for text in args.case):
            continue
        ops = {"ferro": _step(row), "torch": _step(row), "torch no-oneDNN": _step(row, one_dnn=False),
               "BLAS floor": _blas_floor(row)}
        if other:
            ops[other] = _with_kernels(_step(row), args.kernels)
        case = Case(row, (), ops["ferro"], Target("torch", 1.0), unit="ms", overrides=ops)
        res = measure(case, contenders, args.rounds, args.budget, args.pause)
        cells = [f"{res[n].stat('median') * 1e3:.2f}" if res[n].seconds else res[n].error[:60] for n in names]
        ratios = [f"{paired_ratio(Target('torch', 1.0), res[n], res['torch']):.2f}x"
                  if res[n].seconds and res["torch"].seconds else "-" for n in names if n != "torch"]
        print(f"| {row} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
