"""scikit-learn's array API code paths on ferro tensors, on each backend, against its NumPy results.

With ``array_api_dispatch=True`` scikit-learn finds ``ferro.array_api``
through ``Tensor.__array_namespace__`` (array-api-compat passes unknown
libraries through), so PCA and LinearDiscriminantAnalysis run their
computations as ferro ops on the tensors' device. scikit-learn also needs
SciPy's array API mode, which must be switched on before SciPy is imported;
the fits therefore run in a fresh interpreter per backend.
"""

from __future__ import annotations

import pytest

from conftest import run_json

pytest.importorskip("sklearn", reason="scikit-learn is not installed")
pytest.importorskip("array_api_compat", reason="scikit-learn's array API mode needs array-api-compat")

FIT = """
import json
import warnings
import numpy as np
import sklearn
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
import ferro

dev = ferro.device({device!r})
dtype = ferro.float64 if ferro.float64 in dev.backend.dtypes(dev.index) else ferro.float32
npdtype = np.float64 if dtype is ferro.float64 else np.float32
rng = np.random.default_rng(0)
X = (rng.standard_normal((80, 6)) * [3.0, 2.0, 1.5, 1.0, 0.5, 0.2]).astype(npdtype)
y = (X[:, 0] + X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 1.0)

def numpy_of(t):
    assert isinstance(t, ferro.Tensor), type(t)
    assert t.device == dev, (t.device, dev)
    return t.detach().numpy()

out = {{"dtype": dtype.name}}
warnings.simplefilter("always")
caught = warnings.catch_warnings(record=True)
log = caught.__enter__()
for solver in ("full", "covariance_eigh"):
    ref = PCA(n_components=3, svd_solver=solver).fit(X)
    with sklearn.config_context(array_api_dispatch=True):
        got = PCA(n_components=3, svd_solver=solver).fit(ferro.tensor(X, device=dev))
        Z = numpy_of(got.transform(ferro.tensor(X, device=dev)))
    out[f"pca_{{solver}}"] = {{
        # components are defined up to sign; scikit-learn flips them deterministically on both paths
        "components": float(np.max(np.abs(numpy_of(got.components_) - ref.components_))),
        "explained_variance": float(np.max(np.abs(numpy_of(got.explained_variance_) - ref.explained_variance_)
                                           / ref.explained_variance_)),
        "transform": float(np.max(np.abs(Z - ref.transform(X)))),
    }}
ref = LinearDiscriminantAnalysis().fit(X, y)
with sklearn.config_context(array_api_dispatch=True):
    Xt, yt = ferro.tensor(X, device=dev), ferro.tensor(y, device=dev)
    got = LinearDiscriminantAnalysis().fit(Xt, yt)
    pred = numpy_of(got.predict(Xt))
    proba = numpy_of(got.predict_proba(Xt))
out["lda"] = {{
    "coef": float(np.max(np.abs(numpy_of(got.coef_) - ref.coef_))),
    "intercept": float(np.max(np.abs(numpy_of(got.intercept_) - ref.intercept_))),
    "predict_mismatches": int(np.sum(pred != ref.predict(X))),
    "proba": float(np.max(np.abs(proba - ref.predict_proba(X)))),
    "classes": numpy_of(got.classes_).tolist(),
}}
caught.__exit__(None, None, None)
out["fallbacks"] = sorted({{str(w.message).split("'")[1] for w in log if "FERRO_FALLBACK" in str(w.message)
                            or "fall" in str(w.message)}})
print(json.dumps(out))
"""


def test_pca_and_lda_match_numpy(device: object) -> None:
    """PCA (two solvers) and LDA fitted on ferro tensors agree with the same fits on NumPy arrays.

    Kernels a device lacks (OpenCL has no SVD or eigh yet) run on the CPU through ferro's opt-in
    fallback, which warns once per op; the test prints which, and every result stays on ``device``.
    """
    env = {"SCIPY_ARRAY_API": "1"}
    if device.type != "cpu":  # type: ignore[attr-defined]
        env["FERRO_FALLBACK"] = "cpu"
    res = run_json(FIT.format(device=str(device)), env=env)
    print(f"scikit-learn on {device}: {res['dtype']}, kernels run on the CPU fallback: {res['fallbacks']}")
    tol = 1e-8 if res["dtype"] == "float64" else 1e-3
    for solver in ("full", "covariance_eigh"):
        r = res[f"pca_{solver}"]
        assert r["components"] < tol, (solver, r)
        assert r["explained_variance"] < tol, (solver, r)
        assert r["transform"] < tol * 10, (solver, r)
    lda = res["lda"]
    assert lda["predict_mismatches"] == 0, lda
    assert lda["coef"] < tol * 10 and lda["intercept"] < tol * 10 and lda["proba"] < tol, lda
    assert lda["classes"] == [0, 1, 2], lda
