"""What ``ferro bench`` reports: the JSON-ready report of a run, and its table as text or markdown."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from typing import Any

import numpy as np

from ._cases import CASES, IMPORT_TARGET, Case, imports_selected, selected
from ._harness import Contender, Result, harness_overhead, import_check, import_times, measure

# Environment that changes what is measured; recorded in the JSON's meta.
_ENV_OF_NOTE = ("PYTHONDONTWRITEBYTECODE", "FERRO_BACKEND", "FERRO_FALLBACK", "FERRO_DISABLE_PLUGINS",
                "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
QUICK = (3, 0.03, 5)  # --quick: rounds, seconds per round, fresh interpreters per import


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
    """Run the selected cases (``args.case``) and the import rows; every number, ready for JSON.

    ``args`` carries the command's options: ``quick``, ``rounds``, ``budget``, ``import_runs``,
    ``case``, ``stat`` and ``pause``.
    """
    rounds, budget, import_runs = QUICK if args.quick else (args.rounds, args.budget, args.import_runs)
    ferros = [c.name for c in contenders if c.ferro_backend]
    judged = "ferro:cpu" if "ferro:cpu" in ferros else (ferros[0] if ferros else None)
    report: dict[str, Any] = {"meta": _meta(contenders, args.stat, judged, notes), "cases": []}
    report["meta"]["harness_overhead_s"] = harness_overhead(budget)
    report["meta"]["load_before"] = _load()
    for case in selected(CASES, args.case):
        print(f"  timing {case.name} ...", file=sys.stderr, flush=True)
        results = measure(case, contenders, rounds, budget, args.pause)
        entry: dict[str, Any] = {"name": case.name, "target": case.target.describe(), "unit": case.unit,
                                 "throughput_unit": next(iter(case.work), None), "results": {}, "ratios": {}}
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
    if imports_selected(args.case):
        print("  timing imports ...", file=sys.stderr, flush=True)
        times = import_times(import_runs)
        med = {n: statistics.median(v) for n, v in times.items()}
        leaked = import_check()
        report["imports"] = {"median_s": med, "runs": import_runs, "ratio": med["ferro"] / med["numpy"],
                             "pass": med["ferro"] / med["numpy"] <= IMPORT_TARGET,
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
    """The report as a table (markdown when ``markdown``), with its errors and notes under it."""
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
                     *ratios, f"time vs numpy <= {IMPORT_TARGET:g}", "PASS" if imp["pass"] else "FAIL"])
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
