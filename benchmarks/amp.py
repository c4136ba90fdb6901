"""Mixed precision: training steps in float32 and under autocast, ferro beside PyTorch CPU, in one run.

    python benchmarks/amp.py [--rounds 15] [--steps 5] [--threads 1]

Two models, built from the same code with ``ferro.nn`` and ``torch.nn``: the digits CNN of ``ferro demo``
(batch 64 of 1x8x8 images) and a 2-layer Transformer encoder (d_model 64, 4 heads, sequences of 32,
batch 16) with a linear head. Each contender trains with SGD: ferro on cpu and on opencl:0 (when it runs
here), in float32 and under ``ferro.autocast`` (bfloat16 on cpu; float16 with a ``GradScaler`` on opencl),
and PyTorch CPU in float32 and under ``torch.autocast("cpu")`` (bfloat16). Rounds run every contender in
shuffled order; the reported ratios are medians of ratios taken within a round (``ferro.bench``'s paired
method), so the machine's drift cancels. Read ratios, not times.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _cnn(nn: Any) -> Any:
    from ferro.demo import make_cnn
    return make_cnn(nn)


def _encoder(nn: Any) -> Any:
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.TransformerEncoder(layer, 2), nn.Flatten(), nn.Linear(32 * 64, 10))


MODELS: dict[str, tuple[Callable[[Any], Any], tuple[int, ...]]] = {
    "digits CNN": (_cnn, (64, 1, 8, 8)),
    "Transformer encoder (2 layers)": (_encoder, (16, 32, 64)),
}


def _step_fn(lib: Any, build: Callable[[Any], Any], shape: tuple[int, ...], device: str,
             amp: bool) -> Callable[[], None]:
    """One training step of the model in ``lib`` (ferro or torch) on ``device``, with or without autocast."""
    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    model = build(lib.nn).to(device)
    x = lib.tensor(rng.standard_normal(shape).astype(np.float32)).to(device)
    y = lib.tensor(rng.integers(0, 10, shape[0])).to(device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    dev_type = device.partition(":")[0]
    half = lib.bfloat16 if dev_type == "cpu" else lib.float16
    scaler = lib.amp.GradScaler(dev_type, enabled=amp and half == lib.float16)
    f = lib.nn.functional

    def step() -> None:
        with lib.autocast(dev_type, dtype=half, enabled=amp):
            loss = f.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        loss.item()  # waits for the device
    return step


def _contenders(build: Callable[[Any], Any], shape: tuple[int, ...]) -> dict[str, Callable[[], None]]:
    import torch

    import ferro
    out = {}
    devices = ["cpu"]
    try:
        ferro.ones(1, device="opencl:0")
        devices.append("opencl:0")
    except Exception as e:  # reported, not hidden
        print(f"  (opencl left out: {e})")
    for dev in devices:
        for amp in (False, True):
            try:
                fn = _step_fn(ferro, build, shape, dev, amp)
                fn()  # a contender that cannot run here is reported and left out
                out[f"ferro {dev} {'autocast' if amp else 'float32'}"] = fn
            except Exception as e:
                print(f"  (ferro {dev} {'autocast' if amp else 'float32'} left out: {type(e).__name__}: {e})")
    for amp in (False, True):
        out[f"torch cpu {'autocast' if amp else 'float32'}"] = _step_fn(torch, build, shape, "cpu", amp)
    return out


def _time(fn: Callable[[], None], steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - start) / steps


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--steps", type=int, default=5, help="steps per contender per round")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    import torch

    import ferro
    torch.set_num_threads(args.threads)
    ferro.set_num_threads(args.threads)  # NumPy's BLAS pool too: both libraries on the same threads
    for model, (build, shape) in MODELS.items():
        print(f"\n## {model}, {args.threads} thread(s)")
        fns = _contenders(build, shape)
        for fn in fns.values():  # warm up: kernels compile, caches fill
            _time(fn, 2)
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.rounds):
            order = list(fns)
            random.shuffle(order)
            for k in order:
                times[k].append(_time(fns[k], args.steps))

        def ratio(a: str, b: str, times: dict[str, list[float]] = times) -> str:
            if a not in times or b not in times:
                return "-"
            return f"{statistics.median(x / y for x, y in zip(times[a], times[b])):.2f}"
        ref = "torch cpu float32"
        print(f"| contender | median step (ms) | / {ref} | / torch cpu autocast | autocast / float32 |")
        print("|---|---|---|---|---|")
        for k in fns:
            lib, dev, mode = k.split(" ")
            base = f"{lib} {dev} float32"
            print(f"| {k} | {statistics.median(times[k]) * 1e3:.2f} | {ratio(k, ref)} | "
                  f"{ratio(k, 'torch cpu autocast')} | {ratio(k, base) if mode == 'autocast' else ''} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
