"""ferro.nn.Module, Parameter, the containers and ferro.nn.utils, against torch.nn's behavior."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import nn

torch = pytest.importorskip("torch")
tnn = torch.nn


def build(lib: Any) -> Any:
    """The same small model in ferro.nn or torch.nn (same names, same structure)."""
    class Block(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = lib.Linear(4, 3)
            self.bn = lib.BatchNorm1d(3)
            self.act = lib.ReLU()
            self.register_buffer("scale", (ferro if lib is nn else torch).ones(3))
            self.register_buffer("cache", (ferro if lib is nn else torch).zeros(2), persistent=False)

        def forward(self, x: Any) -> Any:
            return self.act(self.bn(self.fc(x))) * self.scale

    class Net(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block()
            self.heads = lib.ModuleList([lib.Linear(3, 2), lib.Linear(3, 2)])
            self.extra = lib.ModuleDict({"out": lib.Linear(2, 1)})
            self.gain = lib.Parameter((ferro if lib is nn else torch).ones(1))

        def forward(self, x: Any) -> Any:
            h = self.block(x)
            return self.extra["out"](self.heads[0](h) + self.heads[1](h)) * self.gain

    return Net()


def to_torch_state(m: nn.Module) -> dict[str, Any]:
    return {k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()}


# -- Parameter ------------------------------------------------------------------------


def test_parameter_is_a_leaf_tensor_sharing_storage() -> None:
    t = ferro.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    assert isinstance(p, ferro.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and not t.requires_grad
    with ferro.no_grad():
        p.mul_(3)
    np.testing.assert_array_equal(t.numpy(), [3.0, 6.0])  # same storage, as torch's Parameter
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert type(p * 2) is ferro.Tensor  # ops give plain tensors
    assert repr(p).startswith("Parameter containing:\ntensor([3., 6.], requires_grad=True)")


def test_parameter_of_integer_tensor_needs_requires_grad_false() -> None:
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(ferro.tensor([1, 2]))
    assert nn.Parameter(ferro.tensor([1, 2]), requires_grad=False).dtype is ferro.int64
    with pytest.raises(TypeError, match="ferro Tensor"):
        nn.Parameter([1.0, 2.0])  # type: ignore[arg-type]


def test_parameter_deepcopy_is_an_independent_parameter() -> None:
    p = nn.Parameter(ferro.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q is not p
    with ferro.no_grad():
        q.fill_(0)
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0])


# -- registration and walking -----------------------------------------------------------------


def test_names_and_order_match_torch() -> None:
    fm, tm = build(nn), build(tnn)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in fm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert [n for n, _ in fm.named_modules()] == [n for n, _ in tm.named_modules()]
    assert [n for n, _ in fm.named_children()] == [n for n, _ in tm.named_children()]
    assert list(fm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in fm.named_parameters(recurse=False)] == ["gain"]
    assert [n for n, _ in fm.block.named_parameters(prefix="x")] == ["x.fc.weight", "x.fc.bias", "x.bn.weight",
                                                                        "x.bn.bias"]
    assert len(list(fm.parameters())) == len(list(tm.parameters())) == 11
    assert len(list(fm.modules())) == len(list(tm.modules()))


def test_shared_parameters_and_modules_come_once() -> None:
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    tied = nn.Module()
    tied.a = nn.Linear(2, 2)
    tied.b = nn.Linear(2, 2)
    tied.b.weight = tied.a.weight
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]


def test_setattr_rules_and_errors() -> None:
    m = nn.Module()
    m.w = nn.Parameter(ferro.zeros(2))
    with pytest.raises(TypeError, match=r"cannot assign 'ferro\.Tensor' as parameter 'w'"):
        m.w = ferro.zeros(2)
    m.w = None
    assert "w" in m._parameters and m.w is None
    m.register_buffer("b", ferro.zeros(1))
    with pytest.raises(TypeError, match="as buffer 'b'"):
        m.b = 3
    m.b = ferro.ones(1)  # a tensor replaces the buffer
    assert next(iter(m.buffers())).item() == 1
    m.sub = nn.Linear(1, 1)
    with pytest.raises(TypeError, match="as child module 'sub'"):
        m.sub = 3
    m.sub = nn.Parameter(ferro.zeros(1))  # a Parameter replaces the module
    assert "sub" in m._parameters and "sub" not in m._modules
    del m.sub
    assert not hasattr(m, "sub")
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", None)
    with pytest.raises(KeyError, match="already exists"):
        m.register_parameter("training", None)
    with pytest.raises(TypeError, match="Parameter or None required"):
        m.register_parameter("q", ferro.zeros(1))  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = m.nope


def test_assign_before_init_is_refused() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(ferro.zeros(1))
            super().__init__()

    with pytest.raises(AttributeError, match=r"before Module\.__init__"):
        Bad()


def test_buffer_marker_registers_a_buffer() -> None:
    m = nn.Module()
    m.keep = nn.Buffer(ferro.ones(2))
    m.drop = nn.Buffer(ferro.ones(2), persistent=False)
    assert [n for n, _ in m.named_buffers()] == ["keep", "drop"]
    assert list(m.state_dict()) == ["keep"]
    assert type(m.keep) is ferro.Tensor


def test_get_submodule_parameter_buffer() -> None:
    m = build(nn)
    assert m.get_submodule("block.fc") is m.block.fc
    assert m.get_parameter("heads.1.bias") is m.heads[1].bias
    assert m.get_buffer("block.bn.running_mean") is m.block.bn.running_mean
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("block.nope")


def test_missing_forward() -> None:
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


# -- modes, gradients, apply, to ---------------------------------------------------------------


def test_train_eval_reach_every_module() -> None:
    m = build(nn)
    assert m.eval() is m
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="boolean"):
        m.train("yes")  # type: ignore[arg-type]


def test_zero_grad_and_requires_grad() -> None:
    m = nn.Linear(3, 2)
    m(ferro.randn(4, 3)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    assert m.requires_grad_(False) is m and not any(p.requires_grad for p in m.parameters())


def test_apply_visits_children_first() -> None:
    m = build(nn)
    seen: list[str] = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    t = build(tnn)
    tseen: list[str] = []
    t.apply(lambda mod: tseen.append(type(mod).__name__))
    assert seen == tseen


def test_to_casts_in_place_keeping_parameter_identity() -> None:
    m = build(nn)
    m(ferro.randn(5, 4)).sum().backward()
    params = list(m.parameters())
    assert m.to(ferro.float64) is m
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert all(isinstance(p, nn.Parameter) and p.dtype is ferro.float64 for p in params)
    assert all(p.grad.dtype is ferro.float64 for p in params)
    assert m.block.bn.running_var.dtype is ferro.float64
    assert m.block.bn.num_batches_tracked.dtype is ferro.int64  # integer buffers keep their dtype
    out = m(ferro.randn(5, 4, dtype=ferro.float64))
    assert out.dtype is ferro.float64
    m.float()
    assert all(p.dtype is ferro.float32 for p in m.parameters())
    m.to(device="cpu", dtype=ferro.float64)
    assert m.gain.dtype is ferro.float64
    with pytest.raises(TypeError, match="floating point or complex"):
        m.to(ferro.int32)


# -- state dicts --------------------------------------------------------------------------------


def test_state_dict_values_are_detached_views() -> None:
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    assert not sd["weight"].requires_grad and type(sd["weight"]) is ferro.Tensor
    with ferro.no_grad():
        m.weight.fill_(5)
    assert sd["weight"].numpy().tolist() == [[5, 5], [5, 5]]  # shares storage, as torch's
    assert m.state_dict(keep_vars=True)["weight"] is m.weight
    assert list(m.state_dict(prefix="p.")) == ["p.weight", "p.bias"]


def test_load_state_dict_round_trip_keeps_identity() -> None:
    a, b = build(nn), build(nn)
    a(ferro.randn(6, 4))  # moves BatchNorm's running stats
    weight = b.block.fc.weight
    result = b.load_state_dict(a.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert b.block.fc.weight is weight
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        np.testing.assert_array_equal(va.numpy(), vb.numpy(), err_msg=k)
    x = ferro.randn(3, 4)
    a.eval(), b.eval()
    np.testing.assert_allclose(a(x).detach().numpy(), b(x).detach().numpy())


def test_load_state_dict_from_torch_gives_torch_outputs() -> None:
    fm, tm = build(nn), build(tnn)
    tm(torch.randn(6, 4))
    fm.load_state_dict({k: ferro.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    fm.eval(), tm.eval()
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(fm(ferro.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_load_state_dict_strict_errors_name_every_key() -> None:
    m = nn.Linear(2, 3)
    sd = dict(m.state_dict())
    del sd["bias"]
    sd["extra"] = ferro.zeros(1)
    with pytest.raises(RuntimeError) as err:
        m.load_state_dict(sd)
    t = tnn.Linear(2, 3)
    tsd = dict(t.state_dict())
    del tsd["bias"]
    tsd["extra"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as terr:
        t.load_state_dict(tsd)
    assert str(err.value) == str(terr.value)
    missing, unexpected = m.load_state_dict(sd, strict=False)
    assert (missing, unexpected) == (["bias"], ["extra"])
    assert m.load_state_dict(sd, strict=False) == t.load_state_dict(tsd, strict=False)


def test_load_state_dict_shape_mismatch_raises_even_when_not_strict() -> None:
    m = nn.Linear(2, 3)
    before = m.weight.detach().clone().numpy()
    bad = {"weight": ferro.zeros(3, 4), "bias": ferro.zeros(3)}
    for strict in (True, False):
        with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape "
                                               r"ferro.Size\(\[3, 4\]\) from checkpoint, the shape in current model "
                                               r"is ferro.Size\(\[3, 2\]\)"):
            m.load_state_dict(bad, strict=strict)
    np.testing.assert_array_equal(m.weight.detach().numpy(), before)
    with pytest.raises(RuntimeError, match='While copying the parameter named "bias", expected a ferro Tensor'):
        m.load_state_dict({"weight": ferro.zeros(3, 2), "bias": [0.0, 0.0, 0.0]})
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([1, 2])  # type: ignore[arg-type]


def test_load_state_dict_assign_puts_tensors_in() -> None:
    m = nn.Linear(2, 1)
    w = ferro.ones(1, 2)
    m.load_state_dict({"weight": w, "bias": ferro.zeros(1)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    with ferro.no_grad():
        w.fill_(7)
    assert m.weight.detach().numpy().tolist() == [[7.0, 7.0]]


def test_load_state_dict_casts_to_the_model_dtype() -> None:
    m = nn.Linear(2, 1).double()
    m.load_state_dict({"weight": ferro.ones(1, 2), "bias": ferro.zeros(1)})
    assert m.weight.dtype is ferro.float64 and m.weight.detach().numpy().tolist() == [[1.0, 1.0]]


def test_deepcopy_of_module_is_independent() -> None:
    m = build(nn)
    c = copy.deepcopy(m)
    assert isinstance(c.gain, nn.Parameter) and c.gain is not m.gain
    with ferro.no_grad():
        c.gain.fill_(4)
    assert m.gain.item() == 1.0
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in m.named_parameters()]


# -- hooks --------------------------------------------------------------------------------------


def test_forward_hooks_like_torch() -> None:
    log: list[str] = []
    m = nn.Linear(2, 2)
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
    m.register_forward_hook(lambda mod, args, out: log.append("second"))
    m.register_forward_hook(lambda mod, args, out: log.append("first"), prepend=True)
    out = m(ferro.randn(3, 2))
    np.testing.assert_allclose(out.detach().numpy(), (m.bias.detach().numpy() + 1)[None].repeat(3, 0), rtol=1e-6)
    assert log == ["first", "second"]
    h1.remove()
    h2.remove()
    h2.remove()  # a second remove does nothing
    x = ferro.randn(3, 2)
    np.testing.assert_allclose(m(x).detach().numpy(), (x @ m.weight.T + m.bias).detach().numpy())


def test_hooks_with_kwargs_and_context_manager() -> None:
    class Scale(nn.Module):
        def forward(self, x: Any, factor: float = 1.0) -> Any:
            return x * factor

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": 3.0}), with_kwargs=True)
    seen: list[Any] = []
    with m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs["factor"]), with_kwargs=True):
        assert m(ferro.ones(1)).item() == 3.0
    m(ferro.ones(1))
    assert seen == [3.0]
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True, prepend=True)
        m(ferro.ones(1))


def test_always_call_hook_runs_when_forward_raises() -> None:
    class Boom(nn.Module):
        def forward(self, x: Any) -> Any:
            raise ValueError("boom")

    calls: list[Any] = []
    m = Boom()
    m.register_forward_hook(lambda mod, args, out: calls.append(out), always_call=True)
    m.register_forward_hook(lambda mod, args, out: calls.append("never"))
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert calls == [None]


# -- repr ---------------------------------------------------------------------------------------


def test_repr_matches_torch() -> None:
    assert repr(build(nn)) == repr(build(tnn))
    layers = lambda lib: lib.Sequential(*[lib.Linear(2, 2) for _ in range(3)], lib.ReLU(),
                                        lib.ModuleList([lib.ReLU(), lib.ReLU(), lib.Linear(1, 1)]))
    assert repr(layers(nn)) == repr(layers(tnn))
    assert repr(nn.ModuleList()) == repr(tnn.ModuleList()) == "ModuleList()"


def test_parameter_containers_repr_and_registration() -> None:
    fl = nn.ParameterList([ferro.zeros(2, 3), nn.Parameter(ferro.ones(1))])
    tl = tnn.ParameterList([torch.zeros(2, 3), tnn.Parameter(torch.ones(1))])
    assert repr(fl) == repr(tl).replace("torch.", "ferro.")
    assert all(isinstance(p, nn.Parameter) for p in fl) and len(list(fl.parameters())) == 2
    fd = nn.ParameterDict({"a": ferro.zeros(2), "b": nn.Parameter(ferro.ones(3))})
    td = tnn.ParameterDict({"a": torch.zeros(2), "b": tnn.Parameter(torch.ones(3))})
    assert [n for n, _ in fd.named_parameters()] == [n for n, _ in td.named_parameters()] == ["a", "b"]
    assert list(fd.keys()) == ["a", "b"] and "a" in fd and fd.get("zz") is None
    assert fd.pop("a").shape == (2,) and len(fd) == 1
    with pytest.raises(RuntimeError, match="should not be called"):
        fl(1)


# -- containers ---------------------------------------------------------------------------------


def test_sequential_like_torch() -> None:
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = ferro.randn(5, 3)
    np.testing.assert_allclose(seq(x).detach().numpy(), seq[2](seq[1](seq[0](x))).detach().numpy())
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2 and seq[-1] is seq[2]
    named = nn.Sequential(OrderedDict([("enc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert named.enc is named[0] and [n for n, _ in named.named_children()] == ["enc", "act"]
    assert [n for n, _ in named[1:].named_children()] == ["act"]
    seq.append(nn.Sigmoid())
    seq.insert(0, nn.Identity())
    assert [type(m).__name__ for m in seq] == ["Identity", "Linear", "ReLU", "Linear", "Sigmoid"]
    del seq[0]
    assert list(seq._modules) == ["0", "1", "2", "3"] and len(seq) == 4
    assert isinstance(seq.pop(3), nn.Sigmoid) and len(seq) == 3
    assert len(seq + nn.Sequential(nn.ReLU())) == 4
    with pytest.raises(IndexError, match="out of range"):
        seq[7]
    with pytest.raises(TypeError, match="not a Module subclass"):
        nn.Sequential(3)


def test_module_list_and_dict_like_torch() -> None:
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.ReLU()).extend([nn.Tanh()])
    ml += [nn.Sigmoid()]
    assert [type(m).__name__ for m in ml] == ["Linear", "ReLU", "Tanh", "Sigmoid"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    ml[0] = nn.Identity()
    assert isinstance(ml[0], nn.Identity) and len(list(ml.parameters())) == 0
    del ml[1:3]
    assert [type(m).__name__ for m in ml] == ["Identity", "Sigmoid"] and list(ml._modules) == ["0", "1"]
    md = nn.ModuleDict([("a", nn.ReLU()), ("b", nn.Linear(2, 2))])
    assert list(md) == ["a", "b"] and "b" in md and len(md) == 2
    md["c"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b", "c"] and isinstance(md.pop("a"), nn.ReLU)
    assert [n for n, _ in md.named_parameters()] == ["b.weight", "b.bias"]
    md.update({"b": nn.Identity()})
    assert len(list(md.parameters())) == 0
    md.clear()
    assert len(md) == 0
    with pytest.raises(ValueError, match="element #0"):
        md.update([("x",)])  # type: ignore[list-item]


# -- training end to end -------------------------------------------------------------------------


def test_training_steps_match_torch() -> None:
    """Five SGD steps of a small MLP from the same weights give torch's losses and weights."""
    f = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    t = tnn.Sequential(tnn.Linear(4, 8), tnn.Tanh(), tnn.Linear(8, 3)).double()
    t.load_state_dict(to_torch_state(f))
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((16, 4)), rng.integers(0, 3, 16)
    floss, tloss = nn.CrossEntropyLoss(), tnn.CrossEntropyLoss()
    for _ in range(5):
        lf = floss(f(ferro.tensor(x)), ferro.tensor(y))
        lt = tloss(t(torch.tensor(x)), torch.tensor(y))
        np.testing.assert_allclose(lf.item(), lt.item(), rtol=1e-10)
        f.zero_grad()
        t.zero_grad()
        lf.backward()
        lt.backward()
        with ferro.no_grad():
            for p in f.parameters():
                p.sub_(0.5 * p.grad)
        with torch.no_grad():
            for p in t.parameters():
                p.sub_(0.5 * p.grad)
    for (k, a), b in zip(f.state_dict().items(), t.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, err_msg=k)


# -- gradient clipping --------------------------------------------------------------------------


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type: float, max_norm: float) -> None:
    rng = np.random.default_rng(3)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    grads = [rng.standard_normal(s) for s in shapes]
    fps = [nn.Parameter(ferro.zeros(*s, dtype=ferro.float64)) for s in shapes]
    tps = [tnn.Parameter(torch.zeros(*s, dtype=torch.float64)) for s in shapes]
    for fp, tp, g in zip(fps, tps, grads):
        fp.grad, tp.grad = ferro.tensor(g), torch.tensor(g)
    fps.append(nn.Parameter(ferro.zeros(2)))  # no grad: skipped
    fn = nn.utils.clip_grad_norm_(fps, max_norm, norm_type)
    tn = tnn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    np.testing.assert_allclose(fn.item(), tn.item(), rtol=1e-12)
    for fp, tp in zip(fps, tps):
        np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_of_mixed_dtypes_matches_torch() -> None:
    """float32 and float64 gradients together: each scaled by the coefficient in its own dtype."""
    rng = np.random.default_rng(4)
    grads = [rng.standard_normal(s).astype(d) for s, d in [((3, 4), "float32"), ((5,), "float64"), ((2, 3), "float32")]]
    fps = [nn.Parameter(ferro.tensor(np.zeros_like(g))) for g in grads]
    tps = [tnn.Parameter(torch.tensor(np.zeros_like(g))) for g in grads]
    for fp, tp, g in zip(fps, tps, grads):
        fp.grad, tp.grad = ferro.tensor(g), torch.tensor(g)
    fn = nn.utils.clip_grad_norm_(fps, 0.5)
    tn = tnn.utils.clip_grad_norm_(tps, 0.5)
    np.testing.assert_allclose(fn.item(), tn.item(), rtol=1e-6)
    for fp, tp in zip(fps, tps):
        assert fp.grad.numpy().dtype == tp.grad.numpy().dtype
        np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clip_grad_norm_takes_a_dot_product_per_gradient(monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    """The 2-norm of float32 / float64 gradients: one dot product each (no squared copy), the same total norm
    and clipped gradients as torch's, for a 0-d and a language model's embedding gradient."""
    from conftest import count_calls

    rng = np.random.default_rng(5)
    grads = [rng.standard_normal(s).astype(dtype) for s in [(), (1000, 128), (512,), (2, 3, 4)]]
    fps = [nn.Parameter(ferro.tensor(np.zeros_like(g))) for g in grads]
    tps = [tnn.Parameter(torch.tensor(np.zeros_like(g))) for g in grads]
    for fp, tp, g in zip(fps, tps, grads):
        fp.grad, tp.grad = ferro.tensor(g), torch.tensor(g)
    calls = count_calls(monkeypatch, fps[0]._device, ("matmul",))
    fn = nn.utils.clip_grad_norm_(fps, 0.25)
    tn = tnn.utils.clip_grad_norm_(tps, 0.25)
    assert calls["matmul"] == len(grads), calls
    rtol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(fn.item(), tn.item(), rtol=rtol)
    for fp, tp in zip(fps, tps):
        assert fp.grad.numpy().dtype == tp.grad.numpy().dtype
        np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(), rtol=rtol, atol=1e-30)


def test_clip_grad_norm_edge_cases() -> None:
    p = nn.Parameter(ferro.zeros(2))
    assert nn.utils.clip_grad_norm_(p, 1.0).item() == 0.0  # no gradients at all
    p.grad = ferro.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    assert np.isnan(nn.utils.clip_grad_norm_(p, 1.0).item())


def test_clip_grad_value_matches_torch() -> None:
    g = np.linspace(-3, 3, 12).reshape(3, 4)
    fp, tp = nn.Parameter(ferro.zeros(3, 4, dtype=ferro.float64)), tnn.Parameter(torch.zeros(3, 4).double())
    fp.grad, tp.grad = ferro.tensor(g), torch.tensor(g)
    nn.utils.clip_grad_value_([fp], 1.5)
    tnn.utils.clip_grad_value_([tp], 1.5)
    np.testing.assert_array_equal(fp.grad.numpy(), tp.grad.numpy())


def test_parameters_to_vector_round_trip() -> None:
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    t = tnn.Linear(3, 2)
    t.load_state_dict(to_torch_state(m))
    np.testing.assert_array_equal(v.detach().numpy(), tnn.utils.parameters_to_vector(t.parameters()).detach().numpy())
    nn.utils.vector_to_parameters(ferro.arange(8.0), m.parameters())
    assert m.weight.detach().numpy().tolist() == [[0, 1, 2], [3, 4, 5]] and m.bias.detach().numpy().tolist() == [6, 7]
    with pytest.raises(ValueError, match="hold 8 elements"):
        nn.utils.vector_to_parameters(ferro.zeros(3), m.parameters())


# -- with the rest of ferro ----------------------------------------------------------------------


def test_state_dict_survives_save_and_load(tmp_path: Any) -> None:
    a, b = build(nn), build(nn)
    a(ferro.randn(6, 4))
    path = tmp_path / "model.safetensors"
    ferro.save(a.state_dict(), str(path))
    assert repr(b.load_state_dict(ferro.load(str(path)))) == "<All keys matched successfully>"
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert va.dtype is vb.dtype, k
        np.testing.assert_array_equal(va.numpy(), vb.numpy(), err_msg=k)


def test_optimizer_steps_parameters_in_place_like_torch() -> None:
    f = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)).double()
    t = tnn.Sequential(tnn.Linear(3, 4), tnn.ReLU(), tnn.Linear(4, 1)).double()
    t.load_state_dict(to_torch_state(f))
    fopt = ferro.optim.SGD(f.parameters(), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(t.parameters(), lr=0.1, momentum=0.9)
    weight = f[0].weight
    x = np.random.default_rng(4).standard_normal((8, 3))
    for _ in range(3):
        fopt.zero_grad()
        topt.zero_grad()
        (f(ferro.tensor(x)) ** 2).mean().backward()
        (t(torch.tensor(x)) ** 2).mean().backward()
        fopt.step()
        topt.step()
    f.to(ferro.float64)  # a no-op move keeps the parameter the optimizer holds
    assert f[0].weight is weight
    for (k, a), b in zip(f.state_dict().items(), t.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, err_msg=k)


def test_module_moves_to_every_backend_and_trains_there(device: ferro.device) -> None:
    """``to(device)`` moves parameters (keeping identity), gradients and buffers; the forward and
    backward there give the CPU's numbers, and ``to("cpu")`` brings everything back."""
    ferro.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.Tanh(), nn.Linear(6, 2))
    m.register_buffer("offset", ferro.tensor([0.5, -0.5]))
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    (m(ferro.tensor(x)) + m.offset).sum().backward()
    ref_grads = [p.grad.numpy().copy() for p in m.parameters()]
    ref_out = (m(ferro.tensor(x)) + m.offset).detach().numpy()
    params = list(m.parameters())
    m.to(device)
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert all(p.device == device and p.grad.device == device for p in m.parameters())
    assert m.offset.device == device
    m.zero_grad()
    out = m(ferro.tensor(x, device=device)) + m.offset
    out.sum().backward()
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref_out, rtol=1e-5, atol=1e-6)
    for p, g in zip(m.parameters(), ref_grads):
        np.testing.assert_allclose(p.grad.cpu().numpy(), g, rtol=1e-4, atol=1e-5)
    m.cpu()
    assert all(p.device.type == "cpu" for p in m.parameters()) and m.offset.device.type == "cpu"


def test_extra_state_round_trips_like_torch() -> None:
    def make(lib: Any) -> Any:
        class Counter(lib.Module):
            def __init__(self) -> None:
                super().__init__()
                self.steps = 0
                self.fc = lib.Linear(1, 1)

            def get_extra_state(self) -> Any:
                return {"steps": self.steps}

            def set_extra_state(self, state: Any) -> None:
                self.steps = state["steps"]

        return lib.Sequential(Counter())

    f, t = make(nn), make(tnn)
    assert list(f.state_dict()) == list(t.state_dict()) == ["0._extra_state", "0.fc.weight", "0.fc.bias"]
    f[0].steps = 7
    g = make(nn)
    g.load_state_dict(f.state_dict())
    assert g[0].steps == 7
    sd = f.state_dict()
    del sd["0._extra_state"]
    assert g.load_state_dict(sd, strict=False).missing_keys == ["0._extra_state"]


# -- backward hooks ------------------------------------------------------------------------------


class TwoOut:
    """A module returning two tensors, in either library."""

    @staticmethod
    def make(lib: Any) -> Any:
        class Split(lib.Module):
            def __init__(self) -> None:
                super().__init__()
                self.fc = lib.Linear(3, 4)

            def forward(self, x: Any, scale: float, y: Any) -> Any:
                h = self.fc(x) * scale
                return h[:, :2] * y, h[:, 2:].tanh()

        return Split()


def _as_lists(grads: Any) -> list[Any]:
    return [None if g is None else np.round(g.detach().numpy().astype(np.float64), 5).tolist() for g in grads]


@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_full_backward_hooks_see_torchs_gradients(x_requires_grad: bool) -> None:
    def run_lib(lib: Any, make_tensor: Any) -> tuple[list[Any], Any, Any]:
        m = TwoOut.make(lib)
        if lib is nn:
            m.load_state_dict({k: ferro.tensor(v) for k, v in weights.items()})
        else:
            m.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
        log: list[Any] = []
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", _as_lists(go))))
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("full", _as_lists(gi), _as_lists(go))))
        x, y = make_tensor(xs), make_tensor(ys)
        x.requires_grad_(x_requires_grad)
        y.requires_grad_(True)
        a, b = m(x, 2.0, y)
        ((a * a).sum() + (b * 3).sum()).backward()
        return log, m.fc.weight.grad.numpy(), y.grad.numpy()

    weights = {k: v.numpy() for k, v in nn.Linear(3, 4).state_dict().items()}
    weights = {"fc." + k: v for k, v in weights.items()}
    rng = np.random.default_rng(6)
    xs, ys = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 2)).astype(np.float32)
    flog, fw, fy = run_lib(nn, ferro.tensor)
    tlog, tw, ty = run_lib(tnn, torch.tensor)
    assert [e[0] for e in flog] == [e[0] for e in tlog] == ["pre", "full"]
    for fe, te in zip(flog, tlog):
        for fg, tg in zip(fe[1:], te[1:]):
            assert [g is None for g in fg] == [g is None for g in tg]
            for a, b in zip(fg, tg):
                if a is not None:
                    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fw, tw, rtol=1e-5)
    np.testing.assert_allclose(fy, ty, rtol=1e-5)


def test_backward_hooks_can_replace_gradients() -> None:
    m = nn.Linear(2, 2)
    x = ferro.ones(1, 2, requires_grad=True)
    h_pre = m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10,))
    h_full = m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0 + 7,))
    m(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[7.0, 7.0]])
    np.testing.assert_allclose(m.bias.grad.numpy(), [10.0, 10.0])  # the scaled grad_output reached the params
    h_pre.remove()
    h_full.remove()
    x.grad = None
    m.zero_grad()
    m(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), m.weight.detach().numpy().sum(0, keepdims=True), rtol=1e-6)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        m(x).sum().backward()
