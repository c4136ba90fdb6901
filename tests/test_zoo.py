"""Model-zoo-style PyTorch programs (``tests/zoo/``) run unchanged on ferro and match PyTorch's losses.

Each program is a PyTorch script written for this suite in the style of the public examples
(an MNIST-style CNN, a character LSTM language model, a VAE, a small GPT, a DCGAN). It is loaded twice:
once as written, on torch; once under ``ferro.compat.as_torch()``, where its ``import torch``
binds ferro, with the same initial weights (torch's state_dict copied into it). The losses of
every step must agree.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.compat import as_torch

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

ZOO = Path(__file__).parent / "zoo"
PROGRAMS = ["mnist_cnn", "char_lstm", "vae", "gpt", "dcgan"]
#: Options of the ferro run only: the GPT compiles its model there (ferro.compile keeps the eager model;
#: torch's inductor would need a C compiler and minutes here).
ON_FERRO = {"gpt": {"compile": True}}


def _load(name: str, as_name: str) -> Any:
    spec = importlib.util.spec_from_file_location(as_name, ZOO / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_pytorch_step_by_step(name: str, dev: str) -> None:
    initial, expected = _load(name, f"zoo_torch_{name}").main("cpu")
    with as_torch():
        program = _load(name, f"zoo_ferro_{name}")
        init = {k: ferro.tensor(v.numpy()) for k, v in initial.items()}
        got_initial, got = program.main(dev, init=init, **ON_FERRO.get(name, {}))
    for k, v in got_initial.items():  # the weights it started from are torch's
        np.testing.assert_array_equal(v.cpu().numpy(), initial[k].numpy(), err_msg=k)
    assert len(got) == len(expected)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=1e-5, err_msg=f"{name} on {dev}")


def test_the_cnn_saves_its_state_dict_as_the_script_says(tmp_path: Path) -> None:
    path = tmp_path / "mnist_cnn.pt"
    with as_torch():
        _load("mnist_cnn", "zoo_ferro_save").main("cpu", steps=1, save_model=str(path))
    state = ferro.load(str(path))
    assert set(state) == {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias",
                          "fc2.weight", "fc2.bias"} and tuple(state["conv1.weight"].shape) == (16, 1, 3, 3)


def test_compile_keeps_the_eager_model_and_checks_its_arguments() -> None:
    model = ferro.nn.Linear(3, 2)
    assert ferro.compile(model) is model and ferro.compile(model, mode="max-autotune", dynamic=True) is model

    @ferro.compile(fullgraph=True)
    def f(x: ferro.Tensor) -> ferro.Tensor:
        return x * 2

    assert f(ferro.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="mode or options"):
        ferro.compile(model, mode="default", options={})
    with pytest.raises(RuntimeError, match="mode or options"):  # what torch says for the same call
        torch.compile(torch.nn.Linear(3, 2), mode="default", options={})
    with pytest.raises(TypeError, match="callable"):
        ferro.compile(3)


def test_startup_imports_of_the_examples_run(tmp_path: Path) -> None:
    """``import torch.onnx`` at the top of a script, top-level ``torch.GradScaler``: ferro's stand in for them."""
    with as_torch():
        import torch as shimmed
        import torch.onnx
        assert shimmed is ferro and torch.onnx is ferro.onnx and not torch.onnx.is_in_onnx_export()
        with pytest.raises(NotImplementedError, match="cannot export ONNX"):
            torch.onnx.export(shimmed.nn.Linear(2, 2), (shimmed.ones(1, 2),), str(tmp_path / "m.onnx"))
        scaler = shimmed.GradScaler(enabled=False)
        assert scaler is not None and not scaler.is_enabled()
