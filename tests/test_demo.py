"""``ferro demo`` and ``examples/``: real training runs on the CPU backend, with accuracy bars."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ferro
from ferro.demo import run as run_demo

pytest.importorskip("sklearn", reason="the digits come from scikit-learn (pip install 'ferro-core[demo]')")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_demo_reaches_97_percent_on_cpu_and_the_checkpoint_reloads(tmp_path: Path) -> None:
    lines: list[str] = []
    path = tmp_path / "cnn.safetensors"
    result = run_demo("cpu", epochs=10, progress=False, checkpoint=str(path), out=lines.append)
    assert result.accuracy >= 0.97, lines
    assert result.reloaded_accuracy == result.accuracy, "the reloaded model predicts exactly as the trained one"
    assert path.stat().st_size > 0 and result.losses[-1] < result.losses[0]
    assert len([ln for ln in lines if ln.startswith("epoch")]) == 10


def test_demo_command_prints_epochs_and_refuses_an_unavailable_backend() -> None:
    proc = subprocess.run([sys.executable, "-m", "ferro", "demo", "--epochs", "1", "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "epoch  1/1" in proc.stdout and "test accuracy" in proc.stdout and "reloaded" in proc.stdout
    saved = re.search(r"checkpoint saved to (\S+digits-cnn\.safetensors) \(a temporary file", proc.stdout)
    assert saved and not Path(saved.group(1)).exists(), proc.stdout  # says where, and removed it after
    unavailable = ferro.backends.unavailable()
    if unavailable:
        name, reason = next(iter(unavailable.items()))
        proc = subprocess.run([sys.executable, "-m", "ferro", "demo", "--backend", name, "--epochs", "1"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and reason in proc.stderr and "Traceback" not in proc.stderr


def test_readme_figures_are_what_the_demo_prints(tmp_path: Path) -> None:
    readme = (EXAMPLES.parent / "README.md").read_text()
    epochs, figure = re.search(r"after (\d+) epochs it prints `test accuracy ([\d.]+%)`", readme).groups()  # type: ignore[union-attr]
    lines: list[str] = []
    path = tmp_path / "cnn.safetensors"
    run_demo("cpu", epochs=int(epochs), progress=False, checkpoint=str(path), out=lines.append)
    assert lines[-3].startswith(f"epoch {int(epochs):>2}/{epochs}") and lines[-3].endswith(f"test accuracy {figure}")
    assert lines[-2].endswith(f"checkpoint saved to {path}") and lines[-1].endswith(f"test accuracy {figure}")


def test_mlp_example_trains() -> None:
    assert _example("mlp_digits").main(["--backend", "cpu", "--epochs", "6"]) >= 0.95


def test_lstm_example_learns_the_running_sum() -> None:
    assert _example("lstm_sequences").main(["--backend", "cpu", "--epochs", "6"]) >= 0.8
