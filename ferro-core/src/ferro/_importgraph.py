"""The import graph of a package, read from its source: every import, those inside functions included.

Used by the test suite to hold ferro-core free of import cycles (``python -m ferro._importgraph``
prints the cycles, if any, with the lines that make them). ``from pkg import name`` is an edge to
``pkg.name`` where that is a module, else to ``pkg``; importing ``a.b.c`` is an edge to the packages
``a.b`` too (Python runs their ``__init__`` first), except to the root package and to the importer's own
packages, which are being imported already; imports under ``if TYPE_CHECKING:`` are not run and are left out.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

__all__ = ["import_graph", "cycles"]


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    for n in ast.walk(sub):
                        if hasattr(n, "lineno"):
                            lines.add(n.lineno)
    return lines


def import_graph(package_dir: str | Path) -> dict[str, dict[str, list[int]]]:
    """``module -> {imported module -> [line numbers]}`` for every module under ``package_dir``."""
    root = Path(package_dir).resolve()
    files = {_module_name(root, p): p for p in root.rglob("*.py")}
    graph: dict[str, dict[str, list[int]]] = {}
    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = _type_checking_lines(tree)
        edges: dict[str, list[int]] = {}
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    pkg = ".".join(base + ([node.module] if node.module else []))
                else:
                    pkg = node.module or ""
                targets = [f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in files else pkg for a in node.names]
            for t in targets:
                while t and t not in files and "." in t:
                    t = t.rsplit(".", 1)[0]
                # importing a.b.c runs the packages a.b and a first: each is an edge too, but the
                # root package, which is always being imported already when its modules are
                while t in files and t != mod and "." in t:
                    edges.setdefault(t, []).append(node.lineno)
                    t = t.rsplit(".", 1)[0]
                    if mod == t or mod.startswith(t + "."):
                        break
        graph[mod] = edges
    return graph


def cycles(graph: dict[str, dict[str, list[int]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    """Print the cycles of ferro's import graph; exit 1 when there is one."""
    graph = import_graph(Path(__file__).parent)
    found = cycles(graph)
    for comp in found:
        print(f"cycle of {len(comp)} modules:")
        members = set(comp)
        for m in comp:
            for t, lines in sorted(graph[m].items()):
                if t in members:
                    print(f"  {m} -> {t}  (line {', '.join(map(str, lines))})")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
