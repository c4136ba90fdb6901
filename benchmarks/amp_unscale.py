"""Mixed precision's pieces beside PyTorch CPU, in one run: ``python benchmarks/amp_unscale.py``.

Rows, per ferro backend (``--backend``, default every available one):

- ``unscale_ (<model> grads)``: GradScaler's check for inf/nan and unscale of one model's gradients, one
  device and dtype: ``torch._amp_foreach_non_finite_check_and_unscale_`` (``torch``), ferro's op
  ``amp_unscale_`` through the backend's fused kernel (``ferro:<b>``), and through its decomposition in
  ferro ops (``ferro:<b> decomposed``, what a backend without the kernel runs). Models: the digits CNN
  of ``ferro demo`` (8 tensors, 24k elements) and a 2-layer Transformer encoder of width 512 (26
  tensors, 6.3M elements).
- ``a @ b (512^3 bf16)``: a bfloat16 matmul (float32 accumulation, one rounding) beside PyTorch's.

Times are the best round; the ratios are the median over rounds of ferro's time over the reference's
in the same round (``ferro.bench.paired_ratio``).
"""

from __future__ import annotations

import argparse
import functools
import sys
import types
from typing import Any

import numpy as np

import ferro
from ferro.amp._unscale import _unscale
from ferro.bench._cases import Case, Target
from ferro.bench._harness import Contender, measure, paired_ratio

#: inv_scale: not 1 (that skips the multiply), and repeated over a million calls the values stay normal
INV = float(np.float32(1.0000001))

#: model -> its parameters' shapes
MODELS = {
    "digits CNN": [(16, 1, 3, 3), (16,), (32, 16, 3, 3), (32,), (64, 128), (64,), (10, 64), (10,)],
    "Transformer 2x512": [s for _ in range(2) for s in ((1536, 512), (1536,), (512, 512), (512,), (2048, 512),
                                                         (2048,), (512, 2048), (512,), (512,), (512,), (512,),
                                                         (512,))] + [(512,), (512,)],
}


def _torch_unscale(torch: Any, *grads: Any) -> None:
    torch._amp_foreach_non_finite_check_and_unscale_(list(grads), torch.zeros(()), torch.tensor(INV))


def _ferro_unscale(run: Any, device: str, *grads: Any) -> None:
    run(list(grads), ferro.zeros((), device=device), INV)


def _contenders(backend: str) -> list[Contender]:
    import torch
    b = ferro.backends.get(backend)
    device = f"{backend}:{b.default_device_index()}"
    sync = functools.partial(b.synchronize, b.default_device_index())
    native = lambda a, rg: ferro.tensor(a, device=device)
    return [
        Contender("torch", types.SimpleNamespace(unscale=functools.partial(_torch_unscale, torch)),
                  lambda a, rg: torch.from_numpy(a.copy())),
        Contender(f"ferro:{backend}", types.SimpleNamespace(
            unscale=functools.partial(_ferro_unscale, ferro.ops.amp_unscale_, device)), native, sync),
        Contender(f"ferro:{backend} decomposed", types.SimpleNamespace(
            unscale=functools.partial(_ferro_unscale, _unscale, device)), native, sync),
    ]


def _matmul_contenders(backend: str) -> list[Contender]:
    import torch
    b = ferro.backends.get(backend)
    device = f"{backend}:{b.default_device_index()}"
    return [Contender("torch", torch, lambda a, rg: torch.from_numpy(a.copy()).to(torch.bfloat16)),
            Contender(f"ferro:{backend}", ferro, lambda a, rg: ferro.tensor(a, device=device).to(ferro.bfloat16),
                      functools.partial(b.synchronize, b.default_device_index()))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="all", help="ferro backends, comma-separated (default: every available)")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--budget", type=float, default=0.2, help="seconds per round")
    args = p.parse_args(argv)
    backends = ferro.backends.available() if args.backend == "all" else args.backend.split(",")
    backends = [b for b in backends if b in ("cpu", "opencl", "cuda")]
    vs_torch = Target("torch", 1.0)
    print("| row | contender | best round | ratio (median of paired rounds) |\n|---|---|---|---|")
    for backend in backends:
        rows = [(Case(f"unscale_ ({name} grads)", tuple(shapes), lambda xp, *g: xp.unscale(*g), vs_torch),
                 _contenders(backend)) for name, shapes in MODELS.items()]
        rows.append((Case("a @ b (512^3 bf16)", ((512, 512), (512, 512)), lambda xp, a, b: a @ b, vs_torch),
                     _matmul_contenders(backend)))
        for case, contenders in rows:
            res = measure(case, contenders, args.rounds, args.budget, 0.05)
            ours = res[f"ferro:{backend}"]
            for c in contenders:
                r = res[c.name]
                if r.error:
                    print(f"| {case.name} | {c.name} | {r.error} | |")
                    continue
                ratios = [f"{paired_ratio(case.target, ours, res[ref]):.2f}x {ref}"
                          for ref in res if ref != c.name and c.name == f"ferro:{backend}" and not res[ref].error]
                print(f"| {case.name} | {c.name} | {min(r.seconds) * 1e6:.1f} us | {', '.join(ratios)} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
