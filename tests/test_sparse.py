"""Sparse tensors (``ferro.sparse``) against PyTorch's: construction, conversion, coalescing, spmm / spmv with
their gradients (to the values and to the dense operand), sum, softmax, scaling, transposition, the errors, and
``nn.Embedding(sparse=True)`` trained by SGD and SparseAdam to PyTorch's parameters. On cpu and opencl."""

from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest
import torch

import ferro
from ferro._core import layouts, modes
from ferro.errors import UnsupportedLayoutError, UnsupportedOperationError

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module", autouse=True)
def _layer_off_afterwards():
    """Every sparse tensor made here is gone after the module (a failed ``pytest.raises`` keeps frames, and
    them, in reference cycles until a collection): the layout layer is off again for the tests that follow."""
    yield
    gc.collect()
    assert layouts.live() == 0 and modes.ARMED[0] == 0
# a 5 x 4 pattern with a duplicate (1, 2) and an empty row (3)
IDX = [[0, 1, 4, 1, 2, 4, 1], [1, 2, 0, 3, 2, 3, 2]]
VAL = [1.5, -2.0, 0.5, 3.0, -1.0, 2.5, 4.0]


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().to("cpu").numpy()


def _pair(dev, requires_grad=False, coalesced=False):
    s = ferro.sparse_coo_tensor(IDX, VAL, (5, 4), device=dev, requires_grad=requires_grad)
    t = torch.sparse_coo_tensor(IDX, VAL, (5, 4), requires_grad=requires_grad)
    if coalesced:
        s, t = s.coalesce(), t.coalesce()
        if requires_grad:
            s = s.detach().requires_grad_()
            t = t.detach().requires_grad_()
    return s, t


def test_construction_and_attributes(dev):
    s, t = _pair(dev)
    assert s.layout is ferro.sparse_coo and s.is_sparse and not s.is_sparse_csr
    assert tuple(s.shape) == tuple(t.shape) and s.dtype == ferro.float32 and s._nnz() == t._nnz() == 7
    assert (s.sparse_dim(), s.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    assert not s.is_coalesced() and ferro.ones(2).layout is ferro.strided
    np.testing.assert_array_equal(_np(s.to_dense()), _np(t.to_dense()))
    inferred = ferro.sparse_coo_tensor(IDX, VAL, device=dev)
    assert tuple(inferred.shape) == tuple(torch.sparse_coo_tensor(IDX, VAL).shape)
    hybrid = ferro.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], (3, 2), device=dev)
    np.testing.assert_array_equal(_np(hybrid.to_dense()),
                                  _np(torch.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], (3, 2)).to_dense()))
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()


def test_coalesce_sums_duplicates(dev):
    s, t = _pair(dev)
    c, tc = s.coalesce(), t.coalesce()
    assert c.is_coalesced() and c._nnz() == tc._nnz() == 6
    np.testing.assert_array_equal(_np(c.indices()), _np(tc.indices()))
    np.testing.assert_allclose(_np(c.values()), _np(tc.values()))


def test_conversions(dev):
    x = np.array([[0, 1.5, 0, 0], [2.0, 0, 0, -1.0], [0, 0, 0, 0]], dtype=np.float32)
    s, t = ferro.tensor(x, device=dev).to_sparse(), torch.tensor(x).to_sparse()
    np.testing.assert_array_equal(_np(s.indices()), _np(t.indices()))
    np.testing.assert_array_equal(_np(s.values()), _np(t.values()))
    c, tc = ferro.tensor(x, device=dev).to_sparse_csr(), torch.tensor(x).to_sparse_csr()
    assert c.layout is ferro.sparse_csr and c.is_sparse_csr and not c.is_sparse
    for got, want in ((c.crow_indices(), tc.crow_indices()), (c.col_indices(), tc.col_indices()),
                      (c.values(), tc.values()), (c.to_dense(), tc.to_dense())):
        np.testing.assert_array_equal(_np(got), _np(want))
    back = c.to_sparse()
    np.testing.assert_array_equal(_np(back.indices()), _np(tc.to_sparse().indices()))
    made = ferro.sparse_csr_tensor([0, 1, 3, 3], [1, 0, 3], [1.5, 2.0, -1.0], (3, 4), device=dev)
    np.testing.assert_array_equal(_np(made.to_dense()), x)
    s2, t2 = _pair(dev)
    np.testing.assert_array_equal(_np(s2.to_sparse_csr().crow_indices()), _np(t2.coalesce().to_sparse_csr()
                                                                                .crow_indices()))


def test_hybrid_moves_and_casts(dev):
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    x[[1, 3]] = 0
    s, t = ferro.tensor(x, device=dev).to_sparse(1), torch.tensor(x).to_sparse(1)
    assert (s.sparse_dim(), s.dense_dim()) == (t.sparse_dim(), t.dense_dim()) == (1, 1)
    np.testing.assert_array_equal(_np(s.indices()), _np(t.indices()))
    np.testing.assert_array_equal(_np(s.values()), _np(t.values()))
    assert ferro.tensor(x, device=dev).to_sparse(layout=ferro.sparse_csr).layout is ferro.sparse_csr
    moved = s.to("cpu").double()
    assert moved.device.type == "cpu" and moved.dtype == ferro.float64 and moved.layout is ferro.sparse_coo
    np.testing.assert_array_equal(moved.to_dense().numpy(), x.astype(np.float64))


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("vector", [False, True])
def test_spmm_spmv_forward_and_gradients(dev, layout, vector):
    s, t = _pair(dev, requires_grad=True, coalesced=True)
    if layout == "csr":
        s_in, t_in = s.to_sparse_csr(), t
    else:
        s_in, t_in = s, t
    d = RNG.standard_normal((4,) if vector else (4, 3)).astype(np.float32)
    fd = ferro.tensor(d, device=dev, requires_grad=True)
    td = torch.tensor(d, requires_grad=True)
    out = ferro.sparse.mm(s_in, fd) if not vector else s_in @ fd
    tout = torch.sparse.mm(t_in, td.unsqueeze(1)).squeeze(1) if vector else torch.sparse.mm(t_in, td)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-5, atol=1e-6)
    w = RNG.standard_normal(tuple(tout.shape)).astype(np.float32)
    (out * ferro.tensor(w, device=dev)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(fd.grad), _np(td.grad), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_np(s.grad.indices()), _np(t.grad.coalesce().indices()))  # the pattern kept
    np.testing.assert_allclose(_np(s.grad.values()), _np(t.grad.coalesce().values()), rtol=1e-5, atol=1e-6)


def test_gradient_to_values_given_by_the_user(dev):
    v = ferro.tensor(VAL, device=dev, requires_grad=True)
    tv = torch.tensor(VAL, requires_grad=True)
    d = RNG.standard_normal((4, 2)).astype(np.float32)
    s = ferro.sparse_coo_tensor(IDX, v, (5, 4))
    t = torch.sparse_coo_tensor(IDX, tv, (5, 4))
    (ferro.sparse.mm(s, ferro.tensor(d, device=dev)) ** 2).sum().backward()
    (torch.sparse.mm(t, torch.tensor(d)) ** 2).sum().backward()
    np.testing.assert_allclose(_np(v.grad), _np(tv.grad), rtol=1e-5)  # through the duplicates' sum


def test_spmm_gradients_by_finite_differences():
    v = ferro.tensor(VAL, dtype=ferro.float64, requires_grad=True)
    d = ferro.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    assert ferro.autograd.gradcheck(lambda v, d: ferro.sparse.mm(ferro.sparse_coo_tensor(IDX, v, (5, 4)), d), (v, d))
    assert ferro.autograd.gradgradcheck(lambda v, d: ferro.sparse.mm(ferro.sparse_coo_tensor(IDX, v, (5, 4)), d),
                                        (v, d))


def test_sum_mul_softmax_transpose(dev):
    s, t = _pair(dev, coalesced=True)
    assert abs(s.sum().item() - t.sum().item()) < 1e-5
    for dim in (0, 1):
        np.testing.assert_allclose(_np(ferro.sparse.sum(s, dim).to_dense()),
                                   _np(torch.sparse.sum(t, dim).to_dense()), rtol=1e-6)
    np.testing.assert_allclose(_np((s * 2.5).to_dense()), _np((t * 2.5).to_dense()))
    np.testing.assert_allclose(_np((s * s).to_dense()), _np((t * t).to_dense()))
    np.testing.assert_allclose(_np((s.to_sparse_csr() * 3).to_dense()), _np((t * 3).to_dense()))
    for dim in (0, 1):
        np.testing.assert_allclose(_np(ferro.sparse.softmax(s, dim).to_dense()),
                                   _np(torch.sparse.softmax(t, dim).to_dense()), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(_np(s.t().to_dense()), _np(t.t().to_dense()))
    np.testing.assert_array_equal(_np(s.to_sparse_csr().t().to_dense()), _np(t.t().to_dense()))
    dense = RNG.standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(_np(ferro.tensor(dense, device=dev) + s), _np(torch.tensor(dense) + t), rtol=1e-6)
    d = RNG.standard_normal((4, 2)).astype(np.float32)
    want = _np(torch.mm(t, torch.tensor(d)))
    for got in (ferro.mm(s, ferro.tensor(d, device=dev)), s.mm(ferro.tensor(d, device=dev)),
                ferro.matmul(s, ferro.tensor(d, device=dev))):
        np.testing.assert_allclose(_np(got), want, rtol=1e-5, atol=1e-6)
    left = RNG.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(_np(ferro.tensor(left, device=dev) @ s), _np(torch.tensor(left) @ t.to_dense()),
                               rtol=1e-5, atol=1e-6)


def test_softmax_gradient():
    s, t = _pair("cpu", requires_grad=True, coalesced=True)
    w = RNG.standard_normal(6).astype(np.float32)
    (ferro.sparse.softmax(s, 1).values() * ferro.tensor(w)).sum().backward()
    (torch.sparse.softmax(t, 1).coalesce().values() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(s.grad.values()), _np(t.grad.coalesce().values()), rtol=1e-5, atol=1e-6)


def test_ops_without_a_rule_refuse_naming_op_and_layout(dev):
    s, _ = _pair(dev)
    for call, op in ((lambda: ferro.exp(s), "exp"), (lambda: s.reshape(20), "reshape"),
                     (lambda: ferro.cat([s, s]), "cat"), (lambda: s.numpy(), "numpy")):
        with pytest.raises(UnsupportedLayoutError, match=rf"{op}\(\).*sparse_coo.*\.to_dense\(\)"):
            call()
    c = s.to_sparse_csr()
    with pytest.raises(UnsupportedLayoutError, match=r"abs\(\).*sparse_csr"):
        ferro.abs(c)
    with pytest.raises(ValueError, match="pattern"):
        s * ferro.sparse_coo_tensor([[0], [0]], [1.0], (5, 4), device=dev)
    with pytest.raises(TypeError, match=r"add\(\): a sparse_coo tensor plus a float"):
        s + 1.0


def test_out_of_range_indices_are_refused_at_construction():
    with pytest.raises(IndexError, match=r"sparse_coo_tensor\(\).*'indices'.*index 5 in dimension 1.*size 4"):
        ferro.sparse_coo_tensor([[0, 1], [5, 0]], [1.0, 2.0], (2, 4))
    with pytest.raises(IndexError, match=r"index -1"):
        ferro.sparse_coo_tensor([[0, -1], [1, 0]], [1.0, 2.0], (2, 4))
    with pytest.raises(IndexError, match=r"sparse_csr_tensor\(\).*'col_indices'.*index 7"):
        ferro.sparse_csr_tensor([0, 1, 2], [1, 7], [1.0, 2.0], (2, 4))
    with pytest.raises(ValueError, match="non-decreasing"):
        ferro.sparse_csr_tensor([0, 2, 1, 2], [1, 0], [1.0, 2.0], (3, 4))
    with pytest.raises(ValueError, match="end at nnz"):
        ferro.sparse_csr_tensor([0, 1, 1], [1, 0], [1.0, 2.0], (2, 4))
    ferro.sparse_coo_tensor([[0, 1], [5, 0]], [1.0, 2.0], (2, 4), check_invariants=False)  # opted out


def test_a_backend_without_sparse_kernels_names_the_layout(monkeypatch):
    from ferro._core.records import REGISTRY
    assert REGISTRY["spmm_csr"].decomposition is None  # nothing densifies behind the user's back
    lacking = [n for n in ferro.backends.available() if not ferro.backends.get(n).supports("spmm_csr", ferro.float32)]
    assert "prims" in lacking and "cpu" not in lacking  # the test plugin with the required primitives only
    s = ferro.sparse_coo_tensor(IDX, VAL, (5, 4), device="prims")
    with pytest.raises(UnsupportedOperationError, match=r"spmm_csr.*'prims'.*sparse_csr layout"):
        ferro.sparse.mm(s, ferro.ones(4, 3, device="prims"))
    np.testing.assert_array_equal(_np(s.to_dense()), _np(torch.sparse_coo_tensor(IDX, VAL, (5, 4)).to_dense()))
    monkeypatch.setenv("FERRO_FALLBACK", "cpu")  # the opt-in fallback runs it on the CPU, with a warning
    with pytest.warns(RuntimeWarning, match="spmm_csr"):
        out = ferro.sparse.mm(s, ferro.ones(4, 3, device="prims"))
    assert out.device.type == "prims"
    np.testing.assert_allclose(_np(out), _np(torch.sparse.mm(torch.sparse_coo_tensor(IDX, VAL, (5, 4)),
                                                            torch.ones(4, 3))))


def test_embedding_sparse_gradients_with_sgd_and_sparse_adam(dev):
    w = RNG.standard_normal((10, 3)).astype(np.float32)
    for make in (lambda ps, T: T.optim.SGD(ps, lr=0.1), lambda ps, T: T.optim.SparseAdam(ps, lr=0.05)):
        e = ferro.nn.Embedding(10, 3, sparse=True, _weight=ferro.tensor(w, device=dev), padding_idx=0)
        te = torch.nn.Embedding(10, 3, sparse=True, _weight=torch.tensor(w), padding_idx=0)
        opt, topt = make(e.parameters(), ferro), make(te.parameters(), torch)
        for step in range(4):
            idx = [[1, 2, 4, 1], [4, 0, 2, step + 5]]
            for mod, o, T, kw in ((e, opt, ferro, {"device": dev}), (te, topt, torch, {})):
                o.zero_grad()
                (mod(T.tensor(idx, **kw)) ** 3).sum().backward()
                o.step()
        assert e.weight.grad.layout is ferro.sparse_coo
        np.testing.assert_allclose(_np(e.weight.grad.to_dense()), _np(te.weight.grad.to_dense()), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(_np(e.weight), _np(te.weight), rtol=1e-5, atol=1e-6)
    e = ferro.nn.Embedding(10, 3, sparse=True)
    e(ferro.tensor([1, 2], device="cpu")).sum().backward()
    before = e.weight.detach().clone()
    with pytest.raises(NotImplementedError, match="SGD: momentum with a sparse_coo gradient"):
        ferro.optim.SGD(e.parameters(), lr=0.1, momentum=0.9).step()
    assert bool((e.weight.detach() == before).all())  # nothing changed
    with pytest.raises(RuntimeError, match="dense gradients"):
        p = ferro.zeros(3, requires_grad=True)
        p.sum().backward()
        ferro.optim.SparseAdam([p]).step()


def test_gradients_accumulate_sparse():
    e = ferro.nn.Embedding(6, 2, sparse=True)
    e(ferro.tensor([1, 2])).sum().backward()
    e(ferro.tensor([2, 5])).sum().backward()
    expect = np.zeros((6, 2), dtype=np.float32)
    np.add.at(expect, [1, 2, 2, 5], 1)
    assert e.weight.grad.layout is ferro.sparse_coo
    np.testing.assert_array_equal(_np(e.weight.grad.to_dense()), expect)
    ferro.optim.SGD(e.parameters(), lr=0.1).zero_grad(set_to_none=False)  # PyTorch's: no entry left
    assert e.weight.grad._nnz() == 0 and not e.weight.grad.to_dense().any()
    e(ferro.tensor([4])).sum().backward()
    np.testing.assert_array_equal(_np(e.weight.grad.to_dense())[4], [1.0, 1.0])


def test_import_ferro_loads_neither_the_sparse_package_nor_scipy():
    code = "import sys, ferro; print('ferro.sparse' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_cuda_kernels_on_the_scipy_interface_they_share_with_cupyx(dtype):
    """ferro-cuda's spmm/spmv kernels, run with NumPy and scipy.sparse in place of CuPy and cupyx.scipy.sparse
    (the same interface; no GPU here): the same products as PyTorch's."""
    import scipy.sparse

    from ferro_cuda._sparse import sparse_kernels
    kernels = sparse_kernels(np, lambda: scipy.sparse)
    t = torch.sparse_coo_tensor(IDX, VAL, (5, 4)).coalesce().to_sparse_csr()
    crow, col, vals = (x.numpy() for x in (t.crow_indices(), t.col_indices(), t.values()))
    d = RNG.standard_normal((4, 3)).astype(dtype)
    got = kernels["spmm_csr"](crow, col, vals.astype(dtype), d)
    assert got.dtype == np.dtype(dtype) and got.shape == (5, 3)
    tol = 1e-2 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), t.to_dense().double().numpy() @ d.astype(np.float64),
                               rtol=tol, atol=tol)
    v = kernels["spmv_csr"](crow, col, vals.astype(dtype), d[:, 0].copy())
    np.testing.assert_allclose(v.astype(np.float64), got[:, 0].astype(np.float64), rtol=tol, atol=tol)
