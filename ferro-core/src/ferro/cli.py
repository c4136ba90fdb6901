"""The ``ferro`` command line: ``ferro info``, ``ferro ops``, ``ferro demo``, ``ferro bench``, ``ferro run``."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from .errors import FerroError

__all__ = ["main", "info_report", "ops_matrix"]


def info_report() -> dict[str, Any]:
    """Versions, plugins, each backend's availability and devices, broken plugins."""
    import ferro
    from ferro._core.dtypes import all_dtypes
    from ferro.backends import _registry
    backends: dict[str, Any] = {}
    for name, b in sorted(_registry.backends().items()):
        avail = b.availability()
        entry: dict[str, Any] = {"plugin": b.plugin, "distribution": _registry._state.plugins.get(b.plugin, ""),
                                 "description": b.description, "available": bool(avail),
                                 "reason": avail.reason, "devices": []}
        if avail:
            for i in range(b.device_count()):
                try:
                    entry["devices"].append({"device": f"{name}:{i}", "name": b.device_name(i),
                                             "dtypes": [d.name for d in all_dtypes if d in b.dtypes(i)],
                                             **b.device_info(i)})
                except Exception as e:  # a device that cannot describe itself is shown with its error
                    entry["devices"].append({"device": f"{name}:{i}", "error": f"{type(e).__name__}: {e}"})
        backends[name] = entry
    # A backend whose plugin broke while it was described is listed with the broken plugins instead.
    backends = {n: e for n, e in backends.items() if n in _registry._state.backends}
    extra = _registry.report_info()
    try:
        selected = ferro.backends.current_backend()
    except Exception as e:
        selected = f"(none: {e})"
    from ferro.distributed import process_group_backends
    groups = {name: {"plugin": g.plugin, "description": g.description, "available": bool(a := g.availability()),
                     "reason": a.reason} for name, g in sorted(process_group_backends().items())}
    return {"ferro": ferro.__version__, "python": sys.version.split()[0], "platform": platform.platform(),
            "selected_backend": selected, "backends": backends, "process_groups": groups,
            "broken_plugins": ferro.backends.broken(), "disabled_plugins": ferro.backends.disabled(), "extra": extra}


def _print_info(rep: dict[str, Any]) -> None:
    print(f"ferro {rep['ferro']}  (Python {rep['python']}, {rep['platform']})")
    print(f"selected backend: {rep['selected_backend']}")
    print("backends:")
    for name, b in rep["backends"].items():
        state = "available" if b["available"] else f"unavailable: {b['reason']}"
        print(f"  {name:<8} {state}   [plugin '{b['plugin']}' from {b['distribution'] or 'in-process'}]")
        for d in b["devices"]:
            details = ", ".join(f"{k}={v}" for k, v in d.items() if k not in ("device", "name", "dtypes"))
            print(f"    {d['device']}: {d.get('name', '?')}" + (f" ({details})" if details else ""))
            if "dtypes" in d:
                print(f"      dtypes: {' '.join(d['dtypes'])}")
    print("process groups (ferro.distributed):")
    for name, g in rep["process_groups"].items():
        state = "available" if g["available"] else f"unavailable: {g['reason']}"
        print(f"  {name:<8} {state}   [plugin '{g['plugin']}']")
    if rep["broken_plugins"]:
        print("broken plugins (skipped):")
        for name, err in rep["broken_plugins"].items():
            print(f"  {name}: {err}")
    if rep["disabled_plugins"]:
        print(f"disabled plugins (FERRO_DISABLE_PLUGINS): {', '.join(rep['disabled_plugins'])}")
    for k, v in rep["extra"].items():
        print(f"{k}: {v}")


def ops_matrix(backends: Sequence[str] | None = None, dtype: str | None = None) -> dict[str, dict[str, list[str]]]:
    """Op name -> backend -> supported input dtypes, from the registry and the loaded tables."""
    import ferro
    from ferro._ops import REGISTRY
    names = list(backends) if backends else ferro.backends.installed()
    caps = {}
    for n in names:
        b = ferro.backends.get(n)
        try:
            caps[n] = b.capabilities() if b.availability() else {}
        except ferro.errors.BackendUnavailableError:
            if backends:
                raise
            caps[n] = {}  # its plugin broke just now (listed by `ferro info`): left out below
    if not backends:
        names = [n for n in names if n in ferro.backends.installed()]
    out: dict[str, dict[str, list[str]]] = {}
    for op in sorted(REGISTRY):
        out[op] = {n: [d for d in caps[n].get(op, []) if dtype is None or d == dtype] for n in names}
    return out


_SHORT = {"bool": "b", "uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex64": "c64",
          "complex128": "c128"}

#: The dtype groups of the default ``ferro ops`` table: a capital letter when a backend has the op at every
#: dtype of the group, the small letter when at some of them, ``.`` when at none.
_GROUPS = (("B", ("bool",)), ("I", ("uint8", "int8", "int16", "int32", "int64")),
           ("F", ("float16", "bfloat16", "float32", "float64")), ("C", ("complex64", "complex128")))

#: How wide the default table may be.
_WIDTH = 100


def _grouped(dtypes: Sequence[str]) -> str:
    """One ``ferro ops`` cell: ``BIFC`` for every dtype, ``-`` for none, small letters for part of a group."""
    if not dtypes:
        return "-"
    have = set(dtypes)
    return "".join(letter if have.issuperset(ds) else letter.lower() if have.intersection(ds) else "."
                   for letter, ds in _GROUPS)


def _legend() -> list[str]:
    lines = ["legend: one letter per dtype group, capital = every dtype of the group, small = some, . = none,",
             "  - = no dtype at all:"]
    lines += [f"  {letter} = {' '.join(_SHORT[d] for d in ds)}  ({', '.join(ds)})" for letter, ds in _GROUPS]
    lines.append("  --wide lists each dtype; --dtype takes either name (f32 or float32)")
    return lines


def _columns(header: list[str], rows: dict[str, list[str]], width: int | None) -> None:
    """``rows`` (first column the op) aligned under ``header``; past ``width``, the backends in several tables."""
    w = max([len(op) for op in rows] + [2]) + 2
    widths = [max([len(header[i])] + [len(r[i]) for r in rows.values()]) + 2 for i in range(len(header))]
    chunks: list[list[int]] = [[]]
    for i, cw in enumerate(widths):
        if chunks[-1] and width is not None and w + sum(widths[j] for j in chunks[-1]) + cw > width:
            chunks.append([])
        chunks[-1].append(i)
    for k, chunk in enumerate(chunks):
        if k:
            print()
        print(("op".ljust(w) + "".join(header[i].ljust(widths[i]) for i in chunk)).rstrip())
        for op, row in rows.items():
            print((op.ljust(w) + "".join(row[i].ljust(widths[i]) for i in chunk)).rstrip())


def _print_ops(matrix: dict[str, dict[str, list[str]]], fmt: str) -> None:
    if fmt == "json":
        print(json.dumps(matrix, indent=2))
        return
    backends = list(next(iter(matrix.values()))) if matrix else []
    if fmt == "table":
        _columns(backends, {op: [_grouped(row[b]) for b in backends] for op, row in matrix.items()}, _WIDTH)
        for line in _legend():
            print(line)
        return
    cells = {op: {b: " ".join(_SHORT[d] for d in ds) or "-" for b, ds in row.items()} for op, row in matrix.items()}
    if fmt == "markdown":
        print("| op | " + " | ".join(backends) + " |")
        print("|---|" + "---|" * len(backends))
        for op, row in cells.items():
            print(f"| {op} | " + " | ".join(row[b] for b in backends) + " |")
        return
    _columns(backends, {op: [row[b] for b in backends] for op, row in cells.items()}, None)


def _dtype_name(name: str) -> str | None:
    """The dtype ``ferro ops --dtype`` names, by its name, an alias (``float``) or its short name (``f32``)."""
    from ferro._core.dtypes import by_name
    long = {short: full for full, short in _SHORT.items()}.get(name, name)
    return by_name[long].name if long in by_name else None


def _explain(op: str, dtype: str, backends: str | None) -> int:
    """``ferro ops --explain OP``: the resolver's answer for OP at ``dtype`` on each backend's default device."""
    import ferro
    names = backends.split(",") if backends else ferro.backends.installed()
    try:
        for name in names:
            print(ferro.backends.explain(op, dtype, name))
    except (KeyError, ValueError) as e:
        print(f"ferro ops: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    return 0


def _demo(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from ferro.demo import run
    from ferro.distributed._launch import launch, launched_by_mpi
    from ferro.errors import BackendUnavailableError
    if args.nprocs > 1 and not launched_by_mpi():  # start the job; each process runs this command again
        try:
            return launch(args.nprocs, ["-m", "ferro", *argv])
        except FileNotFoundError as e:
            print(f"ferro demo: {e}", file=sys.stderr)
            return 2
    try:
        run(args.backend, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
            checkpoint=args.checkpoint, progress=not args.no_progress and args.nprocs == 1,
            distributed=args.nprocs > 1, amp=args.amp)
    except (BackendUnavailableError, ImportError) as e:
        print(f"ferro demo: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ferro`` command: an error is one line on stderr and exit status 2, never a traceback;
    output piped into a command that stops reading (``ferro ops | head``) ends quietly."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), "")
    try:
        code = _main(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader left: send what is still buffered nowhere, so that Python's exit does not complain.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (FerroError, ValueError, ImportError, OSError) as e:  # what a user's argument or setup got wrong
        print(f"ferro{' ' + command if command else ''}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the shell's status for SIGINT, no traceback
        print(f"ferro{' ' + command if command else ''}: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str]) -> int:
    from ferro import __version__
    parser = argparse.ArgumentParser(prog="ferro", description="ferro: tensors and autograd on pluggable backends")
    parser.add_argument("--version", action="version", version=f"ferro {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="versions, plugins, backends, devices and their availability")
    p_info.add_argument("--json", action="store_true", help="print JSON")
    p_ops = sub.add_parser("ops", help="the capability matrix: op x backend x dtype")
    p_ops.add_argument("--backend", help="comma-separated backends (default: all installed)")
    p_ops.add_argument("--dtype", help="only this dtype, e.g. float64 or f64")
    p_ops.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    p_ops.add_argument("--wide", action="store_true", help="the table with every dtype of each backend spelled out "
                       "(wider than 100 columns)")
    p_ops.add_argument("--explain", metavar="OP", help="why OP runs as it does (kernel, plugin override, "
                       "decomposition, fallback) at --dtype (default float32) on each --backend")
    p_demo = sub.add_parser("demo", help="train a CNN on scikit-learn's digits on a backend, save and reload it")
    p_demo.add_argument("--backend", help="backend or device, e.g. cpu, opencl, cuda:0 (default: the selected one)")
    p_demo.add_argument("--epochs", type=int, default=12)
    p_demo.add_argument("--batch-size", type=int, default=64)
    p_demo.add_argument("--lr", type=float, default=1e-2)
    p_demo.add_argument("--seed", type=int, default=0)
    p_demo.add_argument("--checkpoint", help="where to save the trained model (default: a temporary file)")
    p_demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_demo.add_argument("--nprocs", type=int, default=1,
                        help="train data-parallel in this many processes (through mpiexec, ferro-core[mpi])")
    p_demo.add_argument("--amp", action="store_true",
                        help="train in mixed precision (bfloat16 autocast on cpu, float16 with loss scaling elsewhere)")
    p_run = sub.add_parser("run", help="run a script in N processes through the installed mpiexec")
    p_run.add_argument("-n", "--nprocs", type=int, required=True, help="how many processes")
    p_run.add_argument("--hostfile", help="the hosts file, passed through to mpiexec")
    p_run.add_argument("script", help="the Python script")
    p_run.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    from ferro.bench import add_arguments as add_bench_arguments  # NumPy-free: the harness loads when it runs
    add_bench_arguments(sub.add_parser("bench", help="time ferro's backends beside NumPy and PyTorch: a table, "
                                       "--json, --plot out.png (see benchmarks/README.md)"))
    args = parser.parse_args(argv)
    if args.command == "run":
        from ferro.distributed._launch import launch
        try:
            return launch(args.nprocs, [args.script, *args.args], args.hostfile)
        except (FileNotFoundError, ValueError) as e:
            print(f"ferro run: {e}", file=sys.stderr)
            return 2
    if args.command == "bench":
        from ferro.bench import run as run_bench
        return run_bench(args)
    if args.command == "demo":
        return _demo(args, argv)
    if args.command == "info":
        rep = info_report()
        if args.json:
            print(json.dumps(rep, indent=2))
        else:
            _print_info(rep)
        return 0
    if args.command == "ops":
        dtype = _dtype_name(args.dtype) if args.dtype else None
        if args.dtype and dtype is None:
            parser.error(f"unknown dtype {args.dtype!r}; known: {', '.join(_SHORT)} or {' '.join(_SHORT.values())}")
        if args.explain:
            return _explain(args.explain, dtype or "float32", args.backend)
        matrix = ops_matrix(args.backend.split(",") if args.backend else None, dtype)
        _print_ops(matrix, "wide" if args.wide and args.format == "table" else args.format)
        if args.format != "json":  # an empty column says why
            from ferro.backends import unavailable
            shown = next(iter(matrix.values()), {})
            for name, reason in unavailable().items():
                if name in shown:
                    line = f"{name}: unavailable ({reason}); its column is empty"
                    print(line if args.wide else textwrap.fill(line, _WIDTH, subsequent_indent="  "))
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
