"""The type stub: checked in up to date, and read by mypy and pyright as the real objects behave.

Tensor's methods and most ``ferro.*`` functions are attached at import, so
type checkers see them only through the stub that ``python -m ferro._stubgen``
writes. These tests regenerate it and compare, then run both checkers on a
snippet and compare each revealed type with the type of the object the
snippet's expression really gives at run time.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ferro
import ferro.array_api

SRC = Path(ferro.__file__).resolve().parent.parent  # the ferro being tested, wherever it is installed

#: expression -> the type a checker must reveal (module names stripped: mypy says ferro.Tensor, pyright Tensor).
EXPECTED = {
    "ferro.ones(2).exp()": "Tensor",
    "a + b": "Tensor",
    "2 * a": "Tensor",
    "a @ w": "Tensor",
    "a == b": "Tensor",
    "-a": "Tensor",
    "a.sum(dim=0)": "Tensor",
    "ferro.nn.functional.relu(a)": "Tensor",
    "a[0]": "Tensor",
    "a.T": "Tensor",
    "w.mT": "Tensor",
    "ferro.zeros(3).to('cpu')": "Tensor",
    "a.add_(1)": "Tensor",
    "a.clamp_(min=0.0)": "Tensor",
    "ferro.clamp(a, max=1.0)": "Tensor",
    "ferro.nn.functional.gelu(a, approximate='tanh')": "Tensor",
    "ferro.linalg.inv(w)": "Tensor",
    "ferro.fft.fft(a)": "Tensor",
    "ferro.sort(a).values": "Tensor",
    "a.shape": "Size",
    "a.dtype": "DType",
    "ferro.float32": "DType",
    "a.grad": "Tensor | None",
    "a.requires_grad": "bool",
    "a.device": "device",
    "ferro.array_api.exp(a)": "Tensor",
    "ferro.array_api.sum(w, axis=0)": "Tensor",
    "ferro.nn.ReLU(inplace=True)": "ReLU",
    "ferro.nn.ZeroPad2d(1)": "ZeroPad2d",
    "ferro.nn.Sequential(ferro.nn.Linear(2, 3), ferro.nn.GELU())": "Sequential",
}
#: Statements the checkers must report as errors: a name the stub must not invent, a keyword the op lacks.
WRONG = ["ferro.no_such_function(a)", "a.clamp(minimum=0.0)", "ferro.nn.functional.gelu(a, approx='tanh')"]

SNIPPET = "import ferro\nimport ferro.array_api\na = ferro.ones(2)\nb = ferro.ones(2)\nw = ferro.eye(2)\n" + "".join(
    f"reveal_type({expr})\n" for expr in EXPECTED) + "".join(f"{stmt}\n" for stmt in WRONG)
FIRST_LINE = SNIPPET.splitlines().index(f"reveal_type({next(iter(EXPECTED))})") + 1  # numbered from 1
WRONG_LINES = set(range(FIRST_LINE + len(EXPECTED), FIRST_LINE + len(EXPECTED) + len(WRONG)))


def _short(type_text: str) -> str:
    """``ferro.Tensor | None`` -> ``Tensor | None``; ``builtins.bool`` -> ``bool``."""
    return re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", type_text)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(SRC)}  # mypy reads the ferro imported here, not another installed one
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_stub_is_up_to_date():
    r = _run(["-m", "ferro._stubgen", "--check"], SRC)
    assert r.returncode == 0, f"{r.stdout[-6000:]}{r.stderr[-3000:]}\nregenerate with: python -m ferro._stubgen"


def _declared(body: list[ast.stmt]) -> set[str]:
    """The names a stub's module or class body declares."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):  # re-exports: ``X as X``, or a class under a second public name
            names.update(a.asname for a in node.names if a.asname and not a.asname.startswith("_"))
    return names


def test_stub_declares_every_public_name():
    """Every public Tensor attribute, operator and ``ferro`` name is in the stub, whatever its kind."""
    tree = ast.parse((SRC / "ferro" / "__init__.pyi").read_text())
    tensor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    operators = {n for n in vars(ferro.Tensor) if n.startswith("__") and n.endswith("__")} - {
        "__getattr__", "__slots__", "__weakref__", "__module__", "__doc__", "__annotations__"}
    public = {n for n in dir(ferro.Tensor) if not n.startswith("_")}
    assert public | operators <= _declared(tensor.body), sorted((public | operators) - _declared(tensor.body))
    assert set(ferro.__all__) <= _declared(tree.body), sorted(set(ferro.__all__) - _declared(tree.body))
    for module in (ferro.linalg, ferro.fft, ferro.nn.functional, ferro.array_api):
        path = Path(module.__file__).with_suffix(".pyi")
        names = _declared(ast.parse(path.read_text()).body)
        assert set(module.__all__) <= names, (module.__name__, sorted(set(module.__all__) - names))


def test_snippet_runs_and_expected_types_are_true():
    """The expected types are what the expressions really give (so the checkers are held to the truth)."""
    scope: dict[str, object] = {"ferro": ferro}
    exec(SNIPPET.split("reveal_type")[0], scope)
    for expr, expected in EXPECTED.items():
        value = eval(expr, scope)
        names = {type(value).__name__, *(c.__name__ for c in type(value).__mro__)}
        assert expected.split(" | ")[0] in names or (expected.endswith("None") and value is None), (expr, value)
    for stmt in WRONG:
        with pytest.raises((AttributeError, TypeError)):
            exec(stmt, scope)


def test_mypy_reveals_tensor(tmp_path):
    (tmp_path / "snippet.py").write_text(SNIPPET)
    r = _run(["-m", "mypy", "--config-file=", "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"),
              "--show-error-codes", "--no-error-summary", "snippet.py"], tmp_path)
    assert "No module named mypy" not in r.stderr, "mypy is missing: pip install -r tests/requirements.txt"
    revealed: dict[int, str] = {}
    errors = set()
    for line in r.stdout.splitlines():
        m = re.match(r'snippet\.py:(\d+): note: Revealed type is "(.*)"', line)
        if m:
            revealed[int(m[1])] = _short(m[2])
        elif m := re.match(r"snippet\.py:(\d+): error:", line):
            errors.add(int(m[1]))
    got = {expr: revealed.get(FIRST_LINE + i) for i, expr in enumerate(EXPECTED)}
    assert got == EXPECTED, r.stdout + r.stderr
    assert errors == WRONG_LINES, r.stdout + r.stderr


def test_pyright_reveals_tensor(tmp_path):
    (tmp_path / "snippet.py").write_text(SNIPPET)
    config = {"include": ["snippet.py"], "extraPaths": [str(SRC)], "pythonVersion": "3.11"}
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config))
    r = _run(["-m", "pyright", "--outputjson", "--pythonpath", sys.executable, "-p", str(tmp_path)], tmp_path)
    assert "No module named pyright" not in r.stderr, "pyright is missing: pip install -r tests/requirements.txt"
    try:
        diagnostics = json.loads(r.stdout)["generalDiagnostics"]
    except (ValueError, KeyError):
        pytest.fail(f"pyright gave no report:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    revealed = {d["range"]["start"]["line"] + 1: _short(re.search(r'is "(.*)"$', d["message"])[1])
                for d in diagnostics if d["severity"] == "information" and d["message"].startswith("Type of")}
    errors = {d["range"]["start"]["line"] + 1 for d in diagnostics if d["severity"] == "error"}
    got = {expr: revealed.get(FIRST_LINE + i) for i, expr in enumerate(EXPECTED)}
    assert got == EXPECTED, textwrap.shorten(r.stdout, 6000)
    assert errors == WRONG_LINES, textwrap.shorten(r.stdout, 6000)
