"""ferro.amp's GradScaler and its fused gradient check against PyTorch (torch.amp.GradScaler, CPU), on cpu and
opencl:0: the same losses give the same skipped steps, the same scales after every update and the same
parameters, through real overflows (a scale too large for float32) and injected inf / nan gradients; the state
round-trips through ferro.save; the errors are PyTorch's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import ferro
from ferro.amp import GradScaler
from ferro.errors import DTypeError

from conftest import count_calls

RNG = np.random.default_rng(5)
DTYPES = {"float32": (ferro.float32, torch.float32), "float64": (ferro.float64, torch.float64),
          "float16": (ferro.float16, torch.float16), "bfloat16": (ferro.bfloat16, torch.bfloat16)}


def _held(dev: str, dtype: ferro.DType) -> None:
    if dtype not in ferro.backends.get(dev.split(":")[0]).dtypes(0):
        pytest.skip(f"{dev} has no {dtype}")


# -- the op amp_unscale_ against torch._amp_foreach_non_finite_check_and_unscale_ ---------------------------


def _grads(kind: str) -> list[np.ndarray]:
    gs = [RNG.standard_normal(s) * 1e3 for s in ((7, 5), (3,), (2, 3, 4), ())]
    if kind == "inf":
        gs[2][1, 2, 3] = np.inf
    elif kind == "nan":
        gs[0][4, 1] = np.nan
    elif kind == "-inf":
        gs[3] = np.array(-np.inf)
    return gs


@pytest.mark.parametrize("path", ["kernel", "decomposition"])
@pytest.mark.parametrize("kind", ["finite", "inf", "nan", "-inf"])
@pytest.mark.parametrize("name", list(DTYPES))
def test_unscale_matches_torch(dev: str, monkeypatch: Any, path: str, kind: str, name: str) -> None:
    fdt, tdt = DTYPES[name]
    _held(dev, fdt)
    arrays = _grads(kind)
    ours = [ferro.tensor(a, device=dev).to(fdt) for a in arrays]
    theirs = [torch.tensor(a).to(tdt) for a in arrays]
    found, tfound = ferro.zeros((), device=dev), torch.zeros(())
    inv = 1 / 3  # not a power of two: the product rounds, once
    d = ours[0]._device
    calls = count_calls(monkeypatch, d, ["fused_amp_unscale"])
    if path == "decomposition":
        monkeypatch.delitem(d._ops, "amp_unscale_")
    ferro.amp.amp_unscale_(ours, found, inv)
    torch._amp_foreach_non_finite_check_and_unscale_(theirs, tfound, torch.tensor(inv, dtype=torch.float32))
    assert calls["fused_amp_unscale"] == (1 if path == "kernel" else 0)
    assert found.item() == tfound.item() == (0.0 if kind == "finite" else 1.0)
    for a, b in zip(ours, theirs, strict=True):
        got = a.to(ferro.float64).numpy()
        np.testing.assert_array_equal(got, b.to(torch.float64).numpy())  # bit for bit, inf and nan included


@pytest.mark.parametrize("path", ["kernel", "decomposition"])
def test_unscale_of_strided_views_matches_torch(dev: str, monkeypatch: Any, path: str) -> None:
    base = RNG.standard_normal((6, 8)).astype(np.float32) * 100
    base[5, 6] = np.nan  # outside both views: not seen
    ours, theirs = ferro.tensor(base, device=dev), torch.tensor(base)
    if path == "decomposition":
        monkeypatch.delitem(ours._device._ops, "amp_unscale_")
    found, tfound = ferro.zeros((), device=dev), torch.zeros(())
    ferro.amp.amp_unscale_([ours[:4, ::3], ours[1:3].T], found, 1 / 3)
    torch._amp_foreach_non_finite_check_and_unscale_([theirs[:4, ::3], theirs[1:3].T], tfound,
                                                     torch.tensor(1 / 3))
    assert found.item() == tfound.item() == 0.0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # the views written through, the rest untouched


def test_opencl_kernel_unscales_float16_storage_on_any_device(ocl: Any) -> None:
    # float16 is stored as half and computed in float (vload_half / vstore_half need no cl_khr_fp16): the kernel
    # runs it even on a device whose table does not claim float16 (PoCL's CPU device), checked below the registry
    from ferro_opencl._fused import fused_kernels
    rt = ocl.runtime(0)
    kernel = fused_kernels(rt)["fused_amp_unscale"]
    for kind in ("finite", "nan"):
        arrays = [a.astype(np.float16) for a in _grads(kind)[:3]]
        found = rt.from_host(np.zeros((), np.float32))
        got = [rt.from_host(a) for a in arrays]
        kernel(got, found, 1 / 3)
        want = [torch.tensor(a) for a in arrays]
        tfound = torch.zeros(())
        torch._amp_foreach_non_finite_check_and_unscale_(want, tfound, torch.tensor(1 / 3))
        assert found.get().item() == tfound.item()
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a.get(), b.numpy())


def test_unscale_keeps_a_raised_flag_and_skips_multiplying_by_one(dev: str) -> None:
    g = ferro.tensor([1.5, -2.0], device=dev)
    found = ferro.ones((), device=dev)  # raised by an earlier group: stays raised
    ferro.amp.amp_unscale_([g], found, 1.0)
    assert found.item() == 1.0 and g.tolist() == [1.5, -2.0]


def test_unscale_refuses_bad_arguments_and_leaves_them_alone() -> None:
    g, found = ferro.tensor([1.0, 2.0]), ferro.zeros(())
    with pytest.raises(TypeError, match=r"amp_unscale_.*grads"):
        ferro.amp.amp_unscale_(g, found, 0.5)
    with pytest.raises(DTypeError, match=r"amp_unscale_.*int64"):
        ferro.amp.amp_unscale_([ferro.tensor([1, 2])], found, 0.5)
    with pytest.raises(DTypeError, match=r"amp_unscale_.*one dtype"):
        ferro.amp.amp_unscale_([g, ferro.tensor([1.0], dtype=ferro.float64)], found, 0.5)
    with pytest.raises(TypeError, match=r"amp_unscale_.*found_inf"):
        ferro.amp.amp_unscale_([g], ferro.zeros((), dtype=ferro.float64), 0.5)
    with pytest.raises(TypeError, match=r"amp_unscale_.*inv_scale"):
        ferro.amp.amp_unscale_([g], found, "half")
    assert g.tolist() == [1.0, 2.0] and found.item() == 0.0


def test_a_primitives_only_backend_runs_the_decomposition() -> None:
    if "prims" not in ferro.backends.available():
        pytest.skip("the ferro-testplugins 'prims' backend is not installed (pip install -e tests/plugins)")
    g = ferro.tensor([4.0, np.nan, 8.0], device="prims")
    found = ferro.zeros((), device="prims")
    assert "amp_unscale_" not in g._device._ops  # no kernel there: the decomposition runs
    ferro.amp.amp_unscale_([g], found, 0.25)
    assert found.item() == 1.0
    np.testing.assert_array_equal(g.numpy(), [1.0, np.nan, 2.0])


# -- a training sequence against torch.amp.GradScaler ------------------------------------------------------


class _Run:
    """A two-layer net trained with SGD + momentum under a GradScaler, in ferro or in PyTorch, from one init."""

    def __init__(self, lib: Any, dev: str, scaler_kwargs: dict[str, Any]) -> None:
        init = np.random.default_rng(0)
        self.ws = [init.standard_normal(s).astype(np.float32) * 0.5 for s in ((6, 8), (8,), (8, 1), (1,))]
        self.lib = lib
        if lib is torch:
            self.params = [torch.tensor(w, requires_grad=True) for w in self.ws]
            self.opt = torch.optim.SGD(self.params, lr=0.02, momentum=0.5)
            self.scaler = torch.amp.GradScaler("cpu", **scaler_kwargs)
        else:
            self.params = [ferro.nn.Parameter(ferro.tensor(w, device=dev)) for w in self.ws]
            self.opt = ferro.optim.SGD(self.params, lr=0.02, momentum=0.5)
            self.scaler = GradScaler(dev.split(":")[0], **scaler_kwargs)
        self.dev = dev
        self.steps = 0
        self.opt.register_step_post_hook(lambda *_: setattr(self, "steps", self.steps + 1))

    def tensor(self, a: np.ndarray) -> Any:
        return torch.tensor(a) if self.lib is torch else ferro.tensor(a, device=self.dev)

    def iteration(self, x: np.ndarray, y: np.ndarray, poison: float | None, clip: bool) -> None:
        w1, b1, w2, b2 = self.params
        self.opt.zero_grad()
        out = (self.tensor(x) @ w1 + b1).tanh() @ w2 + b2
        loss = ((out - self.tensor(y)) ** 2).mean()
        self.scaler.scale(loss).backward()
        if poison is not None:  # an overflow elsewhere in the model: one gradient element
            with (torch.no_grad() if self.lib is torch else ferro.no_grad()):
                w2.grad[3, 0] = poison
        if clip:
            self.scaler.unscale_(self.opt)
            nn_utils = torch.nn.utils if self.lib is torch else ferro.nn.utils
            nn_utils.clip_grad_norm_(self.params, 0.5)
        self.scaler.step(self.opt)
        self.scaler.update()

    def values(self) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for p in self.params]


#: iteration -> the gradient element injected; iterations whose gradients are unscaled and clipped first.
POISON = {7: np.inf, 8: np.nan, 15: -np.inf}
CLIPPED = {4, 11}
#: Two sequences (settings, injected gradients, iterations whose targets are multiplied by 1000, the skipped
#: iterations): gradients made inf / nan at POISON; and a first batch whose scaled gradients overflow float32 for
#: real (1000 times larger than the others', at the largest scale), after which the scale backs off far from
#: float32's limit, where no rounding of an intermediate can decide whether a gradient overflows.
SEQUENCES = {
    "injected": ({"init_scale": 2.0**20, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 3},
                 POISON, set(), [7, 8, 15]),
    "overflow": ({"init_scale": 2.0**127, "backoff_factor": 2.0**-100, "growth_interval": 4}, {}, {0}, [0]),
}


def _data(steps: int, spikes: set[int] = frozenset()) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((16, 6)).astype(np.float32),
             (rng.standard_normal((16, 1)) * (2000 if i in spikes else 2)).astype(np.float32)) for i in range(steps)]


def _trace(run: _Run, data: list[Any], poison: dict[int, float], start: int = 0) -> list[tuple[int, float, int]]:
    """(steps taken, scale, growth tracker) after every iteration."""
    out = []
    for i, (x, y) in enumerate(data, start):
        run.iteration(x, y, poison.get(i), i in CLIPPED)
        out.append((run.steps, run.scaler.get_scale(), run.scaler._get_growth_tracker()))
    return out


@pytest.mark.parametrize("sequence", list(SEQUENCES))
def test_a_training_sequence_matches_torch(dev: str, sequence: str) -> None:
    settings, poison, spikes, skips = SEQUENCES[sequence]
    data = _data(20, spikes)
    ours, theirs = _Run(ferro, dev, settings), _Run(torch, dev, settings)
    got, want = _trace(ours, data, poison), _trace(theirs, data, poison)
    assert got == want
    skipped = [i for i in range(len(data)) if got[i][0] == (got[i - 1][0] if i else 0)]
    assert skipped == skips  # exactly the overflowing iterations were skipped
    for a, b in zip(ours.values(), theirs.values(), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_the_scale_grows_after_the_interval_and_saturates_below_float32s_max() -> None:
    kw = {"init_scale": 2.0**125, "growth_interval": 1}
    ours, theirs = GradScaler("cpu", **kw), torch.amp.GradScaler("cpu", **kw)
    for s in (ours, theirs):
        s.scale(torch.ones(()) if s is theirs else ferro.ones(()))
    for _ in range(4):  # nothing was unscaled: update() with found_inf 0 through a fake optimizer step
        for s, lib in ((ours, ferro), (theirs, torch)):
            p = lib.zeros(2, requires_grad=True) if lib is torch else ferro.nn.Parameter(ferro.zeros(2))
            p.grad = lib.ones(2)
            opt = lib.optim.SGD([p], lr=0.0)
            s.step(opt)
            s.update()
        assert ours.get_scale() == theirs.get_scale() and ours._get_growth_tracker() == theirs._get_growth_tracker()
    assert ours.get_scale() == 2.0**127  # 2**128 is not a float32: the scale stays


def test_the_state_round_trips_through_ferro_save_and_resumes_exactly(tmp_path: Any) -> None:
    settings, poison, _, _ = SEQUENCES["injected"]
    data = _data(20)
    whole = _Run(ferro, "cpu", settings)
    want = _trace(whole, data, poison)
    first = _Run(ferro, "cpu", settings)
    _trace(first, data[:10], poison)
    path = tmp_path / "ckpt.safetensors"
    ferro.save({"params": first.params, "opt": first.opt.state_dict(), "scaler": first.scaler.state_dict()},
               str(path))
    ckpt = ferro.load(str(path))
    assert ckpt["scaler"] == first.scaler.state_dict() and ckpt["scaler"]["_growth_tracker"] == want[9][2]
    resumed = _Run(ferro, "cpu", {})  # default settings: every one of them comes from the checkpoint
    with ferro.no_grad():
        for p, q in zip(resumed.params, ckpt["params"], strict=True):
            p.copy_(q)
    resumed.opt.load_state_dict(ckpt["opt"])
    resumed.scaler.load_state_dict(ckpt["scaler"])
    resumed.steps = want[9][0]
    assert _trace(resumed, data[10:], poison, start=10) == want[10:]
    for a, b in zip(resumed.values(), whole.values(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_state_dict_is_pytorchs() -> None:
    theirs = torch.amp.GradScaler("cpu", init_scale=512.0, growth_interval=7)
    ours = GradScaler("cpu")
    ours.load_state_dict(theirs.state_dict())
    assert ours.state_dict() == theirs.state_dict()
    assert GradScaler("cpu", enabled=False).state_dict() == {}


# -- errors and the disabled scaler, as PyTorch -------------------------------------------------------------


def _one(lib: Any) -> tuple[Any, Any, Any]:
    p = torch.ones(3, requires_grad=True) if lib is torch else ferro.nn.Parameter(ferro.ones(3))
    opt = lib.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu") if lib is torch else GradScaler("cpu")
    return p, opt, scaler


@pytest.mark.parametrize("misuse", ["unscale twice", "unscale after step", "step twice", "step before scale",
                                    "update before scale", "closure", "growth factor", "backoff factor",
                                    "empty state", "fp16 grads", "update with no inf checks", "scale a number"])
def test_misuse_raises_pytorchs_error(misuse: str) -> None:
    caught = []
    for lib in (torch, ferro):
        p, opt, scaler = _one(lib)
        cls = torch.amp.GradScaler if lib is torch else GradScaler
        half = torch.ones(3, dtype=torch.float16, requires_grad=True) if lib is torch else \
            ferro.nn.Parameter(ferro.ones(3, dtype=ferro.float16))
        half_opt, ones = lib.optim.SGD([half], lr=0.1), lib.ones(2)

        def scaled_backward() -> None:
            scaler.scale((p * p).sum()).backward()
        calls = {
            "unscale twice": lambda: (scaled_backward(), scaler.unscale_(opt), scaler.unscale_(opt)),
            "unscale after step": lambda: (scaled_backward(), scaler.step(opt), scaler.unscale_(opt)),
            "step twice": lambda: (scaled_backward(), scaler.step(opt), scaler.step(opt)),
            "step before scale": lambda: scaler.step(opt),
            "update before scale": lambda: scaler.update(),
            "closure": lambda: (scaled_backward(), scaler.step(opt, closure=lambda: 0.0)),
            "growth factor": lambda: cls("cpu", growth_factor=1.0),
            "backoff factor": lambda: cls("cpu", backoff_factor=1.0),
            "empty state": lambda: scaler.load_state_dict({}),
            "fp16 grads": lambda: (scaler.scale((half * 2).sum()).backward(), scaler.unscale_(half_opt)),
            "update with no inf checks": lambda: (scaled_backward(), scaler.update()),
            "scale a number": lambda: scaler.scale([ones, 3]),
        }
        with pytest.raises(Exception) as info:
            calls[misuse]()
        caught.append(info)
    want, got = caught
    assert got.type is want.type and str(got.value) == str(want.value)


def test_a_disabled_scaler_passes_through() -> None:
    p = ferro.nn.Parameter(ferro.tensor([1.0, 2.0]))
    opt = ferro.optim.SGD([p], lr=0.5)
    scaler = GradScaler("cpu", enabled=False)
    loss = (p * p).sum()
    assert scaler.scale(loss) is loss and not scaler.is_enabled() and scaler.get_scale() == 1.0
    loss.backward()
    scaler.unscale_(opt)
    assert p.grad.tolist() == [2.0, 4.0]  # not unscaled
    assert scaler.step(opt) is None and p.tolist() == [0.0, 0.0]  # stepped
    scaler.update()
    scaler.load_state_dict({})
    assert scaler.state_dict() == {}


def test_scale_keeps_nesting_and_computes_16_bit_outputs_in_float32() -> None:
    scaler = GradScaler("cpu", init_scale=2.0**16)
    a, b = ferro.tensor([1e-3], dtype=ferro.float16), ferro.tensor([2.0])
    got = scaler.scale([a, (b, [a])])
    assert isinstance(got, list) and isinstance(got[1], tuple) and isinstance(got[1][1], list)
    want = (torch.tensor([1e-3], dtype=torch.float16) * torch.tensor(2.0**16)).item()  # 65.5625, not inf
    assert got[0].dtype is ferro.float16 and got[0].item() == want == got[1][1][0].item()
    assert got[1][0].item() == 2.0**17
    assert next(iter(scaler.scale(iter([b])))).item() == 2.0**17


def test_step_returns_the_optimizers_return_value_and_unscales_once(monkeypatch: Any) -> None:
    p = ferro.nn.Parameter(ferro.tensor([1.0, 2.0]))
    opt = ferro.optim.SGD([p], lr=0.5)
    monkeypatch.setattr(opt, "step", lambda *a, **k: ("stepped", a, k))
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale((p * p).sum()).backward()
    calls = count_calls(monkeypatch, p._device, ["fused_amp_unscale"])
    assert scaler.step(opt, 1, x=2) == ("stepped", (1,), {"x": 2})
    assert calls["fused_amp_unscale"] == 1 and p.grad.tolist() == [2.0, 4.0]


def test_a_scaler_for_an_unavailable_backend_warns_and_disables_itself() -> None:
    missing = [n for n in ("cuda", "opencl") if n not in ferro.backends.available()]
    if not missing:
        pytest.skip("every backend is available here")
    with pytest.warns(UserWarning, match=f"backend '{missing[0]}' is not available"):
        scaler = GradScaler(missing[0])
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0


def test_update_with_a_new_scale_as_pytorch() -> None:
    results = []
    for lib in (torch, ferro):
        p, opt, scaler = _one(lib)
        scaler.scale((p * p).sum()).backward()
        scaler.step(opt)
        scaler.update(0.1)  # rounded to float32, as PyTorch's tensor holds it
        first = scaler.get_scale()
        scaler.update(lib.tensor(3.0))
        results.append((first, scaler.get_scale()))
        with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
            scaler.update(lib.tensor([3.0, 4.0]))
    assert results[0] == results[1] == (float(np.float32(0.1)), 3.0)
