"""ferro.optim against torch.optim: same parameters, same gradients, same updates and state.

Every optimizer runs a few steps beside PyTorch's on copies of the same
parameters with the same gradients, for each of its options; then state
dicts (PyTorch's layout, round trips, loading PyTorch's own state), parameter
groups, the refusals PyTorch makes, and the fused kernels (NumPy's, and one
supplied through a real ``ferro_register_kernels`` hook).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import ferro
import ferro.optim as fo

from conftest import run_json

SHAPES = [(3, 4), (5,), (2, 1, 3)]
STEPS = 5

#: (optimizer, options): every option each optimizer has, alone and combined.
CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.8, "nesterov": True, "weight_decay": 0.05, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "amsgrad": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "maximize": True, "weight_decay": 0.2}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "centered": True, "momentum": 0.5, "weight_decay": 0.1, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.2}),
    ("Adagrad", {"lr": 0.1, "eps": 1e-6, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.7, 0.9), "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "maximize": True}),
]
#: The optimizers whose PyTorch signature has ``fused=``; the others take it as a group entry.
FUSED_ARG = {"SGD", "Adam", "AdamW", "Adagrad"}


def _make(name: str, params: list, kw: dict, fused: bool | None = None) -> fo.Optimizer:
    """The ferro optimizer ``name``; ``fused`` given as PyTorch does, or as a group entry."""
    if fused is None:
        return getattr(fo, name)(params, **kw)
    if name in FUSED_ARG:
        return getattr(fo, name)(params, **kw, fused=fused)
    return getattr(fo, name)([{"params": params, "fused": fused}], **kw)


def _ids(case: tuple[str, dict]) -> str:
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


def _values(seed: int, dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def _pair(dtype: str = "float64", seed: int = 0) -> tuple[list[ferro.Tensor], list[torch.Tensor]]:
    init = _values(seed, dtype)
    return ([ferro.tensor(a, requires_grad=True) for a in init],
            [torch.tensor(a, requires_grad=True) for a in init])


def _set_grads(fps: list, tps: list, seed: int, dtype: str) -> None:
    for fp, tp, g in zip(fps, tps, _values(seed, dtype), strict=True):
        fp.grad = ferro.tensor(g)
        tp.grad = torch.tensor(g)


def _tol(dtype: str) -> dict:
    return {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-5, "atol": 1e-6}


def _compare(fopt: fo.Optimizer, topt: torch.optim.Optimizer, fps: list, tps: list, dtype: str) -> None:
    tol = _tol(dtype)
    for fp, tp in zip(fps, tps, strict=True):
        np.testing.assert_allclose(fp.detach().numpy(), tp.detach().numpy(), **tol)
        mine, theirs = fopt.state.get(fp, {}), topt.state.get(tp, {})
        theirs = {k: v for k, v in theirs.items() if v is not None}  # SGD without momentum keeps None
        assert sorted(mine) == sorted(theirs)
        for k, v in theirs.items():
            if k in ("step", "mu_product"):
                assert mine[k] == pytest.approx(float(v), rel=1e-6)
            else:
                assert mine[k].dtype == fp.dtype
                np.testing.assert_allclose(mine[k].numpy(), v.numpy(), **tol)


@pytest.fixture
def torch_scalars_like_params(request: pytest.FixtureRequest):
    """PyTorch keeps NAdam's ``mu_product`` in its default dtype (float32); ferro in a Python float.
    For float64 comparisons, PyTorch's default dtype is float64 (then it is a float64 too)."""
    before = torch.get_default_dtype()
    yield lambda dtype: torch.set_default_dtype(getattr(torch, dtype))
    torch.set_default_dtype(before)


@pytest.mark.parametrize("case, fused", [(c, None) for c in CASES] + [(c, False) for c in CASES],
                         ids=lambda v: _ids(v) if isinstance(v, tuple) else f"fused={v}")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matches_torch(case: tuple[str, dict], dtype: str, fused: bool | None, torch_scalars_like_params) -> None:
    torch_scalars_like_params(dtype)
    name, kw = case
    fps, tps = _pair(dtype)
    fopt = _make(name, fps, kw, fused)
    topt = getattr(torch.optim, name)(tps, **kw)
    for step in range(STEPS):
        _set_grads(fps, tps, 100 + step, dtype)
        fopt.step()
        topt.step()
        _compare(fopt, topt, fps, tps, dtype)


@pytest.mark.parametrize("case, dtype", [(c, d) for c in CASES for d in ("float64", "float32")]
                         + [(c, "float16") for c in CASES if c[0] == "SGD"],
                         ids=lambda v: _ids(v) if isinstance(v, tuple) else v)
def test_fused_equals_unfused_bitwise(case: tuple[str, dict], dtype: str) -> None:
    # The NumPy kernel runs the unfused path's exact sequence of ufuncs in the parameter's dtype, with
    # the hyperparameters cast to it as ferro's ops cast Python scalars: nothing rounds differently.
    # The (300, 1000) parameter goes through ferro-cpu's pooled-buffer kernels. (float16 only for SGD:
    # Adam's default eps underflows to 0 in float16, in PyTorch too.)
    name, kw = case
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s).astype(dtype) for s in [(300, 1000), (7,), (4, 5)]]
    runs = []
    for fused in (True, False):
        ps = [ferro.tensor(a, requires_grad=True) for a in init]
        opt = _make(name, ps, kw, fused)
        grng = np.random.default_rng(2)
        for _ in range(4):
            for p in ps:
                p.grad = ferro.tensor(grng.standard_normal(p.shape).astype(dtype))
            opt.step()
        runs.append(([p.detach().numpy() for p in ps],
                     [{k: v.numpy() if isinstance(v, ferro.Tensor) else v for k, v in opt.state.get(p, {}).items()}
                      for p in ps]))
    (fused_params, fused_state), (plain_params, plain_state) = runs
    for a, b in zip(fused_params, plain_params, strict=True):
        np.testing.assert_array_equal(a, b)
    for sa, sb in zip(fused_state, plain_state, strict=True):
        assert sorted(sa) == sorted(sb)
        for k in sa:
            np.testing.assert_array_equal(sa[k], sb[k])


def test_the_fused_path_is_taken_on_cpu_by_default() -> None:
    dev = ferro.ones(1)._device
    fused, table = dev._ops["adam_step"]  # the op's kernel, bound as every op's is
    assert fused is dev._kernels["fused_adam"]
    assert ferro.backends.get("cpu").supports("adam_step", ferro.float32)
    seen = []

    def spy(*args: object) -> None:
        seen.append(len(args))
        fused(*args)
    p = ferro.ones(3, requires_grad=True)
    dev._ops["adam_step"] = (spy, table)
    try:
        opt = fo.Adam([p])
        p.grad = ferro.ones(3)
        opt.step()
        assert seen == [14]
        fo.Adam([p], fused=False).step()
        assert seen == [14], "fused=False never calls the kernel"
    finally:
        dev._ops["adam_step"] = (fused, table)


def test_fused_true_needs_the_kernel_and_excludes_foreach() -> None:
    with pytest.raises(RuntimeError, match="cannot be `True` together"):
        fo.Adam([ferro.ones(2, requires_grad=True)], fused=True, foreach=True)
    fo.RMSprop([{"params": [ferro.ones(2, requires_grad=True)], "fused": True}])  # the cpu backend has it
    if "toy" not in ferro.backends.available():
        pytest.skip("the ferro-testplugins 'toy' backend is not installed (pip install -e tests/plugins)")
    p = ferro.ones(2, device="toy", requires_grad=True)
    with pytest.raises(RuntimeError, match=r"'fused_adam' kernel .* backend 'toy'"):
        fo.Adam([p], fused=True)
    with pytest.raises(RuntimeError, match=r"'fused_nadam' kernel .* backend 'toy'"):
        fo.NAdam([{"params": [p], "fused": True}])


def test_a_backend_without_fused_kernels_runs_the_unfused_path() -> None:
    if "toy" not in ferro.backends.available():
        pytest.skip("the ferro-testplugins 'toy' backend is not installed (pip install -e tests/plugins)")
    init = _values(3, "float32")
    results = []
    for device in ("cpu", "toy"):
        ps = [ferro.tensor(a, device=device, requires_grad=True) for a in init]
        opt = fo.Adam(ps, lr=0.01, amsgrad=True, weight_decay=0.1)
        for step in range(3):
            for p, g in zip(ps, _values(10 + step, "float32"), strict=True):
                p.grad = ferro.tensor(g, device=device)
            opt.step()
        results.append([p.detach().to("cpu").numpy() for p in ps])
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_plugin_supplies_fused_kernels_through_its_hook() -> None:
    got = run_json("""
        import importlib, json, warnings, numpy as np, ferro, ferro.optim as fo
        warnings.simplefilter('ignore')
        out = {}
        for device in ('cpu', 'toy'):
            for name, kw in (('Adam', {'amsgrad': True, 'weight_decay': 0.1}), ('SGD', {'lr': 0.1, 'momentum': 0.9})):
                finals = []
                for fused in (None, False):
                    rng = np.random.default_rng(0)
                    ps = [ferro.tensor(rng.standard_normal(s).astype('float32'), device=device, requires_grad=True)
                          for s in [(4, 3), (6,)]]
                    opt = getattr(fo, name)(ps, fused=fused, **kw)
                    for _ in range(3):
                        for p in ps:
                            p.grad = ferro.tensor(rng.standard_normal(tuple(p.shape)).astype('float32'), device=device)
                        opt.step()
                    finals.append([p.detach().to('cpu').numpy().tolist() for p in ps])
                out[f'{device}.{name}.equal'] = finals[0] == finals[1]
        out['calls'] = importlib.import_module('ferro_testplugins.fused').calls
        print(json.dumps(out))
    """, env={"FERRO_TESTPLUGINS_FUSED": "1"})
    # Two parameters, three steps, fused=None only: six calls per backend and kernel.
    calls = {k: v for k, v in got.pop("calls").items() if v}
    assert calls == {"cpu.fused_sgd": 6, "cpu.fused_adam": 6, "toy.fused_sgd": 6, "toy.fused_adam": 6}
    assert all(got.values()), got


def test_a_training_run_matches_torch() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((32, 4)).astype("float32"), rng.standard_normal((32, 1)).astype("float32")
    w0, b0 = rng.standard_normal((4, 1)).astype("float32"), np.zeros(1, "float32")
    fw, fb = ferro.tensor(w0, requires_grad=True), ferro.tensor(b0, requires_grad=True)
    tw, tb = torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    fopt, topt = fo.AdamW([fw, fb], lr=0.05), torch.optim.AdamW([tw, tb], lr=0.05)
    fx, fy, tx, ty = ferro.tensor(x), ferro.tensor(y), torch.tensor(x), torch.tensor(y)
    losses = []
    for _ in range(10):
        fopt.zero_grad()
        topt.zero_grad()
        fl = ((fx @ fw + fb - fy) ** 2).mean()
        tl = ((tx @ tw + tb - ty) ** 2).mean()
        fl.backward()
        tl.backward()
        fopt.step()
        topt.step()
        losses.append((fl.item(), tl.item()))
    np.testing.assert_allclose([a for a, _ in losses], [b for _, b in losses], rtol=1e-5)
    assert losses[-1][0] < losses[0][0]
    np.testing.assert_allclose(fw.detach().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)


# -- the update: no graph, version counters, closures -----------------------------------------------


@pytest.mark.parametrize("fused", [None, False])
def test_step_records_no_graph_and_bumps_versions(fused: bool) -> None:
    p = ferro.ones(3, requires_grad=True)
    (p * 2).sum().backward()
    opt = fo.Adam([p], fused=fused)
    v = p._version
    with ferro.enable_grad():
        opt.step()
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    assert p._version > v
    assert all(t.grad_fn is None and not t.requires_grad for t in opt.state[p].values() if isinstance(t, ferro.Tensor))


def test_a_graph_that_saved_a_parameter_sees_the_update() -> None:
    p = ferro.ones(3, requires_grad=True)
    y = (p * p).sum()
    y.backward(retain_graph=True)
    fo.SGD([p], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_closure_runs_with_grad_and_its_loss_is_returned() -> None:
    p = ferro.tensor([1.0, -2.0], requires_grad=True)
    opt = fo.SGD([p], lr=0.5)

    def closure() -> ferro.Tensor:
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    with ferro.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_array_equal(p.detach().numpy(), [0.0, 0.0])


def test_parameters_without_grad_are_skipped() -> None:
    a, b = ferro.ones(2, requires_grad=True), ferro.ones(2, requires_grad=True)
    opt = fo.Adam([a, b])
    a.grad = ferro.ones(2)
    opt.step()
    assert b not in opt.state and a in opt.state
    np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])


def test_zero_grad() -> None:
    p = ferro.ones(2, requires_grad=True)
    opt = fo.SGD([p], lr=0.1)
    (p * 3).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None


# -- parameter groups --------------------------------------------------------------------------------


def test_param_groups_with_their_own_options_match_torch() -> None:
    fps, tps = _pair()
    fopt = fo.SGD([{"params": fps[:2]}, {"params": fps[2], "lr": 0.01, "nesterov": True}], lr=0.1, momentum=0.9)
    topt = torch.optim.SGD([{"params": tps[:2]}, {"params": tps[2], "lr": 0.01, "nesterov": True}], lr=0.1,
                           momentum=0.9)
    assert [g["lr"] for g in fopt.param_groups] == [0.1, 0.01]
    assert fopt.param_groups[1]["params"][0] is fps[2]
    for step in range(STEPS):
        _set_grads(fps, tps, step, "float64")
        fopt.step()
        topt.step()
    _compare(fopt, topt, fps, tps, "float64")


def test_add_param_group_later_matches_torch() -> None:
    fps, tps = _pair()
    fopt, topt = fo.Adam(fps[:1], lr=0.01), torch.optim.Adam(tps[:1], lr=0.01)
    for step in range(2):
        _set_grads(fps, tps, step, "float64")
        fopt.step()
        topt.step()
    fopt.add_param_group({"params": fps[1:], "lr": 0.1, "amsgrad": True})
    topt.add_param_group({"params": tps[1:], "lr": 0.1, "amsgrad": True})
    assert {k: v for k, v in fopt.param_groups[1].items() if k != "params"} == \
        {k: v for k, v in topt.param_groups[1].items() if k not in ("params", "capturable", "differentiable")}
    for step in range(2, 5):
        _set_grads(fps, tps, step, "float64")
        fopt.step()
        topt.step()
    _compare(fopt, topt, fps, tps, "float64")


# -- state dicts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam"])
def test_state_dict_has_torch_layout(name: str) -> None:
    kw = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    fps, tps = _pair()
    fopt = getattr(fo, name)([{"params": fps[:2]}, {"params": fps[2:], "lr": 0.5}], lr=0.1, **kw)
    topt = getattr(torch.optim, name)([{"params": tps[:2]}, {"params": tps[2:], "lr": 0.5}], lr=0.1, **kw)
    _set_grads(fps, tps, 0, "float64")
    fopt.step()
    topt.step()
    mine, theirs = fopt.state_dict(), topt.state_dict()
    assert sorted(mine) == ["param_groups", "state"]
    assert sorted(mine["state"]) == sorted(theirs["state"]) == [0, 1, 2]
    for k in mine["state"]:
        assert sorted(mine["state"][k]) == sorted(theirs["state"][k])
    skip = {"capturable", "differentiable"}
    for a, b in zip(mine["param_groups"], theirs["param_groups"], strict=True):
        assert a == {k: v for k, v in b.items() if k not in skip}
    # Only tensors and plain Python numbers / strings / lists (and None for foreach/fused, as PyTorch)
    def plain(v: object) -> bool:
        return v is None or isinstance(v, (int, float, str, bool)) or \
            (isinstance(v, (list, tuple)) and all(plain(x) for x in v))
    assert all(isinstance(v, ferro.Tensor) or plain(v) for s in mine["state"].values() for v in s.values())
    json.dumps(mine["param_groups"])


@pytest.mark.parametrize("case", [c for c in CASES if c[0] != "SGD" or "momentum" in c[1]], ids=_ids)
def test_state_dict_round_trip_continues_identically(case: tuple[str, dict]) -> None:
    name, kw = case
    fps, _ = _pair()
    opt = getattr(fo, name)(fps, **kw)
    for step in range(3):
        for p, g in zip(fps, _values(step, "float64"), strict=True):
            p.grad = ferro.tensor(g)
        opt.step()
    sd = opt.state_dict()
    sd = {"state": sd["state"], "param_groups": json.loads(json.dumps(sd["param_groups"]))}  # as if from a file
    copies = [ferro.tensor(p.detach().numpy(), requires_grad=True) for p in fps]
    other = getattr(fo, name)(copies, lr=123.0)  # hyperparameters come from the state dict
    other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    for step in range(3, 6):
        for ps in (fps, copies):
            for p, g in zip(ps, _values(step, "float64"), strict=True):
                p.grad = ferro.tensor(g)
        opt.step()
        other.step()
    for a, b in zip(fps, copies, strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for a, b in zip(fps, copies, strict=True):  # the loaded buffers are copies, not the original's
        for k, v in opt.state[a].items():
            if isinstance(v, ferro.Tensor):
                assert other.state[b][k] is not v


@pytest.mark.parametrize("name, kw", [("Adam", {"amsgrad": True, "lr": 0.01}), ("SGD", {"momentum": 0.9, "lr": 0.1}),
                                      ("NAdam", {"lr": 0.01}), ("Adagrad", {"lr": 0.1})])
def test_load_torchs_state_dict_and_continue_like_torch(name: str, kw: dict, torch_scalars_like_params) -> None:
    torch_scalars_like_params("float64")
    fps, tps = _pair()
    topt = getattr(torch.optim, name)(tps, **kw)
    for step in range(3):
        _set_grads(fps, tps, step, "float64")
        topt.step()
    fps = [ferro.tensor(tp.detach().numpy(), requires_grad=True) for tp in tps]  # where torch's are now
    tsd = topt.state_dict()
    sd = {"state": {i: {k: ferro.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for k, v in s.items()}
                    for i, s in tsd["state"].items()},
          "param_groups": tsd["param_groups"]}
    fopt = getattr(fo, name)(fps, **kw)
    fopt.load_state_dict(sd)
    assert isinstance(fopt.state[fps[0]].get("step", 0.0), float)
    for step in range(3, 6):
        _set_grads(fps, tps, step, "float64")
        fopt.step()
        topt.step()
    _compare(fopt, topt, fps, tps, "float64")


def test_load_state_dict_refuses_a_mismatch() -> None:
    a = fo.SGD([ferro.ones(2, requires_grad=True)], lr=0.1)
    b = fo.SGD([{"params": [ferro.ones(2, requires_grad=True)]}, {"params": [ferro.ones(1, requires_grad=True)]}],
               lr=0.1)
    c = fo.SGD([ferro.ones(2, requires_grad=True), ferro.ones(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        a.load_state_dict(b.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size"):
        a.load_state_dict(c.state_dict())
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        a.load_state_dict({"param_groups": []})


# -- refusals ------------------------------------------------------------------------------------------


def _p() -> ferro.Tensor:
    return ferro.ones(2, requires_grad=True)


@pytest.mark.parametrize("make, error, words", [
    (lambda: fo.SGD(_p()), TypeError, "iterable of Tensors or dicts"),
    (lambda: fo.SGD([]), ValueError, "empty parameter list"),
    (lambda: fo.SGD({_p()}), TypeError, "ordered collections"),
    (lambda: fo.SGD([1.0]), TypeError, "can only optimize Tensors"),
    (lambda: fo.SGD([ferro.ones(2, requires_grad=True) * 2]), ValueError, "can't optimize a non-leaf Tensor"),
    (lambda: fo.SGD([ferro.ones(2, dtype=ferro.int64)]), ValueError, "must be floating point"),
    (lambda: (lambda p: fo.SGD([p, p]))(_p()), ValueError, "duplicate parameters"),
    (lambda: (lambda p: fo.SGD([{"params": [p]}, {"params": [p]}]))(_p()), ValueError,
     "more than one parameter group"),
    (lambda: fo.SGD([_p()], lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
    (lambda: fo.SGD([_p()], momentum=-1), ValueError, "Invalid momentum value: -1"),
    (lambda: fo.SGD([_p()], weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    (lambda: fo.SGD([_p()], momentum=0.9, dampening=0.1, nesterov=True), ValueError, "Nesterov momentum requires"),
    (lambda: fo.SGD([_p()], nesterov=True), ValueError, "Nesterov momentum requires"),
    (lambda: fo.Adam([_p()], betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0: 1.0"),
    (lambda: fo.Adam([_p()], betas=(0.9, -0.1)), ValueError, "Invalid beta parameter at index 1: -0.1"),
    (lambda: fo.AdamW([_p()], eps=-1e-8), ValueError, "Invalid epsilon value: -1e-08"),
    (lambda: fo.Adam([{"params": [_p()], "lr": -1.0}]), ValueError, "Invalid learning rate: -1.0"),
    (lambda: fo.RMSprop([_p()], alpha=-0.5), ValueError, "Invalid alpha value: -0.5"),
    (lambda: fo.Adagrad([_p()], lr_decay=-1), ValueError, "Invalid lr_decay value: -1"),
    (lambda: fo.Adagrad([_p()], initial_accumulator_value=-1), ValueError, "Invalid initial_accumulator_value"),
    (lambda: fo.NAdam([_p()], momentum_decay=-1), ValueError, "Invalid momentum_decay value: -1"),
    (lambda: fo.Optimizer([_p()], {"lr": fo.optimizer.required}), ValueError,
     "didn't specify a value of required optimization parameter lr"),
])
def test_refusals(make, error: type, words: str) -> None:
    with pytest.raises(error, match=words.replace("(", r"\(")):
        make()


def test_add_param_group_refusals_change_nothing() -> None:
    p = _p()
    opt = fo.Adam([p])
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [p]})
    with pytest.raises(ValueError, match="Invalid beta"):
        opt.add_param_group({"params": [_p()], "betas": (0.9, 1.5)})
    assert len(opt.param_groups) == 1


def test_repr_lists_the_groups() -> None:
    text = repr(fo.SGD([_p()], lr=0.25, momentum=0.5))
    assert text.startswith("SGD (") and "Parameter Group 0" in text and "lr: 0.25" in text and "momentum: 0.5" in text


def test_state_dict_saved_with_ferro_save_continues_identically(tmp_path) -> None:
    fps, _ = _pair("float32")
    opt = fo.Adam([{"params": fps[:2]}, {"params": fps[2:], "lr": 0.1, "amsgrad": True}], lr=0.01)
    for step in range(2):
        for p, g in zip(fps, _values(step, "float32"), strict=True):
            p.grad = ferro.tensor(g)
        opt.step()
    path = tmp_path / "optimizer.safetensors"
    ferro.save(opt.state_dict(), path)
    copies = [ferro.tensor(p.detach().numpy(), requires_grad=True) for p in fps]
    other = fo.Adam([{"params": copies[:2]}, {"params": copies[2:]}])
    other.load_state_dict(ferro.load(path))
    assert other.param_groups[1]["amsgrad"] is True and other.param_groups[1]["betas"] == (0.9, 0.999)
    for step in range(2, 4):
        for ps in (fps, copies):
            for p, g in zip(ps, _values(step, "float32"), strict=True):
                p.grad = ferro.tensor(g)
        opt.step()
        other.step()
    for a, b in zip(fps, copies, strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


# -- every installed backend -----------------------------------------------------------------------------

BACKEND_CASES = [c for c in CASES if c[1] and c[0] != "SGD"] + [CASES[5]]


def test_every_optimizer_on_every_backend_matches_cpu(device: ferro.device) -> None:
    # The unfused path (or the backend's own fused kernels) on each installed backend, against ferro-cpu.
    for name, kw in BACKEND_CASES:
        results = []
        for dev in (device, ferro.device("cpu")):
            ps = [ferro.tensor(a, device=dev, requires_grad=True) for a in _values(0, "float32")]
            opt = getattr(fo, name)(ps, **kw)
            for step in range(3):
                for p, g in zip(ps, _values(100 + step, "float32"), strict=True):
                    p.grad = ferro.tensor(g, device=dev)
                opt.step()
            results.append([p.detach().to("cpu").numpy() for p in ps])
        for a, b in zip(*results, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{name} {kw} on {device}")
