"""The ``ferro`` command (info, ops, --version, its errors) and the first-run experience of a new user."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ferro
from ferro import cli
from ferro.cli import ops_matrix


def ferro_cmd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ferro", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


#: A user's environment: the test plugins installed, their deliberately broken ones inert (as outside the tests).
USER = {"FERRO_TESTPLUGINS": ""}


def _fresh(expr: str) -> Any:
    """``expr`` evaluated in a fresh interpreter (this one may hold backends that tests registered at run time)."""
    code = f"import json, ferro, ferro.distributed; from ferro.cli import info_report; print(json.dumps({expr}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_info_text_lists_backends_with_availability_and_reasons() -> None:
    proc = ferro_cmd("info")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"ferro {ferro.__version__}" in out
    status = _fresh("{n: [bool(a), a.reason] for n, a in ferro.backends.status().items()}")
    for name, (avail, reason) in status.items():
        assert f"  {name} " in out
        if not avail:
            assert reason in out
    assert "cpu:0" in out
    for name in _fresh("list(ferro.backends.broken())"):
        assert name in out


def test_info_json_matches_the_api() -> None:
    proc = ferro_cmd("info", "--json")
    rep = json.loads(proc.stdout)
    assert set(rep["backends"]) == set(_fresh("ferro.backends.installed()"))
    assert rep["backends"]["cpu"]["available"] is True
    assert rep["backends"]["cpu"]["devices"][0]["device"] == "cpu:0"
    # ferro info also discovers the process groups (ferro.distributed), whose plugins can be broken too
    discovered = "ferro.distributed.process_group_backends() and list(ferro.backends.broken())"
    assert set(rep["broken_plugins"]) == set(_fresh(discovered))
    assert rep == _fresh("info_report()")


def test_ops_matrix_agrees_with_supports() -> None:
    matrix = ops_matrix(["cpu"])
    cpu = ferro.backends.get("cpu")
    assert "add" in matrix and "float32" in matrix["add"]["cpu"]
    assert "float32" not in matrix["bitwise_and"]["cpu"]
    for op, row in matrix.items():
        for d in ferro._core.dtypes.all_dtypes:
            assert (d.name in row["cpu"]) == cpu.supports(op, d), (op, d)


def test_ops_formats() -> None:
    js = json.loads(ferro_cmd("ops", "--format", "json", "--backend", "cpu").stdout)
    assert js["exp"]["cpu"][0] == "bool"
    md = ferro_cmd("ops", "--format", "markdown", "--dtype", "float64").stdout
    assert md.startswith("| op |") and "| exp |" in md
    table = ferro_cmd("ops").stdout
    assert table.splitlines()[0].split()[0] == "op"
    bad = ferro_cmd("ops", "--dtype", "float99")
    assert bad.returncode != 0 and "float99" in bad.stderr


def test_version() -> None:
    proc = ferro_cmd("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"ferro {ferro.__version__}"


@pytest.mark.parametrize("args, error", [
    (("demo", "--backend", "nope", "--epochs", "1"), "BackendNotFoundError"),
    (("demo", "--backend", "cpu:5", "--epochs", "1"), "DeviceError"),
    (("demo", "--backend", "cpu:x", "--epochs", "1"), "ValueError"),
    (("ops", "--backend", "nope"), "BackendNotFoundError"),
    (("ops", "--dtype", "float99"), "unknown dtype"),
])
def test_errors_are_one_line_and_status_2(args: tuple[str, ...], error: str) -> None:
    proc = ferro_cmd(*args, env=USER)
    err = proc.stderr.splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(err) == 1 or err[-1].startswith("ferro: error"), err  # argparse prints its usage line first
    assert err[-1].startswith(f"ferro {args[0]}: ") or "unknown dtype" in err[-1], err
    if error.endswith("Error"):  # the exception class the API raises for the same argument
        code = (f"import ferro\ntry:\n    ferro.zeros(1, device={args[2]!r})\n"
                "except Exception as e:\n    print(type(e).__name__)")
        got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **USER})
        assert got.stdout.strip() == error


def test_a_missing_device_is_a_device_error() -> None:
    with pytest.raises(ferro.errors.DeviceError, match=r"cpu:5.*does not exist.*cpu:0") as info:
        ferro.zeros(2, device="cpu:5")
    assert isinstance(info.value, RuntimeError) and not isinstance(info.value, ferro.errors.ShapeError)


def test_ops_table_fits_100_columns_with_a_legend() -> None:
    proc = ferro_cmd("ops")
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    header = lines[0].split()
    assert header[0] == "op" and set(header[1:]) == set(_fresh("ferro.backends.installed()"))
    rows = {line.split()[0]: dict(zip(header[1:], line.split()[1:])) for line in lines[1:] if line.split()
            and line.split()[0] in ops_matrix(["cpu"])}
    cpu = ops_matrix(["cpu"])
    assert rows["exp"]["cpu"] == "BIFC" and rows["bitwise_and"]["cpu"] == "BI.."
    for op, cell in ((op, r["cpu"]) for op, r in rows.items()):  # each letter says what the dtypes say
        have = set(cpu[op]["cpu"])
        for (letter, ds), c in zip(cli._GROUPS, cell):
            assert c == (letter if have >= set(ds) else letter.lower() if have & set(ds) else "."), (op, cell)
    assert any(line.startswith("legend:") for line in lines)
    wide = ferro_cmd("ops", "--wide", "--backend", "cpu").stdout.splitlines()
    assert wide[0].split() == ["op", "cpu"] and any(line.split()[1:] == "b u8 i8 i16 i32 i64 f16 bf16 f32 f64 c64 "
                                                    "c128".split() for line in wide)


@pytest.mark.parametrize("name", ["f32", "float32", "float", "bf16", "c128", "b"])
def test_ops_accepts_the_dtype_names_it_prints(name: str) -> None:
    js = json.loads(ferro_cmd("ops", "--format", "json", "--backend", "cpu", "--dtype", name).stdout)
    full = cli._dtype_name(name)
    assert full in ferro._core.dtypes.by_name
    assert all(ds["cpu"] in ([], [full]) for ds in js.values()) and any(ds["cpu"] for ds in js.values())


def test_piping_into_head_ends_quietly() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "ferro", "ops", "--wide"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **USER})
    assert proc.stdout is not None and proc.stdout.readline().startswith("op")
    proc.stdout.close()  # as `head -1` does
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.wait(timeout=120) == 0 and err == "", err


def test_the_test_plugins_stay_quiet_in_a_users_commands() -> None:
    """Installed as the README's test command installs them, the broken test plugins print nothing outside tests."""
    proc = ferro_cmd("info", env=USER)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "broken plugins" not in proc.stdout and "testgood" not in proc.stdout.split("process groups")[1]
    broken = ferro_cmd("info")  # the switch on, as in the tests: the same command reports them
    assert "broken plugins" in broken.stdout and "FerroPluginWarning" in broken.stderr


FIRST_RUN = """
import ferro
x = ferro.randn(16, 8, device="opencl")
print(((x @ x.T).relu().sum(1) + x.exp().mean()).tolist()[0])
"""


def test_the_first_opencl_run_says_it_compiles_and_the_second_loads_from_the_cache(ocl: Any, tmp_path: Any) -> None:
    if "Portable Computing Language" not in ocl.cl_device(0).platform.name:
        pytest.skip("the kernel cache checked here is PoCL's (POCL_CACHE_DIR)")
    env = {**os.environ, **USER, "POCL_CACHE_DIR": str(tmp_path)}

    def run(**extra: str) -> str:
        proc = subprocess.run([sys.executable, "-c", FIRST_RUN], capture_output=True, text=True, timeout=300,
                              env={**env, **extra})
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    first = run(FERRO_OPENCL_PROGRESS="1")
    assert "ferro-opencl: compiling OpenCL kernels for" in first and "OpenCL programs for" in first, first
    cached = sorted(p.parent.name for p in tmp_path.rglob("program.bc"))
    assert cached
    assert "compiling" not in run()  # not a terminal: auto stays quiet
    assert sorted(p.parent.name for p in tmp_path.rglob("program.bc")) == cached  # nothing compiled again


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("mode, stream, shown", [("auto", _Terminal, True), ("auto", io.StringIO, False),
                                                 ("0", _Terminal, False), ("1", io.StringIO, True)])
def test_the_compile_notice_appears_past_a_second_on_a_terminal(monkeypatch: pytest.MonkeyPatch, mode: str,
                                                                stream: type, shown: bool) -> None:
    notice_mod = pytest.importorskip("ferro_opencl._compile_notice")
    monkeypatch.setenv(notice_mod.VARIABLE, mode)
    out = stream()
    notice = notice_mod.CompileNotice("dev", out)
    notice.built(notice_mod.THRESHOLD_S / 2)
    assert ("compiling" in out.getvalue()) == (mode == "1")
    notice.built(notice_mod.THRESHOLD_S)  # past the threshold
    notice.summary()
    assert ("compiling OpenCL kernels for dev" in out.getvalue()) == shown
    assert ("built 2 OpenCL programs for dev" in out.getvalue()) == shown


def test_readme_test_command_is_ci_and_shows_pip_progress() -> None:
    """README's second command is what .ci/run runs, and its pip install is not silenced (-q) for minutes."""
    root = Path(__file__).resolve().parents[1]
    readme = [ln.strip() for ln in (root / "README.md").read_text().splitlines() if "pip install" in ln]
    ci = [ln.strip() for ln in (root / ".ci" / "run").read_text().splitlines() if "pip install" in ln]
    assert len(ci) == 1 and ci[0] in readme[1], (ci, readme)
    for line in readme + ci:
        assert " -q" not in line.split("&& python -m pytest")[0], line


def test_the_tutorials_conformance_command_says_what_to_install() -> None:
    """The conformance suite needs pytest and hypothesis, which the README's first command does not install:
    the tutorial and README install ferro-core[test] first, and that extra has them."""
    root = Path(__file__).resolve().parents[1]
    extra = next(ln for ln in (root / "ferro-core" / "pyproject.toml").read_text().splitlines()
                 if ln.startswith("test ="))
    assert "pytest" in extra and "hypothesis" in extra
    for page in (root / "docs" / "tutorial-backend.md", root / "README.md"):
        text = page.read_text()
        run = text.index("pytest --pyargs ferro.testing.conformance")
        assert 0 <= text.rfind('pip install -e "./ferro-core[test]"', 0, run) > run - 300, page


def test_ctrl_c_ends_with_one_line_and_status_130() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "ferro", "demo", "--epochs", "50", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **USER})
    assert proc.stdout is not None and proc.stdout.readline().startswith("ferro demo:")  # training has begun
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.strip() == "ferro demo: interrupted", err
