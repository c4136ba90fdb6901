"""Compiled training steps, one run: ``python benchmarks/compile.py``.

The digits MLP and CNN, an LSTM and a Transformer encoder (``ferro.bench._models``: the same model code for
ferro and PyTorch, one fixed batch, forward + loss + ``zero_grad`` + backward + optimizer step), timed
side by side, interleaved round by round (``ferro.bench._harness.measure``):

- ``ferro``: eager; ``ferro.compile``: the same step under ``ferro.compile`` (default mode, replay), on the
  backend ``--backend`` names (default cpu);
- ``torch``: PyTorch eager; ``torch.compile``: the step under ``torch.compile`` (inductor; left out with
  ``--no-torch-compile`` or where it fails, with its error);
- ``jax.jit``: the same step written in JAX (``benchmarks/_jax_steps.py``, PyTorch's weights for the same seed)
  under ``jax.jit``, where JAX is installed (the ``bench-jax`` extra); its ratio to PyTorch eager is printed too;
- with ``--fusion``: ``max-fusion``, the step under ``ferro.compile(mode="max-fusion")``, and its ratio to the
  default mode's ``ferro.compile``.

Reported per model: each contender's median time per step and the paired ratios (``paired_ratio``: the
median over rounds of the ratio within a round) of ``ferro.compile`` against ferro eager (target <= 0.5:
at least 2x faster) and against PyTorch eager (target <= 0.7), and against ``torch.compile`` and ``jax.jit``.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import Any

import ferro
from ferro.bench._cases import Case, Target
from ferro.bench._harness import Contender, measure, paired_ratio
from ferro.bench._models import STEPS

ROWS = ["digits MLP step (batch 64)", "digits CNN step (batch 64)", "LSTM step (hidden 128, seq 50, batch 32)",
        "Transformer encoder step (2 layers, d 128, seq 64, batch 32)"]
#: (contender, reference, bound on contender time / reference time)
TARGETS = [("ferro.compile", "ferro", 0.5), ("ferro.compile", "torch", 0.7), ("ferro.compile", "torch.compile", None),
           ("ferro.compile", "jax.jit", None), ("jax.jit", "torch", None)]


def _step(row: str, lib: str) -> Callable[[Any], Any]:
    """The op of contender ``lib`` on ``row``: one training step, its model built on the first call."""
    ms = STEPS[row]
    made: list[Callable[[], Any]] = []

    def op(xp: Any) -> Any:
        if not made and lib == "jax.jit":
            import torch
            from _jax_steps import make_step
            model, _, batch = ms.setup(torch)
            made.append(make_step(row, model, batch))
        if not made:
            model, opts, data = ms.setup(xp)

            def step() -> Any:
                return ms.step(xp, model, opts, *data)
            if lib in ("ferro.compile", "max-fusion"):
                mode = "max-fusion" if lib == "max-fusion" else None
                compiled = ferro.compile(lambda *batch: ms.step(xp, model, opts, *batch), mode=mode)
                made.append(lambda: compiled(*data))
            elif lib == "torch.compile":
                compiled = xp.compile(lambda *batch: ms.step(xp, model, opts, *batch))
                made.append(lambda: compiled(*data))
            else:
                made.append(step)
        return made[0]()
    return op


def _step_without(row: str, name: str) -> Callable[[Any], Any]:
    """``ferro.compile``'s step on ``row`` captured with the pass ``ferro._compile.passes.<name>`` left out (its
    warm-up and capture run here, the pass's ``run`` doing nothing meanwhile)."""
    from ferro._compile import passes
    ms = STEPS[row]
    made: list[Callable[[], Any]] = []

    def op(xp: Any) -> Any:
        if not made:
            model, opts, data = ms.setup(xp)
            compiled = ferro.compile(lambda *batch: ms.step(xp, model, opts, *batch))
            module = getattr(passes, name)
            run = module.run
            module.run = lambda *a, **k: 0
            try:
                compiled(*data)
                compiled(*data)
            finally:
                module.run = run
            made.append(lambda: compiled(*data))
        return made[0]()
    return op


def _per_call(fn: Callable[[], Any], budget: float) -> float:
    import time
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < budget:
        fn()
        n += 1
    return (time.perf_counter() - t) / n


def _floor_row(row: str, rounds: int, budget: float) -> tuple[float, float]:
    """(compiled / eager, the compiled step's kernels and host calls / eager): medians of paired rounds."""
    import statistics
    import time

    from ferro._compile.graph import Call, Host
    from ferro._compile.passes import memory
    from ferro._compile.replay import generate

    ms = STEPS[row]
    model, opts, data = ms.setup(ferro)
    compiled = ferro.compile(lambda *batch: ms.step(ferro, model, opts, *batch))
    for _ in range(3):
        compiled(*data)
    (entry,) = compiled.cache.values()
    graph = entry.graphs[0]
    spent = [0.0, 0]  # seconds in kernels and host calls, replays

    def timed(k: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return k(*a, **kw)
            finally:
                spent[0] += time.perf_counter() - t
        return run
    for node in graph.nodes:  # the entry's replay function was generated already: it keeps the plain kernels
        if isinstance(node, Call):
            node.kernel = timed(node.kernel)
        elif isinstance(node, Host):
            node.fn = timed(node.fn)
    replay = generate(graph, memory.plan(graph))
    arrays = [t._data for t in data]

    def counted() -> None:
        replay(arrays)
        spent[1] += 1
    ratios = []
    for _ in range(rounds):
        eager = _per_call(lambda: ms.step(ferro, model, opts, *data), budget)
        own = _per_call(lambda: compiled(*data), budget)
        spent[:] = [0.0, 0]
        _per_call(counted, budget)
        ratios.append((own / eager, spent[0] / spent[1] / eager))
    return statistics.median(r for r, _ in ratios), statistics.median(k for _, k in ratios)


def floor(rows: list[str], rounds: int, budget: float) -> None:
    """``--floor``: print, per model, the floor of ``ferro.compile / ferro``: the time of the kernels (and host
    calls: the optimizer's step) that the replayed step runs, timed one by one in a copy of its replay, over ferro
    eager's step, paired round by round with the compiled step's own ratio. Replay removes the rest; below the
    floor only faster kernels go."""
    print("| model | ferro.compile / ferro | kernels / ferro (the floor) |")
    print("|---|---|---|")
    for row in rows:
        own, kernels = _floor_row(row, rounds, budget)
        print(f"| {row} | {own:.2f} | {kernels:.2f} |")
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per contender per round")
    parser.add_argument("--pause", type=float, default=0.05)
    parser.add_argument("--rows", default="all", help="comma-separated row numbers (1-based), default all")
    parser.add_argument("--no-torch-compile", action="store_true")
    parser.add_argument("--backend", default="cpu", help="ferro's backend (default cpu); PyTorch runs on the CPU")
    parser.add_argument("--fusion", action="store_true", help='also mode="max-fusion", against the default mode')
    parser.add_argument("--floor", action="store_true", help="the kernels' share: the floor of compiled / eager")
    parser.add_argument("--without", default="", help="a pass of ferro._compile.passes (buffers, copies...): also "
                        "ferro.compile without it, against ferro.compile")
    args = parser.parse_args(argv)
    ferro.set_backend(args.backend)
    if args.floor:
        floor(ROWS if args.rows == "all" else [ROWS[int(i) - 1] for i in args.rows.split(",")], args.rounds,
              args.budget / 2)
        return 0
    backend = ferro.backends.get(args.backend)
    sync = functools.partial(backend.synchronize, backend.default_device_index())
    contenders = [Contender("ferro", ferro, lambda a, rg: a, sync=sync),
                  Contender("ferro.compile", ferro, lambda a, rg: a, sync=sync)]
    targets = list(TARGETS)
    if args.fusion:
        contenders.append(Contender("max-fusion", ferro, lambda a, rg: a, sync=sync))
        targets.append(("max-fusion", "ferro.compile", None))
    without = f"ferro.compile -{args.without}" if args.without else ""
    if without:
        contenders.append(Contender(without, ferro, lambda a, rg: a, sync=sync))
        targets.append(("ferro.compile", without, None))
    try:
        import torch
        torch.set_num_threads(max(1, torch.get_num_threads()))
        contenders.append(Contender("torch", torch, lambda a, rg: a))
        if not args.no_torch_compile:
            contenders.append(Contender("torch.compile", torch, lambda a, rg: a))
    except ImportError as e:
        print(f"torch columns left out: {e}")
    try:
        import jax
        jax.config.update("jax_platforms", "cpu")
        contenders.append(Contender("jax.jit", jax, lambda a, rg: a))
    except ImportError as e:
        print(f"jax.jit column left out (pip install -e './ferro-core[bench-jax]'): {e}")
    names = [c.name for c in contenders]
    rows = ROWS if args.rows == "all" else [ROWS[int(i) - 1] for i in args.rows.split(",")]
    print(f"ferro.compile benchmark, ferro on {args.backend}: {args.rounds} rounds, {args.budget}s per contender "
          "per round; times in ms per step (median round)")
    print("| model | " + " | ".join(names) + " | " + " | ".join(f"{a} / {b}" for a, b, _ in targets) + " |")
    print("|---" * (1 + len(names) + len(targets)) + "|")
    missed = 0
    for row in rows:
        case = Case(row, (), _step(row, "ferro"), Target("torch", 0.7), unit="ms",
                    overrides={name: _step_without(row, args.without) if name == without else _step(row, name)
                               for name in names})
        res = measure(case, contenders, args.rounds, args.budget, args.pause)
        cells = [f"{res[n].stat('median') * 1e3:.2f}" if res[n].seconds else res[n].error[:60] for n in names]
        ratios = []
        for a, b, bound in targets:
            if a in res and b in res and res[a].seconds and res[b].seconds:
                r = paired_ratio(Target(b, bound or 1.0), res[a], res[b])
                ok = "" if bound is None else (" ok" if r <= bound else f" MISSED (<= {bound})")
                missed += bound is not None and r > bound
                ratios.append(f"{r:.2f}{ok}")
            else:
                ratios.append("-")
        print(f"| {row} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        sys.stdout.flush()
    print(f"targets missed: {missed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
