"""A fused elementwise chain beside eager ferro, NumPy and a hand-written kernel: `python benchmarks/compile_chain.py`.

The chain: ten elementwise ops over two float32 inputs of 10M elements (``--n``),
``exp(-(relu((x * 1.5 + y - 0.25) ** 2) + x) * 0.5) + 1`` written op by op (mul, add, sub,
mul, relu, add, mul, neg, exp, add). Rows, per backend (``--backend``: cpu, opencl):

- ``fused``: the chain as one ``ferro.backends.fusion.FusedGroup`` lowered on the device
  (``lower``: the backend's ``compile_fused`` hook; cpu runs it block by block in cache, opencl as
  one generated kernel), called on the tensors' native arrays;
- ``eager``: the same ten ops on ferro tensors, one kernel each;
- ``numpy out=``: the ten NumPy ufuncs writing into one preallocated buffer (the best NumPy does
  op by op), on the host;
- ``raw kernel`` (opencl): the chain written by hand as one OpenCL C kernel, one memory pass,
  launched with pyopencl on ferro's own context and queue into a preallocated buffer;
- ``numexpr (1 thread)``, ``numba loop`` (cpu, ``--candidates``, where importable): the chain by the
  alternatives to ferro-cpu's blocked NumPy run.

A second table fuses a reduction at a chain's end: ``sum(exp(x * 0.5 - 1), dim=1)`` over 1000 x 10000
(softmax's denominator), the group with a ``Reduce`` (cpu reduces each block as it computes it, opencl in
the chain's kernel) against the same three ops eager.

Ratios are throughput ratios of ``fused`` over each other row, the median over rounds of the pair's
times in the same round (``ferro.bench.paired_ratio``). Targets: opencl fused >= 0.8x the raw
kernel, cpu fused faster than NumPy with ``out=``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import types
from typing import Any

import numpy as np

import ferro
from ferro.backends.fusion import Const, FusedGroup, Input, Reduce, Ref, Step, lower
from ferro.bench._cases import Case, Target
from ferro.bench._harness import Contender, measure, paired_ratio

F = ferro.float32
#: (op, second operand: a Python number, "x" (input 0), or None for a unary op), applied to the running value
CHAIN = (("mul", 1.5), ("add", "y"), ("sub", 0.25), ("mul", "self"), ("relu", None), ("add", "x"),
         ("mul", 0.5), ("neg", None), ("exp", None), ("add", 1.0))


def chain_group(n: int) -> FusedGroup:
    """The chain as a fused group over inputs x (value 0) and y (value 1)."""
    steps = []
    for k, (op, other) in enumerate(CHAIN):
        cur = Ref(0) if k == 0 else Ref(1 + k)
        if other is None:
            steps.append(Step(op, (cur,), F))
        else:
            rhs = {"x": Ref(0), "y": Ref(1), "self": cur}.get(other) if isinstance(other, str) else Const(other)
            steps.append(Step(op, (cur, rhs), F))
    return FusedGroup((Input((n,), F), Input((n,), F)), (n,), tuple(steps), (1 + len(CHAIN),))


def eager(x: Any, y: Any) -> Any:
    """The chain op by op on ferro tensors."""
    t = x * 1.5
    t = t + y
    t = t - 0.25
    t = t * t
    t = t.relu()
    t = t + x
    t = t * 0.5
    t = -t
    t = t.exp()
    return t + 1.0


def numpy_out(buf: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The chain with NumPy ufuncs writing into ``buf``."""
    np.multiply(x, np.float32(1.5), out=buf)
    np.add(buf, y, out=buf)
    np.subtract(buf, np.float32(0.25), out=buf)
    np.multiply(buf, buf, out=buf)
    np.maximum(buf, np.float32(0), out=buf)
    np.add(buf, x, out=buf)
    np.multiply(buf, np.float32(0.5), out=buf)
    np.negative(buf, out=buf)
    np.exp(buf, out=buf)
    return np.add(buf, np.float32(1), out=buf)


RAW_CL = """
__kernel void chain(__global float *out, __global const float *x, __global const float *y, const long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float a = x[i];
    float t = a * 1.5f + y[i] - 0.25f;
    t = t * t;
    t = t > 0.0f ? t : 0.0f;
    out[i] = exp(-((t + a) * 0.5f)) + 1.0f;
}
"""


def _raw_kernel(rt: Any, n: int) -> Any:
    """A callable launching :data:`RAW_CL` on ferro's OpenCL runtime ``rt`` into a preallocated buffer."""
    prog = rt.cl.Program(rt.context, RAW_CL).build()
    k = rt.cl.Kernel(prog, "chain")
    k.set_scalar_arg_dtypes([None, None, None, np.int64])
    out = rt.cl.Buffer(rt.context, rt.cl.mem_flags.READ_WRITE, size=4 * n)

    def run(x: Any, y: Any) -> Any:
        k(rt.queue, rt.grid(n), None, out, x.buffer, y.buffer, n)
        return out
    return run


NUMEXPR = "exp(-((where((x * 1.5 + y - 0.25) ** 2 > 0, (x * 1.5 + y - 0.25) ** 2, 0) + x) * 0.5)) + 1"


def candidates(n: int) -> list[Contender]:
    """The chain by numexpr (one thread, as ferro's NumPy runs) and by a numba loop, where they are importable:
    the alternatives ferro-cpu's blocked run was measured against (neither is a dependency)."""
    rows = []
    try:
        import numexpr
    except ImportError:
        pass
    else:
        numexpr.set_num_threads(1)
        out = np.empty(n, np.float32)
        rows.append(Contender("numexpr (1 thread)", types.SimpleNamespace(
            run=lambda x, y: numexpr.evaluate(NUMEXPR, local_dict={"x": x, "y": y}, out=out)),
            lambda a, rg: a.copy()))
    try:
        import numba
    except ImportError:
        pass
    else:
        @numba.njit
        def chain(x: Any, y: Any, out: Any) -> Any:
            for i in range(x.shape[0]):
                a = x[i]
                t = a * np.float32(1.5) + y[i] - np.float32(0.25)
                t = t * t
                t = t if (t > 0 or t != t) else np.float32(0)
                out[i] = np.exp(-((t + a) * np.float32(0.5))) + np.float32(1)
            return out
        buf = np.empty(n, np.float32)
        rows.append(Contender("numba loop", types.SimpleNamespace(run=lambda x, y: chain(x, y, buf)),
                              lambda a, rg: a.copy()))
    return rows


def contenders(backend: str, n: int, extra: bool = False) -> list[Contender]:
    """The rows of one backend."""
    b = ferro.backends.get(backend)
    index = b.default_device_index()
    device = f"{backend}:{index}"
    sync = functools.partial(b.synchronize, index)
    fused = lower(chain_group(n), device)
    tensor = functools.partial(ferro.tensor, device=device)
    rows = [
        Contender("fused", types.SimpleNamespace(run=lambda x, y: fused(x._data, y._data)),
                  lambda a, rg: tensor(a), sync),
        Contender("eager", types.SimpleNamespace(run=eager), lambda a, rg: tensor(a), sync),
        Contender("numpy out=", types.SimpleNamespace(
            run=functools.partial(numpy_out, np.empty(n, np.float32))), lambda a, rg: a.copy()),
    ]
    if backend == "cpu" and extra:
        rows += candidates(n)
    if backend == "opencl":
        raw = _raw_kernel(b.runtime(index), n)
        rows.append(Contender("raw kernel", types.SimpleNamespace(run=lambda x, y: raw(x._data, y._data)),
                              lambda a, rg: tensor(a), sync))
    return rows


ROWS = (1000, 10000)


def row_sum_group() -> FusedGroup:
    """``sum(exp(x * 0.5 - 1), dim=1)`` as a group ending with a reduction."""
    steps = (Step("mul", (Ref(0), Const(0.5)), F), Step("sub", (Ref(1), Const(1.0)), F), Step("exp", (Ref(2),), F))
    return FusedGroup((Input(ROWS, F),), ROWS, steps, (), (Reduce("sum", 3, (1,), False, F),))


def row_sum_contenders(backend: str) -> list[Contender]:
    """Fused and eager rows of the reduction table."""
    b = ferro.backends.get(backend)
    index = b.default_device_index()
    device = f"{backend}:{index}"
    sync = functools.partial(b.synchronize, index)
    fused = lower(row_sum_group(), device)
    tensor = functools.partial(ferro.tensor, device=device)
    return [Contender("fused", types.SimpleNamespace(run=lambda x: fused(x._data)), lambda a, rg: tensor(a), sync),
            Contender("eager", types.SimpleNamespace(run=lambda x: (x * 0.5 - 1.0).exp().sum(1)),
                      lambda a, rg: tensor(a), sync)]


def check(backend: str, n: int) -> float:
    """The largest relative difference between the fused chain and eager ferro (a sanity check of the rows)."""
    rng = np.random.default_rng(1)
    x, y = (ferro.tensor(rng.standard_normal(n, dtype=np.float32), device=backend) for _ in range(2))
    got = ferro.backends.get(backend).to_numpy(lower(chain_group(n), backend)(x._data, y._data)[0])
    want = eager(x, y).cpu().numpy()
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-6)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="cpu,opencl", help="ferro backends, comma-separated (cpu, opencl)")
    p.add_argument("--n", type=int, default=10_000_000, help="elements per input")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--budget", type=float, default=0.3, help="seconds per round")
    p.add_argument("--candidates", action="store_true", help="cpu: numexpr and numba rows too, where importable")
    args = p.parse_args(argv)
    targets = {"cpu": ("numpy out=", 1.0), "opencl": ("raw kernel", 0.8)}
    print(f"10-op float32 chain, {args.n} elements\n")
    print("| backend | row | best round | fused's throughput ratio (median of paired rounds) |\n|---|---|---|---|")
    for backend in args.backend.split(","):
        rows = contenders(backend, args.n, args.candidates)
        case = Case("chain", ((args.n,), (args.n,)), lambda xp, x, y: xp.run(x, y), Target("fused", 1.0, True))
        res = measure(case, rows, args.rounds, args.budget, 0.05)
        fused = res["fused"]
        for c in rows:
            r = res[c.name]
            if r.error:
                print(f"| {backend} | {c.name} | {r.error} | |")
                continue
            ratio = "" if c.name == "fused" else f"{paired_ratio(case.target, fused, r):.2f}x"
            print(f"| {backend} | {c.name} | {min(r.seconds) * 1e3:.1f} ms | {ratio} |")
        ref, bound = targets.get(backend, ("", 0.0))
        if ref in res and not res[ref].error and not fused.error:
            ratio = paired_ratio(case.target, fused, res[ref])
            print(f"| {backend} | target: fused >= {bound:g}x {ref} | | {ratio:.2f}x "
                  f"{'PASS' if ratio >= bound else 'FAIL'} |")
        print(f"| {backend} | fused vs eager, largest relative difference | | {check(backend, 1 << 16):.1e} |")
        sys.stdout.flush()
    print(f"\nsum(exp(x * 0.5 - 1), dim=1) over {ROWS[0]} x {ROWS[1]} float32\n")
    print("| backend | row | best round | fused's throughput ratio (median of paired rounds) |\n|---|---|---|---|")
    for backend in args.backend.split(","):
        rows = row_sum_contenders(backend)
        case = Case("row sum", (ROWS,), lambda xp, x: xp.run(x), Target("fused", 1.0, True))
        res = measure(case, rows, args.rounds, args.budget, 0.05)
        for c in rows:
            r = res[c.name]
            ratio = "" if c.name == "fused" or r.error else f"{paired_ratio(case.target, res['fused'], r):.2f}x"
            print(f"| {backend} | {c.name} | {r.error or f'{min(r.seconds) * 1e3:.1f} ms'} | {ratio} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
