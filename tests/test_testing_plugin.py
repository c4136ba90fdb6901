"""ferro.testing's pytest plugin, run for real: pytest in a subprocess on a small test file.

Each run reads its results from pytest's JUnit XML report: which tests ran,
with which ids, and every skip's reason. ``FERRO_TESTPLUGINS_UNAVAILABLE=1``
makes the test plugins contribute ``toyoff``, a backend that is installed but
never available, so skips with a reason are checked on every machine.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import clean_env, run_json

SAMPLE = '''
import pytest

import ferro


def test_add(device):  # a transfer only: every backend, however young, has one
    t = ferro.tensor([1.0, 2.0], device=device)
    assert t.device == device
    assert t.numpy().tolist() == [1.0, 2.0]


def test_backend(backend, device):
    assert isinstance(backend, ferro.backends.Backend)
    assert device.type == backend.name


@pytest.mark.ferro_backends("toy")
def test_only_toy(device):
    assert device.type == "toy"


def test_plain():
    pass
'''

UNAVAILABLE = {"FERRO_TESTPLUGINS_UNAVAILABLE": "1"}
MISSING = "ferro_testplugins_no_such_array_library is not installed"


class Run:
    """One pytest run: its exit code, output, and per-test outcome and skip reason."""

    def __init__(self, proc: subprocess.CompletedProcess, report: Path) -> None:
        self.returncode = proc.returncode
        self.out = proc.stdout + proc.stderr
        self.stderr = proc.stderr
        #: test name (``test_add[cpu]``) -> (``passed`` | ``skipped`` | ``failed``, skip reason or failure text)
        self.results: dict[str, tuple[str, str]] = {}
        if report.exists():
            for case in ET.parse(report).getroot().iter("testcase"):
                outcome, text = "passed", ""
                for child in case:
                    if child.tag in ("skipped", "failure", "error"):
                        outcome = "skipped" if child.tag == "skipped" else "failed"
                        text = child.get("message", "") + (child.text or "")
                self.results[case.get("name", "")] = (outcome, text)

    def names(self, test: str) -> set[str]:
        """The parametrized ids of ``test`` that were collected."""
        return {n[len(test) + 1:-1] for n in self.results if n.startswith(test + "[")}

    def __repr__(self) -> str:
        return f"<pytest exit {self.returncode}: {self.results}\n{self.out[-3000:]}>"


def run_pytest(tmp_path: Path, *args: str, env: dict[str, str] | None = None, source: str = SAMPLE,
               files: dict[str, str] | None = None) -> Run:
    """Run pytest in a subprocess on ``source`` (plus other ``files``) in a fresh folder."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "test_sample.py").write_text(source)
    for name, text in (files or {}).items():
        (project / name).write_text(text)
    report = tmp_path / "report.xml"
    report.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", f"--junitxml={report}",
                           *args], capture_output=True, text=True, timeout=300, cwd=project, env=clean_env(env))
    return Run(proc, report)


def fresh_status(env: dict[str, str] | None = None) -> dict[str, str]:
    """Each installed backend's availability reason ('' when available), as a fresh process sees it."""
    return run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        print(json.dumps({n: a.reason for n, a in ferro.backends.status().items()}))
    """, env)


def device_id(name: str) -> str:
    return "cpu" if name == "cpu" else f"{name}:0"


def test_a_named_backend_runs_there_only(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--ferro-backend=cpu", env=UNAVAILABLE)
    assert run.returncode == 0, run
    assert run.results["test_add[cpu]"] == ("passed", "")
    assert run.results["test_backend[cpu]"] == ("passed", "")
    assert run.results["test_plain"] == ("passed", "")
    assert run.names("test_add") == {"cpu"}
    outcome, reason = run.results["test_only_toy[no-backend]"]
    assert outcome == "skipped" and "runs only on ferro backends toy, none of them selected" in reason, run


def test_all_runs_every_available_backend_and_skips_the_others_with_their_reason(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--ferro-backend=all", env=UNAVAILABLE)
    assert run.returncode == 0, run
    status = fresh_status(UNAVAILABLE)
    assert {"cpu", "toy", "toyoff"} <= set(status)
    assert run.names("test_add") == {device_id(n) for n in status}, "one test per installed backend"
    for name, reason in status.items():
        outcome, text = run.results[f"test_add[{device_id(name)}]"]
        if reason:
            assert outcome == "skipped", (name, run)
            assert f"ferro backend '{name}' is not available: {reason}" in text
        else:
            assert outcome == "passed", (name, run)
    assert MISSING in run.results["test_add[toyoff:0]"][1]
    assert run.names("test_only_toy") == {"toy:0"}
    assert run.results["test_only_toy[toy:0]"] == ("passed", "")
    assert "SKIPPED" in run.out and MISSING in run.out, "-rs prints the reason in the summary"


def test_all_is_the_default(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, env=UNAVAILABLE)
    assert run.returncode == 0, run
    assert run.names("test_add") == {device_id(n) for n in fresh_status(UNAVAILABLE)}


def test_an_unavailable_backend_named_explicitly_is_skipped_not_an_error(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--ferro-backend=toyoff,cpu", env=UNAVAILABLE)
    assert run.returncode == 0, run
    assert run.names("test_add") == {"toyoff:0", "cpu"}
    outcome, reason = run.results["test_add[toyoff:0]"]
    assert outcome == "skipped" and MISSING in reason
    assert run.results["test_add[cpu]"] == ("passed", "")


def test_environment_variable_selects_and_the_option_wins(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, env={"FERRO_TEST_BACKENDS": "toy"})
    assert run.returncode == 0, run
    assert run.names("test_add") == {"toy:0"}
    run = run_pytest(tmp_path, "--ferro-backend=cpu", env={"FERRO_TEST_BACKENDS": "toy"})
    assert run.names("test_add") == {"cpu"}


def test_a_device_string_selects_one_device(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--ferro-backend=toy:0")
    assert run.returncode == 0, run
    assert run.names("test_add") == {"toy:0"}
    assert run.results["test_add[toy:0]"] == ("passed", "")
    run = run_pytest(tmp_path, "--ferro-backend=toy:7")
    outcome, reason = run.results["test_add[toy:7]"]
    assert outcome == "skipped" and "ferro backend 'toy' has no device 7 here (1 device(s))" in reason, run


@pytest.mark.parametrize("args, env, source", [
    (["--ferro-backend=nope"], {}, "--ferro-backend=nope"),
    (["--ferro-backend=cpu,nope,toy"], {}, "--ferro-backend=cpu,nope,toy"),
    ([], {"FERRO_TEST_BACKENDS": "nope"}, "FERRO_TEST_BACKENDS=nope"),
])
def test_a_name_that_is_not_installed_is_a_usage_error(tmp_path: Path, args: list[str], env: dict[str, str],
                                                       source: str) -> None:
    run = run_pytest(tmp_path, *args, env=env)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run
    assert f"{source}: no installed ferro backend named 'nope'; installed: " in run.stderr
    installed = run.stderr.split("installed: ")[1].split(";")[0].split(", ")
    assert {"cpu", "toy"} <= {n.strip() for n in installed}
    assert "testbroken_import" in run.stderr, "the broken plugins are named too, in case one was meant"
    assert not run.results, "nothing ran"


def test_a_malformed_device_string_is_a_usage_error(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--ferro-backend=cpu:first")
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run
    assert "'cpu:first' is not a backend name or a device string such as 'opencl:1'" in run.stderr


PROJECT_WITHOUT_FERRO = '''
import sys

import pytest


@pytest.fixture
def backend():
    return "the project's own backend"


@pytest.mark.parametrize("device", ["gpu0", "gpu1"])
def test_parametrized_device(device):
    assert device.startswith("gpu")


def test_own_fixtures(device, backend):
    assert device == "the project's own device" and backend == "the project's own backend"


def test_nothing_heavy_was_imported():
    assert "ferro.testing._pytest_plugin" in sys.modules, "ferro's plugin is loaded in this run"
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in
                   ("numpy", "ferro_cpu", "ferro_cuda", "ferro_opencl", "ferro_testplugins", "cupy", "pyopencl"))
    assert heavy == []
'''

CONFTEST_WITHOUT_FERRO = '''
import pytest


@pytest.fixture
def device():
    return "the project's own device"
'''


@pytest.mark.parametrize("autoload", ["all plugins", "ferro's plugin alone"])
def test_a_project_that_never_uses_ferro_is_left_alone(tmp_path: Path, autoload: str) -> None:
    args, env = [], {}
    if autoload != "all plugins":  # isolates what ferro's plugin itself imports
        args, env = ["-p", "ferro"], {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = run_pytest(tmp_path, *args, "-W", "error::pytest.PytestWarning", env=env,
                     source=PROJECT_WITHOUT_FERRO, files={"conftest.py": CONFTEST_WITHOUT_FERRO})
    assert run.returncode == 0, run
    assert run.results == {
        "test_parametrized_device[gpu0]": ("passed", ""), "test_parametrized_device[gpu1]": ("passed", ""),
        "test_own_fixtures": ("passed", ""), "test_nothing_heavy_was_imported": ("passed", ""),
    }


def test_the_marker_is_declared(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--markers")
    assert run.returncode == 0, run
    assert "@pytest.mark.ferro_backends(*names): run this test only on these ferro backends" in run.out


def test_the_conformance_suite_passes_on_cpu(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--pyargs", "ferro.testing.conformance", "--ferro-backend=cpu", "-q")
    assert run.returncode == 0, run
    outcomes = [o for o, _ in run.results.values()]
    assert outcomes.count("failed") == 0 and outcomes.count("passed") > 100, run
    ran = {n.rsplit("[", 1)[-1] for n in run.results if "[" in n}
    assert not any("toy" in r for r in ran), "only cpu was selected"
    assert run.results["test_exp_float32[cpu]"] == ("passed", "")
    assert run.results["test_matmul_float32[2d-cpu]"] == ("passed", "")


def test_the_basic_conformance_module_passes_on_the_generic_array_api_backend(tmp_path: Path) -> None:
    """A third party's backend of a few lines (``toy``: ArrayAPIBackend over NumPy) passes the basics."""
    run = run_pytest(tmp_path, "--pyargs", "ferro.testing.conformance.test_basic", "--ferro-backend=toy", "-q")
    assert run.returncode == 0, run
    skipped = {n: r for n, (o, r) in run.results.items() if o == "skipped"}
    assert all("has no" in r or "supports every dtype" in r for r in skipped.values()), skipped
    assert run.results["test_sum_float32[toy:0]"] == ("passed", "")


# -- the conformance suite's expected failures -------------------------------------------------------------------


def test_expected_failures_are_strict(tmp_path: Path) -> None:
    """A listed test that fails is xfailed; a listed test that passes fails the run (XPASS strict)."""
    folder = tmp_path / "xfails"
    folder.mkdir()
    (folder / "cpu.txt").write_text("# a listed pass and a listed failure\n"
                                    "add forward float32 listed although it passes\n"
                                    "squareplus forward float32 its reference is off by one here\n")
    run = run_pytest(tmp_path, "--pyargs", "ferro.testing.conformance.test_ops", "--ferro-backend=cpu",
                     "-k", "test_forward and (add-float32 or squareplus-float32)",
                     env={"FERRO_CONFORMANCE_XFAILS": str(folder), "FERRO_TESTPLUGINS_SQUAREPLUS_WRONG": "1"})
    assert run.returncode == 1, run
    outcome, text = run.results["test_forward[add-float32-cpu]"]
    assert outcome == "failed" and "XPASS(strict)" in text and "listed although it passes" in text, run
    outcome, text = run.results["test_forward[squareplus-float32-cpu]"]
    assert outcome == "skipped" and "its reference is off by one here" in text, run


@pytest.mark.parametrize("line, error", [
    ("add forward float32", "expected 'OP KIND DTYPE REASON'"),
    ("add speed float32 too slow", "kind 'speed' is not one of"),
    ("* forward float32 everything", "name one op and one dtype"),
    ("add forward * every dtype", "name one op and one dtype"),
    ("add forward float32 one\nadd forward float32 two", "listed twice"),
])
def test_an_expected_failures_file_is_checked(line: str, error: str) -> None:
    from ferro.testing._xfails import parse
    with pytest.raises(ValueError, match=error):
        parse(line, "x.txt")


def test_every_shipped_expected_failure_names_an_op_a_kind_and_a_dtype() -> None:
    import ferro
    from ferro._ops import REGISTRY
    from ferro.testing._opinfo import ALL_DTYPES
    from ferro.testing._xfails import load, locations
    from ferro.testing.conformance.test_ops import VIEWS
    files = 0
    for name in ferro.backends.installed():
        b = ferro.backends.get(name)
        if not any(p.is_file() for p in locations(name, type(b).__module__)):
            continue
        files += 1
        for (op, kind, dtype), entry in load(name, type(b).__module__).items():
            assert op in REGISTRY or (kind == "view" and op in VIEWS), entry
            assert dtype in (*ALL_DTYPES, "-") and (dtype == "-") == (kind != "forward"), entry
            assert entry.reason.strip(), entry
    assert files >= 3, "cpu, opencl, strict and toy ship their lists"
