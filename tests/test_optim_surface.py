"""The optimizers PyTorch scripts use that ferro gained (Adadelta, RAdam, LBFGS), step by step against
torch.optim from the same start, and their hyperparameter checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=(16, 5)), RNG.normal(size=(16, 2))
W0, B0 = RNG.normal(size=(5, 2)), RNG.normal(size=(2,))


def _problem(lib: Any) -> tuple[list[Any], Callable[[], Any]]:
    """Least squares with a cubic term: curvature that changes, so the optimizers' states matter."""
    w = lib.tensor(W0, requires_grad=True)
    b = lib.tensor(B0, requires_grad=True)
    x, y = lib.tensor(X), lib.tensor(Y)

    def loss() -> Any:
        pred = x @ w + b
        return ((pred - y) ** 2).mean() + 0.1 * (w ** 4).sum()
    return [w, b], loss


def _run(lib: Any, make: Callable[[list[Any]], Any], steps: int, closure_step: bool = False) -> list[np.ndarray]:
    params, loss = _problem(lib)
    opt = make(params)
    out = []
    for _ in range(steps):
        def closure() -> Any:
            opt.zero_grad()
            value = loss()
            value.backward()
            return value
        if closure_step:
            opt.step(closure)
        else:
            closure()
            opt.step()
        out.append(np.concatenate([p.detach().numpy().ravel() for p in params]))
    return out


CASES = [
    ("Adadelta", {}), ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1}), ("Adadelta", {"maximize": True}),
    ("RAdam", {}), ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.05}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.05, "decoupled_weight_decay": True}),
    ("Rprop", {}), ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1), "maximize": True}),
    ("ASGD", {}), ("ASGD", {"lr": 0.05, "t0": 3, "lambd": 0.01, "weight_decay": 0.1}),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_match_torch(name: str, kwargs: dict) -> None:
    mine = _run(ferro, lambda ps: getattr(ferro.optim, name)(ps, **kwargs), 12)
    theirs = _run(torch, lambda ps: getattr(torch.optim, name)(ps, **kwargs), 12)
    for step, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"step {step}")


@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.5, "max_iter": 5, "history_size": 3}, {"max_iter": 1}])
def test_lbfgs_matches_torch(kwargs: dict) -> None:
    mine = _run(ferro, lambda ps: ferro.optim.LBFGS(ps, **kwargs), 4, closure_step=True)
    theirs = _run(torch, lambda ps: torch.optim.LBFGS(ps, **kwargs), 4, closure_step=True)
    for step, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10, err_msg=f"step {step}")


def test_lbfgs_converges_and_counts_evaluations() -> None:
    params, loss = _problem(ferro)
    opt = ferro.optim.LBFGS(params, max_iter=50)

    def closure() -> Any:
        opt.zero_grad()
        value = loss()
        value.backward()
        return value
    first = float(closure())
    opt.step(closure)
    assert float(closure()) < first * 0.5
    tparams, tloss = _problem(torch)
    topt = torch.optim.LBFGS(tparams, max_iter=50)

    def tclosure() -> Any:
        topt.zero_grad()
        value = tloss()
        value.backward()
        return value
    topt.step(tclosure)
    state, tstate = opt.state[params[0]], topt.state[tparams[0]]
    assert (state["n_iter"], state["func_evals"]) == (tstate["n_iter"], tstate["func_evals"])


BAD = [("Adadelta", {"lr": -1.0}), ("Adadelta", {"rho": 1.5}), ("Adadelta", {"eps": -1.0}),
       ("Adadelta", {"weight_decay": -0.1}), ("RAdam", {"lr": -1.0}), ("RAdam", {"betas": (1.0, 0.9)}),
       ("RAdam", {"eps": -1.0}), ("RAdam", {"weight_decay": -1.0}), ("Rprop", {"lr": -1.0}),
       ("Rprop", {"etas": (1.5, 1.2)}), ("ASGD", {"lr": -1.0}), ("ASGD", {"weight_decay": -1.0})]


@pytest.mark.parametrize(("name", "kwargs"), BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_hyperparameters_as_torch(name: str, kwargs: dict) -> None:
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as mine:
        getattr(ferro.optim, name)([ferro.zeros(2, requires_grad=True)], **kwargs)
    assert str(mine.value) == str(theirs.value)


def test_lbfgs_refusals() -> None:
    p = ferro.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="parameter groups"):
        ferro.optim.LBFGS([{"params": [p]}, {"params": [ferro.zeros(1, requires_grad=True)]}])
    with pytest.raises(NotImplementedError, match="strong_wolfe"):
        ferro.optim.LBFGS([p], line_search_fn="strong_wolfe")
    with pytest.raises(RuntimeError, match="strong_wolfe"):
        ferro.optim.LBFGS([p], line_search_fn="armijo")
