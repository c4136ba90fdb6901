"""Threads: several threads training their own models on one device get what one thread gets.

Each of 4 threads trains a small MLP (Linear, ReLU, Linear, cross-entropy, SGD with momentum and Adam) from
its own seed on the device under test; the parameters after training must equal those of the same seeds
trained one after the other. The models start from NumPy-seeded weights, so the threads share no random
state; everything else they share (kernels, programs, memory pools, queues, the error flag) is what is
under test. On opencl this used to corrupt the heap (kernel arguments set on shared kernel objects).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import nn

THREADS = 4
STEPS = 30


def _train(device: ferro.device, seed: int, optimizer: str) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    width = 8 + 4 * seed  # different sizes per thread: cached launch sizes must not leak between threads
    model = nn.Sequential(nn.Linear(6, width), nn.ReLU(), nn.Linear(width, 3))
    with ferro.no_grad():
        for p in model.parameters():
            p.copy_(ferro.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    model = model.to(device)
    x = ferro.tensor(rng.standard_normal((32, 6)).astype(np.float32), device=device)
    y = ferro.tensor(rng.integers(0, 3, 32), device=device)
    opt = ferro.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if optimizer == "sgd" else \
        ferro.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_threads_train_like_serial_runs(backend: ferro.backends.Backend, device: ferro.device,
                                        optimizer: str) -> None:
    serial = [_train(device, s, optimizer) for s in range(THREADS)]
    got: dict[int, Any] = {}

    def run(seed: int) -> None:
        try:
            got[seed] = _train(device, seed, optimizer)
        except BaseException as e:  # raised again in the test's thread
            got[seed] = e

    workers = [threading.Thread(target=run, args=(s,)) for s in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    backend.synchronize(device.index)
    for seed in range(THREADS):
        if isinstance(got[seed], BaseException):
            raise got[seed]
        assert len(got[seed]) == len(serial[seed])
        for i, (mine, ref) in enumerate(zip(got[seed], serial[seed])):
            np.testing.assert_array_equal(mine, ref, err_msg=f"seed {seed}, parameter {i}: the threaded run "
                                                             "differs from the serial one")


def test_threads_draw_distinct_random_numbers(backend: ferro.backends.Backend, device: ferro.device) -> None:
    """Threads drawing from one device's generator at once get disjoint parts of one stream: no two draws
    repeat each other (a counter reserved without a lock would hand the same numbers to two threads)."""
    ferro.manual_seed(0)
    draws: list[Any] = []

    def run() -> None:
        draws.extend(ferro.rand(64, device=device).numpy() for _ in range(20))

    workers = [threading.Thread(target=run) for _ in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    rows = np.stack(draws)
    assert rows.shape == (THREADS * 20, 64)
    assert len({r.tobytes() for r in rows}) == len(rows)
