"""A backend whose kernels refuse some argument values (``Backend.argument_checks``).

The ``copyview`` backend of tests/plugins (registered in process) refuses
``sum`` over more than two dims (no decomposition: the opt-in CPU fallback,
else an error naming the op, the argument and the reason), ``angle`` of
tensors of more than three dims (its decomposition runs) and its fused ``softmax`` kernel along
any dim but the last (the decomposition runs). Values are checked against
NumPy and PyTorch; which route ran, by what ran (the kernel's call counter,
the fallback's warning) and by ``ferro.backends.explain``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ferro
import ferro_testplugins.copyviews as copyviews
from ferro._core.records import REGISTRY
from ferro.backends import PLUGIN_API_VERSION, ArrayAPIBackend, hookimpl
from ferro.backends.contract import UNCHECKED_OPS, ArgumentCheck
from ferro.errors import BackendUnavailableError, UnsupportedOperationError
from ferro.testing._opinfo import OP_DB, samples

DEV = "copyview"
A = np.random.default_rng(0).standard_normal((2, 3, 4, 5))


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    if DEV not in ferro.backends.installed():
        assert ferro.backends.register_plugin(copyviews, "testcopyviews")


def _x(requires_grad: bool = False) -> ferro.Tensor:
    return ferro.tensor(A, device=DEV, requires_grad=requires_grad)


def test_checked_ops_leave_the_fast_path_only_where_a_backend_checks_them() -> None:
    dev = ferro.device(DEV)
    dev.backend  # binds
    assert set(dev._checked) == {"sum", "angle", "softmax"}
    assert not set(dev._checked) & set(dev._ops)
    cpu = ferro.device("cpu")
    cpu.backend
    assert cpu._checked == {} and {"sum", "angle"} <= set(cpu._ops)


@pytest.mark.parametrize("dim", [0, (1, 3), -1, (0, 2)])
def test_accepted_arguments_run_the_kernel(dim: object) -> None:
    got = _x().sum(dim=dim)
    np.testing.assert_allclose(got.numpy(), A.sum(axis=dim), rtol=1e-12)
    assert got.device == ferro.device(DEV)
    as_int = ferro.tensor(A * 10, dtype=ferro.int32, device=DEV).sum(dim, dtype=ferro.float64)  # every argument
    want = torch.tensor(A * 10).to(torch.int32).sum(dim, dtype=torch.float64)
    assert as_int.dtype is ferro.float64
    np.testing.assert_array_equal(as_int.numpy(), want.numpy())


def test_refused_arguments_without_decomposition_are_an_error_naming_op_argument_and_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FERRO_FALLBACK", raising=False)
    x = _x()
    with pytest.raises(UnsupportedOperationError) as info:
        x.sum(dim=(0, 1, 2))
    msg = str(info.value)
    for words in ("op 'sum'", f"backend '{DEV}'", "argument 'dim'", "at most 2 dims, not 3", "FERRO_FALLBACK=cpu"):
        assert words in msg, (words, msg)
    with pytest.raises(UnsupportedOperationError, match=r"^var: op 'sum' .*argument 'dim'"):
        x.var()  # the user's op first, then the part that failed
    np.testing.assert_array_equal(x.numpy(), A)  # the inputs are as they were


def test_refused_arguments_run_on_the_cpu_fallback_when_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FERRO_FALLBACK", "cpu")
    x = _x(requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = x.sum()
    assert got.device == ferro.device(DEV)
    np.testing.assert_allclose(got.item(), A.sum(), rtol=1e-12)
    assert any("cannot take these arguments (its kernel does not take this value of argument 'dim'" in str(w.message)
               for w in caught), [str(w.message) for w in caught]
    got.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones_like(A))
    r = ferro.backends.explain("sum", ferro.float64, DEV)
    assert r.route == "kernel" and r.arguments is not None and r.arguments.route == "fallback", str(r)


@pytest.mark.parametrize("ndim", [4, 3])
def test_refused_arguments_run_the_decomposition(ndim: int) -> None:
    z = (A + 1j * A[::-1])[(0,) * (4 - ndim)]
    x, t = ferro.tensor(z, device=DEV, requires_grad=True), torch.tensor(z, requires_grad=True)
    before = copyviews.calls["angle"]
    got, want = x.angle(), t.angle()
    assert copyviews.calls["angle"] - before == (ndim <= copyviews.ANGLE_MAX_NDIM)  # else refused: decomposed
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    seed = np.random.default_rng(1).standard_normal(tuple(want.shape))
    got.backward(ferro.tensor(seed, device=DEV))
    want.backward(torch.tensor(seed))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)
    r = ferro.backends.explain("angle", ferro.complex128, DEV)
    assert r.route == "kernel" and r.arguments.route == "decomposition", str(r)
    assert any("refuses arguments: tensors of more than 3 dims" in n for n in r.notes), str(r)


@pytest.mark.parametrize("dim", [-1, 3, 1, 0])
def test_a_fused_kernel_that_refuses_arguments_leaves_them_to_the_decomposition(dim: int) -> None:
    x, t = _x(requires_grad=True), torch.tensor(A, requires_grad=True)
    before = copyviews.calls["softmax"]
    got = ferro.nn.functional.softmax(x, dim=dim)
    assert copyviews.calls["softmax"] - before == (1 if dim in (-1, 3) else 0)
    want = torch.softmax(t, dim=dim)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    seed = np.random.default_rng(2).standard_normal(A.shape)
    got.backward(ferro.tensor(seed, device=DEV))
    want.backward(torch.tensor(seed))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-14)
    r = ferro.backends.explain("softmax", ferro.float64, DEV)
    assert r.route == "kernel" and r.arguments.route == "decomposition", str(r)


def test_explain_without_decomposition_or_fallback_says_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FERRO_FALLBACK", raising=False)
    r = ferro.backends.explain("sum", ferro.float32, DEV)
    assert r.supported and r.route == "kernel"
    assert r.arguments.route == "unsupported" and "does not take these arguments" in r.arguments.reason, str(r)
    assert "refuses arguments: a reduction over more than 2 dims" in str(r)
    assert ferro.backends.explain("sum", ferro.float32, "cpu").arguments is None


class _BadChecks(ArrayAPIBackend):
    name = "badchecks"
    module_name = "numpy"

    def argument_checks(self, index: int) -> dict[str, object]:
        return {"sum": ArgumentCheck(lambda *a: None), "nosuchop": ArgumentCheck(lambda *a: None), "exp": len}  # type: ignore[dict-item]


class _BadCopies(ArrayAPIBackend):
    name = "badcopies"
    module_name = "numpy"

    def view_copies(self, index: int) -> frozenset[str]:
        return frozenset({"permute", "exp"})


class _Unchecked(ArrayAPIBackend):
    name = "badunchecked"
    module_name = "numpy"

    def argument_checks(self, index: int) -> dict[str, ArgumentCheck]:
        return {"argsort": ArgumentCheck(lambda *a, **k: None)}


class _BadPair(ArrayAPIBackend):
    name = "badpair"
    module_name = "numpy"

    def view_copies(self, index: int) -> frozenset[str]:
        return frozenset({"view"})


class _BadPlugin:
    def __init__(self, backend: ArrayAPIBackend) -> None:
        self.backend = backend

    @hookimpl
    def ferro_plugin_api_version(self) -> int:
        return PLUGIN_API_VERSION

    @hookimpl
    def ferro_register_backends(self) -> list[object]:
        return [self.backend]


@pytest.mark.parametrize(("backend", "error"), [
    (_BadChecks, r"no op named 'nosuchop'.*the check of 'exp' is builtin_function_or_method, not an ArgumentCheck"),
    (_BadCopies, r"'exp' is not a view op"),
    (_BadPair, r"'reshape' and 'view' go together"),
    (_Unchecked, r"the kernel of 'argsort' is called by name from other ops"),
])
def test_malformed_answers_make_the_plugin_broken_when_a_device_binds(backend: type, error: str) -> None:
    if backend.name not in ferro.backends.installed():
        assert ferro.backends.register_plugin(_BadPlugin(backend()), f"test-bad-{backend.name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BackendUnavailableError, match=error):
            ferro.ones(2, device=backend.name)
    assert f"test-bad-{backend.name}" in ferro.backends.broken()


#: The ops the probe backend's checks were asked for.
_ASKED: set[str] = set()


def _probe(name: str) -> ArgumentCheck:
    def check(*args: object, **kwargs: object) -> None:
        _ASKED.add(name)
    return ArgumentCheck(check, "nothing (it records that it was asked)")


class _Probe(ArrayAPIBackend):
    name = "argprobe"
    module_name = "numpy"

    def argument_checks(self, index: int) -> dict[str, ArgumentCheck]:
        return {n: _probe(n) for n in REGISTRY if n not in UNCHECKED_OPS}


def test_every_op_run_by_its_kernel_asks_the_check() -> None:
    """A check that takes everything, on every op but UNCHECKED_OPS: each op whose kernel is bound and that the
    op database's samples run must have asked it (else a refusal would be ignored, the kernel run anyway)."""
    if _Probe.name not in ferro.backends.installed():
        assert ferro.backends.register_plugin(_BadPlugin(_Probe()), "test-argprobe")
    dev = ferro.device(_Probe.name)
    dev.backend  # binds
    rng = np.random.default_rng(0)
    ran = set()
    for info in OP_DB:
        for dt in ("float32", "complex64", "int64"):
            for sample in list(samples(info, dt, rng))[:2]:
                args = tuple(ferro.tensor(a, device=dev) if isinstance(a, np.ndarray) else a for a in sample.args)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        info(ferro, *args, **sample.kwargs)
                except Exception:  # a dtype the op refuses: not a run
                    continue
                ran.add(info.name)
    assert len(ran & set(dev._checked)) > 80
    assert sorted((ran & set(dev._checked)) - _ASKED) == []
