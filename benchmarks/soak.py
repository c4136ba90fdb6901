"""Memory over a long training run, per backend: ``python benchmarks/soak.py [--steps 10000]``.

Each available backend trains the same small MLP (64-128-10, SGD with momentum, cross-entropy) on a fixed
random batch for ``--steps`` steps in a fresh interpreter of its own, so that one backend's memory does not
count against another's. The process's resident set size (RSS, from /proc, else the peak from
``getrusage``) is sampled every ``--every`` steps after a warm-up (the first 5% of the steps, at least 50:
caches, pools and compiled programs fill up there). Reported per backend: RSS after the warm-up, at the end,
the growth between them, the growth per 1,000 steps by a least-squares line through the samples, and
the backend's own memory statistics at the end. A leak shows as a steady slope; a pool that settles shows
as a flat line. This is a benchmark, not a test: it asserts nothing, and its figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any


def rss_bytes() -> int:
    """The resident set size of this process now (Linux), else its peak."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def soak(backend: str, steps: int, every: int) -> dict[str, Any]:
    """Train on ``backend`` for ``steps`` steps; RSS samples after the warm-up."""
    import numpy as np

    import ferro
    from ferro import nn
    b = ferro.backends.get(backend)
    dev = ferro.device(backend, b.default_device_index())
    ferro.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
    opt = ferro.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = ferro.tensor(rng.standard_normal((64, 64)).astype(np.float32), device=dev)
    y = ferro.tensor(rng.integers(0, 10, 64), device=dev)
    warm = min(steps, max(50, steps // 20))
    samples: list[tuple[int, int]] = []
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if (step >= warm and (step - warm) % every == 0) or step == steps:
            loss.item()  # wait for the device: what is queued holds memory too
            samples.append((step, rss_bytes()))
    seconds = time.perf_counter() - t0
    stats = {k: v for k, v in b.memory_stats(dev.index).items() if isinstance(v, int)}
    return {"backend": backend, "device": str(dev), "steps": steps, "seconds": seconds, "samples": samples,
            "loss": float(loss.item()), "memory_stats": stats}


def slope_per_1000(samples: list[tuple[int, int]]) -> float:
    """Bytes per 1,000 steps of the least-squares line through (step, RSS)."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mx = sum(s for s, _ in samples) / n
    my = sum(r for _, r in samples) / n
    var = sum((s - mx) ** 2 for s, _ in samples)
    return 1000 * sum((s - mx) * (r - my) for s, r in samples) / var if var else 0.0


def _child(backend: str, steps: int, every: int) -> dict[str, Any]:
    """Run :func:`soak` in a fresh interpreter."""
    code = (f"import json, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import soak; print(json.dumps(soak.soak({backend!r}, {steps}, {every})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        return {"backend": backend, "error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--every", type=int, default=100, help="steps between RSS samples")
    p.add_argument("--backends", default="", help="comma-separated (default: every available backend)")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    import ferro
    names = [n for n in args.backends.split(",") if n] or ferro.backends.available()
    results = []
    for name in names:
        print(f"  soaking {name} for {args.steps} steps ...", file=sys.stderr, flush=True)
        results.append(_child(name, args.steps, args.every))
    mib = 2 ** 20
    print(f"RSS over {args.steps} training steps (MLP 64-128-10, batch 64), after a warm-up of "
          f"{min(args.steps, max(50, args.steps // 20))} steps; one fresh process per backend")
    header = ["backend", "RSS after warm-up", "RSS at end", "growth", "slope per 1k steps", "steps/s", "pool"]
    rows = [header]
    for r in results:
        if "error" in r:
            rows.append([r["backend"], f"error: {r['error']}", "", "", "", "", ""])
            continue
        first, last = r["samples"][0][1], r["samples"][-1][1]
        pool = r["memory_stats"]
        rows.append([r["device"], f"{first / mib:.1f} MiB", f"{last / mib:.1f} MiB",
                     f"{(last - first) / mib:+.2f} MiB", f"{slope_per_1000(r['samples']) / mib:+.3f} MiB",
                     f"{r['steps'] / r['seconds']:.0f}",
                     ", ".join(f"{k}={v}" for k, v in pool.items() if k.endswith("bytes")) or "-"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
