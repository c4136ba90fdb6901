"""ferro-cpu's fused gelu and pooled ``where`` against what ran before them, one run: ``python benchmarks/gelu.py``.

Rows: gelu forward + backward on the GPT's MLP activation (16, 64, 256) float32, both ``approximate`` forms;
the causal mask's ``masked_fill`` with softmax on the GPT's attention scores (16, 4, 64, 64); the GPT row of the
model table (``ferro.bench._models``: forward, loss, ``zero_grad``, backward, AdamW step). Contenders, interleaved
round by round (``ferro.bench._harness.measure``):

- ``torch``: PyTorch eager;
- ``ferro``: ferro eager on the cpu backend;
- ``ferro before``: the same process with the two changes undone around each call: ``gelu`` by its decomposition
  (the device's fused entry removed), ``where`` by ``np.where`` into a fresh array.

Reported: the paired ratios (``paired_ratio``: the median over rounds of the ratio within a round).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from typing import Any

_THREADS = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv[:-1] else "1"
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before NumPy loads its BLAS
    os.environ.setdefault(_var, _THREADS)

import numpy as np  # noqa: E402


def _gelu(approximate: str) -> Callable[..., Any]:
    def op(xp: Any, x: Any) -> None:
        xp.nn.functional.gelu(x, approximate=approximate).sum().backward()
    return op


def _causal_masked_fill(xp: Any, x: Any) -> None:
    mask = xp.tril(xp.ones(64, 64)).view(1, 1, 64, 64)
    x.masked_fill(mask == 0, float("-inf")).softmax(-1).sum().backward()


def _undone(op: Callable[..., Any], ops: dict[str, Any]) -> Callable[..., Any]:
    """``op`` run with the device table's fused gelu removed and its where replaced by np.where's."""
    gelu, where = ops["gelu"], ops["where"]
    old_where = (lambda c, x, y: np.asarray(np.where(c, x, y)), where[1])

    def run(xp: Any, *args: Any) -> Any:
        del ops["gelu"]
        ops["where"] = old_where
        try:
            return op(xp, *args)
        finally:
            ops["gelu"], ops["where"] = gelu, where
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per round and contender")
    args = parser.parse_args()
    import torch

    import ferro
    from ferro.bench._cases import Case, Target
    from ferro.bench._harness import ferro_contender, measure, paired_ratio, torch_contender
    from ferro.bench._models import STEPS
    torch.set_num_threads(args.threads)
    ferro.set_num_threads(args.threads)
    dev = ferro.tensor([0.0])._device
    ops = dev._ops
    t = Target("torch", 1.0)
    gpt = next(n for n in STEPS if n.startswith("GPT"))
    cases = [Case("gelu fwd+bwd (16,64,256)", ((16, 64, 256),), _gelu("none"), t, requires_grad=True),
             Case("gelu tanh fwd+bwd (16,64,256)", ((16, 64, 256),), _gelu("tanh"), t, requires_grad=True),
             Case("causal masked_fill + softmax fwd+bwd (16,4,64,64)", ((16, 4, 64, 64),), _causal_masked_fill, t,
                  requires_grad=True),
             Case(gpt, (), lambda xp: STEPS[gpt](xp), t)]
    ours = ferro_contender("cpu")
    before = dataclasses.replace(ours, name="ferro before")
    print(f"threads {args.threads}, {args.rounds} rounds; paired ratios (lower is better)")
    print("| row | ferro before / torch | ferro / torch | ferro / ferro before |\n|---|---|---|---|")
    for case in cases:
        case = dataclasses.replace(case, overrides={"ferro before": _undone(case.op, ops)})
        res = measure(case, [torch_contender(), ours, before], args.rounds, args.budget, 0.05)
        print(f"| {case.name} | {paired_ratio(t, res['ferro before'], res['torch']):.2f}x "
              f"| {paired_ratio(t, res['ferro:cpu'], res['torch']):.2f}x "
              f"| {paired_ratio(t, res['ferro:cpu'], res['ferro before']):.2f}x |", flush=True)


if __name__ == "__main__":
    main()
