"""ferro.optim.lr_scheduler against torch.optim.lr_scheduler: the same learning rates, step by step.

Each case builds the same scheduler on a ferro and a PyTorch optimizer (two
parameter groups with different learning rates) and compares every group's
lr (and momentum / beta1 where the scheduler cycles it) for 20 steps; then
the closed form (``step(epoch)``), chaining, SequentialLR milestones,
ReduceLROnPlateau on given metric sequences, state dict round trips and refusals.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import ferro
import ferro.optim as fo
import ferro.optim.lr_scheduler as fs

STEPS = 20
REL = 1e-12


def _optimizers(kind: str = "SGD") -> tuple[fo.Optimizer, torch.optim.Optimizer]:
    kw = {"momentum": 0.9} if kind == "SGD" else {}
    fp = [ferro.ones(2, requires_grad=True), ferro.ones(3, requires_grad=True)]
    tp = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    return (getattr(fo, kind)([{"params": fp[:1]}, {"params": fp[1:], "lr": 0.05}], lr=0.1, **kw),
            getattr(torch.optim, kind)([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.05}], lr=0.1, **kw))


def _groups(opt: Any) -> list[float]:
    """Each group's lr and momentum (or beta1), flat."""
    out = []
    for g in opt.param_groups:
        out += [float(g["lr"]), float(g["betas"][0] if "betas" in g else g["momentum"])]
    return out


def _same(mine: Any, theirs: Any) -> None:
    assert mine == pytest.approx(theirs, rel=REL, abs=1e-15)


class Scale:
    """A callable object: LambdaLR saves its ``__dict__`` in the state dict."""

    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __call__(self, epoch: int) -> float:
        return self.factor ** epoch


#: name -> (optimizer kind, build(scheduler module, optimizer))
CASES: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "StepLR": ("SGD", lambda S, o: S.StepLR(o, step_size=3, gamma=0.5)),
    "MultiStepLR": ("SGD", lambda S, o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
    "ExponentialLR": ("SGD", lambda S, o: S.ExponentialLR(o, gamma=0.9)),
    "CosineAnnealingLR": ("SGD", lambda S, o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001)),
    "CosineAnnealingLR-no-eta": ("Adam", lambda S, o: S.CosineAnnealingLR(o, T_max=20)),
    "LinearLR": ("SGD", lambda S, o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6)),
    "LinearLR-decay": ("SGD", lambda S, o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=10)),
    "LambdaLR": ("SGD", lambda S, o: S.LambdaLR(o, lambda e: 1 / (1 + e))),
    "LambdaLR-per-group": ("SGD", lambda S, o: S.LambdaLR(o, [lambda e: 0.9 ** e, Scale(0.8)])),
    "MultiplicativeLR": ("SGD", lambda S, o: S.MultiplicativeLR(o, lambda e: 0.95)),
    "ConstantLR": ("SGD", lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=4)),
    "PolynomialLR": ("SGD", lambda S, o: S.PolynomialLR(o, total_iters=8, power=2.0)),
    "OneCycleLR-cos": ("SGD", lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS + 1)),
    "OneCycleLR-linear": ("SGD", lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=STEPS + 1,
                                                           anneal_strategy="linear", pct_start=0.25)),
    "OneCycleLR-three-phase": ("SGD", lambda S, o: S.OneCycleLR(o, max_lr=0.8, epochs=3, steps_per_epoch=7,
                                                                three_phase=True, div_factor=10.0)),
    "OneCycleLR-adam-betas": ("Adam", lambda S, o: S.OneCycleLR(o, max_lr=0.01, total_steps=STEPS + 1,
                                                                base_momentum=0.8, max_momentum=0.9)),
    "OneCycleLR-no-momentum": ("SGD", lambda S, o: S.OneCycleLR(o, max_lr=0.3, total_steps=STEPS + 1,
                                                                cycle_momentum=False, final_div_factor=100.0)),
    "SequentialLR": ("SGD", lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=4), S.ExponentialLR(o, gamma=0.9)], milestones=[5])),
    "SequentialLR-three": ("SGD", lambda S, o: S.SequentialLR(
        o, [S.ConstantLR(o, factor=0.3, total_iters=3), S.StepLR(o, step_size=2, gamma=0.5),
            S.CosineAnnealingLR(o, T_max=6)], milestones=[4, 11])),
    "ChainedScheduler": ("SGD", lambda S, o: S.ChainedScheduler(
        [S.ExponentialLR(o, gamma=0.9), S.MultiStepLR(o, milestones=[3, 8], gamma=0.5)])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_learning_rates_match_torch(name: str) -> None:
    kind, build = CASES[name]
    fopt, topt = _optimizers(kind)
    fsched, tsched = build(fs, fopt), build(torch.optim.lr_scheduler, topt)
    _same(fsched.get_last_lr(), tsched.get_last_lr())
    _same(_groups(fopt), _groups(topt))
    for _ in range(STEPS):
        fopt.step()
        topt.step()
        fsched.step()
        tsched.step()
        _same(fsched.get_last_lr(), tsched.get_last_lr())
        _same(_groups(fopt), _groups(topt))
    assert getattr(fsched, "last_epoch", None) == getattr(tsched, "last_epoch", None)


def test_two_schedulers_chained_on_one_optimizer_match_torch() -> None:
    fopt, topt = _optimizers()
    mine = [fs.ExponentialLR(fopt, gamma=0.9), fs.StepLR(fopt, step_size=3, gamma=0.5),
            fs.CosineAnnealingLR(fopt, T_max=5)]
    theirs = [torch.optim.lr_scheduler.ExponentialLR(topt, gamma=0.9),
              torch.optim.lr_scheduler.StepLR(topt, step_size=3, gamma=0.5),
              torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=5)]
    for _ in range(STEPS):
        fopt.step()
        topt.step()
        for a, b in zip(mine, theirs, strict=True):
            a.step()
            b.step()
        _same(_groups(fopt), _groups(topt))
        _same([lr for s in mine for lr in s.get_last_lr()], [lr for s in theirs for lr in s.get_last_lr()])


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                  "ConstantLR", "PolynomialLR", "LambdaLR"])
def test_closed_form_with_an_epoch_matches_torch(name: str) -> None:
    kind, build = CASES[name]
    fopt, topt = _optimizers(kind)
    fsched, tsched = build(fs, fopt), build(torch.optim.lr_scheduler, topt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn that step(epoch) is deprecated
        for epoch in [3, 7, 1, 12, 12, 5, 20, 0]:
            fopt.step()
            topt.step()
            fsched.step(epoch)
            tsched.step(epoch)
            _same(fsched.get_last_lr(), tsched.get_last_lr())
    with pytest.warns(UserWarning, match="deprecated"):
        fsched.step(2)


METRICS = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.5, 0.51, 0.52, 0.53, 0.54, 0.55, 0.49, 0.6, 0.6, 0.6, 0.6, 0.6,
           0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


@pytest.mark.parametrize("kw", [
    {"patience": 2},
    {"patience": 1, "cooldown": 2, "factor": 0.5},
    {"patience": 0, "min_lr": [0.02, 0.001], "factor": 0.3},
    {"mode": "max", "patience": 1, "threshold": 0.05, "threshold_mode": "abs"},
    {"mode": "max", "patience": 2, "threshold": 0.1, "threshold_mode": "rel", "eps": 0.01},
    {"mode": "min", "patience": 1, "threshold": 0.02, "threshold_mode": "abs", "min_lr": 0.004},
])
def test_reduce_lr_on_plateau_matches_torch(kw: dict) -> None:
    fopt, topt = _optimizers()
    fsched = fs.ReduceLROnPlateau(fopt, **kw)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kw)
    seen = set()
    for metric in METRICS:
        fsched.step(ferro.tensor(metric) if metric == 0.5 else metric)  # a 0-d tensor works as a metric
        tsched.step(metric)
        _same(fsched.get_last_lr(), tsched.get_last_lr())
        assert (fsched.best, fsched.num_bad_epochs, fsched.cooldown_counter) == \
            pytest.approx((tsched.best, tsched.num_bad_epochs, tsched.cooldown_counter))
        seen.add(tuple(fsched.get_last_lr()))
    assert len(seen) > 1, "the metric sequence makes the lr change"


# -- state dicts ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "LambdaLR-per-group", "OneCycleLR-cos",
                                  "SequentialLR", "ChainedScheduler", "MultiStepLR"])
def test_state_dict_round_trip_continues_identically(name: str) -> None:
    kind, build = CASES[name]
    fopt, _ = _optimizers(kind)
    sched = build(fs, fopt)
    for _ in range(6):
        fopt.step()
        sched.step()
    osd, ssd = fopt.state_dict(), sched.state_dict()
    assert "optimizer" not in ssd
    other_opt, _ = _optimizers(kind)
    other = build(fs, other_opt)
    other_opt.load_state_dict(osd)
    other.load_state_dict(ssd)
    assert other.get_last_lr() == sched.get_last_lr()
    for _ in range(8):
        for o, s in ((fopt, sched), (other_opt, other)):
            o.step()
            s.step()
        assert other.get_last_lr() == sched.get_last_lr()
        assert _groups(other_opt) == _groups(fopt)


def test_lambda_lr_state_keeps_callable_objects_not_functions() -> None:
    fopt, _ = _optimizers()
    scale = Scale(0.8)
    sd = fs.LambdaLR(fopt, [lambda e: 1.0, scale]).state_dict()
    assert sd["lr_lambdas"] == [None, {"factor": 0.8}]
    other = Scale(0.5)
    fs.LambdaLR(_optimizers()[0], [lambda e: 1.0, other]).load_state_dict(sd)
    assert other.factor == 0.8


def test_reduce_lr_on_plateau_state_round_trip() -> None:
    fopt, _ = _optimizers()
    a = fs.ReduceLROnPlateau(fopt, patience=1, mode="max")
    for m in METRICS[:5]:
        a.step(-m)
    b = fs.ReduceLROnPlateau(_optimizers()[0])
    b.load_state_dict(a.state_dict())
    assert (b.mode, b.best, b.num_bad_epochs, b.mode_worse) == (a.mode, a.best, a.num_bad_epochs, a.mode_worse)


def test_resuming_with_last_epoch_matches_torch() -> None:
    fopt, topt = _optimizers()
    for o in (fopt, topt):
        for g in o.param_groups:
            g["initial_lr"] = g["lr"]
    f = fs.StepLR(fopt, step_size=2, gamma=0.5, last_epoch=4)
    t = torch.optim.lr_scheduler.StepLR(topt, step_size=2, gamma=0.5, last_epoch=4)
    for _ in range(5):
        fopt.step()
        topt.step()
        f.step()
        t.step()
        _same(f.get_last_lr(), t.get_last_lr())


# -- refusals -------------------------------------------------------------------------------------------


def _opt() -> fo.Optimizer:
    return _optimizers()[0]


@pytest.mark.parametrize("make, error, words", [
    (lambda: fs.StepLR(object(), step_size=1), TypeError, "is not an Optimizer"),
    (lambda: fs.StepLR(_opt(), step_size=1, last_epoch=3), KeyError, "initial_lr"),
    (lambda: fs.LinearLR(_opt(), start_factor=0.0), ValueError, "Starting multiplicative factor"),
    (lambda: fs.LinearLR(_opt(), end_factor=1.5), ValueError, "Ending multiplicative factor"),
    (lambda: fs.ConstantLR(_opt(), factor=2.0), ValueError, "between 0 and 1"),
    (lambda: fs.LambdaLR(_opt(), [lambda e: 1.0]), ValueError, "lr_lambda must have the same length"),
    (lambda: fs.LambdaLR(_opt(), 3.0), TypeError, "lr_lambda should be a function"),
    (lambda: fs.OneCycleLR(_opt(), max_lr=1.0), ValueError, "either total_steps OR"),
    (lambda: fs.OneCycleLR(_opt(), max_lr=1.0, total_steps=0), ValueError, "positive integer total_steps"),
    (lambda: fs.OneCycleLR(_opt(), max_lr=1.0, total_steps=5, pct_start=1.5), ValueError, "pct_start"),
    (lambda: fs.OneCycleLR(_opt(), max_lr=1.0, total_steps=5, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of"),
    (lambda: fs.OneCycleLR(_opt(), max_lr=[1.0], total_steps=5), ValueError, "max_lr must have the same length"),
    (lambda: fs.OneCycleLR(fo.Adagrad([ferro.ones(1, requires_grad=True)]), max_lr=1.0, total_steps=5), ValueError,
     "must support momentum or beta1"),
    (lambda: (lambda o: fs.SequentialLR(o, [fs.StepLR(o, 2), fs.StepLR(o, 3)], milestones=[1, 2]))(_opt()),
     ValueError, "one more than the number of milestone"),
    (lambda: fs.SequentialLR(_opt(), [], milestones=[]), ValueError, "at least one scheduler"),
    (lambda: (lambda o: fs.SequentialLR(o, [fs.StepLR(_opt(), 2)], milestones=[]))(_opt()), ValueError,
     "same optimizer"),
    (lambda: (lambda o: fs.ChainedScheduler([fs.StepLR(o, 2), fs.ReduceLROnPlateau(o)]))(_opt()), ValueError,
     "does not support `ReduceLROnPlateau`"),
    (lambda: fs.ReduceLROnPlateau(_opt(), factor=1.0), ValueError, "Factor should be < 1.0"),
    (lambda: fs.ReduceLROnPlateau(_opt(), mode="up"), ValueError, "mode up is unknown"),
    (lambda: fs.ReduceLROnPlateau(_opt(), threshold_mode="pct"), ValueError, "threshold mode pct is unknown"),
    (lambda: fs.ReduceLROnPlateau(_opt(), min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
])
def test_refusals(make: Callable[[], Any], error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        make()


def test_one_cycle_refuses_stepping_past_total_steps() -> None:
    opt = _opt()
    sched = fs.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match=r"Tried to step 4 times\. The specified number of total steps is 3"):
        sched.step()
