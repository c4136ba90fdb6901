"""CosineAnnealingWarmRestarts and CyclicLR against torch.optim.lr_scheduler, rate by rate (and momentum by
momentum), including fractional-epoch steps and state_dict round trips."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")


def _opt(lib: Any, name: str, **kw: Any) -> Any:
    groups = [{"params": [lib.zeros(2, requires_grad=True)]}, {"params": [lib.zeros(3, requires_grad=True)],
                                                                 "lr": 0.05}]
    return getattr(lib.optim, name)(groups, lr=0.1, **kw)


def _trace(lib: Any, optimizer: str, scheduler: str, sched_kw: dict, steps: list, opt_kw: dict | None = None
           ) -> list[list[float]]:
    opt = _opt(lib, optimizer, **(opt_kw or {}))
    sched = getattr(lib.optim.lr_scheduler, scheduler)(opt, **sched_kw)
    out = []
    for s in steps:
        opt.step()
        sched.step() if s is None else sched.step(s)
        moment = [g.get("momentum", g.get("betas", (0.0,))[0]) for g in opt.param_groups]
        out.append([*sched.get_last_lr(), *moment])
    return out


@pytest.mark.parametrize("kw", [{"T_0": 3}, {"T_0": 2, "T_mult": 2, "eta_min": 0.01}])
def test_warm_restarts_match_torch(kw: dict) -> None:
    steps: list = [None] * 15
    np.testing.assert_allclose(_trace(ferro, "SGD", "CosineAnnealingWarmRestarts", kw, steps),
                               _trace(torch, "SGD", "CosineAnnealingWarmRestarts", kw, steps), rtol=1e-12)
    fractional = [0.5, 1.25, 2.0, 3.7, 7.1, 12.0, 13.5]
    np.testing.assert_allclose(_trace(ferro, "SGD", "CosineAnnealingWarmRestarts", kw, fractional),
                               _trace(torch, "SGD", "CosineAnnealingWarmRestarts", kw, fractional), rtol=1e-12)


@pytest.mark.parametrize(("optimizer", "opt_kw", "kw"), [
    ("SGD", {"momentum": 0.9}, {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3}),
    ("SGD", {"momentum": 0.9}, {"base_lr": [0.01, 0.02], "max_lr": 0.1, "step_size_up": 2, "step_size_down": 4,
                                "mode": "triangular2"}),
    ("Adam", {}, {"base_lr": 0.001, "max_lr": 0.01, "step_size_up": 2, "mode": "exp_range", "gamma": 0.9}),
    ("SGD", {}, {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 2, "cycle_momentum": False,
                 "scale_fn": lambda x: 0.5 ** x, "scale_mode": "iterations"}),
])
def test_cyclic_matches_torch(optimizer: str, opt_kw: dict, kw: dict) -> None:
    steps: list = [None] * 20
    np.testing.assert_allclose(_trace(ferro, optimizer, "CyclicLR", kw, steps, opt_kw),
                               _trace(torch, optimizer, "CyclicLR", kw, steps, opt_kw), rtol=1e-12)


def test_refusals_and_state() -> None:
    opt = _opt(ferro, "SGD")
    with pytest.raises(ValueError, match="T_0"):
        ferro.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="momentum"):
        ferro.optim.lr_scheduler.CyclicLR(_opt(ferro, "Adagrad"), 0.01, 0.1)
    with pytest.raises(ValueError, match="mode"):
        ferro.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode="sawtooth", cycle_momentum=False)
    sched = ferro.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3, cycle_momentum=False)
    for _ in range(4):
        sched.step()
    state = sched.state_dict()
    other = ferro.optim.lr_scheduler.CyclicLR(_opt(ferro, "SGD"), 0.01, 0.1, step_size_up=3, cycle_momentum=False)
    other.load_state_dict(state)
    sched.step()
    other.step()
    assert other.get_last_lr() == sched.get_last_lr()
