"""PyTorch's global settings that scripts call at startup: print options, inference mode, thread counts,
compared with torch's behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")

VALUES = [[1.23456789, -2.5, 1e-5], [100.0, 3.0, 0.125]]


@pytest.mark.parametrize("options", [{"precision": 2}, {"precision": 6}, {"sci_mode": True}, {"sci_mode": False},
                                     {"profile": "short"}, {"threshold": 5, "edgeitems": 1},
                                     {"linewidth": 30, "precision": 7}])
def test_printoptions_print_as_torch(options: dict) -> None:
    try:
        ferro.set_printoptions(**options)
        torch.set_printoptions(**options)
        for values in (VALUES, np.arange(20.0).reshape(4, 5) / 3):
            values = np.asarray(values, dtype=np.float32)
            assert repr(ferro.tensor(values)) == repr(torch.tensor(values))
    finally:
        ferro.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")
    assert repr(ferro.tensor([1.23456789])) == "tensor([1.2346])"


def test_printoptions_refuse_an_unknown_profile() -> None:
    with pytest.raises(ValueError, match="profile"):
        ferro.set_printoptions(profile="long")


def test_inference_mode() -> None:
    x = ferro.ones(2, requires_grad=True)
    assert not ferro.is_inference_mode_enabled()
    with ferro.inference_mode():
        assert ferro.is_inference_mode_enabled() and not ferro.is_grad_enabled()
        assert not (x * 2).requires_grad
    with ferro.inference_mode(False):
        assert (x * 2).requires_grad and not ferro.is_inference_mode_enabled()

    @ferro.inference_mode
    def bare(v: ferro.Tensor) -> ferro.Tensor:
        return v * 2

    @ferro.inference_mode()
    def called(v: ferro.Tensor) -> ferro.Tensor:
        assert ferro.is_inference_mode_enabled()
        return v * 2

    assert not bare(x).requires_grad and not called(x).requires_grad
    assert (x * 2).requires_grad and ferro.is_grad_enabled() and not ferro.is_inference_mode_enabled()
    assert x.is_inference() is False


def test_thread_counts() -> None:
    before = ferro.get_num_threads()
    assert before >= 1 and ferro.get_num_interop_threads() >= 1
    try:
        ferro.set_num_threads(1)
        assert ferro.get_num_threads() == 1
        threadpoolctl = pytest.importorskip("threadpoolctl")
        assert all(p["num_threads"] == 1 for p in threadpoolctl.threadpool_info())
        assert float((ferro.ones(64, 64) @ ferro.ones(64, 64))[0, 0]) == 64.0
    finally:
        ferro.set_num_threads(before)
    with pytest.raises(ValueError, match="set_num_threads"):
        ferro.set_num_threads(0)
    ferro.set_num_interop_threads(2)
    assert ferro.get_num_interop_threads() == 2
