"""Errors that name what was wrong, and capability queries that tell the truth.

Real in-process backends are registered (``ferro.backends.register_plugin``):
the generic Array API backend over NumPy with some kernels removed and a dtype
refused by one kernel (``errpartial``), the same without float64 at all
(``errnof64``), and one that is not available here (``errabsent``). Every path
of the dispatcher then runs for real. The CPU fallback is in test_fallback.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ferro
from ferro._ops import REGISTRY
from ferro.backends import PLUGIN_API_VERSION, ArrayAPIBackend, Availability, Backend, hookimpl
from ferro.errors import (
    BackendNotFoundError,
    BackendUnavailableError,
    DeviceMismatchError,
    DTypeError,
    FerroError,
    ShapeError,
    UnsupportedOperationError,
)
from ferro.testing._opinfo import OP_DB, samples

#: Kernels the partial backends leave out: ops with a decomposition among them still run.
DROPPED = ("exp", "reciprocal", "rsqrt", "cumsum")


class Partial(ArrayAPIBackend):
    """NumPy through the generic backend, without some kernels and with a float64-refusing sqrt."""

    name = "errpartial"
    module_name = "numpy"

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        table = super().kernels(index)
        for name in DROPPED:
            table.pop(name, None)
        return table

    def unsupported(self, index: int) -> dict[str, frozenset[ferro.DType]]:
        return {"sqrt": frozenset({ferro.float64})}


class NoFloat64(Partial):
    """As Partial, on a device without float64 at all (an OpenCL device without cl_khr_fp64)."""

    name = "errnof64"

    def dtypes(self, index: int) -> frozenset[ferro.DType]:
        return super().dtypes(index) - {ferro.float64, ferro.complex128}


class Absent(Backend):
    """A backend that cannot run here."""

    name = "errabsent"

    def availability(self) -> Availability:
        return Availability(False, "no widget attached")


class _Plugin:
    @hookimpl
    def ferro_plugin_api_version(self) -> int:
        return PLUGIN_API_VERSION

    @hookimpl
    def ferro_register_backends(self) -> list[Backend]:
        return [Partial(), NoFloat64(), Absent()]


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    if "errpartial" not in ferro.backends.installed():
        assert ferro.backends.register_plugin(_Plugin(), "test-errors-plugin")


# -- UnsupportedOperationError ------------------------------------------------------------------------------


def test_unsupported_operation_error_names_everything() -> None:
    x = ferro.ones(3, device="errpartial")
    with pytest.raises(UnsupportedOperationError) as info:
        x.exp()
    err = info.value
    msg = str(err)
    assert isinstance(err, NotImplementedError) and isinstance(err, FerroError)
    for words in ("op 'exp'", "dtype ferro.float32", "backend 'errpartial'", "device 'errpartial:0'",
                  "the backend has no kernel for it", "FERRO_FALLBACK=cpu"):
        assert words in msg, words
    others = msg.split("Installed backends that have it: ")[1].split(".")[0].split(", ")
    assert "cpu" in others and "errpartial" not in others and "errnof64" not in others and "errabsent" not in others
    assert (err.op, err.dtype, err.backend, str(err.device)) == ("exp", ferro.float32, "errpartial", "errpartial:0")
    assert "cpu" in err.others


def test_a_kernel_that_refuses_a_dtype() -> None:
    x64 = ferro.ones(2, dtype=ferro.float64, device="errpartial")
    with pytest.raises(UnsupportedOperationError, match=r"'sqrt' is not supported for dtype ferro\.float64 by backend "
                                                        r"'errpartial'.*refuses this dtype"):
        x64.sqrt()
    assert ferro.ones(2, device="errpartial").sqrt().tolist() == [1.0, 1.0]
    b = ferro.backends.get("errpartial")
    assert not b.supports("sqrt", ferro.float64) and b.supports("sqrt", ferro.float32)


def test_a_device_without_a_dtype() -> None:
    with pytest.raises(UnsupportedOperationError, match=r"float64.*'errnof64'.*does not support ferro\.float64"):
        ferro.ones(2, dtype=ferro.float64, device="errnof64")
    x = ferro.ones(2, device="errnof64")
    for make in (lambda: x.double(), lambda: x.to(ferro.float64), lambda: ferro.ones(2, dtype=ferro.float64).to(
            "errnof64")):
        with pytest.raises(UnsupportedOperationError, match="float64"):
            make()
    b = ferro.backends.get("errnof64")
    assert not any(b.supports(op, ferro.float64) for op in ("add", "sum", "matmul", "sqrt"))
    assert b.supports("add", ferro.float32)
    caps = b.capabilities()
    assert "float64" not in caps["add"] and "float32" in caps["add"] and caps["exp"] == []


def test_decompositions_run_without_a_kernel() -> None:
    b = ferro.backends.get("errpartial")
    assert "reciprocal" not in b._device(None)._kernels and b.supports("reciprocal", ferro.float32)
    x = ferro.tensor([4.0, 16.0], device="errpartial", requires_grad=True)
    y = x.rsqrt() + x.reciprocal()
    assert y.device == ferro.device("errpartial") and y.tolist() == [0.75, 0.3125]
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -0.5 * np.array([4.0, 16.0]) ** -1.5 - np.array([4.0, 16.0]) ** -2.0)
    assert not b.supports("rsqrt", ferro.float64), "its decomposition needs sqrt, refused for float64"
    with pytest.raises(UnsupportedOperationError, match="'sqrt'"):
        ferro.ones(2, dtype=ferro.float64, device="errpartial").rsqrt()


def test_a_failed_op_leaves_inputs_and_graph_unchanged() -> None:
    x = ferro.tensor([1.0, 2.0], device="errpartial", requires_grad=True)
    y = x * 2
    node, version = y.grad_fn, y.version
    with pytest.raises(UnsupportedOperationError):
        y.exp_()
    with pytest.raises(DTypeError):
        y.bitwise_and_(y)
    assert y.tolist() == [2.0, 4.0] and y.version == version and y.grad_fn is node
    n = ferro.tensor([1, 2], device="errpartial")
    with pytest.raises(DTypeError, match=r"add_: result type ferro\.float32 can't be cast to the desired output "
                                         r"type ferro\.int64"):
        n.add_(ferro.tensor([0.5, 0.5], device="errpartial"))
    assert n.tolist() == [1, 2] and n.version == 0
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0], "the graph still works"


# -- supports() agrees with what runs -------------------------------------------------------------------------

_DB = {info.name: info for info in OP_DB}


def _x(d: ferro.DType, dev: str, shape: tuple[int, ...] = (3, 4)) -> ferro.Tensor:
    return ferro.ones(*shape, dtype=d, device=dev)


#: Calls for the registry ops the op database does not sample: (ferro dtype, device) -> result.
EXTRA: dict[str, Callable[[ferro.DType, str], Any]] = {
    "real": lambda d, dev: ferro.real(_x(d, dev)), "imag": lambda d, dev: ferro.imag(_x(d, dev)),
    "fft_c2c": lambda d, dev: REGISTRY["fft_c2c"].fn(_x(d, dev), (1,), "backward", True),
    "fft_r2c": lambda d, dev: REGISTRY["fft_r2c"].fn(_x(d, dev), (1,), "backward"),
    "fft_c2r": lambda d, dev: REGISTRY["fft_c2r"].fn(_x(d, dev), (1,), "backward", 6),
    "reshape": lambda d, dev: _x(d, dev).reshape(12), "view": lambda d, dev: _x(d, dev).view(4, 3),
    "permute": lambda d, dev: _x(d, dev).permute(1, 0), "expand": lambda d, dev: _x(d, dev, (4,)).expand(3, 4),
    "contiguous": lambda d, dev: _x(d, dev).T.contiguous(), "clone": lambda d, dev: _x(d, dev).clone(),
    "cat": lambda d, dev: ferro.cat([_x(d, dev), _x(d, dev)]), "stack": lambda d, dev: ferro.stack([_x(d, dev)] * 2),
    "getitem": lambda d, dev: _x(d, dev)[1:, [0, 2]],
    "where": lambda d, dev: ferro.where(_x(ferro.bool_, dev), _x(d, dev), _x(d, dev, (4,))),
    "index_put": lambda d, dev: _x(d, dev).index_put((ferro.tensor([0, 2], device=dev),), _x(d, dev, (4,))),
    "cast": lambda d, dev: _x(d, dev).to(ferro.float32 if d is not ferro.float32 else ferro.int32),
    "dropout": lambda d, dev: ferro.nn.functional.dropout(_x(d, dev), 0.5),
    "dropout2d": lambda d, dev: ferro.nn.functional.dropout2d(_x(d, dev, (2, 3, 2)), 0.5),
    "bernoulli": lambda d, dev: ferro.bernoulli(_x(d, dev)),
    "multinomial": lambda d, dev: ferro.multinomial(_x(d, dev), 2),
    "normal": lambda d, dev: ferro.normal(_x(d, dev), 1.0),
    "randperm": lambda d, dev: ferro.randperm(4, dtype=d, device=dev),
    "conv3d": lambda d, dev: ferro.nn.functional.conv3d(_x(d, dev, (1, 1, 3, 3, 3)), _x(d, dev, (1, 1, 2, 2, 2))),
    "conv_transpose1d": lambda d, dev: ferro.nn.functional.conv_transpose1d(_x(d, dev, (1, 2, 3)), _x(d, dev,
                                                                                                      (2, 1, 2))),
    "conv_transpose2d": lambda d, dev: ferro.nn.functional.conv_transpose2d(_x(d, dev, (1, 2, 3, 3)), _x(d, dev,
                                                                                                         (2, 1, 2, 2))),
    **{f"linalg.{n}": (lambda d, dev, _n=n: getattr(ferro.linalg, _n)(_x(d, dev, (3, 3)) + ferro.eye(
        3, dtype=d, device=dev) * 3)) for n in ("inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "svd",
                                                "svdvals", "qr", "pinv", "vector_norm", "matrix_norm", "lu_factor",
                                                "lu")},
    "linalg.solve": lambda d, dev: ferro.linalg.solve(_x(d, dev, (3, 3)) + ferro.eye(3, dtype=d, device=dev),
                                                      _x(d, dev, (3,))),
    "linalg.lstsq": lambda d, dev: ferro.linalg.lstsq(_x(d, dev, (3, 2)) + ferro.eye(3, 2, dtype=d, device=dev),
                                                      _x(d, dev, (3, 1))),
    "linalg.cross": lambda d, dev: ferro.linalg.cross(_x(d, dev, (2, 3)), _x(d, dev, (2, 3))),
    "linalg.cdist": lambda d, dev: ferro.linalg.cdist(_x(d, dev, (2, 3)), _x(d, dev, (4, 3))),
    **{f"{n.lower()}_step": (lambda d, dev, _n=n: _optimizer_step(_n, d, dev))
       for n in ("SGD", "Adam", "RMSprop", "Adagrad", "Adamax", "NAdam")},
    "amp_unscale_": lambda d, dev: ferro.ops.amp_unscale_([_x(d, dev)], ferro.zeros((), device=dev), 0.5),
    "int8_matmul": lambda d, dev: ferro.ops.int8_matmul(_x(d, dev), _x(d, dev, (4, 2))),
}


def _optimizer_step(name: str, d: ferro.DType, dev: str) -> None:
    """One step of optimizer ``name`` on a parameter of dtype ``d``: its step op, by kernel or decomposition."""
    p = _x(d, dev)
    p.grad = _x(d, dev)
    getattr(ferro.optim, name)([p], lr=0.1).step()


def _call(name: str, d: ferro.DType, dev: str) -> Callable[[], Any]:
    if name in EXTRA:
        return lambda: EXTRA[name](d, dev)
    info = _DB[name]
    np_dtype = "float32" if d is ferro.bfloat16 else ("bool" if d is ferro.bool_ else d.name)
    sample = next(samples(info, np_dtype, np.random.default_rng(0)))

    def run() -> Any:
        args = tuple(ferro.tensor(a, device=dev).to(d) if isinstance(a, np.ndarray) else a for a in sample.args)
        return info(ferro, *args, **sample.kwargs)
    return run


def _own() -> list[str]:
    """ferro's own ops (a plugin's are tested from its records' test data by the conformance suite)."""
    return sorted(n for n, op in REGISTRY.items() if not op.plugin)


def test_every_registry_op_has_a_call_here() -> None:
    assert not sorted(set(_own()) - set(EXTRA) - set(_DB))


#: Pairs where the sample's values, not the dtype, make the call fail (domain errors): not a capability.
NOT_CAPABILITY = (ValueError, ZeroDivisionError, IndexError, OverflowError, np.linalg.LinAlgError)
#: Ops whose database sample wraps them in other ops the partial backends lack: checked on cpu only.
SAMPLE_WRAPS = {"kl_div": "the sample takes log_softmax (exp) first", "nll_loss": "as kl_div",
                "bilinear": "the sample makes a float64 weight, which errnof64 lacks"}


def _outcomes(backend_name: str) -> list[tuple[str, ferro.DType, bool, str]]:
    """(op, dtype, supports(), what happened) for every registry op and dtype of the device."""
    import warnings
    backend = ferro.backends.get(backend_name)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in _own():
            if backend_name != "cpu" and name in SAMPLE_WRAPS:
                continue
            for d in sorted(backend.dtypes(0), key=lambda t: t.name):
                try:
                    _call(name, d, backend_name)()
                    outcome = "runs"
                except UnsupportedOperationError:
                    outcome = "unsupported"
                except NotImplementedError:  # a feature the face refuses (complex optimizer parameters)
                    continue
                except DTypeError:
                    outcome = "dtype error"
                except NOT_CAPABILITY:
                    continue
                except TypeError as e:  # e.g. a linalg routine of NumPy without float16
                    outcome = f"TypeError: {e}"
                out.append((name, d, backend.supports(name, d), outcome))
    return out


@pytest.fixture(scope="module", params=["cpu", "errpartial", "errnof64"])
def outcomes(request: pytest.FixtureRequest) -> tuple[str, list[tuple[str, ferro.DType, bool, str]]]:
    return request.param, _outcomes(request.param)


def test_supports_is_false_for_dtypes_the_device_lacks() -> None:
    b = ferro.backends.get("errnof64")
    for name in REGISTRY:
        assert not b.supports(name, ferro.float64) and not b.supports(name, ferro.complex128), name


def test_supports_agrees_with_what_runs(outcomes: tuple[str, list[Any]]) -> None:
    """supports() True: the op runs (never UnsupportedOperationError); False: it is refused.

    Exact for the ops with their own kernels. For ops written in other ops
    the backend-level promise is checked (True never meets a missing or
    refused kernel); whether their dtype rules and ``uses`` lists are exact
    is the next test.
    """
    backend_name, rows = outcomes
    lies = []
    for name, d, claimed, outcome in rows:
        composite = REGISTRY[name].decomposition is not None
        if outcome == "unsupported" and claimed:
            lies.append(f"{name}[{d.name}]: supports() is True but it raised UnsupportedOperationError")
        elif not composite and (outcome == "runs") != claimed:
            lies.append(f"{name}[{d.name}]: supports() is {claimed} but {outcome}")
    assert not lies, f"on {backend_name}:\n" + "\n".join(lies)


#: Where an op written in other ops has a dtype rule wider or narrower than what its decomposition does
#: (e.g. linalg.* refuse integers that run, activations accept complex that their comparisons refuse): one
#: line per (backend, op, dtype), ``BACKEND OP DTYPE supports() OUTCOME``. The test is exact both ways: a new
#: gap fails it, and so does a fixed one whose line was left here.
RULE_GAPS = Path(__file__).with_name("composite_dtype_rule_gaps.txt")


def _gap_line(backend_name: str, name: str, d: ferro.DType, claimed: bool, outcome: str) -> str:
    kind = "TypeError" if outcome.startswith("TypeError") else outcome.replace(" ", "-")
    return f"{backend_name} {name} {d.name} {claimed} {kind}"


def test_dtype_rules_of_composites_agree_with_what_runs(outcomes: tuple[str, list[Any]]) -> None:
    backend_name, rows = outcomes
    wrong = {_gap_line(backend_name, name, d, claimed, outcome) for name, d, claimed, outcome in rows
             if REGISTRY[name].decomposition is not None and (outcome == "runs") != claimed}
    known = {line for line in RULE_GAPS.read_text().splitlines()
             if line.startswith(f"{backend_name} ")}
    new, fixed = sorted(wrong - known), sorted(known - wrong)
    assert not new and not fixed, (f"on {backend_name}: new gaps (fix them, or add them to {RULE_GAPS.name}):\n"
                                   + "\n".join(new) + f"\nfixed (remove them from {RULE_GAPS.name}):\n"
                                   + "\n".join(fixed))


# -- the other errors, as text --------------------------------------------------------------------------------

DTYPE_ERRORS: dict[str, tuple[Callable[[], Any], tuple[str, ...]]] = {
    "bitwise on floats": (lambda: ferro.ones(2) & ferro.ones(2), ("bitwise_and", "ferro.float32")),
    "bitwise_not on floats": (lambda: ~ferro.ones(2), ("bitwise_not", "ferro.float32")),
    "mean of ints": (lambda: ferro.ones(2, dtype=ferro.int64).mean(), ("mean", "ferro.int64")),
    "relu of complex": (lambda: ferro.ones(2, dtype=ferro.complex64).relu(), ("relu", "ferro.complex64")),
    "in-place cast": (lambda: ferro.ones(2, dtype=ferro.int32).mul_(1.5), ("mul_", "ferro.float32", "ferro.int32")),
    "comparison of complex": (lambda: ferro.ones(2, dtype=ferro.complex64) < 1, ("lt", "ferro.complex64")),
}


@pytest.mark.parametrize("case", list(DTYPE_ERRORS))
def test_dtype_errors_name_the_op_and_dtype(case: str) -> None:
    fn, words = DTYPE_ERRORS[case]
    with pytest.raises(DTypeError) as info:
        fn()
    assert isinstance(info.value, TypeError) and isinstance(info.value, FerroError)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


SHAPE_ERRORS: dict[str, tuple[Callable[[], Any], tuple[str, ...]]] = {
    "broadcast": (lambda: ferro.ones(2, 3) + ferro.ones(4), ("add", "[2, 3]", "[4]")),
    "matmul": (lambda: ferro.ones(2, 3) @ ferro.ones(4, 2), ("matmul", "[2, 3]", "[4, 2]")),
    "reshape": (lambda: ferro.ones(2, 3).reshape(4), ("[4]", "[2, 3]")),
    "view of a transpose": (lambda: ferro.ones(2, 3).T.view(6), ("view", "[6]", "[3, 2]", "strides [1, 3]",
                                                                  "use .reshape(...) instead")),
    "cat": (lambda: ferro.cat([ferro.ones(2, 3), ferro.ones(2, 4)]), ("cat", "[2, 3]", "[2, 4]")),
    "expand": (lambda: ferro.ones(3).expand(2, 4), ("expand", "[2, 4]", "[3]")),
    "in-place broadcast": (lambda: ferro.ones(3).add_(ferro.ones(2, 3)), ("add_", "[3]", "[2, 3]")),
    "setitem": (lambda: ferro.ones(2).__setitem__(slice(None), ferro.ones(3)), ("[3]", "[2]")),
    "where": (lambda: ferro.where(ferro.ones(2) > 0, ferro.ones(3), 0.0), ("where", "[2]", "[3]")),
    "backward gradient": (lambda: (ferro.ones(2, requires_grad=True) * 2).backward(ferro.ones(3)), ("[3]", "[2]")),
}


@pytest.mark.parametrize("case", list(SHAPE_ERRORS))
def test_shape_errors_name_the_shapes(case: str) -> None:
    fn, words = SHAPE_ERRORS[case]
    with pytest.raises((ShapeError, RuntimeError)) as info:
        fn()
    if case != "backward gradient":
        assert isinstance(info.value, ShapeError) and isinstance(info.value, ValueError)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    assert "Incompatible shape" not in str(info.value)  # NumPy's own words stay out of it


MIXED: dict[str, Callable[[ferro.Tensor, ferro.Tensor], Any]] = {
    "add": lambda a, b: a + b, "matmul": lambda a, b: a @ b, "cat": lambda a, b: ferro.cat([a, b]),
    "stack": lambda a, b: ferro.stack([a, b]), "where": lambda a, b: ferro.where(a > 0, a, b),
    "in-place": lambda a, b: a.add_(b), "index": lambda a, b: a[b.long()],
    "setitem": lambda a, b: a.__setitem__(slice(None), b),
}


@pytest.mark.parametrize("case", list(MIXED))
def test_device_mismatch_names_both_devices(case: str) -> None:
    a, b = ferro.ones(2), ferro.ones(2, device="errpartial")
    with pytest.raises(DeviceMismatchError) as info:
        MIXED[case](a, b)
    assert isinstance(info.value, RuntimeError)
    assert "cpu" in str(info.value) and "errpartial:0" in str(info.value), str(info.value)
    assert a.tolist() == [1.0, 1.0] and a.version == 0, "nothing was written"


def test_a_zero_dim_cpu_tensor_mixes_with_any_device_as_a_scalar() -> None:
    b = ferro.ones(2, device="errpartial")
    assert (ferro.tensor(2.0) * b).device == b.device and (b * ferro.tensor(2.0)).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("make", [
    lambda: ferro.ones(2, device="nosuch"), lambda: ferro.set_backend("nosuch"), lambda: ferro.backends.get("nosuch"),
    lambda: ferro.ones(2).to("nosuch:1"), lambda: ferro.use_backend("nosuch").__enter__(),
], ids=["factory", "set_backend", "get", "to", "use_backend"])
def test_backend_not_found_lists_the_installed_backends(make: Callable[[], Any]) -> None:
    with pytest.raises(BackendNotFoundError) as info:
        make()
    msg = str(info.value)
    assert isinstance(info.value, ValueError) and "no backend named 'nosuch'" in msg
    for name in ferro.backends.installed():
        assert name in msg.split("installed backends: ")[1], name
    assert ferro.backends.current_backend() == "cpu"


@pytest.mark.parametrize("make", [
    lambda: ferro.ones(2, device="errabsent"), lambda: ferro.set_backend("errabsent"),
    lambda: ferro.ones(2).to("errabsent"), lambda: ferro.use_backend("errabsent").__enter__(),
    lambda: ferro.device("errabsent").backend,
], ids=["factory", "set_backend", "to", "use_backend", "device"])
def test_backend_unavailable_error_gives_the_reason(make: Callable[[], Any]) -> None:
    reason = "backend 'errabsent' is not available: no widget attached"
    with pytest.raises(BackendUnavailableError, match=reason) as info:
        make()
    assert isinstance(info.value, RuntimeError) and info.value.reason == "no widget attached"
    assert ferro.backends.current_backend() == "cpu"


def test_an_unavailable_backend_is_listed_with_its_reason() -> None:
    assert "errabsent" in ferro.backends.installed() and "errabsent" not in ferro.backends.available()
    assert ferro.backends.unavailable()["errabsent"] == "no widget attached"
    assert ferro.backends.status()["errabsent"] == Availability(False, "no widget attached")
    b = ferro.backends.get("errabsent")
    assert not b.supports("add", ferro.float32) and b.capabilities() == {}


def test_move_between_backends_keeps_values_and_gradients() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("errpartial") * 3
    assert y.device == ferro.device("errpartial:0")
    y.to("cpu").sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and x.grad.device == x.device
