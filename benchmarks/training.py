"""Training epochs, ferro beside PyTorch CPU in one run: ``python benchmarks/training.py``.

The same MLP (64-256-256-10) and CNN (``ferro.demo.make_cnn``), built from the
same code with ``ferro.nn`` and ``torch.nn``, train on scikit-learn's digits
with SGD (momentum 0.9), batch 64, from the same initial weights, on the same
shuffled batches. Epochs alternate between the contenders so that machine
load hits both alike. Reported: the median epoch time (the first epoch, which
warms caches, is left out), the final test accuracy, and the ratio of ferro's
epoch time to PyTorch's against the issue's target (<= 1.5).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TARGET = 1.5  # ferro epoch time / PyTorch epoch time


@dataclass
class Run:
    """One model training in one library: its state between epochs and what it measured."""

    name: str
    lib: Any  # ferro or torch
    model: Any
    opt: Any
    data: tuple[Any, Any, Any, Any]
    sync: Callable[[], None]
    times: list[float] = field(default_factory=list)
    accuracy: float = float("nan")


def _copy_weights(src: Any, dst: Any) -> None:
    """ferro model -> torch model of the same layout, by state_dict key."""
    import torch
    ours = src.state_dict()
    dst.load_state_dict({k: torch.from_numpy(np.asarray(v.numpy()).copy()) for k, v in ours.items()})


def _epoch(run: Run, order: np.ndarray, batch: int) -> None:
    lib, (x, y, _, _) = run.lib, run.data
    f = lib.nn.functional
    idx = lib.from_numpy(order).to(x.device) if lib.__name__ == "torch" else lib.tensor(order, device=x.device)
    run.model.train()
    start = time.perf_counter()
    for i in range(0, len(order), batch):
        b = idx[i:i + batch]
        loss = f.cross_entropy(run.model(x[b]), y[b])
        run.opt.zero_grad()
        loss.backward()
        run.opt.step()
    run.sync()
    run.times.append(time.perf_counter() - start)


def _accuracy(run: Run) -> float:
    lib, (_, _, xt, yt) = run.lib, run.data
    run.model.eval()
    with lib.no_grad():
        return float((run.model(xt).argmax(1) == yt).float().mean().item())


def make_runs(kind: str, backend: str, lr: float, torch_device: str = "cpu") -> list[Run]:
    import torch

    import ferro
    from ferro.demo import load_digits, make_cnn, make_mlp
    images = kind == "cnn"
    build = make_cnn if images else make_mlp
    ferro.manual_seed(0)
    dev = ferro.device(backend)
    ours = build(nn=ferro.nn).to(dev)
    theirs = build(nn=torch.nn)
    _copy_weights(ours, theirs)
    theirs.to(torch_device)
    data = load_digits(dev, images=images)
    tdata = tuple(torch.from_numpy(np.asarray(t.numpy()).copy()).to(torch_device) for t in data)
    tsync = torch.cuda.synchronize if torch_device.startswith("cuda") else (lambda: None)
    b = ferro.backends.get(dev.type)
    return [Run(f"ferro:{dev.type}", ferro, ours, ferro.optim.SGD(ours.parameters(), lr=lr, momentum=0.9), data,
                lambda: b.synchronize(dev.index)),
            Run("torch", torch, theirs, torch.optim.SGD(theirs.parameters(), lr=lr, momentum=0.9), tdata,
                tsync)]


def bench(kind: str, backend: str, epochs: int, batch: int, lr: float, torch_device: str = "cpu") -> dict[str, Any]:
    runs = make_runs(kind, backend, lr, torch_device)
    rng = np.random.default_rng(0)
    n = len(runs[0].data[1])
    for e in range(epochs):
        order = rng.permutation(n).astype(np.int64)
        for run in (runs if e % 2 == 0 else runs[::-1]):
            _epoch(run, order, batch)
    out: dict[str, Any] = {"model": kind, "epochs": epochs, "batch": batch}
    for run in runs:
        run.accuracy = _accuracy(run)
        steady = run.times[1:] or run.times
        out[run.name] = {"epoch_s": statistics.median(steady), "epochs_s": run.times, "accuracy": run.accuracy}
    out["ratio"] = out[runs[0].name]["epoch_s"] / out["torch"]["epoch_s"]
    return out


def render(rows: list[dict[str, Any]], backend: str) -> str:
    name = f"ferro:{backend}"
    lines = [f"| model | {name} epoch | torch epoch | ratio (target <= {TARGET}) | {name} acc | torch acc |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        verdict = "PASS" if r["ratio"] <= TARGET else "FAIL"
        lines.append(f"| {r['model']} ({r['epochs']} epochs, batch {r['batch']}) | {r[name]['epoch_s'] * 1e3:.1f} ms "
                     f"| {r['torch']['epoch_s'] * 1e3:.1f} ms | {r['ratio']:.2f} {verdict} "
                     f"| {r[name]['accuracy']:.2%} | {r['torch']['accuracy']:.2%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="cpu", help="the ferro backend to train on (default cpu)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--model", choices=("mlp", "cnn", "both"), default="both")
    p.add_argument("--json", help="also write every epoch time to this file")
    p.add_argument("--torch-device", default="cpu", help="PyTorch's device (default cpu; cuda beside --backend cuda)")
    args = p.parse_args(argv)
    import torch
    kinds = ("mlp", "cnn") if args.model == "both" else (args.model,)
    rows = [bench(k, args.backend, args.epochs, args.batch_size, lr=0.05 if k == "mlp" else 0.02,
                  torch_device=args.torch_device) for k in kinds]
    print(f"digits training, torch {torch.__version__} on {args.torch_device} ({torch.get_num_threads()} threads), "
          f"python {sys.version.split()[0]}")
    print(render(rows, args.backend))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
