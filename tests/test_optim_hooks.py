"""Optimizer hooks against torch.optim: step pre/post hooks (per optimizer and global), state_dict and
load_state_dict hooks; the order they run in, what they get, what they may replace, and their removal.

Each scenario runs on both libraries through the same function, which records a trace of plain values
(names, argument counts, keys, numbers), and the traces must be equal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.optim as fo
import ferro.optim.optimizer as fopt_module

from conftest import count_calls

torch = pytest.importorskip("torch")
topt_module = pytest.importorskip("torch.optim.optimizer")

LIBS = {"ferro": (ferro, fo, fopt_module), "torch": (torch, torch.optim, topt_module)}
SHAPES = [(3, 2), (4,)]


def _params(lib: Any, seed: int = 0) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.standard_normal(s), requires_grad=True) for s in SHAPES]


def _grads(lib: Any, params: list[Any], seed: int) -> None:
    rng = np.random.default_rng(seed)
    for p in params:
        p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)))


def _both(scenario: Callable[[Any, Any, Any], Any]) -> None:
    """Run ``scenario(lib, optim, optimizer_module)`` on ferro and torch; their results must be equal."""
    got = {name: scenario(*mods) for name, mods in LIBS.items()}
    assert got["ferro"] == got["torch"]


@contextmanager
def _removed_after(*handles: Any) -> Iterator[None]:
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _step_trace(trace: list, name: str) -> Callable[..., None]:
    def hook(opt: Any, args: tuple, kwargs: dict) -> None:
        trace.append((name, len(args), args[0] is opt, sorted(kwargs)))
    return hook


def test_step_hooks_order_arguments_and_removal_like_torch() -> None:
    def scenario(lib: Any, optim: Any, mod: Any) -> list:
        ps = _params(lib)
        opt = optim.SGD(ps, lr=0.1)
        trace: list = []
        handles = [opt.register_step_pre_hook(_step_trace(trace, "pre1")),
                   opt.register_step_post_hook(_step_trace(trace, "post1")),
                   mod.register_optimizer_step_pre_hook(_step_trace(trace, "global_pre")),
                   mod.register_optimizer_step_post_hook(_step_trace(trace, "global_post")),
                   opt.register_step_pre_hook(_step_trace(trace, "pre2")),
                   opt.register_step_post_hook(_step_trace(trace, "post2"))]
        with _removed_after(*handles):
            _grads(lib, ps, 1)
            opt.step()
            trace.append("--")
            opt.step(lambda: 2.0)
            trace.append("--")
            trace.append(opt.step(closure=lambda: 3.0))
            handles[0].remove()
            handles[3].remove()
            handles[3].remove()  # a second removal does nothing
            trace.append("--")
            opt.step()
        trace.append([p.detach().numpy().round(12).tolist() for p in ps])
        return trace

    _both(scenario)


def test_global_hooks_reach_every_optimizer_until_removed() -> None:
    def scenario(lib: Any, optim: Any, mod: Any) -> list:
        trace: list = []
        pre = mod.register_optimizer_step_pre_hook(lambda o, a, k: trace.append(("pre", type(o).__name__)))
        post = mod.register_optimizer_step_post_hook(lambda o, a, k: trace.append(("post", type(o).__name__)))
        with _removed_after(pre, post):
            sgd, adam = optim.SGD(_params(lib), lr=0.1), optim.Adam(_params(lib, 1))
            for opt in (sgd, adam):
                _grads(lib, opt.param_groups[0]["params"], 2)
                opt.step()
            pre.remove()
            adam.step()
        adam.step()
        return trace

    _both(scenario)


def test_a_pre_hook_may_replace_the_arguments() -> None:
    def scenario(lib: Any, optim: Any, mod: Any) -> list:
        ps = _params(lib)
        opt = optim.SGD(ps, lr=0.1)
        trace: list = []

        def swap(o: Any, args: tuple, kwargs: dict) -> tuple:
            return args[:1], {"closure": lambda: 7.0}

        handles = [opt.register_step_pre_hook(swap),
                   opt.register_step_post_hook(lambda o, a, k: trace.append((len(a), k["closure"]())))]
        with _removed_after(*handles):
            _grads(lib, ps, 1)
            trace.append(opt.step(lambda: 1.0))
        bad = opt.register_step_pre_hook(lambda o, a, k: "not a pair")
        with _removed_after(bad), pytest.raises(RuntimeError, match="must return None or a tuple"):
            opt.step()
        return trace

    _both(scenario)


#: (optimizer, options, has a ``fused`` argument, the fused kernel its cpu path calls)
OPTIMIZERS = [
    ("SGD", {"lr": 0.1, "momentum": 0.9}, True, "fused_sgd"),
    ("Adam", {"lr": 0.01}, True, "fused_adam"),
    ("AdamW", {"lr": 0.01, "amsgrad": True}, True, "fused_adam"),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5}, False, "fused_rmsprop"),
    ("Adagrad", {"lr": 0.1}, True, "fused_adagrad"),
    ("Adamax", {"lr": 0.01}, False, "fused_adamax"),
    ("NAdam", {"lr": 0.01}, False, "fused_nadam"),
]


@pytest.mark.parametrize("fused", [None, False], ids=["fused", "unfused"])
@pytest.mark.parametrize(("name", "kw", "fused_arg", "kernel"), OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_hooks_run_once_per_step_on_every_optimizer(name: str, kw: dict, fused_arg: bool, kernel: str,
                                                    fused: bool | None, monkeypatch: pytest.MonkeyPatch) -> None:
    fps = _params(ferro)
    kernel_calls = count_calls(monkeypatch, fps[0]._device, [kernel])
    if fused is None or fused_arg:
        fopt = getattr(fo, name)(fps, **kw, **({} if fused is None else {"fused": fused}))
    else:
        fopt = getattr(fo, name)([{"params": fps, "fused": fused}], **kw)
    tps = _params(torch)
    topt = getattr(torch.optim, name)(tps, **kw)
    counts = {"pre": 0, "post": 0, "global_pre": 0, "global_post": 0}

    def count(key: str) -> Callable[..., None]:
        def hook(*_: Any) -> None:
            counts[key] += 1
        return hook

    handles = [fopt.register_step_pre_hook(count("pre")), fopt.register_step_post_hook(count("post")),
               fopt_module.register_optimizer_step_pre_hook(count("global_pre")),
               fopt_module.register_optimizer_step_post_hook(count("global_post"))]
    with _removed_after(*handles):
        for step in range(3):
            _grads(ferro, fps, step)
            _grads(torch, tps, step)
            fopt.step()
            topt.step()
            fopt.zero_grad()
            assert counts == dict.fromkeys(counts, step + 1)
    assert kernel_calls[kernel] == (3 * len(fps) if fused is None else 0)
    for fp, tp in zip(fps, tps, strict=True):  # the hooks leave the update alone (torch's NAdam keeps a float32)
        np.testing.assert_allclose(fp.detach().numpy(), tp.detach().numpy(), rtol=1e-7, atol=1e-9)
        assert fp.grad is None


def test_a_subclass_step_runs_the_hooks_once() -> None:
    class Halved(fo.SGD):
        def step(self, closure: Any = None) -> Any:  # calls the hooked base step: the hooks still run once
            for g in self.param_groups:
                g["lr"] /= 2
            return super().step(closure)

    ps = _params(ferro)
    opt = Halved(ps, lr=0.2)
    seen: list[float] = []
    with _removed_after(opt.register_step_pre_hook(lambda o, a, k: seen.append(o.param_groups[0]["lr"])),
                        opt.register_step_post_hook(lambda o, a, k: seen.append(o.param_groups[0]["lr"]))):
        _grads(ferro, ps, 0)
        before = ps[0].detach().numpy().copy()
        opt.step()
    assert seen == [0.2, 0.1]
    np.testing.assert_allclose(ps[0].detach().numpy(), before - 0.1 * ps[0].grad.numpy(), rtol=1e-12)


def test_state_dict_hooks_like_torch() -> None:
    def scenario(lib: Any, optim: Any, mod: Any) -> list:
        ps = _params(lib)
        opt = optim.Adam(ps, lr=0.01)
        _grads(lib, ps, 0)
        opt.step()
        trace: list = []

        def add_note(o: Any, sd: dict) -> None:
            trace.append(("post_note", sorted(sd)))
            sd["note"] = "kept"

        def wrap(o: Any, sd: dict) -> dict:
            trace.append(("post_wrap", sorted(sd)))
            return {"wrapped": sd}

        handles = [opt.register_state_dict_pre_hook(lambda o: trace.append("pre1")),
                   opt.register_state_dict_pre_hook(lambda o: trace.append("pre0"), prepend=True),
                   opt.register_state_dict_post_hook(wrap),
                   opt.register_state_dict_post_hook(add_note, prepend=True)]
        with _removed_after(*handles):
            sd = opt.state_dict()
        trace.append((sorted(sd), sd["wrapped"]["note"], sorted(sd["wrapped"]["state"]),
                      sorted(sd["wrapped"]["state"][0]), sd["wrapped"]["param_groups"][0]["lr"]))
        trace.append(sorted(opt.state_dict()))  # removed: the plain layout again
        return trace

    _both(scenario)


def test_load_state_dict_hooks_like_torch() -> None:
    def scenario(lib: Any, optim: Any, mod: Any) -> list:
        source = optim.SGD(_params(lib), lr=0.1, momentum=0.9)
        _grads(lib, source.param_groups[0]["params"], 0)
        source.step()
        saved = source.state_dict()
        opt = optim.SGD(_params(lib, 1), lr=0.5, momentum=0.9)
        trace: list = []

        def pre(o: Any, sd: dict) -> dict:
            trace.append(("pre", sd is saved, o.param_groups[0]["lr"]))
            sd["ignored"] = True  # a shallow copy: the caller's dict does not change
            groups = [dict(g, lr=0.25) for g in sd["param_groups"]]
            return {"state": sd["state"], "param_groups": groups}

        handles = [opt.register_load_state_dict_pre_hook(pre),
                   opt.register_load_state_dict_pre_hook(lambda o, sd: trace.append(("first", sorted(sd))),
                                                         prepend=True),
                   opt.register_load_state_dict_post_hook(lambda o: trace.append(("post", o.param_groups[0]["lr"])))]
        with _removed_after(*handles):
            opt.load_state_dict(saved)
        trace.append(("saved keys", sorted(saved)))
        trace.append(("loaded momentum", sorted(opt.state[opt.param_groups[0]["params"][0]])))
        opt.load_state_dict(saved)  # removed: nothing recorded, the saved lr comes back
        trace.append(("after removal", opt.param_groups[0]["lr"]))
        return trace

    _both(scenario)


def test_handles_work_as_context_managers_and_state_dict_is_unchanged_without_hooks() -> None:
    ps = _params(ferro)
    opt = fo.Adam(ps)
    _grads(ferro, ps, 0)
    opt.step()
    plain = opt.state_dict()
    seen: list[str] = []
    with opt.register_state_dict_pre_hook(lambda o: seen.append("pre")):
        opt.state_dict()
    after = opt.state_dict()
    assert seen == ["pre"]
    assert sorted(after) == sorted(plain) and after["param_groups"] == plain["param_groups"]
    for k, buffers in plain["state"].items():
        assert sorted(after["state"][k]) == sorted(buffers)
        for name, v in buffers.items():
            assert after["state"][k][name] is v  # the live buffers, as before
