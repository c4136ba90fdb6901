"""Shared helpers for ferro's tests.

ferro.testing's pytest plugin (``--ferro-backend``, the ``device`` and
``backend`` fixtures) is loaded through its ``pytest11`` entry point; nothing
to register here. Plugin discovery happens once per process, so tests of
discovery run their scenario in a fresh interpreter with these helpers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

#: Switches on the deliberately broken plugins of tests/plugins (inert elsewhere, see its README);
#: set before any test makes ferro discover its plugins, here and in every subprocess.
TESTPLUGINS = "FERRO_TESTPLUGINS"
os.environ[TESTPLUGINS] = "1"


def clean_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without ferro's and pytest's own variables (but the test plugins' switch),
    plus ``env``."""
    out = {k: v for k, v in os.environ.items()
           if (k == TESTPLUGINS or not k.startswith(("FERRO_", "PYTEST_"))) and k != "PYTHONWARNINGS"}
    out.update(env or {})
    return out


def run_python(code: str, env: dict[str, str] | None = None, expect_ok: bool = True) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (plugin discovery happens once per process)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=clean_env(env), timeout=120)
    if expect_ok and proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_json(code: str, env: dict[str, str] | None = None) -> Any:
    """Run ``code``, which prints one JSON document as its last line, and decode it."""
    out = run_python(code, env).stdout.strip().splitlines()
    return json.loads(out[-1])


@pytest.fixture(params=["cpu", "opencl"])
def dev(request: pytest.FixtureRequest) -> str:
    """``cpu``, then ``opencl:0`` (skipped, with the reason, where OpenCL cannot run): the tests that compare
    both devices with PyTorch."""
    if request.param == "opencl":
        request.getfixturevalue("ocl")
        return "opencl:0"
    return "cpu"


@pytest.fixture(scope="session")
def ocl() -> Any:
    """ferro's OpenCL backend; the test is skipped, with the reason, where it is not installed or has no device."""
    import ferro
    if "opencl" not in ferro.backends.installed():
        pytest.skip("ferro-opencl is not installed")
    b = ferro.backends.get("opencl")
    if not b.availability():
        pytest.skip(f"no OpenCL device here: {b.availability().reason}")
    return b


def count_calls(monkeypatch: pytest.MonkeyPatch, dev: Any, names: Any) -> dict[str, int]:
    """Wrap the kernels ``names`` of device ``dev``'s table to count their calls (for the test's duration)."""
    counts = dict.fromkeys(names, 0)

    def counting(name: str, k: Any) -> Any:
        def run(*a: Any, **kw: Any) -> Any:
            counts[name] += 1
            return k(*a, **kw)
        for attr, variant in getattr(k, "__dict__", {}).items():  # a kernel's variants (conv2d_forward.keeping)
            if callable(variant):
                setattr(run, attr, counting(name, variant))
        return run
    for n in names:
        monkeypatch.setitem(dev._kernels, n, counting(n, dev._kernels[n]))
    # ops resolve their kernels once, at binding: resolve them again from the wrapped table
    from ferro._core.records import bind_tables
    monkeypatch.setattr(dev, "_ops", bind_tables(dev._kernels, dev._dtypes, dev.backend.unsupported(dev.index)))
    # the hot path's view of the table too, restored after the test even if a dispatch layer (ferro.compile's
    # trace) re-pointed it at the wrapped table meanwhile
    monkeypatch.setattr(dev, "_fast", dev._ops)
    return counts


def functions_entered(call: Any, module: str) -> list[str]:
    """The names of the Python functions of ``module`` (the end of its file's path, ``ferro_cpu/_rows.py``) that
    ``call()`` entered, in order: which path of a kernel ran, where the kernel table counts only the kernel."""
    names: list[str] = []

    def seen(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_filename.endswith(module):
            names.append(frame.f_code.co_name)
    sys.setprofile(seen)
    try:
        call()
    finally:
        sys.setprofile(None)
    return names


@pytest.fixture
def threads_as_asked(monkeypatch: pytest.MonkeyPatch) -> Any:
    """ferro-cpu's threads as many as asked, however busy the machine is (its idle-core look off), and the
    thread count put back after the test; the cpu backend loaded (its threads set up)."""
    import ferro
    threads = pytest.importorskip("ferro_cpu._threads")
    monkeypatch.setattr(threads, "follow_load", False)
    before = ferro.get_num_threads()
    ferro.tensor([0.0]) + 1
    yield
    ferro.set_num_threads(before)


def ferro_torch_scores(x: Any, w: Any, dtype: str, strided: bool) -> tuple[Any, Any, Any, Any, Any]:
    """Scores ``x`` (a NumPy array) as a ferro leaf and a torch leaf that require grad, in ``dtype``, and class
    weights ``w`` (None or an array) beside each: ``(leaf, fx, tx, fw, tw)``, ``fx`` ferro's scores. ``strided``:
    those are a transposed view of the leaf, a column-major copy, so that the loss kernels get a column-major
    input."""
    import torch

    import ferro
    leaf = ferro.tensor(x.T.copy(order="C") if strided else x).to(getattr(ferro, dtype))
    leaf.requires_grad_()
    fx = leaf.t() if strided else leaf
    tx = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    fw = None if w is None else ferro.tensor(w).to(fx.dtype)
    tw = None if w is None else torch.tensor(w).to(tx.dtype)
    return leaf, fx, tx, fw, tw
