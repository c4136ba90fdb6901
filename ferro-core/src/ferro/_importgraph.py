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

__all__ = ["LAYERS", "import_graph", "cycles", "upward"]

#: ferro-core's layers, bottom first: a module may import its own layer and those below, never above.
#: Modules not listed (nn, optim, data, array_api, testing, bench, cli, demo, the ``ferro`` package) are
#: the faces, on top.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("ferro._core", "ferro.errors", "ferro._importgraph"),  # dtypes, devices, tensor data, nodes, op records
    ("ferro.backends",),  # the contract, hook specification, discovery, the generic Array API backend
    ("ferro.autograd",),  # the engine, Function, gradcheck
    ("ferro.dispatch",),  # from a call to a kernel, and the layers around it
    ("ferro._ops", "ferro._creation", "ferro._random"),  # the op families and creation
    ("ferro._api", "ferro.fft", "ferro.linalg", "ferro.random", "ferro.cuda", "ferro.serialization"),  # the namespace
)


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
                if t not in files or t == mod:
                    continue
                edges.setdefault(t, []).append(node.lineno)
                while "." in t:
                    t = t.rsplit(".", 1)[0]
                    if "." not in t or mod == t or mod.startswith(t + "."):
                        break
                    edges.setdefault(t, []).append(node.lineno)
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


def layer(module: str) -> int:
    """The index of ``module``'s layer in :data:`LAYERS` (``len(LAYERS)`` for the faces)."""
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return len(LAYERS)


def upward(graph: dict[str, dict[str, list[int]]]) -> list[tuple[str, str, int]]:
    """``(importer, imported, line)`` for every import of a higher layer than the importer's."""
    return [(m, t, lines[0]) for m, edges in sorted(graph.items()) for t, lines in sorted(edges.items())
            if layer(t) > layer(m)]


def main() -> int:
    """Print the cycles and upward imports of ferro's import graph; exit 1 when there is one."""
    graph = import_graph(Path(__file__).parent)
    found = cycles(graph)
    for comp in found:
        print(f"cycle of {len(comp)} modules:")
        members = set(comp)
        for m in comp:
            for t, lines in sorted(graph[m].items()):
                if t in members:
                    print(f"  {m} -> {t}  (line {', '.join(map(str, lines))})")
    for m, t, line in upward(graph):
        print(f"upward import: {m} (layer {layer(m)}) -> {t} (layer {layer(t)}), line {line}")
    return 1 if found or upward(graph) else 0


if __name__ == "__main__":
    raise SystemExit(main())
