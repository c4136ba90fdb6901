"""Conformance of the sparse layouts on every backend: sparse tensors made on the device, coalesced and
converted (all in dense ops), their products on the backend's CSR kernels (``spmm_csr`` / ``spmv_csr``) with
gradients, against NumPy; a backend without the kernels must refuse them cleanly, naming the layout.

Run on one backend with ``pytest --pyargs ferro.testing.conformance --ferro-backend=NAME -k sparse``.
"""

from __future__ import annotations

import numpy as np
import pytest

import ferro
from ferro.errors import UnsupportedLayoutError, UnsupportedOperationError
from ferro.testing import assert_close

# a 4 x 3 pattern with a duplicate entry (2, 1) and an empty row (1)
IDX = [[0, 2, 3, 2, 0], [1, 1, 0, 1, 2]]
VAL = [1.5, -2.0, 0.5, 4.0, 3.0]
#: the same matrix in CSR form (coalesced)
CROW, COL, CVAL = [0, 2, 2, 3, 4], [1, 2, 1, 0], [1.5, 3.0, 2.0, 0.5]
#: the dense ops the sparse layouts are written in (coalescing, conversions, the products' gradients)
DENSE_OPS = ("unique", "index_add", "searchsorted", "index_select", "argsort", "amax", "amin", "mul", "add")


def _dense() -> np.ndarray:
    a = np.zeros((4, 3), dtype=np.float32)
    np.add.at(a, tuple(IDX), np.float32(VAL))
    return a


def _require(backend: ferro.backends.Backend, device: ferro.device, *ops: str) -> None:
    missing = [op for op in ops if not backend.supports(op, ferro.float32, device.index)]
    if missing:
        pytest.skip(f"backend '{backend.name}' does not claim {', '.join(missing)} for float32 on {device}")


def test_sparse_tensors_convert_and_coalesce(backend: ferro.backends.Backend, device: ferro.device) -> None:
    _require(backend, device, *DENSE_OPS)
    s = ferro.sparse_coo_tensor(IDX, VAL, (4, 3), device=device)
    assert s.device == device and s.layout is ferro.sparse_coo
    assert_close(s.to_dense(), _dense(), rtol=1e-6, atol=1e-6)
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 4
    assert c.indices().to("cpu").numpy().tolist() == [[0, 0, 2, 3], [1, 2, 1, 0]]
    r = s.to_sparse_csr()
    assert r.crow_indices().to("cpu").numpy().tolist() == [0, 2, 2, 3, 4]
    assert_close(r.to_dense(), _dense(), rtol=1e-6, atol=1e-6)
    back = ferro.tensor(_dense(), dtype=ferro.float32, device=device).to_sparse()
    assert back.indices().to("cpu").numpy().tolist() == [[0, 0, 2, 3], [1, 2, 1, 0]]


def test_sparse_indices_are_checked_and_ops_without_rules_refused(device: ferro.device) -> None:
    with pytest.raises(IndexError, match="index 3 in dimension 1"):
        ferro.sparse_coo_tensor([[0], [3]], [1.0], (4, 3), device=device)
    s = ferro.sparse_coo_tensor(IDX, VAL, (4, 3), device=device)
    with pytest.raises(UnsupportedLayoutError, match=r"exp\(\).*sparse_coo"):
        ferro.exp(s)


@pytest.mark.parametrize("vector", [False, True], ids=["spmm", "spmv"])
def test_sparse_products_and_gradients(backend: ferro.backends.Backend, device: ferro.device,
                                       vector: bool) -> None:
    op = "spmv_csr" if vector else "spmm_csr"
    v = ferro.tensor(VAL, device=device, requires_grad=True)
    x = np.random.default_rng(0).standard_normal((3,) if vector else (3, 2)).astype(np.float32)
    d = ferro.tensor(x, device=device, requires_grad=True)
    if not backend.supports(op, ferro.float32, device.index):  # it must say so, naming the layout
        s = ferro.sparse_csr_tensor(CROW, COL, CVAL, (4, 3), device=device, check_invariants=False)
        with pytest.raises(UnsupportedOperationError, match=rf"{op}.*sparse_csr"):
            ferro.sparse.mm(s, d)
        return
    _require(backend, device, *DENSE_OPS)
    s = ferro.sparse_coo_tensor(IDX, v, (4, 3))
    y = ferro.sparse.mm(s, d)
    assert_close(y, _dense() @ x, rtol=1e-5, atol=1e-5)
    w = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
    (y * ferro.tensor(w, device=device)).sum().backward()
    w2 = w.reshape(4, -1)
    assert_close(d.grad, (_dense().T @ w2).reshape(x.shape), rtol=1e-5, atol=1e-5)
    rows, cols = IDX
    want = np.array([(w2[r] * x.reshape(3, -1)[c]).sum() for r, c in zip(rows, cols)], dtype=np.float32)
    assert_close(v.grad, want, rtol=1e-5, atol=1e-5)
