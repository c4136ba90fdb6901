"""What a decomposition calls is derived, and the resolver's answers hold on real backends.

``python -m ferro._usesgen`` runs every decomposition on its conformance samples
on the CPU backend and writes ``ferro/backends/uses.json``, which the resolver
(``ferro.backends.explain``, ``Backend.supports``) reads. Here: the checked-in
table is what the generator writes now; on the primitives-only ``prims``, on
``toy`` and on ``strict``, for every op and every dtype its rule takes, the
resolver says "supported" exactly where calling the op on its samples raises
no ``UnsupportedOperationError``; nested decompositions count as the op called;
the table is read on the first capability query, not at import.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import ferro
from ferro._core.records import REGISTRY
from ferro.backends._resolve import uses_of
from ferro.errors import UnsupportedOperationError
from ferro.testing._opinfo import OP_DB, OpInfo, samples

from conftest import clean_env, run_python


def test_the_checked_in_table_is_what_the_decompositions_call() -> None:
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "ferro._usesgen", "--check"], capture_output=True,
                          text=True, env=clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _np_name(dtype: ferro.DType) -> str:
    return "float32" if dtype is ferro.bfloat16 else dtype.name


def _outcome(info: OpInfo, dtype: ferro.DType, dev: ferro.device) -> tuple[str | None, str | None]:
    """Calling the op on its samples at ``dtype`` on ``dev``: the first UnsupportedOperationError and the first
    DTypeError (an op its decomposition calls refusing the dtype, on every backend), each None where none."""
    unsupported = refused = None
    for s in samples(info, _np_name(dtype), np.random.default_rng(0)):
        args = tuple(ferro.tensor(a, device=dev).to(dtype) if isinstance(a, np.ndarray) else a for a in s.args)
        try:
            info(ferro, *args, **s.kwargs)
        except UnsupportedOperationError as e:
            unsupported = unsupported or str(e).split("\n")[0]
        except ferro.errors.DTypeError as e:
            refused = refused or str(e).split("\n")[0]
        except Exception:  # a value the op refuses: not a capability question
            continue
    return unsupported, refused


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("backend", ["prims", "toy", "strict"])
def test_the_resolver_says_supported_exactly_where_the_op_runs(backend: str) -> None:
    """"Supported" where no sample call is refused as unsupported; "unsupported" where one is, or where a part
    of the decomposition refuses the dtype (a DTypeError on every backend, which the conformance suite
    accepts from an op a backend does not claim)."""
    if backend not in ferro.backends.installed():
        pytest.skip(f"the test backend '{backend}' is not installed (pip install -e tests/plugins)")
    dev = ferro.device(backend)
    dev.backend  # binds the device
    db = OP_DB + [op.tests if isinstance(op.tests, OpInfo) else op.tests() for op in REGISTRY.values()
                  if op.tests is not None]
    wrong, checked = [], 0
    for info in db:
        for dtype in REGISTRY[info.name].table:
            if dtype not in dev._dtypes:
                continue
            r = ferro.backends.explain(info.name, dtype, dev)
            unsupported, refused = _outcome(info, dtype, dev)
            checked += 1
            if (r.supported and unsupported) or (not r.supported and not (unsupported or refused)):
                wrong.append(f"{info.name} [{dtype.name}]: explain says {r.route}"
                             + (f" ({r.reason})" if r.reason else "")
                             + f"; the call {unsupported or refused or 'runs'}")
    assert checked > 1000
    assert not wrong, f"{len(wrong)} answers disagree with the call:\n" + "\n".join(wrong)


def test_a_nested_decomposition_counts_as_the_op_called() -> None:
    # mish(x) = x * tanh(softplus(x)): softplus is a use, what softplus calls (exp, log1p, where...) is its own
    mish = uses_of(REGISTRY["mish"], ferro.float32)
    assert set(mish) == {"softplus", "tanh", "mul"}, mish
    # softplus calls mul, gt, div besides where / exp / log1p (its hand-written list left them out)
    assert {"mul", "gt", "div", "where", "exp", "log1p", "clamp"} <= set(uses_of(REGISTRY["softplus"], ferro.float32))
    r = ferro.backends.explain("mish", ferro.float32, "cpu")
    softplus = next(p for p in r.parts if p.op == "softplus")
    assert softplus.route == "decomposition" and "log1p" in [p.op for p in softplus.parts]


def test_uses_carry_the_dtype_they_run_at() -> None:
    # clamp of an integer tensor to float bounds compares and selects in the default float dtype
    clamp = uses_of(REGISTRY["clamp"], ferro.int64)
    assert "where:float" in clamp and "gt:float" in clamp, clamp
    r = ferro.backends.explain("clamp", ferro.int64, "cpu")
    assert {(p.op, p.dtype) for p in r.parts} >= {("where", ferro.float32), ("gt", ferro.float32)}
    # the phase of a complex tensor is atan2 of its real-dtype parts
    assert "atan2:real" in uses_of(REGISTRY["angle"], ferro.complex64)
    kernels = set(ferro.device("cpu").backend.kernels(0)) - {"angle"}  # cpu has a kernel: resolve without it
    got = {(p.op, p.dtype) for p in ferro.backends.explain_table(kernels, ferro.complex64)["angle"].parts}
    assert ("atan2", ferro.float32) in got


def test_what_the_test_data_cannot_reach_is_kept_by_hand() -> None:
    # gelu's approximate="tanh" branch: the samples take the default, the record keeps tanh by hand
    assert "tanh" in uses_of(REGISTRY["gelu"], ferro.float32)
    kernels = set(ferro.device("cpu").backend.kernels(0)) - {"tanh", "gelu", "gelu_backward"}
    r = ferro.backends.explain_table(kernels, ferro.float32)["gelu"]
    assert not r.supported and "uses tanh" in r.reason


def test_the_table_is_read_on_the_first_query_not_at_import() -> None:
    out = run_python("""
        import ferro
        from ferro.backends import _resolve
        before = bool(_resolve._derived)
        ferro.backends.explain("logsumexp", "float32", "cpu")  # a decomposition on cpu
        print(before, bool(_resolve._derived))
    """).stdout.split()
    assert out == ["False", "True"]
