"""Resuming training from a ferro.save checkpoint gives bit-identical losses to an uninterrupted run (CPU).

The runs draw randomness three ways, so every piece of state matters: dropout masks and noise from the
global RNG, and the DataLoader's shuffle from its own generator (or the global RNG). A resumed run
starts from a fresh state seeded differently, in this process or in a fresh interpreter.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np

import ferro
import ferro.nn.functional as F
from ferro.data import DataLoader, TensorDataset

_TESTS = pathlib.Path(__file__).parent
BATCH, SAMPLES = 8, 36  # 5 batches per epoch, the last one short


def _dataset() -> TensorDataset:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((SAMPLES, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)
    return TensorDataset(ferro.tensor(x), ferro.tensor(y))


class PlainRun:
    """A two-layer net as plain tensors, trained with hand-written SGD with momentum."""

    def __init__(self, init_seed: int) -> None:
        rng = np.random.default_rng(init_seed)
        shapes = [(4, 16), (16,), (16, 1), (1,)]
        self.params = [ferro.tensor(rng.standard_normal(s).astype(np.float32) * 0.5, requires_grad=True)
                       for s in shapes]
        self.momentum = [ferro.zeros_like(p) for p in self.params]
        self.gen = ferro.Generator().manual_seed(init_seed + 100)
        self.loader = DataLoader(_dataset(), batch_size=BATCH, shuffle=True, generator=self.gen)
        self.step, self.done, self.epoch_state = 0, 0, self.gen.get_state()

    def loss(self, xb: ferro.Tensor, yb: ferro.Tensor) -> ferro.Tensor:
        w1, b1, w2, b2 = self.params
        h = F.dropout((xb @ w1 + b1).tanh(), 0.3)
        out = h @ w2 + b2 + 0.01 * ferro.randn(yb.shape)
        return ((out - yb) ** 2).mean()

    def train(self, steps: int) -> list[float]:
        losses = []
        while steps:
            if self.done:  # resuming mid-epoch: replay this epoch's order, skip what was done
                self.gen.set_state(self.epoch_state)
            else:
                self.epoch_state = self.gen.get_state()
            batches = iter(self.loader)
            for _ in range(self.done):
                next(batches)
            for xb, yb in batches:
                loss = self.loss(xb, yb)
                loss.backward()
                with ferro.no_grad():
                    for p, m in zip(self.params, self.momentum):
                        m.mul_(0.9).add_(p.grad)
                        p.sub_(0.05 * m)
                        p.grad = None
                losses.append(loss.item())
                self.step, self.done, steps = self.step + 1, self.done + 1, steps - 1
                if steps == 0:
                    break
            if self.done == len(self.loader):
                self.done = 0
        return losses

    def save(self, path: pathlib.Path) -> None:
        ferro.save({"params": self.params, "momentum": self.momentum, "step": self.step, "done": self.done,
                    "epoch_state": self.epoch_state, "loader_gen": self.gen.get_state(),
                    "rng": ferro.random.get_all_rng_states()}, path)

    def load(self, path: pathlib.Path) -> None:
        ck = ferro.load(path)
        with ferro.no_grad():
            for mine, saved in zip([*self.params, *self.momentum], [*ck["params"], *ck["momentum"]]):
                mine.copy_(saved)
        self.step, self.done, self.epoch_state = ck["step"], ck["done"], ck["epoch_state"]
        self.gen.set_state(ck["loader_gen"])
        ferro.random.set_all_rng_states(ck["rng"])


def resume_in_this_process(path: str, steps: int) -> list[float]:
    """A fresh run, seeded otherwise, loads the checkpoint and goes on (also called in a subprocess)."""
    ferro.manual_seed(12345)
    ferro.rand(17)
    run = PlainRun(init_seed=99)
    run.load(pathlib.Path(path))
    return run.train(steps)


def _uninterrupted(total: int) -> list[float]:
    ferro.manual_seed(0)
    return PlainRun(init_seed=1).train(total)


def _bits(xs: list[float]) -> list[str]:
    return [float(x).hex() for x in xs]


def test_resume_mid_epoch_in_a_fresh_interpreter_gives_bit_identical_losses(tmp_path: pathlib.Path) -> None:
    from conftest import run_json
    total, k = 16, 7  # stop in the middle of the second epoch
    full = _uninterrupted(total)
    ferro.manual_seed(0)
    first = PlainRun(init_seed=1)
    head = first.train(k)
    first.save(tmp_path / "ckpt.safetensors")
    tail = run_json(f"""
        import json, sys
        sys.path.insert(0, {str(_TESTS)!r})
        from test_resume import resume_in_this_process
        print(json.dumps(resume_in_this_process({str(tmp_path / "ckpt.safetensors")!r}, {total - k})))
    """)
    assert _bits(head + tail) == _bits(full)
    # and the same in this process, where the state is left over from other runs
    assert _bits(head + resume_in_this_process(str(tmp_path / "ckpt.safetensors"), total - k)) == _bits(full)


def test_without_the_rng_states_the_resumed_losses_differ(tmp_path: pathlib.Path) -> None:
    full = _uninterrupted(10)
    ferro.manual_seed(0)
    first = PlainRun(init_seed=1)
    head = first.train(5)
    first.save(tmp_path / "ckpt.safetensors")
    ferro.manual_seed(12345)
    run = PlainRun(init_seed=99)
    run.load(tmp_path / "ckpt.safetensors")
    ferro.manual_seed(4321)  # as if the checkpoint had not restored the global RNG
    assert _bits(head + run.train(5)) != _bits(full)


def _model_run(init_seed: int) -> tuple[Any, ...]:
    import ferro.nn as nn
    import ferro.optim as optim
    ferro.manual_seed(init_seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 8), nn.ReLU(),
                          nn.Dropout(0.1), nn.Linear(8, 1))
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)
    sched = optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    loader = DataLoader(_dataset(), batch_size=BATCH, shuffle=True)  # shuffled from the global RNG
    return model, opt, sched, loader


def _train_model(parts: tuple[Any, ...], epochs: int) -> list[float]:
    from ferro.utils.checkpoint import checkpoint_sequential
    model, opt, sched, loader = parts
    losses = []
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.mse_loss(checkpoint_sequential(model, 2, xb, use_reentrant=False), yb)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
    return losses


def test_resume_with_nn_optim_scheduler_and_activation_checkpointing(tmp_path: pathlib.Path) -> None:
    full = _train_model(_model_run(0), 4)
    parts = _model_run(0)
    head = _train_model(parts, 2)
    model, opt, sched, _ = parts
    ferro.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "rng": ferro.random.get_all_rng_states()}, tmp_path / "ckpt.safetensors")
    fresh = _model_run(77)
    ck = ferro.load(tmp_path / "ckpt.safetensors")
    fresh[0].load_state_dict(ck["model"])
    fresh[1].load_state_dict(ck["optimizer"])
    fresh[2].load_state_dict(ck["scheduler"])
    ferro.random.set_all_rng_states(ck["rng"])
    assert _bits(head + _train_model(fresh, 2)) == _bits(full)
    assert json.dumps(sorted(ck["model"])) == json.dumps(sorted(model.state_dict()))


def test_all_rng_states_round_trip_through_a_file_on_every_device(device: ferro.device,
                                                                   tmp_path: pathlib.Path) -> None:
    ferro.manual_seed(21)
    ferro.rand(3, device=device)  # the device is in use, so get_all_rng_states() includes it
    states = ferro.random.get_all_rng_states()
    assert states["seed"] == 21 and "cpu" in states["devices"] and str(device) in states["devices"]
    ferro.save({"rng": states}, tmp_path / "rng.safetensors")
    expected = [ferro.rand(5).tolist(), ferro.rand(5, device=device).tolist()]
    ferro.manual_seed(3)
    ferro.random.set_all_rng_states(ferro.load(tmp_path / "rng.safetensors")["rng"])
    assert [ferro.rand(5).tolist(), ferro.rand(5, device=device).tolist()] == expected
    with ferro.random.fork_rng([device, "cpu"]):
        ferro.rand(7, device=device)
        ferro.rand(7)
    after = [ferro.rand(5).tolist(), ferro.rand(5, device=device).tolist()]
    ferro.random.set_all_rng_states(states)
    ferro.rand(5), ferro.rand(5, device=device)
    assert [ferro.rand(5).tolist(), ferro.rand(5, device=device).tolist()] == after


def test_restoring_states_restores_the_seed_of_devices_used_later() -> None:
    from conftest import run_json
    got = run_json("""
        import json, ferro
        ferro.manual_seed(5)
        states = ferro.random.get_all_rng_states(["cpu"])
        ferro.manual_seed(6)
        ferro.random.set_all_rng_states(states)
        print(json.dumps([ferro.initial_seed(), ferro.rand(3, device="toy").tolist()]))
    """)
    expected = run_json("""
        import json, ferro
        ferro.manual_seed(5)
        print(json.dumps([ferro.initial_seed(), ferro.rand(3, device="toy").tolist()]))
    """)
    assert got == expected and got[0] == 5


def test_bad_rng_states_are_refused() -> None:
    import pytest
    with pytest.raises(TypeError, match="get_all_rng_states"):
        ferro.random.set_all_rng_states({"cpu": b""})
    with pytest.raises(TypeError, match="must be bytes"):
        ferro.random.set_all_rng_states({"seed": None, "devices": {"cpu": [1, 2]}})
