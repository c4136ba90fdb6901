"""ferro.distributed beside raw mpi4py and PyTorch DDP, in one run: ``python benchmarks/distributed.py``.

The driver starts MPI jobs (``mpiexec -n N``, one thread per process:
``OMP_NUM_THREADS=1``, ``torch.set_num_threads(1)``) and prints one table:

- ``all_reduce`` of 1 KB .. 64 MB float32 in 2 processes: ferro's
  ``dist.all_reduce`` on a CPU tensor (the NumPy buffer goes to MPI as it is)
  against ``comm.Allreduce(IN_PLACE, array)`` of mpi4py on the same NumPy
  array. Bus bandwidth = 2 (n - 1) / n x bytes / time (NCCL-tests' convention);
  target: ferro >= 0.9x raw at 1 MB and above.
- a DDP training step of the digits CNN (``ferro.demo.make_cnn``, 32 images per
  process, SGD), 2 processes: ferro's ``DistributedDataParallel`` over MPI
  against PyTorch's over ``gloo``, same initial weights and batches; target:
  ferro / torch step time <= 1.0.
- scaling efficiency of ferro's DDP step (throughput of N processes over N x
  one process's, fixed 32 images per process) for N = 1, 2.

Each contender runs ``loops`` calls per round; rounds alternate between the
contenders, and a round's time is the slowest rank's. Ratios are
``ferro.bench.paired_ratio``'s: the median over rounds of the ratio within a
round. On the 2-core development machines the numbers move with the other
tenants; read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ferro.bench._cases import Target
from ferro.bench._harness import Result, paired_ratio
from ferro.distributed._launch import mpiexec_command

SIZES = [2**10, 2**14, 2**18, 2**20, 2**22, 2**24, 2**26]  # bytes of float32
ALLREDUCE = Target("mpi4py", 0.9, throughput=True)
DDP_STEP = Target("torch gloo", 1.0)
STAGING = Target("cpu", float("inf"))  # no bound: what host staging costs an OpenCL tensor
STAGING_BYTES = 2**22


# -- worker side (inside mpiexec) -------------------------------------------------------------


def _timed(fn: Callable[[], Any], loops: int, comm: Any) -> float:
    """Seconds per call of ``fn`` on the slowest rank (a barrier first)."""
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(loops):
        fn()
    mine = (time.perf_counter() - t0) / loops
    return comm.allreduce(mine, op=_mpi().MAX)


def _mpi() -> Any:
    from mpi4py import MPI
    return MPI


def _rounds(contenders: dict[str, Callable[[], Any]], rounds: int, budget: float, comm: Any) -> dict[str, Result]:
    """Warm up, calibrate ``loops`` on the first contender (same for all: a pair compares like with like),
    then time round by round, alternating the order."""
    for fn in contenders.values():
        fn()
    first = next(iter(contenders.values()))
    per = _timed(first, 1, comm)
    loops = comm.bcast(max(1, min(200, int(budget / max(per, 1e-7)))), root=0)
    results = {name: Result(loops=loops) for name in contenders}
    names = list(contenders)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            results[name].seconds.append(_timed(contenders[name], loops, comm))
    return results


def _allreduce_job(rounds: int, budget: float) -> dict[str, Any]:
    import ferro
    import ferro.distributed as dist
    comm, MPI = _mpi().COMM_WORLD, _mpi()
    out: dict[str, Any] = {}
    for nbytes in SIZES:
        n = nbytes // 4
        arr = np.ones(n, np.float32)
        t = ferro.ones(n)
        res = _rounds({"ferro": lambda t=t: dist.all_reduce(t),
                       "mpi4py": lambda arr=arr: comm.Allreduce(MPI.IN_PLACE, arr, MPI.SUM)}, rounds, budget, comm)
        out[str(nbytes)] = {k: v.seconds for k, v in res.items()}
    out["opencl"] = _staging(rounds, budget, comm)
    return out


def _staging(rounds: int, budget: float, comm: Any) -> dict[str, Any]:
    """4 MB all_reduce of an OpenCL tensor (host staging) against a CPU one (no copy)."""
    import ferro
    import ferro.distributed as dist
    n = STAGING_BYTES // 4
    try:
        ocl = ferro.ones(n, device="opencl")
        dist.all_reduce(ocl)
    except Exception as e:  # no OpenCL device here, or its kernels do not build: a note, not a crash
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
    cpu = ferro.ones(n)
    res = _rounds({"opencl": lambda: dist.all_reduce(ocl), "cpu": lambda: dist.all_reduce(cpu)}, rounds, budget,
                  comm)
    return {k: v.seconds for k, v in res.items()}


def _cnn_step(lib: Any, model: Any, opt: Any, x: Any, y: Any) -> Callable[[], None]:
    def step() -> None:
        loss = lib.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def _ddp_job(rounds: int, budget: float, with_torch: bool) -> dict[str, Any]:
    import ferro
    import ferro.distributed as dist
    from ferro.demo import load_digits, make_cnn
    from ferro.nn.parallel import DistributedDataParallel
    comm = _mpi().COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    per = 32
    x, y, _, _ = load_digits("cpu")
    xb, yb = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
    ferro.manual_seed(0)
    model = make_cnn()
    contenders = {}
    if size > 1:
        ddp = DistributedDataParallel(model)
        contenders["ferro"] = _cnn_step(ferro, ddp, ferro.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9), xb, yb)
    else:
        contenders["ferro"] = _cnn_step(ferro, model, ferro.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                        xb, yb)
    if with_torch:
        import torch
        import torch.distributed as tdist
        torch.set_num_threads(1)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(comm.bcast(29500 + os.getpid() % 1000, root=0)))
        tdist.init_process_group("gloo", rank=rank, world_size=size)
        tmodel = make_cnn(torch.nn)
        tmodel.load_state_dict({k: torch.from_numpy(np.asarray(v.numpy()).copy())
                                for k, v in model.state_dict().items()})
        tddp = torch.nn.parallel.DistributedDataParallel(tmodel)
        txb, tyb = torch.from_numpy(xb.numpy()), torch.from_numpy(yb.numpy())
        contenders["torch gloo"] = _cnn_step(torch, tddp, torch.optim.SGD(tddp.parameters(), lr=0.01, momentum=0.9),
                                             txb, tyb)
    res = _rounds(contenders, rounds, budget, comm)
    if with_torch:
        tdist.destroy_process_group()
    del dist
    return {k: v.seconds for k, v in res.items()}


def worker(job: str, rounds: int, budget: float) -> None:
    import ferro.distributed as dist
    dist.init_process_group("mpi", timeout=600)
    if job == "allreduce":
        out = _allreduce_job(rounds, budget)
    else:
        out = _ddp_job(rounds, budget, with_torch=job == "ddp-torch")
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


# -- driver side --------------------------------------------------------------------------------


def _run_job(n: int, job: str, rounds: int, budget: float) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONWARNINGS": "ignore"}
    cmd = mpiexec_command(n, [str(Path(__file__).resolve()), "--worker", job, "--rounds", str(rounds),
                              "--budget", str(budget)])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{job} with {n} processes failed:\n{proc.stderr[-3000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def _res(seconds: list[float]) -> Result:
    return Result(seconds=seconds)


def _human(nbytes: int) -> str:
    return f"{nbytes // 2**20} MB" if nbytes >= 2**20 else f"{nbytes // 2**10} KB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--budget", type=float, default=0.2, help="seconds per contender per round (about)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker, args.rounds, args.budget)
        return 0
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    report: dict[str, Any] = {"allreduce": [], "ddp": {}, "scaling": {}}
    print("  all_reduce, 2 processes ...", file=sys.stderr, flush=True)
    ar = _run_job(2, "allreduce", args.rounds, args.budget)
    rows = [["all_reduce float32", "ferro", "mpi4py", "ferro bus GB/s", "mpi4py bus GB/s", "ratio (paired)",
             "target", "check"]]
    for nbytes in SIZES:
        ours, ref = _res(ar[str(nbytes)]["ferro"]), _res(ar[str(nbytes)]["mpi4py"])
        ratio = paired_ratio(ALLREDUCE, ours, ref)
        bus = 2 * (2 - 1) / 2 * nbytes / 1e9
        targeted = nbytes >= 2**20
        entry = {"bytes": nbytes, "ferro_s": ours.stat("median"), "mpi4py_s": ref.stat("median"), "ratio": ratio,
                 "pass": ALLREDUCE.met(ratio) if targeted else None}
        report["allreduce"].append(entry)
        rows.append([_human(nbytes), f"{entry['ferro_s'] * 1e6:.1f} us", f"{entry['mpi4py_s'] * 1e6:.1f} us",
                     f"{bus / entry['ferro_s']:.2f}", f"{bus / entry['mpi4py_s']:.2f}", f"{ratio:.2f}x",
                     ALLREDUCE.describe() if targeted else "-",
                     ("PASS" if entry["pass"] else "FAIL") if targeted else ""])
    staged = ar["opencl"]
    if "error" in staged:
        report["opencl_staging"] = {"error": staged["error"]}
    else:
        report["opencl_staging"] = {"ratio": paired_ratio(STAGING, _res(staged["opencl"]), _res(staged["cpu"])),
                                    "opencl_s": _res(staged["opencl"]).stat("median"),
                                    "cpu_s": _res(staged["cpu"]).stat("median")}
    print("  DDP step of the digits CNN, 2 processes ...", file=sys.stderr, flush=True)
    ddp = _run_job(2, "ddp-torch" if have_torch else "ddp", args.rounds, args.budget)
    if have_torch:
        ours, ref = _res(ddp["ferro"]), _res(ddp["torch gloo"])
        ratio = paired_ratio(DDP_STEP, ours, ref)
        report["ddp"] = {"ferro_s": ours.stat("median"), "torch_s": ref.stat("median"), "ratio": ratio,
                         "pass": DDP_STEP.met(ratio)}
    print("  scaling, 1 process ...", file=sys.stderr, flush=True)
    one = _run_job(1, "ddp", args.rounds, args.budget)["ferro"]
    t1, t2 = _res(one).stat("median"), _res(ddp["ferro"]).stat("median")
    report["scaling"] = {"1": {"step_s": t1, "efficiency": 1.0}, "2": {"step_s": t2, "efficiency": t1 / t2}}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print(f"times: median of {args.rounds} rounds (a round's time is its slowest rank's); ratios: median of the "
          "rounds' ratios (ferro and the reference in the same round)")
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    st = report["opencl_staging"]
    print(f"all_reduce {_human(STAGING_BYTES)} of an OpenCL tensor (through host memory) / a CPU tensor (no copy): "
          + (f"{st['ratio']:.2f}x time ({st['opencl_s'] * 1e3:.2f} ms vs {st['cpu_s'] * 1e3:.2f} ms)"
             if "ratio" in st else f"not measured: {st['error']}"))
    if have_torch:
        d = report["ddp"]
        print(f"DDP step, digits CNN, 32 images/process, 2 processes: ferro (mpi) {d['ferro_s'] * 1e3:.2f} ms, "
              f"torch (gloo) {d['torch_s'] * 1e3:.2f} ms, ratio {d['ratio']:.2f}x ({DDP_STEP.describe()}: "
              f"{'PASS' if d['pass'] else 'FAIL'})")
    else:
        print("DDP step: PyTorch is not installed, its column is left out (pip install torch==2.13.0)")
    for n, s in report["scaling"].items():
        print(f"scaling, {n} process(es): ferro DDP step {s['step_s'] * 1e3:.2f} ms, throughput "
              f"{int(n) * 32 / s['step_s']:.0f} images/s, efficiency {s['efficiency']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
