"""The ``ferro`` command: ``info`` and ``ops``."""

from __future__ import annotations

import json
import subprocess
import sys

import ferro
from ferro.cli import info_report, ops_matrix


def ferro_cmd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ferro", *args], capture_output=True, text=True, timeout=120)


def test_info_text_lists_backends_with_availability_and_reasons() -> None:
    proc = ferro_cmd("info")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"ferro {ferro.__version__}" in out
    for name, avail in ferro.backends.status().items():
        assert f"  {name} " in out
        if not avail:
            assert avail.reason in out
    assert "cpu:0" in out
    for name in ferro.backends.broken():
        assert name in out


def test_info_json_matches_the_api() -> None:
    proc = ferro_cmd("info", "--json")
    rep = json.loads(proc.stdout)
    assert set(rep["backends"]) == set(ferro.backends.installed())
    assert rep["backends"]["cpu"]["available"] is True
    assert rep["backends"]["cpu"]["devices"][0]["device"] == "cpu:0"
    assert set(rep["broken_plugins"]) == set(ferro.backends.broken())
    assert rep == json.loads(json.dumps(info_report()))


def test_ops_matrix_agrees_with_supports() -> None:
    matrix = ops_matrix(["cpu"])
    cpu = ferro.backends.get("cpu")
    assert "add" in matrix and "float32" in matrix["add"]["cpu"]
    assert "float32" not in matrix["bitwise_and"]["cpu"]
    for op, row in matrix.items():
        for d in ferro._dtypes.all_dtypes:
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
