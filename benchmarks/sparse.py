"""Sparse times dense beside scipy.sparse and torch.sparse (CPU), in one run: ``python benchmarks/sparse.py``.

Row ``spmm (100k x 100k CSR, 1M nnz) @ (100k, 64)``: a CSR matrix of 100,000 x 100,000 with 1,000,000 stored
float32 values at random positions, times a dense float32 (100,000, 64) matrix:

- ``scipy``: ``csr_matrix @ ndarray`` (the reference: ferro-cpu's kernel is scipy's compiled loop);
- ``torch``: ``torch.sparse.mm`` on a ``sparse_csr`` tensor (PyTorch CPU, its own threads);
- ``ferro:<backend>``: ``ferro.sparse.mm`` on a ``ferro.sparse_csr`` tensor, on each backend asked for
  (``--backend``, default every available one of cpu / opencl / cuda): the ``spmm_csr`` op's kernel.

``--small`` runs a 10k x 10k matrix with 100k non-zeros instead (a quick check). Times are the best round; the
ratios are the median over rounds of ferro's time over the reference's in the same round
(``ferro.bench.paired_ratio``); lower is better.
"""

from __future__ import annotations

import argparse
import functools
import sys
import types
from typing import Any

import numpy as np

import ferro
from ferro.bench._cases import Case, Target
from ferro.bench._harness import Contender, measure, paired_ratio


def _matrix(n: int, nnz: int) -> Any:
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    coo = sp.coo_matrix((rng.standard_normal(nnz).astype(np.float32),
                         (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    m = coo.tocsr()
    m.sum_duplicates()
    return m


def _contenders(m: Any, backends: list[str]) -> list[Contender]:
    import torch
    out = [Contender("scipy", types.SimpleNamespace(mm=lambda d, m=m: m @ d), lambda a, rg: a)]
    # every contender gets the same arrays: scipy's int32 indices
    t = torch.sparse_csr_tensor(torch.from_numpy(m.indptr), torch.from_numpy(m.indices), torch.from_numpy(m.data),
                                m.shape)
    out.append(Contender("torch", types.SimpleNamespace(mm=lambda d, t=t: torch.sparse.mm(t, d)),
                         lambda a, rg: torch.from_numpy(a.copy())))
    for name in backends:
        b = ferro.backends.get(name)
        device = f"{name}:{b.default_device_index()}"
        s = ferro.sparse_csr_tensor(m.indptr, m.indices, m.data, m.shape, device=device)
        out.append(Contender(f"ferro:{name}", types.SimpleNamespace(mm=lambda d, s=s: ferro.sparse.mm(s, d)),
                             lambda a, rg, device=device: ferro.tensor(a, device=device),
                             functools.partial(b.synchronize, b.default_device_index())))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="all", help="ferro backends, comma-separated (default: every available)")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--budget", type=float, default=0.2, help="seconds per round")
    p.add_argument("--small", action="store_true", help="10k x 10k, 100k non-zeros")
    args = p.parse_args(argv)
    backends = ferro.backends.available() if args.backend == "all" else args.backend.split(",")
    backends = [b for b in backends if b in ("cpu", "opencl", "cuda")]
    n, nnz = (10_000, 100_000) if args.small else (100_000, 1_000_000)
    m = _matrix(n, nnz)
    case = Case(f"spmm ({n // 1000}k x {n // 1000}k CSR, {m.nnz / 1e6:.2g}M nnz) @ ({n // 1000}k, 64)", ((n, 64),),
                lambda xp, d: xp.mm(d), Target("scipy", 1 / 0.9), unit="ms")
    contenders = _contenders(m, backends)
    res = measure(case, contenders, args.rounds, args.budget, 0.05)
    print("| row | contender | best round | ratio (median of paired rounds; time, lower is better) |\n"
          "|---|---|---|---|")
    for c in contenders:
        r = res[c.name]
        if r.error:
            print(f"| {case.name} | {c.name} | {r.error} | |")
            continue
        ratios = [f"{paired_ratio(case.target, r, res[ref]):.2f}x {ref}" for ref in ("scipy", "torch")
                  if c.name.startswith("ferro:") and not res[ref].error]
        print(f"| {case.name} | {c.name} | {min(r.seconds) * 1e3:.1f} ms | {', '.join(ratios)} |")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
