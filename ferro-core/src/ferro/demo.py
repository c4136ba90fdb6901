"""``ferro demo``: train a small CNN on scikit-learn's handwritten digits, on any backend.

The digits (1,797 8x8 images, bundled with scikit-learn: no download) are
split 80/20 with a fixed seed; a two-block CNN trains with Adam and a cosine
learning-rate schedule, printing the loss and accuracy after every epoch; the
model and optimizer are then saved with :func:`ferro.save`, loaded into a
fresh model and evaluated again. Everything a training script needs of ferro
is on this path: nn modules, autograd, optim, lr_scheduler, data loading and
checkpoints.

``examples/`` and ``benchmarks/training.py`` build on :func:`load_digits`,
:func:`make_cnn` and :func:`make_mlp`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import ferro
from ferro import nn

__all__ = ["DemoResult", "load_digits", "make_cnn", "make_mlp", "evaluate", "run"]

F = nn.functional


def load_digits(device: Any = None, *, images: bool = True, test_fraction: float = 0.2,
                seed: int = 0) -> tuple[ferro.Tensor, ferro.Tensor, ferro.Tensor, ferro.Tensor]:
    """``x_train, y_train, x_test, y_test`` of scikit-learn's digits on ``device``.

    Pixels are scaled to [0, 1]; ``images`` gives ``(N, 1, 8, 8)`` inputs for a
    CNN, else ``(N, 64)`` rows for an MLP. Labels are int64 class indices.
    """
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ImportError as e:
        raise ImportError("the digits demo needs scikit-learn: pip install 'ferro-core[demo]'") from e
    import numpy as np
    data = sk_load_digits()
    x = (data.data / 16.0).astype(np.float32)
    if images:
        x = x.reshape(-1, 1, 8, 8)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = round(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    dev = ferro.device(device) if device is not None else None
    return tuple(ferro.tensor(a, device=dev) for a in (x[train], y[train], x[test], y[test]))  # type: ignore[return-value]


def make_cnn(nn: Any = nn) -> Any:
    """Two conv blocks (16 and 32 channels) and a two-layer classifier head, for 1x8x8 digits.

    ``nn`` is the module namespace to build with: ``ferro.nn``, or ``torch.nn``
    for the same model in PyTorch (the training benchmark compares the two).
    """
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 4 x 4
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 2 x 2
        nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10),
    )


def make_mlp(hidden: int = 256, nn: Any = nn) -> Any:
    """The 64-256-256-10 MLP of the training benchmark (``nn`` as for :func:`make_cnn`)."""
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


def evaluate(model: nn.Module, x: ferro.Tensor, y: ferro.Tensor, batch_size: int = 512) -> tuple[float, float]:
    """Mean cross-entropy loss and accuracy of ``model`` on ``(x, y)``, in eval mode and without grad."""
    was_training = model.training
    model.eval()
    loss = correct = None
    with ferro.no_grad():
        for i in range(0, len(y), batch_size):
            xb, yb = x[i:i + batch_size], y[i:i + batch_size]
            logits = model(xb)
            batch_loss = F.cross_entropy(logits, yb, reduction="sum")
            batch_correct = (logits.argmax(1) == yb).sum()
            loss = batch_loss if loss is None else loss + batch_loss
            correct = batch_correct if correct is None else correct + batch_correct
    model.train(was_training)
    n = len(y)
    return (loss.item() / n, correct.item() / n) if n else (float("nan"), float("nan"))  # type: ignore[union-attr]


@dataclass
class DemoResult:
    """What :func:`run` measured."""

    backend: str
    epochs: int
    losses: list[float]
    accuracies: list[float]
    accuracy: float
    reloaded_accuracy: float
    checkpoint: str
    seconds: float


def _progress(batches: Iterable[Any], total: int, desc: str, enabled: bool) -> Iterable[Any]:
    if not enabled:
        return batches
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return batches
    return tqdm(batches, total=total, desc=desc, leave=False, unit="batch", file=sys.stderr)


def run(backend: str | None = None, *, epochs: int = 12, batch_size: int = 64, lr: float = 1e-2, seed: int = 0,
        checkpoint: str | None = None, progress: bool = True,
        out: Callable[[str], None] = print, distributed: bool = False, amp: bool = False) -> DemoResult:
    """Train the digits CNN on ``backend`` (the selected default when None) and report each epoch.

    ``checkpoint`` is where the trained model and optimizer are saved (a
    temporary file, removed afterwards, when None); they are then loaded into
    a fresh model whose accuracy is measured again. ``distributed``: this
    process is one rank of an MPI job (``ferro demo --nprocs N``): the model is
    wrapped in ``DistributedDataParallel``, each rank trains on its shard of
    every global batch of ``batch_size``, and rank 0 reports and saves. ``amp``: train in mixed precision
    (``ferro.autocast`` over the forward pass and the loss, bfloat16 on cpu and float16 elsewhere, with a
    ``GradScaler`` for float16).
    """
    dev = ferro.device(backend) if backend else ferro.backends.current_device()
    ferro.manual_seed(seed)
    x_tr, y_tr, x_te, y_te = load_digits(dev, seed=seed)
    model = make_cnn().to(dev)
    opt = ferro.optim.Adam(model.parameters(), lr=lr)
    sched = ferro.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    train_set = ferro.data.TensorDataset(x_tr, y_tr)
    loader = ferro.data.DataLoader(train_set, batch_size=batch_size, shuffle=True,
                                   generator=ferro.Generator().manual_seed(seed))
    net: Any = model
    half = ferro.amp.get_autocast_dtype(dev.type)
    scaler = ferro.amp.GradScaler(dev.type, enabled=amp and half == ferro.float16)
    if distributed:
        net, loader, out = _data_parallel(model, train_set, batch_size, seed, out)
    out(f"ferro demo: a CNN ({sum(p.numel() for p in model.parameters()):,} parameters) on scikit-learn's digits "
        f"({len(y_tr)} train / {len(y_te)} test images) on {dev}"
        + (f", in mixed precision ({half.name} autocast{', loss scaling' if scaler.is_enabled() else ''})"
           if amp else ""))
    start = time.perf_counter()
    losses, accuracies = [], []
    for epoch in range(1, epochs + 1):
        model.train()
        if distributed:
            loader.sampler.set_epoch(epoch)
        total = None
        for xb, yb in _progress(loader, len(loader), f"epoch {epoch}/{epochs}", progress):
            with ferro.autocast(dev.type, enabled=amp):
                loss = F.cross_entropy(net(xb), yb)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            total = loss.detach() * len(yb) if total is None else total + loss.detach() * len(yb)
        sched.step()
        if distributed:
            ferro.distributed.all_reduce(total)  # every rank's share of the epoch's loss
        train_loss = total.item() / len(y_tr)  # type: ignore[union-attr]
        test_loss, acc = evaluate(model, x_te, y_te)
        losses.append(train_loss)
        accuracies.append(acc)
        out(f"epoch {epoch:>2}/{epochs}  train loss {train_loss:.4f}  test loss {test_loss:.4f}  "
            f"test accuracy {acc:6.2%}")
    seconds = time.perf_counter() - start
    if distributed and ferro.distributed.get_rank() != 0:  # rank 0 saves and checks the checkpoint
        return DemoResult(dev.type, epochs, losses, accuracies, accuracies[-1], accuracies[-1], "", seconds)
    path, reloaded = _save_and_reload(model, opt, epochs, checkpoint, dev, x_te, y_te)
    where = path if checkpoint else f"{path} (a temporary file, removed when the demo ends; --checkpoint PATH keeps it)"
    out(f"trained in {seconds:.1f} s; checkpoint saved to {where}")
    out(f"reloaded into a fresh model: test accuracy {reloaded:.2%}")
    return DemoResult(dev.type, epochs, losses, accuracies, accuracies[-1] if accuracies else float("nan"),
                      reloaded, path, seconds)


def _data_parallel(model: nn.Module, train_set: Any, batch_size: int, seed: int,
                   out: Callable[[str], None]) -> tuple[Any, Any, Callable[[str], None]]:
    """DDP over ``model``, a loader of this rank's shard (global batch ``batch_size``), rank 0's printer."""
    import ferro.distributed as dist
    from ferro.nn.parallel import DistributedDataParallel
    if not dist.is_initialized():
        dist.init_process_group()
    world, rank = dist.get_world_size(), dist.get_rank()
    if batch_size % world:
        raise ValueError(f"ferro demo: --batch-size {batch_size} must be a multiple of --nprocs {world}")
    sampler = ferro.data.DistributedSampler(train_set, world, rank, shuffle=True, seed=seed)
    loader = ferro.data.DataLoader(train_set, batch_size=batch_size // world, sampler=sampler)
    printer = out if rank == 0 else (lambda _line: None)
    printer(f"ferro demo: data-parallel in {world} processes (DistributedDataParallel over "
            f"'{dist.get_backend()}'), {batch_size // world} images per process per step")
    return DistributedDataParallel(model), loader, printer


def _save_and_reload(model: nn.Module, opt: Any, epochs: int, checkpoint: str | None, dev: Any,
                     x_te: ferro.Tensor, y_te: ferro.Tensor) -> tuple[str, float]:
    tmp = None
    if checkpoint is None:
        tmp = tempfile.TemporaryDirectory(prefix="ferro-demo-")
        checkpoint = os.path.join(tmp.name, "digits-cnn.safetensors")
    try:
        ferro.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epochs}, checkpoint)
        state = ferro.load(checkpoint, map_location=dev)
        fresh = make_cnn().to(dev)
        fresh.load_state_dict(state["model"])
        return checkpoint, evaluate(fresh, x_te, y_te)[1]
    finally:
        if tmp is not None:
            tmp.cleanup()
