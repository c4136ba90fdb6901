"""``ferro.autocast`` against ``torch.autocast`` on the CPU: the policy op by op, forward and backward."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ferro
from ferro._core import autocast_policy, modes
from ferro._core.records import REGISTRY
from ferro.testing._opinfo import OP_DB, samples

torch = pytest.importorskip("torch")

_DB = {info.name: info for info in OP_DB}
#: Ops of the policy whose conformance call is written for ferro only (it builds its inputs with ferro's own
#: API), with what PyTorch says: the test below checks that each still fails under torch, so the list stays exact.
_NOT_COMPARABLE = {
    "linalg.cdist": "AttributeError",  # torch's is torch.cdist; compared by hand in test_cdist_policy
    "linalg.lstsq": "TypeError",
    "linalg.solve": "TypeError",
    "linalg.lu_factor": "TypeError",
}
#: Unlisted ops compared as well: autocast must leave them alone, and run the insides of composites under it.
_UNLISTED = ("add", "mul", "exp", "relu", "sum", "mean", "softmax", "log_softmax", "layer_norm", "group_norm",
             "batch_norm", "cumsum", "logsumexp", "norm", "cosine_similarity", "bilinear", "tensordot", "atan2",
             "index_put", "scatter_add", "linalg.cross", "where", "gelu", "var")
_OPS = sorted({n for names in autocast_policy.POLICIES["cpu"].values() for n in names if n in REGISTRY}
              | set(_UNLISTED))


def _info(name):
    tests = REGISTRY[name].tests
    if callable(tests) and not hasattr(tests, "ref"):
        tests = tests()
    return tests or _DB[name]


def _convert(a, mod, dtype, grad):
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind != "f":
        return mod.tensor(a)
    t = mod.tensor(a.astype("float32")).to(getattr(mod, dtype))
    return t.requires_grad_(True) if grad else t


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _name(dtype) -> str:
    return str(dtype).rpartition(".")[2]


def test_every_listed_op_is_a_registered_op():
    names = {n for policy in autocast_policy.POLICIES.values() for ns in policy.values() for n in ns}
    assert names <= set(REGISTRY), sorted(names - set(REGISTRY))
    assert REGISTRY["matmul"].autocast == {"cpu": "lower", "gpu": "lower"}
    assert REGISTRY["softmax"].autocast == {"gpu": "float32"} and REGISTRY["add"].autocast is None


@pytest.mark.parametrize("name", _OPS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_output_and_gradient_dtypes_match_torch(name, dtype):
    info = _info(name)
    sample = next(samples(info, dtype, np.random.default_rng(0), small=True))
    grad = info.grad
    t_args = [_convert(a, torch, dtype, grad) for a in sample.args]
    no_lu = name in ("linalg.lu", "linalg.lu_factor") and dtype == "bfloat16"  # torch has no bfloat16 LU on cpu
    if name in _NOT_COMPARABLE or no_lu:
        with pytest.raises(Exception) as err, torch.autocast("cpu"):
            info(torch, *t_args, **sample.kwargs)
        expected = "NotImplementedError" if no_lu else _NOT_COMPARABLE[name]
        assert type(err.value).__name__ == expected
        return
    f_args = [_convert(a, ferro, dtype, grad) for a in sample.args]
    with torch.autocast("cpu"):
        t_out = _first(info(torch, *t_args, **sample.kwargs))
    with ferro.autocast("cpu"):
        f_out = _first(info(ferro, *f_args, **sample.kwargs))
    assert _name(f_out.dtype) == _name(t_out.dtype), f"{name} at {dtype}: ferro {f_out.dtype}, torch {t_out.dtype}"
    if not grad or not t_out.dtype.is_floating_point or not t_out.requires_grad:
        return
    t_out.float().sum().backward()
    f_out.float().sum().backward()
    for t, f in zip(t_args, f_args, strict=True):
        if isinstance(t, torch.Tensor) and t.requires_grad and t.grad is not None:
            assert f.grad is not None and _name(f.grad.dtype) == _name(t.grad.dtype) == dtype, name


def test_cdist_policy():
    x, y = np.random.default_rng(1).standard_normal((2, 4, 3)).astype("float32")
    with torch.autocast("cpu"):
        t = torch.cdist(torch.tensor(x).bfloat16(), torch.tensor(y).bfloat16())
    with ferro.autocast("cpu"):
        f = ferro.cdist(ferro.tensor(x).bfloat16(), ferro.tensor(y).bfloat16())
    assert _name(f.dtype) == _name(t.dtype) == "float32"


def test_lower_precision_matmul_values_are_one_rounding_from_float32():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 64, 64)).astype("float32")
    with ferro.autocast("cpu"):
        y = ferro.tensor(a) @ ferro.tensor(b)
    with torch.autocast("cpu"):
        ref = torch.tensor(a) @ torch.tensor(b)
    assert y.dtype == ferro.bfloat16
    np.testing.assert_allclose(y.float().numpy(), ref.float().numpy(), rtol=2 ** -7, atol=0.05)


def test_regions_nest_and_disable():
    x = ferro.randn(3, 3)
    with ferro.autocast("cpu"):
        assert ferro.amp.is_autocast_enabled("cpu")
        with ferro.autocast("cpu", enabled=False):
            assert (x @ x).dtype == ferro.float32 and not ferro.amp.is_autocast_enabled("cpu")
            with ferro.autocast("cpu", dtype=ferro.float16):
                assert (x @ x).dtype == ferro.float16
        assert (x @ x).dtype == ferro.bfloat16
    assert (x @ x).dtype == ferro.float32 and modes.ARMED[0] == 0
    assert ferro.amp.get_autocast_dtype("cpu") == ferro.bfloat16
    assert ferro.amp.get_autocast_dtype("opencl") == ferro.float16


def test_decorator_and_other_device_types():
    @ferro.autocast("cpu")
    def step(a, b):
        return a @ b

    x = ferro.randn(2, 2)
    assert step(x, x).dtype == ferro.bfloat16 and (x @ x).dtype == ferro.float32
    with ferro.autocast("opencl"):  # another device type: cpu tensors are left alone
        assert (x @ x).dtype == ferro.float32


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="autocast\\(\\): argument 'device_type' must be a string"):
        ferro.autocast(0)
    with pytest.raises(ValueError, match=r"dtype must be ferro\.bfloat16 or ferro\.float16, got ferro\.float64"):
        ferro.autocast("cpu", dtype=ferro.float64)


class _Casts(modes.Mode):
    layer = "trace"

    def __init__(self):
        self.n = 0

    def handle(self, op, args, kwargs, proceed):
        self.n += op.name == "cast"
        return proceed(args, kwargs)


@pytest.mark.parametrize("cache", [True, False])
def test_parameter_casts_are_cached_within_a_region(cache):
    w = ferro.randn(4, 4, requires_grad=True)
    x = ferro.randn(2, 4)
    counter = _Casts()
    with ferro.autocast("cpu", cache_enabled=cache):
        modes.push(counter)
        try:
            y = (x @ w) @ w
        finally:
            modes.pop(counter)
    # x is cast once; w once with the cache, at each use without it
    assert counter.n == (2 if cache else 3)
    y.float().sum().backward()
    with torch.autocast("cpu"):
        tw = torch.tensor(w.detach().numpy(), requires_grad=True)
        ((torch.tensor(x.numpy()) @ tw) @ tw).float().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=0.02, atol=0.05)
    assert w.grad.dtype == ferro.float32


def test_autocast_is_per_thread():
    x = ferro.randn(2, 2)
    seen = []
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait()
        seen.append((x @ x).dtype)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with ferro.autocast("cpu"):
        inside.set()
        done.wait(30)
        assert (x @ x).dtype == ferro.bfloat16
    t.join()
    assert seen == [ferro.float32]
