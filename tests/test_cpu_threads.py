"""ferro-cpu's threads (ferro_cpu/_threads.py): the blocked kernels give the same bits on 2 threads as on 1 (and
PyTorch's values), their threaded path runs, large products are split over ``get_num_threads()`` threads (BLAS
itself on one), and ``ferro.set_num_threads`` / ``get_num_threads`` behave as PyTorch's."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

torch = pytest.importorskip("torch")
threads = pytest.importorskip("ferro_cpu._threads")
TF = torch.nn.functional
RNG = np.random.default_rng(0)


pytestmark = pytest.mark.usefixtures("threads_as_asked")  # (conftest.py)


def _run(fn: Callable[..., Any], arrays: list[np.ndarray], grad: np.ndarray, n: int) -> tuple[list[np.ndarray], int]:
    """``fn`` of the arrays (as tensors that require grad) and their gradients for ``grad``, on ``n`` threads;
    with how often the block pool ran."""
    ferro.set_num_threads(n)
    before = threads.counts["blocks"]
    ts = [ferro.tensor(a, requires_grad=True) for a in arrays]
    y = fn(ferro, *ts)
    y.backward(ferro.tensor(grad))
    return [y.detach().numpy(), *(t.grad.numpy() for t in ts)], threads.counts["blocks"] - before


def _softmax(xp: Any, x: Any) -> Any:
    return (F if xp is ferro else TF).softmax(x, dim=-1)


def _log_softmax(xp: Any, x: Any) -> Any:
    return (F if xp is ferro else TF).log_softmax(x, dim=-1)


def _layer_norm(xp: Any, x: Any, w: Any, b: Any) -> Any:
    return (F if xp is ferro else TF).layer_norm(x, x.shape[-1:], w, b, 1e-5)


def _layer_norm_plain(xp: Any, x: Any) -> Any:
    return (F if xp is ferro else TF).layer_norm(x, x.shape[-1:])


def _gelu(xp: Any, x: Any) -> Any:
    return (F if xp is ferro else TF).gelu(x)


def _silu(xp: Any, x: Any) -> Any:
    return (F if xp is ferro else TF).silu(x)


def _sigmoid(xp: Any, x: Any) -> Any:
    return xp.sigmoid(x)


# (rows, cols): float32 1100x1024 is 9 blocks of 512 KiB (_rows.BLOCK_BYTES), float64 1100x1000 17, the last ones short
ROWS = [((1100, 1024), np.float32), ((1100, 1000), np.float64)]


@pytest.mark.parametrize(("shape", "dtype"), ROWS)
@pytest.mark.parametrize("fn", [_softmax, _log_softmax, _layer_norm, _layer_norm_plain, _gelu, _silu, _sigmoid])
def test_two_threads_give_the_one_thread_bits_and_torch_values(fn: Callable[..., Any], shape: tuple[int, int],
                                                               dtype: Any) -> None:
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    x[3, 5] = 60.0  # a large logit: softmax's unshifted pass redoes its row
    arrays = [x]
    if fn is _layer_norm:
        arrays += [RNG.standard_normal(shape[1]).astype(dtype), RNG.standard_normal(shape[1]).astype(dtype)]
    grad = RNG.standard_normal(shape).astype(dtype)
    one, ran_one = _run(fn, arrays, grad, 1)
    two, ran_two = _run(fn, arrays, grad, 2)
    # forward and backward on the pool at 2 threads only (sigmoid's backward is ops on its output)
    assert ran_one == 0 and ran_two >= (1 if fn is _sigmoid else 2)
    for a, b in zip(one, two):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ref = fn(torch, *ts)
    ref.backward(torch.tensor(grad))
    tol = {"rtol": 2e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-11}
    for a, r in zip(two, [ref.detach().numpy(), *(t.grad.numpy() for t in ts)]):
        np.testing.assert_allclose(a, r, **tol)


def test_layer_norm_backward_of_a_broadcast_gradient_on_two_threads() -> None:
    x = RNG.standard_normal((1100, 1024)).astype(np.float32)
    w = RNG.standard_normal(1024).astype(np.float32)
    got = []
    for n in (1, 2):
        ferro.set_num_threads(n)
        fx, fw = ferro.tensor(x, requires_grad=True), ferro.tensor(w, requires_grad=True)
        F.layer_norm(fx, (1024,), fw).sum().backward()  # the gradient reaches the kernel as a broadcast view
        got.append((fx.grad.numpy(), fw.grad.numpy()))
    assert all(np.array_equal(a, b) for a, b in zip(*got))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    TF.layer_norm(tx, (1024,), tw).sum().backward()
    np.testing.assert_allclose(got[1][1], tw.grad.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got[1][0], tx.grad.numpy(), rtol=1e-3, atol=1e-3)


def test_softmax_backward_of_a_broadcast_gradient_on_two_threads() -> None:
    x = RNG.standard_normal((1100, 1024)).astype(np.float32) * 3
    got = []
    for n in (1, 2):
        ferro.set_num_threads(n)
        fx = ferro.tensor(x, requires_grad=True)
        F.softmax(fx, dim=-1).sum().backward(ferro.tensor(0.37))  # one value broadcast: the two-pass kernel
        got.append(fx.grad.numpy())
    assert np.array_equal(*got)
    tx = torch.tensor(x, requires_grad=True)
    TF.softmax(tx, dim=-1).sum().backward(torch.tensor(0.37))
    np.testing.assert_allclose(got[1], tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_small_arrays_stay_on_the_calling_thread() -> None:
    ferro.set_num_threads(2)
    before = threads.counts["blocks"]
    F.softmax(ferro.tensor(RNG.standard_normal((64, 256)).astype(np.float32)), dim=-1)
    F.gelu(ferro.tensor(RNG.standard_normal(1000).astype(np.float32)))
    assert threads.counts["blocks"] == before


def test_workers_keep_the_callers_errstate() -> None:
    """exp overflows in the workers' blocks too: no warning there (PyTorch warns of nothing)."""
    ferro.set_num_threads(2)
    x = np.full((1100, 1024), 100.0, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = F.softmax(ferro.tensor(x), dim=-1).numpy()
    np.testing.assert_allclose(y, 1 / 1024, rtol=1e-6)


def test_an_error_in_a_worker_is_raised_in_the_caller() -> None:
    seen: list[int] = []

    def block(i: int, slot: int) -> None:
        seen.append(i)
        if i == 5:
            raise ArithmeticError("block 5")
    with pytest.raises(ArithmeticError, match="block 5"):
        threads.run(block, 8, 2)
    assert sorted(seen) == list(range(8))  # the other blocks still ran


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_starts_its_own_workers() -> None:
    ferro.set_num_threads(2)
    x = RNG.standard_normal((1100, 1024)).astype(np.float32)
    want = F.softmax(ferro.tensor(x), dim=-1).numpy()  # the parent's workers started
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the same bits on its own workers, then out without pytest's teardown
        before = threads.counts["blocks"]
        ok = np.array_equal(F.softmax(ferro.tensor(x), dim=-1).numpy(), want) and threads.counts["blocks"] > before
        alive = any(t.name == "ferro-cpu-1" and t.is_alive() for t in threading.enumerate())
        os.write(w, b"1" if ok and alive else b"0")
        os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.waitpid(pid, 0)
    assert got == b"1"


@pytest.mark.parametrize(("sa", "sb"), [((1024, 256), (256, 64)), ((32, 256), (256, 2048)),
                                       ((8, 128, 64), (8, 64, 256)), ((4, 128, 128), (128, 300))])
def test_large_products_are_split_over_the_threads(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    """Rows, columns, a stack, a stack times a matrix (one product of the rows stacked): split at 2 threads."""
    a, b = RNG.standard_normal(sa).astype(np.float32), RNG.standard_normal(sb).astype(np.float32)
    assert a.size * b.shape[-1] >= threads.SPLIT_WORK
    got = {}
    for n in (1, 2):
        ferro.set_num_threads(n)
        before = threads.counts["products"]
        got[n] = (ferro.tensor(a) @ ferro.tensor(b)).numpy()
        small = ferro.tensor(a[..., :16, :16]) @ ferro.tensor(b[..., :16, :16])
        assert threads.counts["products"] - before == (n > 1)
        np.testing.assert_allclose(small.numpy(), a[..., :16, :16] @ b[..., :16, :16], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], got[1], rtol=1e-5, atol=1e-4)  # (pieces sum in another order: not bitwise)
    np.testing.assert_allclose(got[2], (torch.tensor(a) @ torch.tensor(b)).numpy(), rtol=1e-4, atol=1e-3)
    ferro.set_num_threads(3)
    assert np.array_equal((ferro.tensor(a) @ ferro.tensor(b)).numpy(), got[2])  # the same pieces on 3 threads


def test_linear_forward_and_backward_split_over_the_threads() -> None:
    x, w, bias = (RNG.standard_normal(s).astype(np.float32) for s in ((2048, 128), (512, 128), (512,)))
    g = RNG.standard_normal((2048, 512)).astype(np.float32)
    ferro.set_num_threads(2)
    before = threads.counts["products"]
    fx, fw, fb = (ferro.tensor(v, requires_grad=True) for v in (x, w, bias))
    y = F.linear(fx, fw, fb)
    y.backward(ferro.tensor(g))
    assert threads.counts["products"] - before == 3  # y, dx, dw
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, bias))
    ref = TF.linear(tx, tw, tb)
    ref.backward(torch.tensor(g))
    for got, want in ((y.detach(), ref.detach()), (fx.grad, tx.grad), (fw.grad, tw.grad), (fb.grad, tb.grad)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-3)


def test_blas_pool_is_one_thread() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if threads._blas.get("set") is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS here")
    ferro.set_num_threads(2)
    blas = [p for p in threadpoolctl.threadpool_info() if os.path.realpath(p["filepath"]) == threads._blas["path"]]
    assert blas and all(p["num_threads"] == 1 for p in blas)
    assert ferro.get_num_threads() == 2


@pytest.mark.parametrize(("idle", "cpu", "same_thread", "usable"),
                         [(0.2, 0.0, True, 2), (0.0, 0.2, True, 2), (0.02, 0.0, True, 1), (0.1, 0.0, True, 1),
                          (0.17, 0.0, True, 2), (None, 0.0, True, 2), (0.0, 0.2, False, 1)])
def test_threads_follow_the_idle_cores(monkeypatch: pytest.MonkeyPatch, idle: float | None, cpu: float,
                                       same_thread: bool, usable: int) -> None:
    """Over the 0.2 s since the last look: ``idle`` CPU seconds idle and ``cpu`` run by the process's other
    threads (None: the machine does not tell); a second thread where that makes about one core. A look taken
    by another thread tells nothing of this thread's own time: the last count stands."""
    monkeypatch.setattr(threads, "follow_load", True)
    me = float(threading.get_ident()) if same_thread else -2.0
    monkeypatch.setattr(threads, "_look", {"at": time.monotonic() - 0.2, "idle": 10.0, "thread": me, "others": 1.0,
                                           "free": 0.0})
    monkeypatch.setattr(threads, "_others_seconds", lambda: 1.0 + cpu)
    monkeypatch.setattr(threads, "_idle_seconds", lambda: None if idle is None else 10.0 + idle)
    assert threads._usable(2) == usable
    assert threads._usable(1) == 1


def test_other_threads_of_the_process_count_as_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread of this process that kept a core busy before the op (another library's pool, as PyTorch's in
    ``ferro bench``) leaves that core to ferro's workers: the real clocks, with the machine's idle time held."""
    monkeypatch.setattr(threads, "follow_load", True)
    monkeypatch.setattr(threads, "_idle_seconds", lambda: 10.0)  # no core idle, as far as /proc/stat tells
    monkeypatch.setattr(threads, "_look", {"at": -1.0, "idle": 0.0, "thread": -1.0, "others": 0.0, "free": 0.0})
    assert threads._usable(2) == 1  # the first look only sets the base
    base = threads._look["others"]

    def spin() -> None:  # a core's worth of CPU time for 2 looks' length, by this thread's own clock
        start = time.thread_time()
        while time.thread_time() - start < 2 * threads.LOOK:
            pass
    busy = threading.Thread(target=spin)
    busy.start()
    busy.join()
    # the look's wall interval as long as the CPU time the thread had (on a loaded machine it had less than
    # the wall time it took, which is the other processes' share, not this test's)
    threads._look["at"] = time.monotonic() - (threads._others_seconds() - base)
    assert threads._usable(2) == 2
    assert threads._look["free"] == pytest.approx(1.0, abs=0.2)


def test_set_and_get_num_threads() -> None:
    ferro.set_num_threads(3)
    assert ferro.get_num_threads() == 3
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(ValueError, match="set_num_threads"):
            ferro.set_num_threads(bad)  # type: ignore[arg-type]
    assert ferro.get_num_threads() == 3  # a refused call changes nothing


@pytest.mark.parametrize(("env", "expected"), [({"OMP_NUM_THREADS": "1"}, "1"), ({}, None)])
def test_default_is_omp_num_threads_else_the_cpus_given(env: dict[str, str], expected: str | None) -> None:
    base = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    code = "import os, ferro, torch; print(ferro.get_num_threads(), torch.get_num_threads(), " \
           "len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count())"
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, check=True, capture_output=True,
                         text=True).stdout.split()
    if expected is not None:
        assert out[0] == out[1] == expected  # as PyTorch's
    else:
        assert out[0] == out[2]
