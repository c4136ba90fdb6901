"""Mixed-precision training of the demo's CNN reaches float32's accuracy, on cpu and opencl (issue 16)."""

from __future__ import annotations

import pytest

import ferro
from ferro.demo import run


def test_autocast_training_reaches_float32_accuracy(dev):
    quiet = dict(epochs=12, progress=False, out=lambda _line: None)
    full = run(dev, **quiet)
    mixed = run(dev, amp=True, **quiet)
    assert full.accuracy > 0.95  # the float32 run itself learned the digits
    assert mixed.accuracy >= full.accuracy - 0.005, (mixed.accuracy, full.accuracy)
    assert mixed.reloaded_accuracy == pytest.approx(mixed.accuracy)


def test_demo_amp_uses_loss_scaling_only_for_float16(dev):
    lines: list[str] = []
    run(dev, epochs=1, progress=False, out=lines.append, amp=True)
    half = "bfloat16" if ferro.device(dev).type == "cpu" else "float16"
    assert f"in mixed precision ({half} autocast" in lines[0]
    assert ("loss scaling" in lines[0]) == (half == "float16")
