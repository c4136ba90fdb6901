"""ferro side by side with NumPy and PyTorch CPU, in one run: ``python benchmarks/run.py``.

Every case runs every contender (NumPy, PyTorch, one column per ferro backend)
in this one process, interleaved round by round in shuffled order, and
reports the best round (``--stat median`` for the median); ratios compare
ferro's default backend with the reference the foundation issue names, and
are marked PASS or FAIL against its targets. Import times are taken from
fresh interpreters. ``benchmarks/README.md`` explains each row.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import itertools
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Op = Callable[..., Any]  # op(xp, *inputs): xp is the contender's namespace (numpy, torch, ferro)


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
    return Contender("numpy", np, lambda a, rg: a)


def torch_contender() -> Contender:
    import torch
    return Contender("torch", torch, lambda a, rg: torch.from_numpy(a.copy()).requires_grad_(rg), grad=True)


def ferro_contender(backend: str) -> Contender:
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


# -- cases: one row each ----------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The issue's bound on ferro (default backend) against ``reference``."""

    reference: str
    bound: float
    throughput: bool = False  # True: ferro/reference throughput >= bound; False: ferro/reference time <= bound

    def ratio(self, ferro_s: float, reference_s: float) -> float:
        return reference_s / ferro_s if self.throughput else ferro_s / reference_s

    def met(self, ratio: float) -> bool:
        return ratio >= self.bound if self.throughput else ratio <= self.bound

    def describe(self) -> str:
        what, cmp = ("throughput", ">=") if self.throughput else ("time", "<=")
        return f"{what} vs {self.reference} {cmp} {self.bound:g}"


@dataclass(frozen=True)
class Case:
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
# Environment that changes what is measured; recorded in the JSON's meta.
_ENV_OF_NOTE = ("PYTHONDONTWRITEBYTECODE", "FERRO_BACKEND", "FERRO_FALLBACK", "FERRO_DISABLE_PLUGINS",
                "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


# -- timing -----------------------------------------------------------------------------


def _per_call(fn: Callable[[], Any], sync: Callable[[], None], loops: int) -> float:
    """Seconds per call over ``loops`` back-to-back calls (the garbage collector stays on)."""
    it = itertools.repeat(None, loops)
    t0 = time.perf_counter()
    for _ in it:
        fn()
    sync()
    return (time.perf_counter() - t0) / loops


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
    seconds: list[float] = field(default_factory=list)  # one per round
    loops: int = 0
    error: str = ""

    def stat(self, how: str) -> float:
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


def harness_overhead(budget: float) -> float:
    """Seconds per call that the harness itself adds to every timing (a partial of a no-op)."""
    fn = functools.partial(lambda xp, a, b: None, np, 0, 0)
    loops = _loops_for(fn, _nothing, budget)
    return min(_per_call(fn, _nothing, loops) for _ in range(5))


def _compile_ferro() -> None:
    """Write ferro's bytecode, as pip does when it installs a wheel (NumPy's and torch's ship compiled).

    An editable install run with PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every
    module on every import, which measures the compiler rather than ferro.
    """
    import compileall
    for pkg in ("ferro", "ferro_cpu", "ferro_cuda", "ferro_opencl"):
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


# -- the report -------------------------------------------------------------------------


def _fmt_time(seconds: float, unit: str) -> str:
    if unit == "us":
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.2f} ms"


def _cell(case: Case, res: Result | None, how: str) -> str:
    if res is None:
        return "-"
    if res.error:
        return "n/a"
    s = res.stat(how)
    text = _fmt_time(s, case.unit)
    if case.work:
        unit, amount = next(iter(case.work.items()))  # the first throughput is shown, all go to JSON
        text += f" {amount / s / 1e9:.1f} {unit}" if unit.startswith("G") else f" {amount / s / 1e6:.0f} {unit}"
    return text


def _throughputs(case: Case, seconds: float) -> dict[str, float]:
    return {unit: amount / seconds / (1e9 if unit.startswith("G") else 1e6) for unit, amount in case.work.items()}


def build_report(args: argparse.Namespace, contenders: list[Contender], notes: list[str]) -> dict[str, Any]:
    rounds, budget, import_runs = (3, 0.03, 5) if args.quick else (args.rounds, args.budget, args.import_runs)
    ferros = [c.name for c in contenders if c.ferro_backend]
    judged = "ferro:cpu" if "ferro:cpu" in ferros else (ferros[0] if ferros else None)
    report: dict[str, Any] = {"meta": _meta(contenders, args.stat, judged, notes), "cases": []}
    report["meta"]["harness_overhead_s"] = harness_overhead(budget)
    report["meta"]["load_before"] = _load()
    for case in CASES:
        if args.case and not any(s.lower() in case.name.lower() for s in args.case):
            continue
        print(f"  timing {case.name} ...", file=sys.stderr, flush=True)
        results = measure(case, contenders, rounds, budget, args.pause)
        entry: dict[str, Any] = {"name": case.name, "target": case.target.describe(), "results": {}, "ratios": {}}
        ref = results.get(case.target.reference)
        for name, res in results.items():
            if res.error:
                entry["results"][name] = {"error": res.error}
                continue
            s = res.stat(args.stat)
            entry["results"][name] = {"seconds": s, "min_s": min(res.seconds), "median_s": statistics.median(
                res.seconds), "rounds": len(res.seconds), "loops": res.loops, **_throughputs(case, s)}
            if name in ferros and ref is not None and not ref.error:
                entry["ratios"][name] = case.target.ratio(s, ref.stat(args.stat))
        if judged in entry["ratios"]:
            entry["pass"] = case.target.met(entry["ratios"][judged])
        entry["cells"] = {c.name: _cell(case, results.get(c.name), args.stat) for c in contenders}
        report["cases"].append(entry)
    if not args.case or any(s.lower() in "import" for s in args.case):
        print("  timing imports ...", file=sys.stderr, flush=True)
        times = import_times(import_runs)
        med = {n: statistics.median(v) for n, v in times.items()}
        leaked = import_check()
        report["imports"] = {"median_s": med, "runs": import_runs, "ratio": med["ferro"] / med["numpy"],
                             "pass": med["ferro"] / med["numpy"] <= 1.25,
                             "net_ratio": (med["ferro"] - med["python"]) / (med["numpy"] - med["python"]),
                             "loaded_by_import_ferro": leaked}
    report["meta"]["load_after"] = _load()
    return report


def _load() -> float:
    """The 1-minute load average (other work on the machine disturbs the timings), or nan."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


def _meta(contenders: list[Contender], stat: str, judged: str | None, notes: list[str]) -> dict[str, Any]:
    torch = sys.modules.get("torch")  # imported by its contender, if installed
    meta: dict[str, Any] = {
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "numpy": np.__version__, "torch": torch.__version__ if torch else "not installed",
        "torch_threads": torch.get_num_threads() if torch else None,
        "env": {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS") or k in _ENV_OF_NOTE},
        "stat": stat, "judged": judged, "notes": notes,
    }
    try:
        from threadpoolctl import threadpool_info  # optional: names the BLAS pools and their threads
        meta["blas_threads"] = {f"{p['internal_api']} ({p['prefix']})": p["num_threads"] for p in threadpool_info()}
    except ImportError:
        pass
    for c in contenders:
        if c.ferro_backend:
            import ferro
            b = ferro.backends.get(c.ferro_backend)
            idx = b.default_device_index()
            meta[c.name] = {"device": b.device_name(idx), **b.device_info(idx)}
    return meta


def render(report: dict[str, Any], contenders: list[Contender], markdown: bool) -> str:
    meta = report["meta"]
    ferros = [c.name for c in contenders if c.ferro_backend]
    judged = meta["judged"]
    header = ["case", *(c.name for c in contenders), *(f"{f} ratio" for f in ferros), "target (ferro)", "check"]
    rows = []
    for e in report["cases"]:
        ratios = [f"{e['ratios'][f]:.2f}x" if f in e["ratios"] else "-" for f in ferros]
        check = "" if "pass" not in e else ("PASS" if e["pass"] else "FAIL")
        rows.append([e["name"], *(e["cells"][c.name] for c in contenders), *ratios, e["target"], check])
    if "imports" in report:
        imp = report["imports"]
        ms = {k: f"{v * 1e3:.0f} ms" for k, v in imp["median_s"].items()}
        first = ferros[0] if ferros else None  # import ferro is the same for every backend: one cell
        cells = [ms["ferro"] if c.name == first else ms.get(c.name, "") for c in contenders]
        ratios = [f"{imp['ratio']:.2f}x" if f == first else "" for f in ferros]
        rows.append([f"python -c 'import X' (median of {imp['runs']}; bare python {ms['python']})", *cells,
                     *ratios, "time vs numpy <= 1.25", "PASS" if imp["pass"] else "FAIL"])
        leaked = imp["loaded_by_import_ferro"]
        cells = [(" ".join(leaked) or "none") if c.name == first else "" for c in contenders]
        rows.append(["in sys.modules after `import ferro`", *cells, *[""] * len(ferros),
                     "no numpy, device library or plugin", "FAIL" if leaked else "PASS"])
    threads = f" ({meta['torch_threads']} threads)" if meta["torch_threads"] else ""
    title = (f"ferro benchmarks: {meta['stat']} of rounds; numpy {meta['numpy']}, torch {meta['torch']}{threads}, "
             f"{meta['cpus']} CPUs; ratios of {judged} are checked; "
             f"harness overhead {meta['harness_overhead_s'] * 1e6:.2f} us per call, in every time; "
             f"load average {meta['load_before']:.2f} before, {meta['load_after']:.2f} after")
    lines = [("**" + title + "**\n") if markdown else title]
    if markdown:
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    failures: dict[tuple[str, str], list[str]] = {}  # (contender, first clause of the error) -> cases
    for e in report["cases"]:
        for name, res in e["results"].items():
            if "error" in res:
                failures.setdefault((name, res["error"].split(" (")[0]), []).append(e["name"])
    lines += [f"n/a on {name} ({'; '.join(cases)}): {err}" for (name, err), cases in failures.items()]
    lines += [f"note: {n}" for n in meta["notes"]]
    return "\n".join(lines)


def select_contenders(spec: str) -> tuple[list[Contender], list[str]]:
    """The references, then one contender per requested ferro backend ("all": every available one)."""
    import ferro
    notes: list[str] = []
    installed = ferro.backends.installed()
    if spec == "all":
        names = ferro.backends.available()
        notes += [f"ferro backend {n} not run: {why}" for n, why in ferro.backends.unavailable().items()]
    else:
        names = [n.strip() for n in spec.split(",") if n.strip()]
        for n in names:
            if n not in installed:
                raise SystemExit(f"ferro backend {n!r} is not installed (installed: {', '.join(installed)})")
            if not (avail := ferro.backends.get(n).availability()):
                raise SystemExit(f"ferro backend {n!r} is unavailable: {avail.reason}")
    references = []
    for name, make in REFERENCES.items():
        try:
            references.append(make())
        except ImportError as e:  # e.g. PyTorch not installed: its column is left out, the rest still runs
            notes.append(f"{name} column left out: {e}" + (" (pip install torch==2.13.0)" if name == "torch" else ""))
    return references + [ferro_contender(n) for n in names], notes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--backend", default="all", help="ferro backends to run: all (every available one), "
                   "or names separated by commas, e.g. cpu,opencl (default: all)")
    p.add_argument("--quick", action="store_true", help="a smoke run: 3 short rounds, 5 interpreter starts")
    p.add_argument("--json", metavar="FILE", help="also write every number (min, median, loops, throughputs)")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument("--case", action="append", metavar="TEXT",
                   help="run only the cases whose name holds TEXT ('import' for the import rows); repeatable")
    p.add_argument("--stat", choices=("min", "median"), default="min", help="which round is reported (default: min)")
    p.add_argument("--rounds", type=int, default=15, help="rounds per contender (default 15)")
    p.add_argument("--budget", type=float, default=0.25, help="seconds per round per contender (default 0.25)")
    p.add_argument("--import-runs", type=int, default=15, help="fresh interpreters per import (default 15)")
    p.add_argument("--pause", type=float, default=0.05, help="seconds of rest before each timed round "
                   "(default 0.05)")
    args = p.parse_args(argv)

    contenders, notes = select_contenders(args.backend)
    report = build_report(args, contenders, notes)
    print(render(report, contenders, args.markdown))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
