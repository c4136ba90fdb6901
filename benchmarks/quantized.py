"""Dynamic int8 quantization beside float32 and PyTorch, in one run: ``python benchmarks/quantized.py``.

Rows:

- ``Linear 1024->1024 (batch 64)``: one dynamically quantized Linear layer
  (``ferro.quantization.quantize_dynamic``: int8 weight per output channel, the batch quantized to int8,
  ``int8_matmul`` with int32 accumulation, scaled back to float32) on each ferro backend
  (``ferro:<b> int8``), the same float32 layer (``ferro:<b> float32``), and PyTorch's
  ``torch.ao.quantization.quantize_dynamic`` layer and float32 layer (``torch int8``, ``torch float32``),
  all with the same weights and input.
- ``memory``: the bytes of the state dict of the digits MLP of ``ferro demo`` (64-256-256-10) in float32
  and after ``quantize_dynamic`` (int8 weights, float64 scales and int64 zero points per channel as
  PyTorch keeps them, float32 biases).

Times are the best round; the ratios are the median over rounds of one contender's time over the other's
in the same round (``ferro.bench.paired_ratio``).
"""

from __future__ import annotations

import argparse
import functools
import sys
import types
import warnings
from typing import Any

import numpy as np

import ferro
from ferro.bench._cases import Case, Target
from ferro.bench._harness import Contender, measure, paired_ratio

BATCH, IN, OUT = 64, 1024, 1024


def _weights() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    bound = 1 / np.sqrt(IN)
    return (rng.uniform(-bound, bound, (OUT, IN)).astype(np.float32),
            rng.uniform(-bound, bound, OUT).astype(np.float32))


def _ferro_layers(backend: str) -> list[Contender]:
    b = ferro.backends.get(backend)
    device = f"{backend}:{b.default_device_index()}"
    w, bias = _weights()
    lin = ferro.nn.Linear(IN, OUT)
    with ferro.no_grad():
        lin.weight.copy_(ferro.tensor(w))
        lin.bias.copy_(ferro.tensor(bias))
    lin = lin.to(device)
    q = ferro.quantization.quantize_dynamic(lin, {ferro.nn.Linear}, dtype=ferro.qint8)
    sync = functools.partial(b.synchronize, b.default_device_index())
    native = lambda a, rg: ferro.tensor(a, device=device)
    return [Contender(f"ferro:{backend} int8", types.SimpleNamespace(layer=q), native, sync),
            Contender(f"ferro:{backend} float32", types.SimpleNamespace(layer=lin), native, sync)]


def _torch_layers() -> list[Contender]:
    import torch
    w, bias = _weights()
    lin = torch.nn.Linear(IN, OUT)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
        lin.bias.copy_(torch.from_numpy(bias))
    with warnings.catch_warnings():  # torch.ao.quantization's notice that it moves to torchao
        warnings.simplefilter("ignore")
        q = torch.ao.quantization.quantize_dynamic(lin, {torch.nn.Linear}, dtype=torch.qint8)
    native = lambda a, rg: torch.from_numpy(a.copy())
    return [Contender("torch int8", types.SimpleNamespace(layer=q), native),
            Contender("torch float32", types.SimpleNamespace(layer=lin), native)]


def _no_grad_call(xp: Any, x: Any) -> Any:
    return xp.layer(x)


def _state_bytes(model: Any) -> int:
    """Bytes of a model's state dict: a quantized tensor counts its int8 values and its scales and zero points."""
    total = 0
    for t in model.state_dict().values():
        if getattr(t, "is_quantized", False):
            parts = t.__ferro_parts__()
            total += sum(p.numel() * p.element_size() for p in parts.values() if isinstance(p, ferro.Tensor))
        else:
            total += t.numel() * t.element_size()
    return total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="cpu,opencl", help="ferro backends, comma-separated")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--budget", type=float, default=0.2, help="seconds per round")
    args = p.parse_args(argv)
    backends = [b for b in args.backend.split(",") if b in ferro.backends.available()]
    import torch
    torch.set_grad_enabled(False)
    contenders = [c for b in backends for c in _ferro_layers(b)] + _torch_layers()
    case = Case(f"Linear {IN}->{OUT} (batch {BATCH})", ((BATCH, IN),), _no_grad_call, Target("torch int8", 1.0))
    with ferro.no_grad():
        res = measure(case, contenders, args.rounds, args.budget, 0.05)
    pairs = {f"ferro:{b} int8": (f"ferro:{b} float32", "torch int8") for b in backends}
    pairs["torch int8"] = ("torch float32",)
    print("| row | contender | best round | time ratio (median of paired rounds) |\n|---|---|---|---|")
    for c in contenders:
        r = res[c.name]
        if r.error:
            print(f"| {case.name} | {c.name} | {r.error} | |")
            continue
        ratios = [f"{paired_ratio(case.target, r, res[ref]):.2f}x {ref}" for ref in pairs.get(c.name, ())
                  if not res[ref].error]
        print(f"| {case.name} | {c.name} | {min(r.seconds) * 1e6:.0f} us | {', '.join(ratios)} |")
    from ferro.demo import make_mlp
    mlp = make_mlp(256)
    q = ferro.quantization.quantize_dynamic(mlp, {ferro.nn.Linear}, dtype=ferro.qint8)
    fb, qb = _state_bytes(mlp), _state_bytes(q)
    print(f"| memory (digits MLP 64-256-256-10) | float32 {fb} B, int8 {qb} B | | {qb / fb:.3f}x float32 |")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
