"""Conformance under faults, for every backend: failed writes, threads, overlapping writes, host conversion.

Run on one backend with ``pytest --pyargs ferro.testing.conformance --ferro-backend=NAME -k faults``.

- A write that fails (an index out of range, an integer division by zero, values of the wrong shape) leaves
  its input as it was, whenever the error is reported: a device backend may raise at the next
  synchronization, but must not have written part of the result by then.
- Several threads launching ops on one device get the results one thread gets.
- In-place writes into a tensor whose elements share memory (an ``expand``) are refused, as in PyTorch.
- ``numpy.asarray`` of a tensor off the CPU raises ``TypeError`` (no silent copy to the host).
- Running out of memory names the op.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.errors import UnsupportedOperationError


def _settle(backend: ferro.backends.Backend, device: ferro.device) -> None:
    """Wait for the device; errors flagged by its kernels are raised here."""
    backend.synchronize(device.index)


def _fails_and_keeps(backend: ferro.backends.Backend, device: ferro.device, x: ferro.Tensor,
                     write: Callable[[], Any], errors: tuple[type[BaseException], ...]) -> None:
    """``write()`` raises one of ``errors`` (at the call or at the next synchronization) and ``x`` keeps its
    values."""
    before = x.numpy().copy()
    try:
        with pytest.raises(errors):
            write()
            _settle(backend, device)
    except UnsupportedOperationError as e:
        pytest.skip(f"backend '{backend.name}' does not run this op: {e}")
    _settle(backend, device)  # nothing left pending
    np.testing.assert_array_equal(x.numpy(), before, err_msg="a failed op changed its input")


def _t(values: Any, device: ferro.device, dtype: ferro.DType | None = None) -> ferro.Tensor:
    return ferro.tensor(values, dtype=dtype, device=device)


#: in-place index writes with an index out of range (5 in a dimension of 4): name -> write(x, device)
_BAD_INDEX_WRITES: dict[str, Callable[[ferro.Tensor, ferro.device], Any]] = {
    "setitem_scalar": lambda x, d: x.__setitem__(_t([1, 5], d), 7.0),
    "setitem_tensor": lambda x, d: x.__setitem__(_t([0, 5], d), _t([7.0, 8.0], d)),
    "setitem_negative": lambda x, d: x.__setitem__(_t([-5, 2], d), 7.0),
    "setitem_2d": lambda x, d: x.view(2, 2).__setitem__((_t([0, 1], d), _t([1, 2], d)), 7.0),
    "index_add_": lambda x, d: x.index_add_(0, _t([0, 5], d), _t([1.0, 1.0], d)),
    "index_copy_": lambda x, d: x.index_copy_(0, _t([0, 5], d), _t([1.0, 1.0], d)),
    "index_fill_": lambda x, d: x.index_fill_(0, _t([0, 5], d), 9.0),
    "scatter_": lambda x, d: x.scatter_(0, _t([0, 5], d), _t([1.0, 1.0], d)),
    "scatter_add_": lambda x, d: x.scatter_add_(0, _t([0, 5], d), _t([1.0, 1.0], d)),
    "scatter_reduce_": lambda x, d: x.scatter_reduce_(0, _t([0, 5], d), _t([1.0, 1.0], d), "amax"),
    "index_put_accumulate": lambda x, d: x.__setitem__(slice(None), ferro.index_put(
        x, (_t([0, 5], d),), _t([1.0, 1.0], d), accumulate=True)),
}


@pytest.mark.parametrize("name", sorted(_BAD_INDEX_WRITES))
def test_faults_bad_index_write_leaves_input(backend: ferro.backends.Backend, device: ferro.device,
                                             name: str) -> None:
    x = ferro.arange(4.0, device=device)
    _fails_and_keeps(backend, device, x, lambda: _BAD_INDEX_WRITES[name](x, device), (IndexError, RuntimeError))


@pytest.mark.parametrize("how", ["floordiv_number", "floordiv_tensor", "remainder_number", "remainder_tensor"])
def test_faults_integer_division_by_zero_in_place_leaves_input(backend: ferro.backends.Backend,
                                                               device: ferro.device, how: str) -> None:
    if ferro.int32 not in backend.dtypes(device.index):
        pytest.skip(f"{device} has no int32")
    x = _t([5, 6, 7], device, ferro.int32)
    op = "__ifloordiv__" if how.startswith("floordiv") else "__imod__"
    divisor: Any = 0 if how.endswith("number") else _t([1, 0, 2], device, ferro.int32)
    _fails_and_keeps(backend, device, x, lambda: getattr(x, op)(divisor), (ZeroDivisionError,))


def test_faults_wrong_shape_write_leaves_input(backend: ferro.backends.Backend, device: ferro.device) -> None:
    x = ferro.zeros(2, 3, device=device)
    _fails_and_keeps(backend, device, x, lambda: x.__setitem__(0, ferro.arange(5.0, device=device)), (ValueError,))
    _fails_and_keeps(backend, device, x, lambda: x[0].copy_(ferro.ones(4, device=device)), (ValueError,
                                                                                              RuntimeError))
    _fails_and_keeps(backend, device, x, lambda: x.add_(ferro.ones(3, 3, device=device)), (ValueError,
                                                                                             RuntimeError))


# -- writes into overlapping memory ------------------------------------------------------------------------

_OVERLAP_WRITES: dict[str, Callable[[ferro.Tensor, ferro.device], Any]] = {
    "add_": lambda y, d: y.add_(1.0),
    "mul_": lambda y, d: y.mul_(_t(2.0, d)),
    "fill_": lambda y, d: y.fill_(3.0),
    "zero_": lambda y, d: y.zero_(),
    "copy_": lambda y, d: y.copy_(ferro.ones(2, 3, device=d)),
    "setitem": lambda y, d: y.__setitem__((0, 1), 5.0),
    "setitem_slice": lambda y, d: y.__setitem__(slice(None), 5.0),
}


@pytest.mark.parametrize("name", sorted(_OVERLAP_WRITES))
def test_faults_write_through_expand_refused(backend: ferro.backends.Backend, device: ferro.device,
                                             name: str) -> None:
    base = ferro.arange(3.0, device=device)
    y = base.expand(2, 3)
    with pytest.raises((RuntimeError, ValueError)):
        _OVERLAP_WRITES[name](y, device)
        _settle(backend, device)
    np.testing.assert_array_equal(base.numpy(), [0.0, 1.0, 2.0])


def test_faults_write_into_one_row_of_expand_is_allowed(device: ferro.device) -> None:
    """A view of an expanded tensor whose own elements do not overlap may be written (as in PyTorch)."""
    base = ferro.zeros(2, 3, device=device)
    base[:, :1].expand(2, 3)  # an overlapping view exists; base itself stays writable
    base.add_(1.0)
    np.testing.assert_array_equal(base.numpy(), np.ones((2, 3), np.float32))


# -- threads ----------------------------------------------------------------------------------------------


def _chain(device: ferro.device, seed: int, steps: int) -> list[np.ndarray]:
    """Ops of every kind on shapes that differ by ``seed``: elementwise with tensors and numbers, matmul,
    reductions, indexing reads and writes, in-place updates."""
    rng = np.random.default_rng(seed)
    n = 3 + seed
    a = ferro.tensor(rng.standard_normal((n, n + 1)).astype(np.float32), device=device)
    b = ferro.tensor(rng.standard_normal((n + 1, n)).astype(np.float32), device=device)
    idx = ferro.tensor(rng.integers(0, n, 2 * n), device=device)
    out = []
    for _ in range(steps):
        c = (a @ b) * 0.5 + 1.0
        c = ferro.exp(-c.abs()) - c.sum(1, keepdim=True) / n
        c[idx % n] = c[idx % n] * 2.0
        a.add_(0.01)
        out.append(c.numpy())
    out.append(a.numpy())
    return out


def test_faults_threads_launch_like_one(backend: ferro.backends.Backend, device: ferro.device) -> None:
    threads, steps = 4, 25
    serial = [_chain(device, s, steps) for s in range(threads)]
    got: dict[int, Any] = {}

    def run(s: int) -> None:
        try:
            got[s] = _chain(device, s, steps)
        except BaseException as e:  # reported below, in the test's thread
            got[s] = e

    workers = [threading.Thread(target=run, args=(s,)) for s in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    _settle(backend, device)
    for s in range(threads):
        if isinstance(got[s], BaseException):
            raise got[s]
        for i, (mine, ref) in enumerate(zip(got[s], serial[s])):
            np.testing.assert_array_equal(mine, ref, err_msg=f"thread {s}, step {i}: differs from the serial run")


# -- host conversion and memory ----------------------------------------------------------------------------


def test_faults_numpy_asarray_of_device_tensor(device: ferro.device) -> None:
    x = ferro.arange(3.0, device=device)
    if device.type == "cpu":
        np.testing.assert_array_equal(np.asarray(x), [0.0, 1.0, 2.0])
        return
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        np.asarray(x)
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        np.exp(x)  # a NumPy function would have returned a host array for a device tensor
    np.testing.assert_array_equal(x.numpy(), [0.0, 1.0, 2.0])  # the explicit copies still work
    np.testing.assert_array_equal(np.asarray(x.cpu()), [0.0, 1.0, 2.0])


def test_faults_out_of_memory_names_the_op(device: ferro.device) -> None:
    with pytest.raises(MemoryError, match=r"^empty: out of memory"):
        ferro.empty(10**13, device=device)
