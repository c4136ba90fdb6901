"""The model table: training steps of small models, ferro cpu vs PyTorch CPU, in one run.

    python benchmarks/ops.py --table models            # 1 and 2 threads
    python benchmarks/ops.py --table models --case LSTM --threads 1

Each row is one SGD step (forward, loss, zero_grad, backward, step) of a model built from the same code with
``ferro.nn`` and ``torch.nn``, on one fixed batch: the digits MLP and CNN of ``ferro demo`` (batch 64 of
8x8 digits, the step of an epoch), an LSTM and a GRU (one layer, hidden 128, sequences of 50, batch 32,
a linear head on the last step), a 2-layer Transformer encoder (d_model 128, 4 heads, sequences of 64,
batch 32) and a ResNet-style block with batch norm (16 channels, 16x16, batch 16). ``ops.py`` runs them
with the op table's harness: contenders interleaved round by round, paired-ratio medians. NumPy has no
column here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ferro.bench._cases import Case, Target


def _mlp(nn: Any) -> Any:
    from ferro.demo import make_mlp
    return make_mlp(nn=nn)


def _cnn(nn: Any) -> Any:
    from ferro.demo import make_cnn
    return make_cnn(nn)


def _recurrent(kind: str) -> Callable[[Any], Any]:
    def build(nn: Any) -> Any:
        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.rnn = getattr(nn, kind)(32, 128, batch_first=True)
                self.head = nn.Linear(128, 10)

            def forward(self, x: Any) -> Any:
                out, _ = self.rnn(x)
                return self.head(out[:, -1])
        return Net()
    return build


def _encoder(nn: Any) -> Any:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(128, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.enc(x).mean(1))
    return Net()


def _resblock(nn: Any) -> Any:
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)
            self.c2, self.b2 = nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)
            self.head = nn.Linear(16, 10)

        def forward(self, x: Any) -> Any:
            y = self.b1(self.c1(x)).relu()
            y = (self.b2(self.c2(y)) + x).relu()
            return self.head(y.mean((2, 3)))
    return Block()


class _Step:
    """``op(xp)``: one training step of the model in library ``xp``, built on the first call."""

    def __init__(self, build: Callable[[Any], Any], shape: tuple[int, ...]) -> None:
        self.build, self.shape = build, shape
        self.steps: dict[str, Callable[[], Any]] = {}

    def __call__(self, xp: Any) -> Any:
        step = self.steps.get(xp.__name__)
        if step is None:
            step = self.steps[xp.__name__] = self._make(xp)
        return step()

    def _make(self, xp: Any) -> Callable[[], Any]:
        rng = np.random.default_rng(0)
        xp.manual_seed(0)
        model = self.build(xp.nn)
        x = xp.tensor(rng.standard_normal(self.shape).astype(np.float32))
        y = xp.tensor(rng.integers(0, 10, self.shape[0]))
        opt = xp.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        f = xp.nn.functional

        def step() -> Any:
            loss = f.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        return step


_NO_NUMPY = {"numpy": None}
_ROWS = [
    ("digits MLP step (batch 64)", _mlp, (64, 64)),
    ("digits CNN step (batch 64)", _cnn, (64, 1, 8, 8)),
    ("LSTM step (hidden 128, seq 50, batch 32)", _recurrent("LSTM"), (32, 50, 32)),
    ("GRU step (hidden 128, seq 50, batch 32)", _recurrent("GRU"), (32, 50, 32)),
    ("Transformer encoder step (2 layers, d 128, seq 64, batch 32)", _encoder, (32, 64, 128)),
    ("ResNet block + batch norm step (16ch 16x16, batch 16)", _resblock, (16, 16, 16, 16)),
]

#: The rows of the model table.
MODELS: list[Case] = [Case(name, (), _Step(build, shape), Target("torch", 1.0), unit="ms", overrides=_NO_NUMPY)
                      for name, build, shape in _ROWS]
