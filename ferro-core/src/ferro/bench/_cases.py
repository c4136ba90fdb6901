"""The rows of ``ferro bench``: one :class:`Case` per op row, with the issue's :class:`Target`, and the import rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Op = Callable[..., Any]  # op(xp, *inputs): xp is the contender's namespace (numpy, torch, ferro)


@dataclass(frozen=True)
class Target:
    """The issue's bound on ferro (default backend) against ``reference``."""

    reference: str
    bound: float
    throughput: bool = False  # True: ferro/reference throughput >= bound; False: ferro/reference time <= bound

    def ratio(self, ferro_s: float, reference_s: float) -> float:
        """ferro against the reference: a throughput ratio (higher is better) or a time ratio (lower is better)."""
        return reference_s / ferro_s if self.throughput else ferro_s / reference_s

    def met(self, ratio: float) -> bool:
        """Whether ``ratio`` (from :meth:`ratio`) meets the bound."""
        return ratio >= self.bound if self.throughput else ratio <= self.bound

    def describe(self) -> str:
        """The target in words, e.g. ``time vs torch <= 1.2``."""
        what, cmp = ("throughput", ">=") if self.throughput else ("time", "<=")
        return f"{what} vs {self.reference} {cmp} {self.bound:g}"


@dataclass(frozen=True)
class Case:
    """One row: an op on float32 inputs of the given shapes, written once for every namespace."""

    name: str
    shapes: tuple[tuple[int, ...], ...]  # one float32 input of each shape
    op: Op
    target: Target
    requires_grad: bool = False
    unit: str = "us"  # how times print: "us" or "ms"
    work: dict[str, float] = field(default_factory=dict)  # throughput unit -> amount per call ("GB/s": bytes)
    overrides: dict[str, Op | None] = field(default_factory=dict)  # contender name -> its own op, or None to skip


N = 10_000_000
F32 = 4


def _add(xp: Any, a: Any, b: Any) -> Any:
    return a + b


def _exp(xp: Any, a: Any) -> Any:
    return xp.exp(a)


def _matmul(xp: Any, a: Any, b: Any) -> Any:
    return a @ b


CASES = [
    Case("a + b (64x64 f32)", ((64, 64),) * 2, _add, Target("torch", 1.2)),
    Case("a + b (64x64 f32, requires_grad)", ((64, 64),) * 2, _add, Target("torch", 1.5), requires_grad=True),
    Case("a + b (10M f32)", ((N,),) * 2, _add, Target("numpy", 0.95, throughput=True), unit="ms",
         work={"GB/s": 3 * F32 * N, "Melem/s": N}),
    Case("exp(a) (10M f32)", ((N,),), _exp, Target("numpy", 0.95, throughput=True), unit="ms",
         work={"GB/s": 2 * F32 * N, "Melem/s": N}),
    Case("a @ b (1024x1024x1024 f32)", ((1024, 1024),) * 2, _matmul, Target("numpy", 0.95, throughput=True),
         unit="ms", work={"GFLOP/s": 2 * 1024**3}),
]

IMPORTS = {"python": "pass", "numpy": "import numpy", "torch": "import torch", "ferro": "import ferro"}
# Must not be in sys.modules right after `import ferro`: NumPy and the device libraries
# wait for first use, and plugins' entry points are loaded lazily (DESIGN.md).
NOT_AT_IMPORT = ("numpy", "cupy", "pyopencl", "torch", "ferro_cpu", "ferro_cuda", "ferro_opencl")
IMPORT_TARGET = 1.25  # import ferro / import numpy, wall time of a fresh interpreter


def selected(cases: list[Case], patterns: list[str] | None) -> list[Case]:
    """The cases whose name holds one of ``patterns`` (case-insensitive); all of them when there is none."""
    if not patterns:
        return list(cases)
    return [c for c in cases if any(p.lower() in c.name.lower() for p in patterns)]


def imports_selected(patterns: list[str] | None) -> bool:
    """Whether the import rows run: no pattern, or one that ``import`` holds."""
    return not patterns or any(p.lower() in "import" for p in patterns)
