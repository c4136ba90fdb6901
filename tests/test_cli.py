"""The ``ferro`` command: ``info`` and ``ops``."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import ferro
from ferro.cli import ops_matrix


def ferro_cmd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ferro", *args], capture_output=True, text=True, timeout=120)


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
