"""How much of PyTorch's public surface ferro has, measured per namespace.

For each namespace of :data:`NAMESPACES` the torch side lists its public names (callables of a module,
the attributes of ``Tensor``, or the subclasses of a base class: ``nn`` modules, optimizers, schedulers,
distributions); the ferro side is the same path under ``ferro``. A name ferro lacks on purpose is a line
of ``coverage_omissions.txt`` next to this file::

    NAMESPACE PATTERN  REASON...

``PATTERN`` is a name or an ``fnmatch`` pattern (``quantize_*``); the reason is required. A line is
stale when it matches no name that torch has and ferro lacks: then ferro gained the names (delete the
line) or torch dropped them. ``python scripts/coverage.py`` prints the table; ``--missing`` lists what
is left to do. Needs ``torch`` installed; importing this module does not import it.
"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["NAMESPACES", "OMISSIONS", "Omission", "Coverage", "load_omissions", "measure", "stale", "table"]

#: The omissions file shipped beside this module.
OMISSIONS = Path(__file__).with_name("coverage_omissions.txt")

#: The markers around the table in docs/porting.md (``scripts/coverage.py --write`` fills them).
START = "<!-- coverage table: python scripts/coverage.py --write docs/porting.md -->"
END = "<!-- end of coverage table -->"

#: namespace -> (torch path, ferro path, what is listed: "callables", "attributes" or a base class path).
NAMESPACES: dict[str, tuple[str, str, str]] = {
    "torch": ("torch", "ferro", "callables"),
    "Tensor": ("torch.Tensor", "ferro.Tensor", "attributes"),
    "nn.functional": ("torch.nn.functional", "ferro.nn.functional", "callables"),
    "nn": ("torch.nn", "ferro.nn", "torch.nn.Module"),
    "optim": ("torch.optim", "ferro.optim", "torch.optim.Optimizer"),
    "optim.lr_scheduler": ("torch.optim.lr_scheduler", "ferro.optim.lr_scheduler",
                           "torch.optim.lr_scheduler.LRScheduler"),
    "linalg": ("torch.linalg", "ferro.linalg", "callables"),
    "fft": ("torch.fft", "ferro.fft", "callables"),
    "special": ("torch.special", "ferro.special", "callables"),
    "utils.data": ("torch.utils.data", "ferro.utils.data", "callables"),
    "distributions": ("torch.distributions", "ferro.distributions", "torch.distributions.Distribution"),
}


@dataclass(frozen=True)
class Omission:
    """One line of the omissions file."""

    namespace: str
    pattern: str
    reason: str
    line: int

    def matches(self, name: str) -> bool:
        """Whether ``name`` is one of the names this line omits."""
        return fnmatch.fnmatchcase(name, self.pattern)


@dataclass
class Coverage:
    """One namespace measured: torch's names split into those ferro has, omits on purpose, and lacks."""

    namespace: str
    present: list[str] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def percent(self) -> float:
        """The share of torch's names (less the deliberate omissions) that ferro has."""
        wanted = len(self.present) + len(self.missing)
        return 100.0 * len(self.present) / wanted if wanted else 100.0


def load_omissions(path: Path = OMISSIONS) -> list[Omission]:
    """Parse the omissions file; a line without a reason or with an unknown namespace raises ``ValueError``."""
    out = []
    for i, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split(None, 2)
        if len(parts) < 3:
            raise ValueError(f"{path.name}:{i}: expected 'NAMESPACE PATTERN REASON', got {raw!r}")
        if parts[0] not in NAMESPACES:
            raise ValueError(f"{path.name}:{i}: unknown namespace {parts[0]!r} (one of {', '.join(NAMESPACES)})")
        out.append(Omission(parts[0], parts[1], parts[2], i))
    return out


def _resolve(path: str) -> Any:
    """The object at a dotted path (a module, or an attribute of one), or None where it does not exist."""
    head, _, tail = path.partition(".")
    try:
        obj: Any = importlib.import_module(head)
    except ImportError:
        return None
    for part in tail.split(".") if tail else ():
        try:
            obj = importlib.import_module(f"{obj.__name__}.{part}") if isinstance(obj, types.ModuleType) \
                else getattr(obj, part)
        except (ImportError, AttributeError):
            obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _is_typing(value: Any) -> bool:
    """Type-annotation helpers re-exported by a module (``Optional``, ``Callable``...): not its API."""
    return getattr(value, "__module__", None) in ("typing", "typing_extensions", "collections.abc")


def torch_names(namespace: str) -> list[str]:
    """The public names of ``namespace`` in PyTorch."""
    path, _, what = NAMESPACES[namespace]
    space = _resolve(path)
    if space is None:
        raise ImportError(f"coverage: {path} cannot be imported (is torch installed?)")
    names = [n for n in dir(space) if not n.startswith("_")]
    if what == "attributes":
        return names
    values = {n: getattr(space, n, None) for n in names}
    if what == "callables":
        return sorted(n for n, v in values.items() if callable(v) and not isinstance(v, types.ModuleType)
                      and not _is_typing(v))
    base = _resolve(what)
    return sorted(n for n, v in values.items() if inspect.isclass(v) and issubclass(v, base))


def ferro_has(namespace: str, name: str) -> bool:
    """Whether ferro has ``name`` where PyTorch has it."""
    space = _resolve(NAMESPACES[namespace][1])
    return space is not None and hasattr(space, name)


def measure(namespace: str, omissions: list[Omission] | None = None) -> Coverage:
    """Measure one namespace."""
    omissions = load_omissions() if omissions is None else omissions
    mine = [o for o in omissions if o.namespace == namespace]
    cov = Coverage(namespace)
    for name in torch_names(namespace):
        if ferro_has(namespace, name):
            cov.present.append(name)
        elif any(o.matches(name) for o in mine):
            cov.omitted.append(name)
        else:
            cov.missing.append(name)
    return cov


def stale(omissions: list[Omission] | None = None) -> list[str]:
    """The omission lines that match no name torch has and ferro lacks, each as ``file:line: why``."""
    omissions = load_omissions() if omissions is None else omissions
    out = []
    for o in omissions:
        names = torch_names(o.namespace)
        hits = [n for n in names if o.matches(n)]
        if not hits:
            out.append(f"{OMISSIONS.name}:{o.line}: {o.namespace} {o.pattern}: torch has no such name")
        elif all(ferro_has(o.namespace, n) for n in hits):
            out.append(f"{OMISSIONS.name}:{o.line}: {o.namespace} {o.pattern}: ferro has it now")
    return out


def table(results: list[Coverage]) -> str:
    """The coverage table in Markdown."""
    rows = ["| namespace | PyTorch names | deliberately omitted | ferro has | missing | coverage |",
            "|---|--:|--:|--:|--:|--:|"]
    for c in results:
        total = len(c.present) + len(c.omitted) + len(c.missing)
        rows.append(f"| `{c.namespace}` | {total} | {len(c.omitted)} | {len(c.present)} | {len(c.missing)} "
                    f"| {c.percent:.0f}% |")
    return "\n".join(rows)
