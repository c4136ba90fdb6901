"""ferro-core's import graph has no cycles: every import counts, those inside functions included."""

from __future__ import annotations

from pathlib import Path

import ferro
from ferro._importgraph import LAYERS, cycles, import_graph, layer, upward

CORE = Path(ferro.__file__).parent


def test_ferro_core_imports_form_no_cycle() -> None:
    graph = import_graph(CORE)
    found = cycles(graph)
    shown = []
    for comp in found:
        members = set(comp)
        shown += [f"{m} -> {t} (line {lines[0]})" for m in comp for t, lines in graph[m].items() if t in members]
    assert not found, "import cycles in ferro-core (run `python -m ferro._importgraph`):\n" + "\n".join(shown)


def test_every_layer_imports_only_itself_and_those_below() -> None:
    wrong = upward(import_graph(CORE))
    assert not wrong, "upward imports (see LAYERS in ferro/_importgraph.py):\n" + "\n".join(
        f"{m} -> {t} (line {line})" for m, t, line in wrong)
    assert layer("ferro._core.tensor") == 0 and layer("ferro.nn.functional") == len(LAYERS)


def test_the_check_sees_imports_inside_functions_and_packages(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import b\n")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import c\n")
    (pkg / "c.py").write_text("from .a import f\n")
    graph = import_graph(pkg)
    assert set(graph["pkg.a"]) == {"pkg.sub", "pkg.sub.b"}  # the package's __init__ runs first
    assert graph["pkg.sub.b"] == {}  # TYPE_CHECKING imports never run
    assert cycles(graph) == []
    (pkg / "sub" / "b.py").write_text("def g():\n    from ..c import f\n")
    assert cycles(import_graph(pkg)) == [["pkg.a", "pkg.c", "pkg.sub", "pkg.sub.b"]]
