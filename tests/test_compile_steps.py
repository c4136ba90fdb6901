"""ferro.compile's multi-tensor optimizer steps (``ferro._compile.passes.steps``, the CPU backend's flat update in
``ferro_cpu._fusion_step``): a compiled training step against the eager one (SGD, Adam, AdamW), 20 steps, bitwise
equal parameters and optimizer state, with a count that the flat update ran; and the cases where the optimizer's
own step must run instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import nn
from ferro._compile.passes.steps import MultiStep
from ferro.demo import make_mlp


def _model(dtype: Any) -> Any:
    ferro.manual_seed(0)
    return make_mlp(hidden=32, nn=nn).to(dtype=dtype)


def _data(dtype: Any) -> tuple[ferro.Tensor, ferro.Tensor]:
    rng = np.random.default_rng(0)
    return (ferro.tensor(rng.standard_normal((16, 64)), dtype=dtype), ferro.tensor(rng.integers(0, 10, 16)))


def _train(make_opt: Callable[[Any], Any], compiled: bool, dtype: Any = ferro.float32, steps: int = 20,
           between: Callable[[int, Any, Any], None] | None = None) -> tuple[Any, Any, Any]:
    model = _model(dtype)
    opt = make_opt(model)
    x, y = _data(dtype)

    def step(x: ferro.Tensor, y: ferro.Tensor) -> ferro.Tensor:
        opt.zero_grad()
        loss = ferro.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = ferro.compile(step) if compiled else step
    params = list(model.parameters())
    for i in range(steps):
        run(x, y)
        if between is not None:
            between(i, model, opt)
    assert all(p is q for p, q in zip(params, model.parameters()))
    return model, opt, run


def _runs(run: Any) -> int:
    return sum(n.fn.runs for e in run.cache.values() for g in e.graphs for n in g.nodes
               if isinstance(getattr(n, "fn", None), MultiStep))


def _same(a: Any, b: Any) -> None:
    for (name, p), q in zip(a[0].named_parameters(), b[0].parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy()), name
    for p, q in zip(a[0].parameters(), b[0].parameters()):
        sa, sb = a[1].state.get(p, {}), b[1].state.get(q, {})
        assert sa.keys() == sb.keys()
        for k in sa:
            if isinstance(sa[k], ferro.Tensor):
                assert np.array_equal(sa[k].numpy(), sb[k].numpy()), k
            else:
                assert sa[k] == sb[k], k


SGDS = {
    "momentum": {"lr": 0.05, "momentum": 0.9},
    "plain": {"lr": 0.05},
    "weight decay, nesterov": {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-2, "nesterov": True},
    "dampening, maximize": {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "maximize": True},
}


ADAMS = {
    "Adam": (ferro.optim.Adam, {"lr": 1e-2}),
    "AdamW": (ferro.optim.AdamW, {"lr": 1e-2}),
    "Adam, weight decay, amsgrad": (ferro.optim.Adam, {"lr": 1e-2, "weight_decay": 1e-2, "amsgrad": True}),
    "AdamW, maximize": (ferro.optim.AdamW, {"lr": 1e-2, "betas": (0.8, 0.99), "maximize": True}),
}
OPTIMIZERS = {**{f"SGD, {k}": (ferro.optim.SGD, v) for k, v in SGDS.items()}, **ADAMS}


@pytest.mark.parametrize("dtype", [ferro.float32, ferro.float64])
@pytest.mark.parametrize("kind", list(OPTIMIZERS))
def test_flat_step_matches_eager(kind: str, dtype: Any) -> None:
    def make(model: Any) -> Any:
        cls, kwargs = OPTIMIZERS[kind]
        return cls(model.parameters(), **kwargs)
    eager = _train(make, False, dtype)
    compiled = _train(make, True, dtype)
    _same(eager, compiled)
    assert _runs(compiled[2]) == 18  # a warm-up and a capture run eagerly, then every replay is flat
    assert all(p._data.base is not None for p in compiled[0].parameters())  # laid out as views of a flat array


def test_flat_adam_after_eager_steps() -> None:
    """Steps the optimizer's own step made meanwhile (a hook registered for a while) advance the step count the
    flat update reads."""
    def make(model: Any) -> Any:
        return ferro.optim.AdamW(model.parameters(), lr=1e-2)
    handle: list[Any] = []

    def meddle(i: int, model: Any, opt: Any) -> None:
        if i == 4:
            handle.append(opt.register_step_post_hook(lambda *a: None))
        if i == 9:
            handle[0].remove()
    eager = _train(make, False, between=meddle)
    handle.clear()
    compiled = _train(make, True, between=meddle)
    _same(eager, compiled)
    assert _runs(compiled[2]) == 13  # steps 2-4 and 10-19 (0-based)


def test_flat_step_skips_parameters_without_gradients() -> None:
    """A frozen parameter (no gradient) is left out of the flat arrays, as eager's step leaves it alone."""
    def make(model: Any) -> Any:
        model[0].weight.requires_grad_(False)
        return ferro.optim.AdamW(model.parameters(), lr=1e-2)
    eager = _train(make, False)
    compiled = _train(make, True)
    _same(eager, compiled)
    assert _runs(compiled[2]) == 18
    assert compiled[0][0].weight._data.base is None and compiled[0][0].bias._data.base is not None


def test_flat_sgd_param_groups_and_scheduler() -> None:
    def make(model: Any) -> Any:
        layers = [m for m in model if isinstance(m, nn.Linear)]
        return ferro.optim.SGD([{"params": layers[0].parameters(), "lr": 0.1},
                                {"params": [p for m in layers[1:] for p in m.parameters()]}], lr=0.02, momentum=0.9)

    def decay(i: int, model: Any, opt: Any) -> None:
        for group in opt.param_groups:
            group["lr"] *= 0.9  # read at each replay, as the eager step reads it
    eager = _train(make, False, between=decay)
    compiled = _train(make, True, between=decay)
    _same(eager, compiled)
    assert _runs(compiled[2]) == 18


def test_flat_sgd_falls_back_to_the_optimizers_step() -> None:
    """A step hook, a parameter whose data is replaced, a changed momentum: the optimizer's own step runs, with
    eager's values."""
    def make(model: Any) -> Any:
        return ferro.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def meddle(i: int, model: Any, opt: Any) -> None:
        if i == 5:
            opt.register_step_pre_hook(lambda *a: None)
        if i == 8:
            opt._optimizer_step_pre_hooks.clear()
        if i == 10:
            w = model[0].weight
            w.data = w.data.clone()  # a new array: no longer the flat array's view
        if i == 14:
            opt.param_groups[0]["momentum"] = 0.5
    eager = _train(make, False, between=meddle)
    compiled = _train(make, True, between=meddle)
    _same(eager, compiled)
    assert _runs(compiled[2]) == 6  # steps 2-5 and 9-10 (0-based): flat; with the hook and after step 10 not


def test_flat_sgd_leaves_a_parameter_with_a_view_alone() -> None:
    """A parameter another tensor views is not relaid out (the view would miss the updates)."""
    held = []

    def make(model: Any) -> Any:
        held.append(model[0].weight.detach()[0])  # a view of the first weight's array
        return ferro.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    eager = _train(make, False)
    compiled = _train(make, True)
    _same(eager, compiled)
    assert _runs(compiled[2]) == 0
    assert np.array_equal(held[1].numpy(), compiled[0][0].weight.detach()[0].numpy())  # the view sees the updates
