"""The OpenCL backend under faults: deferred errors without partial writes, and launches from threads.

Device kernels cannot raise: an index out of range or an integer division by zero sets the device's error
flag, raised at the next synchronization. Scatters and commits (the copy_ ending every in-place op) write
nothing while the flag is set. Compared with PyTorch, which raises at the call and writes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import ferro


@pytest.fixture
def dev(ocl: Any) -> str:
    return "opencl"


def _sync() -> None:
    ferro.backends.get("opencl").synchronize(0)


def test_failed_write_then_valid_write_matches_torch(dev: str) -> None:
    a = ferro.arange(4.0, device=dev)
    t = torch.arange(4.0)
    a[ferro.tensor([1, 9], device=dev)] = 7.0  # queued; the error comes at the synchronization
    with pytest.raises(IndexError, match="out of range"):
        _sync()
    with pytest.raises(IndexError):
        t[torch.tensor([1, 9])] = 7.0
    a[ferro.tensor([1, 3], device=dev)] = 5.0  # the flag was cleared when it was reported
    t[torch.tensor([1, 3])] = 5.0
    np.testing.assert_array_equal(a.numpy(), t.numpy())


def test_writes_queued_behind_a_pending_error_are_skipped_until_it_is_reported(dev: str) -> None:
    x = ferro.tensor([5, 6, 7], dtype=ferro.int32, device=dev)
    y = ferro.ones(3, device=dev)
    x //= 0  # flags the error; x keeps its values
    y.add_(1.0)  # an unrelated in-place op queued before the synchronization: not committed either
    with pytest.raises(ZeroDivisionError):
        _sync()
    np.testing.assert_array_equal(x.numpy(), [5, 6, 7])
    np.testing.assert_array_equal(y.numpy(), [1.0, 1.0, 1.0])
    y.add_(1.0)
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("op", ["index_add_", "index_copy_", "scatter_", "scatter_add_"])
def test_index_ops_with_a_bad_index_keep_their_input_2d(dev: str, op: str) -> None:
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = ferro.tensor(base, device=dev)
    src = ferro.ones(2, 4, device=dev)
    index = ferro.tensor([[0, 1, 2, 3], [1, 1, 1, 7]], device=dev) if op.startswith("scatter") else \
        ferro.tensor([0, 7], device=dev)
    with pytest.raises(IndexError):
        getattr(x, op)(0 if op.startswith("index") else 1, index, src)
        _sync()
    np.testing.assert_array_equal(x.numpy(), base)
    tx = torch.tensor(base)
    with pytest.raises((IndexError, RuntimeError)):  # PyTorch refuses the same call
        getattr(tx, op)(0 if op.startswith("index") else 1, torch.tensor(index.numpy()), torch.ones(2, 4))


def test_row_write_of_the_wrong_length_is_refused_like_torch(dev: str) -> None:
    a = ferro.zeros(2, 3, device=dev)
    with pytest.raises(ValueError, match=r"\[5\]"):
        a[0] = ferro.arange(5.0, device=dev)
    with pytest.raises(RuntimeError):
        torch.zeros(2, 3)[0] = torch.arange(5.0)
    np.testing.assert_array_equal(a.numpy(), np.zeros((2, 3), np.float32))
    a[0] = ferro.arange(3.0, device=dev)  # a broadcastable value still writes
    a[1] = ferro.tensor([4.0], device=dev)
    np.testing.assert_array_equal(a.numpy(), [[0, 1, 2], [4, 4, 4]])


def test_out_of_memory_names_op_size_and_device(dev: str) -> None:
    with pytest.raises(MemoryError, match=r"^empty: out of memory .* \[10000000000000\] .* opencl:0.*bytes"):
        ferro.empty(10**13, device=dev)
    # the op the user called comes first
    with pytest.raises(MemoryError, match=r"^ones: (full: )?out of memory .* \[1000000000000, 10\]"):
        ferro.ones(10**12, 10, device=dev)


def test_bad_expand_fails_at_the_call(dev: str) -> None:
    with pytest.raises(ValueError, match="expand: the size -5"):
        ferro.zeros(1, 3, device=dev).expand(-5, 3)
    with pytest.raises(RuntimeError):
        torch.zeros(1, 3).expand(-5, 3)


def test_kernels_from_the_runtime_launch_under_its_lock(dev: str) -> None:
    """Kernels handed out by the runtime set their arguments and enqueue under its launch lock (the fast
    elementwise path clones its kernels per thread instead; tests/test_threads.py checks the results)."""
    from ferro_opencl._runtime import LockedKernel
    rt = ferro.backends.get("opencl").runtime(0)
    x = ferro.ones(5, 3, device=dev)
    (x.t() + 1).numpy()  # a strided launch through a kernel of the runtime
    kernels = [k for v in rt.kernels.values() for k in (v if isinstance(v, tuple) else (v,))]
    assert kernels and all(isinstance(k, LockedKernel) for k in kernels)
    assert all(k.lock is rt.launch_lock for k in kernels)


def test_host_libraries_refuse_device_tensors_instead_of_copying(dev: str) -> None:
    """SciPy and NumPy functions used to take an OpenCL tensor through __array__ and return host arrays."""
    import scipy.special
    t = ferro.tensor([0.0, 1.0], device=dev)
    with pytest.raises(TypeError, match="opencl:0"):
        scipy.special.expit(t)
    with pytest.raises(TypeError):
        np.asarray(t)
    np.testing.assert_allclose(scipy.special.expit(t.numpy()), torch.sigmoid(torch.tensor([0.0, 1.0])).numpy())
    assert (t + np.ones(2)).device == t.device  # NumPy operands still join the tensor on its device


_LATE = {
    "index_select": (lambda m, x, i: m.index_select(x, 1, i), [4]),
    "take": (lambda m, x, i: m.take(x, i), [12]),
    "gather": (lambda m, x, i: m.gather(x, 0, i), [[3, 0]]),
    "scatter": (lambda m, x, i: m.scatter(x, 0, i, m.ones(1, 2, dtype=x.dtype, device=x.device)), [[3, 0]]),
    "index_add": (lambda m, x, i: m.index_add(x, 1, i, m.ones(3, 1, dtype=x.dtype, device=x.device)), [4]),
    "embedding": (lambda m, x, i: m.nn.functional.embedding(i, x), [0, -1]),
}


@pytest.mark.parametrize("op", list(_LATE))
def test_late_index_errors_name_the_users_op_and_argument(dev: str, op: str) -> None:
    """Reported at the synchronization, the IndexError names the op the user called and its 'index' argument
    (not an inner getitem), where PyTorch raises at the call."""
    call, bad = _LATE[op]
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises((IndexError, RuntimeError)):
        call(torch, torch.tensor(x), torch.tensor(bad))
    fx = ferro.tensor(x, device=dev)
    with pytest.raises(IndexError, match=rf"^{op}: argument 'index' .*out of range"):
        call(ferro, fx, ferro.tensor(bad, device=dev))
        _sync()
    np.testing.assert_array_equal(fx.numpy(), x)
    out = ferro.index_select(fx, 0, ferro.tensor([2, 0], device=dev))  # the label went with its report
    np.testing.assert_array_equal(out.numpy(), torch.index_select(torch.tensor(x), 0, torch.tensor([2, 0])))
    _sync()


def test_late_index_error_names_every_indexing_op_queued_since_the_last_synchronization(dev: str) -> None:
    """The device's flag does not say which kernel set it: the message names each op that may have."""
    x = ferro.arange(12.0, device=dev).reshape(3, 4)
    ferro.index_select(x, 0, ferro.tensor([1], device=dev))
    ferro.take(x, ferro.tensor([99], device=dev))
    with pytest.raises(IndexError, match=r"^index_select: argument 'index' .* or take: argument 'index'"):
        _sync()
