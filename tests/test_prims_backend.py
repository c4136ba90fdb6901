"""The minimal backend: ``prims`` (tests/plugins) has only the contract's required primitives.

DESIGN.md: "A backend that implements only the primitives runs every op." The
conformance suite runs on ``prims`` like on every installed backend (the default
``--ferro-backend=all``); here: its table is exactly the required set, composite
ops run end to end through their decompositions (values and gradients against
PyTorch), the ops the suite does not sample run too, and the ops of optional
groups it lacks are refused, naming the op and the group.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import ferro
import ferro.nn.functional as F
from ferro._core.records import REGISTRY
from ferro.autograd import gradcheck
from ferro.backends import contract
from ferro.errors import UnsupportedOperationError

from conftest import clean_env

DEV = "prims"


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    if DEV not in ferro.backends.installed():
        pytest.skip("the ferro-testplugins 'prims' backend is not installed (pip install -e tests/plugins)")


def _pair(a: np.ndarray, grad: bool = True) -> tuple[ferro.Tensor, torch.Tensor]:
    return (ferro.tensor(a, device=DEV, requires_grad=grad),
            torch.tensor(a, requires_grad=grad))


def _check(fn_ferro: Callable[..., Any], fn_torch: Callable[..., Any], *arrays: np.ndarray) -> None:
    """Values and the gradients of every input agree with PyTorch (float64)."""
    pairs = [_pair(a) for a in arrays]
    got = fn_ferro(*(p[0] for p in pairs))
    want = fn_torch(*(p[1] for p in pairs))
    assert got.device == ferro.device(DEV)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    seed = np.random.default_rng(7).standard_normal(tuple(want.shape))
    got.backward(ferro.tensor(seed, device=DEV))
    want.backward(torch.tensor(seed))
    for (f, t) in pairs:
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_the_table_is_exactly_the_required_primitives() -> None:
    b = ferro.backends.get(DEV)
    table = b.kernels(0)
    assert set(table) == set(contract.kernel_names(contract.REQUIRED))
    assert b.complete and b.optional_groups == frozenset()
    assert contract.check_backend(table, b.complete, b.optional_groups) == []
    dev = ferro.device(DEV)
    dev.backend  # binds its table
    assert set(dev._kernels) == set(table)  # no plugin adds to it


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm", "conv2d", "max_pool2d", "cross_entropy",
                                "sort", "topk", "linear", "scaled_dot_product_attention", "adam_step", "silu"])
def test_composite_ops_run_by_their_decomposition(op: str) -> None:
    r = ferro.backends.explain(op, ferro.float64, DEV)
    assert r.route == "decomposition", str(r)
    assert all(p.supported for p in r.parts), str(r)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 5, 6))


CASES = [
    ("softmax", lambda x: F.softmax(x, dim=1), lambda x: torch.softmax(x, dim=1), (X,)),
    ("log_softmax", lambda x: F.log_softmax(x, dim=-1), lambda x: torch.log_softmax(x, dim=-1), (X,)),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (5, 6), w, b, 1e-5),
     lambda x, w, b: torch.nn.functional.layer_norm(x, (5, 6), w, b, 1e-5),
     (X, RNG.standard_normal((5, 6)), RNG.standard_normal((5, 6)))),
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
     lambda x, w, b: torch.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
     (X, RNG.standard_normal((4, 3, 3, 2)), RNG.standard_normal(4))),
    ("conv2d groups", lambda x, w: F.conv2d(x, w, groups=3), lambda x, w: torch.nn.functional.conv2d(x, w, groups=3),
     (X, RNG.standard_normal((6, 1, 2, 2)))),
    ("conv3d", lambda x, w: F.conv3d(x, w, padding=1), lambda x, w: torch.nn.functional.conv3d(x, w, padding=1),
     (X[:, None], RNG.standard_normal((2, 1, 2, 3, 2)))),
    ("conv_transpose1d", lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1),
     lambda x, w: torch.nn.functional.conv_transpose1d(x, w, stride=2, padding=1),
     (X[0], RNG.standard_normal((5, 2, 3)))),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 2), lambda x: torch.nn.functional.avg_pool2d(x, 2), (X,)),
    ("logsumexp", lambda x: ferro.logsumexp(x, dim=(1, 3)), lambda x: torch.logsumexp(x, dim=(1, 3)), (X,)),
    ("var", lambda x: x.var(dim=2, correction=0), lambda x: x.var(dim=2, correction=0), (X,)),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2, stride=1, padding=1),
     lambda x: torch.nn.functional.max_pool2d(x, 2, stride=1, padding=1), (X,)),
    ("cross_entropy", lambda x: F.cross_entropy(x, ferro.tensor([2, 0, 4, 1], device=DEV)),
     lambda x: torch.nn.functional.cross_entropy(x, torch.tensor([2, 0, 4, 1])), (RNG.standard_normal((4, 5)),)),
    ("sort", lambda x: ferro.sort(x, dim=-1, descending=True)[0],
     lambda x: torch.sort(x, dim=-1, descending=True)[0], (X,)),
    ("topk", lambda x: ferro.topk(x, 3, dim=2)[0], lambda x: torch.topk(x, 3, dim=2)[0], (X,)),
    ("linear", lambda x, w, b: F.linear(x, w, b), lambda x, w, b: torch.nn.functional.linear(x, w, b),
     (X, RNG.standard_normal((4, 6)), RNG.standard_normal(4))),
    ("attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
     lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
     (RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 2)))),
    ("gelu tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: torch.nn.functional.gelu(x, approximate="tanh"), (X,)),
]


@pytest.mark.parametrize("name, f, t, arrays", CASES, ids=[c[0] for c in CASES])
def test_composites_match_torch(name: str, f: Callable[..., Any], t: Callable[..., Any],
                                arrays: tuple[np.ndarray, ...]) -> None:
    _check(f, t, *arrays)


def test_an_adam_step_matches_torch() -> None:
    a = RNG.standard_normal((3, 4))
    p, q = ferro.tensor(a, device=DEV, requires_grad=True), torch.tensor(a, requires_grad=True)
    opt, topt = ferro.optim.Adam([p], lr=0.1, weight_decay=0.01), torch.optim.Adam([q], lr=0.1, weight_decay=0.01)
    for _ in range(3):
        opt.zero_grad()
        topt.zero_grad()
        (p * p).sum().backward()
        (q * q).sum().backward()
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_the_ops_the_conformance_suite_does_not_sample_run_too() -> None:
    # shape and indexing ops, casts, and the composites that tests/test_linalg.py and test_conv.py check on cpu
    a = RNG.standard_normal((2, 3, 4))
    x, y = _pair(a)
    checks = [
        (x.reshape(4, 6).permute(1, 0).contiguous(), y.reshape(4, 6).permute(1, 0).contiguous()),
        (ferro.cat([x, x * 2], 1), torch.cat([y, y * 2], 1)),
        (ferro.stack([x, x], -1).clone(), torch.stack([y, y], -1).clone()),
        (x[:, ferro.tensor([2, 0, 2], device=DEV), 1:], y[:, torch.tensor([2, 0, 2]), 1:]),
        (x[x > 0.5], y[y > 0.5]),
        (x[0:1].expand(3, 3, 4), y[0:1].expand(3, 3, 4)),
        (ferro.linalg.vector_norm(x, 3, dim=1), torch.linalg.vector_norm(y, 3, dim=1)),
        (ferro.linalg.matrix_norm(x), torch.linalg.matrix_norm(y)),
        (ferro.linalg.cross(x[..., :3], x[..., 1:]), torch.linalg.cross(y[..., :3], y[..., 1:])),
        (ferro.linalg.cdist(x, x), torch.cdist(y, y)),
        (F.conv_transpose2d(x[None], x[:, :2, None].permute(1, 2, 0, 3).contiguous()[:, :, :2] * 1.0, stride=2),
         torch.nn.functional.conv_transpose2d(y[None], y[:, :2, None].permute(1, 2, 0, 3).contiguous()[:, :, :2] * 1.0,
                                              stride=2)),
    ]
    for got, want in checks:
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    total = sum((g * g).sum() for g, _ in checks)
    total.backward()
    sum((w * w).sum() for _, w in checks).backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-9, atol=1e-10)

    z = ferro.zeros(5, dtype=ferro.float64, device=DEV).index_put(
        (ferro.tensor([1, 3, 1], device=DEV),), ferro.tensor([1.0, 2.0, 4.0], device=DEV), accumulate=True)
    assert z.tolist() == [0.0, 5.0, 0.0, 2.0, 0.0]
    assert x.to(ferro.int32).numpy().tolist() == a.astype(np.int32).tolist()
    assert np.array_equal(F.dropout(x, 0.5, training=False).detach().numpy(), a)
    kept = F.dropout(ferro.ones(1000, dtype=ferro.float64, device=DEV), 0.25).numpy()
    assert set(np.unique(kept)) <= {0.0, 4 / 3} and 0.6 < np.mean(kept > 0) < 0.9


@pytest.mark.parametrize("call, op, group", [
    (lambda x: ferro.erf(x), "erf", "special"),
    (lambda x: F.gelu(x), "erf", "special"),
    (lambda x: ferro.lgamma(x), "lgamma", "special"),
    (lambda x: ferro.linalg.inv(x), "linalg.inv", "linalg"),
    (lambda x: ferro.linalg.cholesky(x), "linalg.cholesky", "linalg"),
    (lambda x: ferro.linalg.det(x), "linalg.det", "linalg"),
])
def test_ops_of_the_optional_groups_it_lacks_are_refused_naming_the_group(call: Callable[..., Any], op: str,
                                                                          group: str) -> None:
    x = ferro.tensor(np.eye(3) * 2, device=DEV, requires_grad=True)
    expected = rf"op '{re.escape(op)}' .* backend 'prims'.* optional group '{group}'"
    with pytest.raises(UnsupportedOperationError, match=expected):
        call(x)
    assert x.grad is None and x.grad_fn is None


@pytest.mark.parametrize("op", ["erf", "gelu", "lgamma", "digamma", "linalg.inv", "linalg.det", "linalg.svd",
                                "fft.rfft", "fft.fft"])
def test_supports_says_no_for_the_ops_of_missing_groups(op: str) -> None:
    b = ferro.backends.get(DEV)
    assert not b.supports(op, ferro.float64)
    assert op not in b.capabilities() or "float64" not in b.capabilities()[op]


def test_the_default_selection_of_the_conformance_suite_includes_prims() -> None:
    import subprocess
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--pyargs", "ferro.testing.conformance.test_basic"],
                          capture_output=True, text=True, env=clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[prims:0]" in proc.stdout, proc.stdout[-2000:]


def test_real_conj_and_angle_of_real_tensors_run_and_are_claimed() -> None:
    a = np.array([-1.0, 0.0, -0.0, 2.5, np.nan, -np.inf, np.inf])
    x = ferro.tensor(a, device=DEV)
    b = ferro.backends.get(DEV)
    for op in ("real", "conj", "conj_physical", "angle"):
        assert b.supports(op, ferro.float64) and b.supports(op, ferro.int64), op
    assert ferro.real(x) is x and ferro.conj(x) is x
    flags = ferro.tensor([True, False], device=DEV)
    assert b.supports("conj", ferro.bool_) and ferro.conj(flags) is flags
    np.testing.assert_array_equal(ferro.angle(x).numpy(), torch.angle(torch.tensor(a)).numpy())
    assert ferro.angle(x).dtype is ferro.float64
    ints = ferro.tensor([-3, 0, 4], device=DEV)
    assert ferro.angle(ints).dtype is ferro.float32
    np.testing.assert_allclose(ferro.angle(ints).numpy(), torch.angle(torch.tensor([-3, 0, 4])).numpy())


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("name", ["real", "imag", "conj", "angle"])
def test_the_complex_parts_decompose_into_casts(name: str) -> None:
    """A backend with complex dtypes but without the group ``complex`` runs the parts by their decompositions
    (the contract's cast keeps the real part, as C's conversion does): checked on cpu's complex128, values
    against NumPy, gradients by finite differences."""
    op = REGISTRY[name]
    z = ferro.tensor(np.array([1 + 2j, -3 - 0.5j, 0.25 - 4j]), dtype=ferro.complex128, requires_grad=True)
    got = op.decomposition(z)
    want = getattr(np, name)(z.detach().numpy())
    assert got.dtype is op.table[ferro.complex128][1]
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12)
    assert gradcheck(op.decomposition, [z])
