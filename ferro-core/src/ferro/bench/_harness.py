"""How ``ferro bench`` times: contenders (one column each), warm-up, calibration, interleaved rounds, imports.

Every contender runs a case in this one process: warmed up (3 calls),
calibrated to about ``budget`` seconds per round, then timed round by round in
a freshly shuffled order after a short rest. Import times come from fresh
interpreters. ``benchmarks/README.md`` explains the choices.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends._entry_points import entry_points
from ._cases import IMPORTS, NOT_AT_IMPORT, Case, Target


def _nothing() -> None:
    pass


# -- contenders: one column each -------------------------------------------------------


@dataclass
class Contender:
    """A library, or one ferro backend, that runs the cases."""

    name: str  # the column header
    xp: Any  # the namespace handed to a case's op
    to_native: Callable[[np.ndarray, bool], Any]  # (host array, requires_grad) -> its array or tensor
    sync: Callable[[], None] = _nothing  # waits for queued device work; timed with the op
    grad: bool = False  # whether it records autograd graphs (cases with requires_grad need it)
    ferro_backend: str | None = None


def numpy_contender() -> Contender:
    """NumPy: the reference for throughput rows."""
    return Contender("numpy", np, lambda a, rg: a)


def torch_contender() -> Contender:
    """PyTorch CPU: the reference for per-op overhead rows; ImportError when it is not installed."""
    import torch
    return Contender("torch", torch, lambda a, rg: torch.from_numpy(a.copy()).requires_grad_(rg), grad=True)


def ferro_contender(backend: str) -> Contender:
    """One ferro backend, on its default device; its column is ``ferro:<backend>``."""
    import ferro
    b = ferro.backends.get(backend)
    index = b.default_device_index()
    device = f"{backend}:{index}"
    return Contender(f"ferro:{backend}", ferro,
                     lambda a, rg: ferro.tensor(a, device=device, requires_grad=rg),
                     sync=functools.partial(b.synchronize, index), grad=True, ferro_backend=backend)


# Raw device libraries (pyopencl, CuPy) belong here, beside the references: a factory
# returning a Contender whose xp holds the array module (e.g. a namespace over
# pyopencl.array and pyopencl.clmath), whose to_native uploads to the device, and whose
# sync is the queue's finish(); add it to REFERENCES and give cases an entry in
# Case.overrides wherever the generic op does not fit it (None: not run).
REFERENCES: dict[str, Callable[[], Contender]] = {"numpy": numpy_contender, "torch": torch_contender}


def select_contenders(spec: str) -> tuple[list[Contender], list[str]]:
    """The references, then one contender per requested ferro backend ("all": every available one).

    A backend named explicitly that is not installed raises ``BackendNotFoundError``; one that
    cannot run here raises ``BackendUnavailableError`` with its reason. A reference that cannot
    be imported is left out with a note (the second item), never an error.
    """
    import ferro
    from ferro.errors import BackendNotFoundError, BackendUnavailableError
    notes: list[str] = []
    installed = ferro.backends.installed()
    if spec == "all":
        names = ferro.backends.available()
        notes += [f"ferro backend {n} not run: {why}" for n, why in ferro.backends.unavailable().items()]
    else:
        names = [n.strip() for n in spec.split(",") if n.strip()]
        for n in names:
            if n not in installed:
                raise BackendNotFoundError(n, installed, ferro.backends.broken())
            if not (avail := ferro.backends.get(n).availability()):
                raise BackendUnavailableError(n, avail.reason)
    references = []
    for name, make in REFERENCES.items():
        try:
            references.append(make())
        except ImportError as e:  # e.g. PyTorch not installed: its column is left out, the rest still runs
            notes.append(f"{name} column left out: {e}" + (" (pip install torch==2.13.0)" if name == "torch" else ""))
    return references + [ferro_contender(n) for n in names], notes


# -- timing -----------------------------------------------------------------------------


#: The clock of every timing: wall time. ``time.thread_time`` (this thread's CPU time) suits single-threaded
#: runs on a machine shared with other jobs, where the time spent waiting for a core would count
#: (``benchmarks/model_steps.py --clock thread``); it misses the work of other threads.
clock: Callable[[], float] = time.perf_counter


def _per_call(fn: Callable[[], Any], sync: Callable[[], None], loops: int) -> float:
    """Seconds per call over ``loops`` back-to-back calls (the garbage collector stays on)."""
    it = itertools.repeat(None, loops)
    t0 = clock()
    for _ in it:
        fn()
    sync()
    return (clock() - t0) / loops


def _loops_for(fn: Callable[[], Any], sync: Callable[[], None], budget: float) -> int:
    """How many calls fill about ``budget`` seconds."""
    loops = 1
    while True:
        t = _per_call(fn, sync, loops) * loops
        if t >= budget / 10:
            return max(1, round(loops * budget / t))
        loops *= 4 if t < budget / 100 else 2


@dataclass
class Result:
    """One contender's timings on one case: seconds per call in each round, or the error it raised."""

    seconds: list[float] = field(default_factory=list)  # one per round
    loops: int = 0
    error: str = ""

    def stat(self, how: str) -> float:
        """The best round (``"min"``) or the median one."""
        return min(self.seconds) if how == "min" else statistics.median(self.seconds)


def measure(case: Case, contenders: list[Contender], rounds: int, budget: float, pause: float) -> dict[str, Result]:
    """Time every contender on ``case``, interleaved round by round in shuffled order."""
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(s, dtype=np.float32) for s in case.shapes]
    results: dict[str, Result] = {}
    runners: dict[str, tuple[Callable[[], Any], Callable[[], None]]] = {}
    for c in contenders:
        op = case.overrides.get(c.name, case.op)
        if op is None or (case.requires_grad and not c.grad):
            continue
        res = results[c.name] = Result()
        try:
            fn = functools.partial(op, c.xp, *(c.to_native(a, case.requires_grad) for a in host))
            for _ in range(3):  # warm up: caches, lazy kernels, compiled programs, allocator pools
                fn()
            c.sync()
            res.loops = _loops_for(fn, c.sync, budget)
        except Exception as e:  # an unsupported op on some backend is a cell, not a crash
            res.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            continue
        runners[c.name] = (fn, c.sync)
    order = list(runners)
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)  # a new order each round: nobody always follows the same neighbour
        for name in order:
            fn, sync = runners[name]
            # A rest before each round lets threads still spinning after the previous contender
            # (OpenBLAS's pool, PyTorch's OpenMP pool) go idle instead of competing for the cores.
            time.sleep(pause)
            results[name].seconds.append(_per_call(fn, sync, results[name].loops))
    return results


def paired_ratio(target: Target, ours: Result, reference: Result) -> float:
    """The median over rounds of ``target.ratio`` between two contenders' times *in the same round*.

    :func:`measure` runs every contender once per round, so a pair shares the machine's state of
    that moment: slow drifts (other tenants, frequency, a driver's worker threads waking or not)
    cancel in the pair, where the best rounds of each may come from different moments.
    """
    return statistics.median(target.ratio(o, r) for o, r in zip(ours.seconds, reference.seconds))


def harness_overhead(budget: float) -> float:
    """Seconds per call that the harness itself adds to every timing (a partial of a no-op)."""
    fn = functools.partial(lambda xp, a, b: None, np, 0, 0)
    loops = _loops_for(fn, _nothing, budget)
    return min(_per_call(fn, _nothing, loops) for _ in range(5))


# -- imports ----------------------------------------------------------------------------


def _compile_ferro() -> None:
    """Write ferro's bytecode, as pip does when it installs a wheel (NumPy's and torch's ship compiled).

    An editable install run with PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every
    module on every import, which measures the compiler rather than ferro.
    """
    import compileall

    # Every installed plugin's package too: the first op imports each of them.
    plugins = {ep.value.partition(":")[0].partition(".")[0].strip() for ep in entry_points("ferro.backends")}
    for pkg in ("ferro", "ferro_cpu", "ferro_cuda", "ferro_opencl", *sorted(plugins - {"ferro"})):
        spec = importlib.util.find_spec(pkg)
        for where in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(where, quiet=1)


def import_times(runs: int) -> dict[str, list[float]]:
    """Wall time of ``python -c CODE`` in fresh interpreters, interleaved, after one warm-up each."""
    def once(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0

    names = [n for n in IMPORTS if n == "python" or importlib.util.find_spec(n) is not None]
    _compile_ferro()
    for name in names:
        once(IMPORTS[name])  # warm the file cache and __pycache__
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(runs):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(once(IMPORTS[name]))
    return times


def import_check() -> list[str]:
    """Which of NOT_AT_IMPORT a fresh interpreter holds right after ``import ferro``."""
    code = f"import sys, ferro; print(' '.join(m for m in {NOT_AT_IMPORT!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return out.split()
