"""The array API standard's official conformance suite over ``ferro.array_api``, on each backend.

The suite (data-apis/array-api-tests, vendored in ``tests/array_api/``) runs
in a subprocess per backend, as its own pytest session with its own
conftest, ``FERRO_BACKEND`` choosing the device. Known failures are listed
per backend in ``tests/array_api/xfails-<backend>.txt``, one test id and its
reason per line; anything else that fails fails this test, with the suite's
report. Hypothesis is derandomized, so a run is repeatable.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ferro

from conftest import clean_env

HERE = Path(__file__).parent / "array_api"
SUITE = HERE / "array-api-tests"
#: Examples per property test: enough to reach the special values, small enough for CI's budget.
MAX_EXAMPLES = int(os.environ.get("FERRO_ARRAY_API_MAX_EXAMPLES", "20"))

pytest.importorskip("ndindex", reason="the array API test suite needs ndindex (tests/requirements.txt)")
pytest.importorskip("pytest_jsonreport", reason="the array API test suite needs pytest-json-report")


def read_xfails(path: Path) -> list[str]:
    """The test ids of an xfails file; every line must be ``id  # reason``."""
    ids = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        test_id, sep, reason = line.partition("  # ")
        if not sep or not reason.strip():
            raise AssertionError(f"{path.name}:{n}: every xfail needs a reason ('id  # reason'): {line!r}")
        ids.append(test_id.strip())
    return ids


def xfails_file(backend: str) -> Path:
    """The backend's xfails file; a backend without one is skipped (its failures are not yet known)."""
    own = HERE / f"xfails-{backend}.txt"
    if not own.exists():
        pytest.skip(f"no tests/array_api/xfails-{backend}.txt: the suite runs on backends whose expected "
                    "failures are listed (copy xfails-cpu.txt to start one)")
    return own


@pytest.mark.parametrize("name", ["xfails-cpu.txt", "xfails-opencl.txt"])
def test_xfails_files_give_reasons(name: str) -> None:
    """Each listed failure says why, and none is listed twice."""
    ids = read_xfails(HERE / name)
    assert ids, f"{name} is empty: delete it rather than keep an empty list"
    dups = sorted({i for i in ids if ids.count(i) > 1})
    assert not dups, f"{name} lists these twice: {dups}"


def test_conformance_suite(backend: object, tmp_path: Path) -> None:
    """array-api-tests passes on this backend, but for the listed expected failures."""
    name = backend.name  # type: ignore[attr-defined]
    ids = read_xfails(xfails_file(name))
    plain = tmp_path / "xfails.txt"
    plain.write_text("\n".join(ids) + "\n")
    # the standard's dtypes this device lacks (OpenCL: the complex ones) are skipped, as the suite allows
    import ferro.array_api as xp
    have = xp.__array_namespace_info__().dtypes(device=ferro.device(name))
    skip = [n for n in ("complex64", "complex128", "float64") if n not in have]
    env = clean_env({"ARRAY_API_TESTS_MODULE": "ferro.array_api", "FERRO_BACKEND": name,
                     "ARRAY_API_TESTS_SKIP_DTYPES": ",".join(skip),
                     "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])})
    cmd = [sys.executable, "-m", "pytest", "array_api_tests/", "-q", "-p", "no:cacheprovider", "-p", "ferro_hypothesis",
           "--derandomize", f"--max-examples={MAX_EXAMPLES}", "--disable-deadline", "--xfails-file", str(plain),
           "-W", "ignore", "-p", "no:warnings", "--tb=short", "-rX", "-o", "console_output_style=classic"]
    if "complex64" in skip:  # every transform takes or gives complex arrays: the fft extension cannot run there
        cmd += ["--disable-extension", "fft"]
    proc = subprocess.run(cmd, cwd=SUITE, env=env, capture_output=True, text=True, timeout=1500)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    print(f"array-api-tests on {name}: {summary}")
    for test_id in re.findall(r"^XPASS (\S+)", proc.stdout, re.M):  # listed, yet passing: shrink the list
        print(f"  passes now, delete it from {xfails_file(name).name}: {test_id}")
    failed = re.findall(r"^FAILED (\S+)", proc.stdout, re.M)
    assert proc.returncode == 0, (f"array-api-tests on {name}: {summary}\nunexpected failures:\n" + "\n".join(failed)
                                  + f"\n\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}")
    assert re.search(r"\d+ passed", summary), summary
