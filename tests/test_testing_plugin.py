"""ferro.testing's pytest plugin: --ferro-backend, the device fixture, skips with reasons."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import run_json

SAMPLE = '''
import ferro

def test_add(device):
    assert (ferro.ones(2, device=device) + 1).tolist() == [2.0, 2.0]
'''


def pytest_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args,
                           str(tmp_path / "test_sample.py")], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)


def test_named_backend(tmp_path: Path) -> None:
    proc = pytest_run(tmp_path, "--ferro-backend=cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_all_backends_run_or_skip_with_their_reason(tmp_path: Path) -> None:
    proc = pytest_run(tmp_path, "--ferro-backend=all", "-vv")  # -q -vv: one line per test
    out = proc.stdout
    # what a fresh process sees (this one may hold in-process test backends)
    status = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        print(json.dumps([ferro.backends.unavailable(), ferro.backends.available()]))
    """)
    assert "test_add[cpu] PASSED" in out
    for name, reason in status[0].items():
        assert f"test_add[{name}] SKIPPED" in out
        assert reason[:40] in out, f"the skip names the reason for {name}"
    for name in status[1]:
        assert f"test_add[{name}] " in out, "every available backend runs the test"


def test_unknown_backend_is_a_usage_error(tmp_path: Path) -> None:
    proc = pytest_run(tmp_path, "--ferro-backend=nope")
    assert proc.returncode == 4
    assert "no installed backend named nope" in proc.stderr and "cpu" in proc.stderr


def test_conformance_suite_runs_on_cpu() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                           "ferro.testing.conformance", "--ferro-backend=cpu"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout
