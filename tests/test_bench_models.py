"""The model table's training steps (``ferro.bench._models``) compute PyTorch's losses for the same weights.

Each step is built from the same code with ``ferro`` and ``torch``; ferro's model is loaded with PyTorch's
initial weights and buffers, both get the same batch, and the losses of two consecutive steps (the second
one after an optimizer update) must agree. No timings here.
"""

from __future__ import annotations

import numpy as np
import pytest

import ferro
from ferro.bench._models import STEPS

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", list(STEPS))
def test_step_losses_match_torch(name: str) -> None:
    step = STEPS[name]
    model, _, _ = step.setup(torch)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    ours, theirs = step.make(ferro, state), step.make(torch, state)
    got = [float(ours().detach()) for _ in range(2)]
    want = [float(theirs().detach()) for _ in range(2)]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    assert got[0] != got[1]  # the optimizer step changed the weights
