"""Jobs that tests/test_distributed.py runs under ``mpiexec -n N python tests/distributed_jobs.py JOB [ARGS]``.

Each rank checks its own results against NumPy (every rank can compute every
rank's inputs) and raises on the first mismatch: the abort hook then ends the
job with that rank's traceback. A rank that finishes prints ``OK <job> rank R``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import numpy as np

import ferro
import ferro.distributed as dist
from ferro._core.host import numpy_dtype

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]
OPS = {"SUM": lambda a: a.sum(0), "PRODUCT": lambda a: a.prod(0), "MIN": lambda a: a.min(0),
       "MAX": lambda a: a.max(0), "AVG": lambda a: a.sum(0) / len(a)}


def _values(rank: int, dtype: str, n: int = 5) -> np.ndarray:
    """Rank ``rank``'s input: small numbers, so sums and products are exact in every dtype."""
    base = (np.arange(n) % 3 + rank + 1).astype(np.float64)
    if dtype == "bool":
        return (np.arange(n) + rank) % 2 == 0
    if dtype.startswith("complex"):
        return (base + 1j * (rank - np.arange(n) % 2)).astype(dtype)
    return base.astype(numpy_dtype(ferro.__dict__[dtype]))


def _tensor(a: np.ndarray, dtype: str, device: str) -> ferro.Tensor:
    return ferro.tensor(a.astype(numpy_dtype(ferro.__dict__[dtype])), device=device)


def _same(got: ferro.Tensor, want: np.ndarray, what: str) -> None:
    g = np.asarray(got.to("cpu").numpy()).astype(np.complex128 if np.iscomplexobj(want) else np.float64)
    w = np.asarray(want).astype(g.dtype)
    if g.shape != w.shape or not np.allclose(g, w, rtol=1e-2 if "16" in what else 1e-6):
        raise AssertionError(f"{what}: got {g.tolist()}, NumPy says {w.tolist()}")


def _ops_for(dtype: str) -> list[str]:
    if dtype == "bool":
        return ["SUM", "PRODUCT", "MIN", "MAX"]
    if dtype.startswith("complex"):
        return ["SUM", "PRODUCT", "AVG"]
    if dtype.startswith(("float", "bfloat")):
        return list(OPS)
    return ["SUM", "PRODUCT", "MIN", "MAX"]


def _reference(op: str, stacked: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bool":  # PyTorch: SUM and MAX are OR, PRODUCT and MIN are AND
        return stacked.any(0) if op in ("SUM", "MAX") else stacked.all(0)
    return OPS[op](stacked.astype(np.complex128 if dtype.startswith("complex") else np.float64))


def collectives(device: str) -> None:
    """Every collective, every dtype, against NumPy."""
    r, n = dist.get_rank(), dist.get_world_size()
    here = ferro.backends.get(device).dtypes(0)  # an OpenCL device may lack float16 or float64
    for dtype in (d for d in DTYPES if ferro.__dict__[d] in here):
        everyone = np.stack([_values(i, dtype) for i in range(n)])
        mine = everyone[r]
        tag = f"{dtype} on {device}"
        for op in _ops_for(dtype):
            t = _tensor(mine, dtype, device)
            v0 = t._version
            dist.all_reduce(t, getattr(dist.ReduceOp, op))
            _same(t, _reference(op, everyone, dtype), f"all_reduce {op} {tag}")
            assert t._version > v0, "all_reduce bumps the version counter"
            t = _tensor(mine, dtype, device)
            work = dist.reduce(t, dst=n - 1, op=getattr(dist.ReduceOp, op), async_op=True)
            work.wait()
            _same(t, _reference(op, everyone, dtype) if r == n - 1 else mine, f"reduce {op} {tag}")
        t = _tensor(mine, dtype, device)
        dist.broadcast(t, src=1)
        _same(t, everyone[1], f"broadcast {tag}")
        outs = [_tensor(np.zeros_like(mine), dtype, device) for _ in range(n)]
        dist.all_gather(outs, _tensor(mine, dtype, device))
        for i in range(n):
            _same(outs[i], everyone[i], f"all_gather[{i}] {tag}")
        big = _tensor(np.zeros((n, *mine.shape), mine.dtype), dtype, device)
        dist.all_gather_into_tensor(big, _tensor(mine, dtype, device))
        _same(big, everyone, f"all_gather_into_tensor {tag}")
        gl = [_tensor(np.zeros_like(mine), dtype, device) for _ in range(n)] if r == 0 else None
        dist.gather(_tensor(mine, dtype, device), gl, dst=0)
        if r == 0:
            for i in range(n):
                _same(gl[i], everyone[i], f"gather[{i}] {tag}")
        out = _tensor(np.zeros_like(mine), dtype, device)
        parts = [_tensor(_values(10 + i, dtype), dtype, device) for i in range(n)] if r == 0 else None
        dist.scatter(out, parts, src=0)
        _same(out, _values(10 + r, dtype), f"scatter {tag}")
        if dtype != "bool":
            full = np.stack([np.concatenate([_values(i + j, dtype) for j in range(n)]) for i in range(n)])
            out = _tensor(np.zeros_like(mine), dtype, device)
            dist.reduce_scatter_tensor(out, _tensor(full[r], dtype, device))
            want = full.astype(np.complex128 if dtype.startswith("complex") else np.float64).sum(0)
            _same(out, want[r * mine.size:(r + 1) * mine.size], f"reduce_scatter_tensor {tag}")
        got = _tensor(np.zeros_like(mine), dtype, device)  # a ring of send / recv
        if r % 2 == 0:
            dist.send(_tensor(mine, dtype, device), (r + 1) % n)
            dist.recv(got, (r - 1) % n)
        else:
            dist.recv(got, (r - 1) % n)
            dist.send(_tensor(mine, dtype, device), (r + 1) % n)
        _same(got, everyone[(r - 1) % n], f"send/recv {tag}")
    _views_and_autograd(device)
    _objects_and_groups()
    _large_messages(device)
    sampler()


def _views_and_autograd(device: str) -> None:
    """In-place results land in the user's tensor: through a strided view into its base, with the
    version counter bumped; a leaf that requires grad is refused as ``copy_`` refuses it."""
    r, n = dist.get_rank(), dist.get_world_size()
    base = ferro.zeros(4, 3, device=device)
    col = base[:, 1]  # a strided view: staged, then copied back through the view
    col.copy_(ferro.full((4,), float(r + 1), device=device))
    v0 = base._version
    dist.all_reduce(col)
    want = np.zeros((4, 3), np.float32)
    want[:, 1] = n * (n + 1) / 2
    _same(base, want, f"all_reduce into a view on {device}")
    assert base._version > v0
    w = ferro.ones(3, device=device, requires_grad=True)
    try:
        dist.all_reduce(w)
    except RuntimeError as e:
        assert "leaf" in str(e), e
    else:
        raise AssertionError("all_reduce on a leaf that requires grad must be refused outside no_grad")
    with ferro.no_grad():
        dist.all_reduce(w)
    _same(w.detach(), np.full(3, n, np.float32), f"all_reduce of a parameter under no_grad on {device}")
    wide = ferro.ones(2, device=device).expand(3, 2)  # its elements share memory: refused before anything moves
    try:
        dist.all_reduce(wide)
    except RuntimeError as e:  # ferro's one rule for in-place writes, in PyTorch's words
        assert "single memory location" in str(e), e
    else:
        raise AssertionError("all_reduce into an expanded view must be refused")
    x = ferro.ones(3, device=device, requires_grad=True)
    y = x * 2  # a non-leaf: the collective's result is a constant for autograd, as PyTorch's
    dist.all_reduce(y)
    assert y.grad_fn is None and not y.requires_grad


def _large_messages(device: str) -> None:
    """Collectives of 1 MB and more run as blocking calls on the group's communication thread, small
    ones as non-blocking requests: mixed and in flight together, they keep the same order on every rank."""
    r, n = dist.get_rank(), dist.get_world_size()
    big = ferro.full((1 << 20,), float(r + 1), device=device)  # 4 MB
    work = dist.all_reduce(big, async_op=True)
    small = ferro.full((10,), float(r), device=device)
    dist.all_reduce(small)
    work.wait()
    _same(big[:3], np.full(3, n * (n + 1) / 2), f"a large async all_reduce on {device}")
    _same(small, np.full(10, n * (n - 1) / 2), f"a small all_reduce while a large one was in flight on {device}")
    outs = [ferro.zeros(1 << 18, device=device) for _ in range(n)]
    dist.all_gather(outs, ferro.full((1 << 18,), float(r), device=device))
    for i, o in enumerate(outs):
        _same(o[-2:], np.full(2, i), f"large all_gather[{i}] on {device}")
    out = ferro.zeros(1 << 18, device=device)
    dist.reduce_scatter_tensor(out, ferro.ones(n << 18, device=device), op=dist.ReduceOp.AVG)
    _same(out[:2], np.ones(2), f"large reduce_scatter_tensor AVG on {device}")
    b = ferro.full((1 << 18,), float(r), device=device)
    dist.broadcast(b, src=n - 1)
    dist.reduce(b, dst=0)
    _same(b[:2], np.full(2, n * (n - 1) if r == 0 else n - 1), f"large broadcast then reduce on {device}")


def _objects_and_groups() -> None:
    r, n = dist.get_rank(), dist.get_world_size()
    objs: list[Any] = [None] * n
    dist.all_gather_object(objs, {"rank": r, "text": "x" * r})
    assert objs == [{"rank": i, "text": "x" * i} for i in range(n)], objs
    into = [None] * n if r == n - 1 else None
    dist.gather_object(("g", r), into, dst=n - 1)
    assert r != n - 1 or into == [("g", i) for i in range(n)], into
    box = [r, "from", None] if r == 1 else [None, None, None]
    dist.broadcast_object_list(box, src=1)
    assert box == [1, "from", None], box
    sub = dist.new_group([0, n - 1])
    t = ferro.tensor([float(r)])
    if r in (0, n - 1):
        dist.all_reduce(t, group=sub)
        assert t.item() == n - 1, t
        assert dist.get_world_size(sub) == 2
    else:
        assert sub is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.all_reduce(t, group=sub) is None and t.item() == r
    works = [dist.all_reduce(ferro.full((1000,), float(i)), async_op=True) for i in range(3)]
    for w in works:
        w.wait()
    assert all(w.is_completed() for w in works)
    dist.barrier()
    dist.monitored_barrier(timeout=30)


def _digits(n_steps: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits
    d = load_digits()
    return (d.data[:n_steps * batch] / 16.0), d.target[:n_steps * batch]


def ddp(steps: str = "20") -> None:
    """DDP on the digits MLP in float64 equals one process on the concatenated batches; no_sync
    accumulates; every optimizer kind (fused Adam too) steps the same everywhere."""
    n_steps, r, n = int(steps), dist.get_rank(), dist.get_world_size()
    per = 6  # images per rank per step
    x_all, y_all = _digits(n_steps, per * n)
    from ferro.demo import make_mlp
    from ferro.nn.parallel import DistributedDataParallel as DDP
    for opt_name, kwargs in (("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 1e-3, "fused": True})):
        ferro.manual_seed(100 + r)  # different initial weights per rank: DDP must broadcast rank 0's
        model = make_mlp(hidden=32).double()
        ferro.manual_seed(100)
        single = make_mlp(hidden=32).double()  # rank 0's initial weights, trained on all the data
        ddp_model = DDP(model, bucket_cap_mb=0.001)  # several buckets
        assert len(ddp_model._buckets) > 1
        launched: list[int] = []  # buckets already started when backward's end callback runs
        finish = ddp_model._finish
        object.__setattr__(ddp_model, "_finish", lambda finish=finish: (launched.append(ddp_model._next), finish()))
        opt = getattr(ferro.optim, opt_name)(ddp_model.parameters(), **kwargs)
        opt1 = getattr(ferro.optim, opt_name)(single.parameters(), **kwargs)
        for step in range(n_steps):
            lo = step * per * n
            xb = ferro.tensor(x_all[lo:lo + per * n], dtype=ferro.float64)
            yb = ferro.tensor(y_all[lo:lo + per * n])
            mine = slice(r * per, (r + 1) * per)
            loss = ferro.nn.functional.cross_entropy(ddp_model(xb[mine]), yb[mine])
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss1 = ferro.nn.functional.cross_entropy(single(xb), yb)
            opt1.zero_grad()
            loss1.backward()
            opt1.step()
        assert launched == [len(ddp_model._buckets)] * n_steps, "every bucket starts from the hooks, during backward"
        for (name, p), q in zip(ddp_model.module.named_parameters(), single.parameters()):
            diff = float(np.abs(p.detach().numpy() - q.detach().numpy()).max())
            assert diff < 1e-6, f"{opt_name}: {name} differs from one process by {diff}"
        state = ddp_model.module.state_dict()
        assert set(state) == set(single.state_dict()), "module.module.state_dict() has the plain model's keys"
    _no_sync(x_all, y_all, per)
    _unused_parameters()


def _no_sync(x_all: np.ndarray, y_all: np.ndarray, per: int) -> None:
    """Two micro-batches under no_sync plus one synchronized: the gradient of all three, averaged."""
    from ferro.demo import make_mlp
    from ferro.nn.parallel import DistributedDataParallel as DDP
    r, n = dist.get_rank(), dist.get_world_size()
    ferro.manual_seed(7)
    model = DDP(make_mlp(hidden=16).double())
    ferro.manual_seed(7)
    single = make_mlp(hidden=16).double()
    chunks = []
    for k in range(3):
        lo = k * per * n
        chunks.append((ferro.tensor(x_all[lo:lo + per * n], dtype=ferro.float64), ferro.tensor(y_all[lo:lo + per * n])))
    mine = slice(r * per, (r + 1) * per)
    with model.no_sync():
        for xb, yb in chunks[:2]:
            ferro.nn.functional.cross_entropy(model(xb[mine]), yb[mine]).backward()
    local = [p.grad.numpy().copy() for p in model.parameters()]
    ferro.nn.functional.cross_entropy(model(chunks[2][0][mine]), chunks[2][1][mine]).backward()
    for xb, yb in chunks:
        ferro.nn.functional.cross_entropy(single(xb), yb).backward()
    for p, q, before in zip(model.parameters(), single.parameters(), local):
        assert np.abs(p.grad.numpy() - q.grad.numpy()).max() < 1e-9, "no_sync accumulation then one average"
    others = [None] * n
    dist.all_gather_object(others, local[0])
    assert n == 1 or not np.allclose(others[0], others[1]), "inside no_sync the gradients stay local"


def _unused_parameters() -> None:
    from ferro.nn.parallel import DistributedDataParallel as DDP

    class TwoHeads(ferro.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = ferro.nn.Linear(3, 2), ferro.nn.Linear(3, 2)

        def forward(self, x: ferro.Tensor) -> ferro.Tensor:
            return self.a(x) if dist.get_rank() == 0 else self.b(x)  # rank 0 leaves b out, the others a

    model = DDP(TwoHeads(), find_unused_parameters=True)
    model(ferro.ones(1, 3)).sum().backward()
    n = dist.get_world_size()
    _same(model.module.a.bias.grad, np.full(2, 1.0 / n), "a used on rank 0 only: its gradient averaged")
    _same(model.module.b.bias.grad, np.full(2, (n - 1) / n), "b used on the other ranks")
    strict = DDP(TwoHeads())
    try:
        strict(ferro.ones(1, 3)).sum().backward()
    except RuntimeError as e:
        assert "find_unused_parameters=True" in str(e), e
    else:
        raise AssertionError("an unused parameter without find_unused_parameters must be reported")


def sampler() -> None:
    """Each rank's DistributedSampler shard, printed for the test to compare with PyTorch's."""
    r, n = dist.get_rank(), dist.get_world_size()
    out = {}
    for size, drop_last, shuffle, epoch in ((23, False, True, 0), (23, True, True, 3), (10, False, False, 0),
                                            (2, False, True, 1)):
        s = ferro.data.DistributedSampler(range(size), shuffle=shuffle, seed=5, drop_last=drop_last)
        s.set_epoch(epoch)
        out[f"{size},{drop_last},{shuffle},{epoch}"] = list(s)
    _say(f"SHARDS {r} {n} {json.dumps(out)}")


def fail(mode: str) -> None:
    """One rank fails; the job must end, with a clear error, well within the test's guard."""
    r = dist.get_rank()
    if mode == "raise":
        if r == 1:
            raise ValueError("rank 1 fails on purpose")
        dist.barrier()  # the others would wait here forever without the abort
    elif mode == "timeout":
        if r == 1:
            time.sleep(60)  # never arrives in time
        dist.all_reduce(ferro.ones(3))
    elif mode == "timeout-large":  # 4 MB: a blocking call in the caller's thread, ended by the watchdog
        if r == 1:
            time.sleep(60)
        dist.all_reduce(ferro.ones(1 << 20))
    elif mode == "mismatch":
        dist.all_reduce(ferro.ones(3 + r))  # FERRO_DISTRIBUTED_DEBUG=DETAIL catches it
    elif mode == "uninitialized":
        dist.destroy_process_group()
        dist.all_reduce(ferro.ones(1))


def _say(line: str) -> None:
    """One line in one write: mpiexec merges the ranks' output, and print() writes the newline apart."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    job, *args = sys.argv[1:]
    timeout = float(os.environ.get("FERRO_TEST_TIMEOUT", "60"))
    dist.init_process_group("mpi", timeout=timeout)
    globals()[job](*args)
    if dist.is_initialized():
        dist.destroy_process_group()
    _say(f"OK {job} rank {os.environ.get('PMI_RANK', '?')}")


if __name__ == "__main__":
    main()
