"""The model table's rows: one training step of small models, each built from the same code for ferro and PyTorch.

A row's model is written once against a library namespace ``xp`` (``ferro`` or ``torch``: ``xp.nn``,
``xp.tril``...), so both sides run the same program. Its step is the public examples' loop body on one
fixed batch (forward, loss, ``zero_grad``, backward, optimizer step):

- the digits MLP and CNN of ``ferro demo`` (batch 64 of 8x8 digits), an LSTM and a GRU (one layer,
  hidden 128, sequences of 50, batch 32, a linear head on the last step), a 2-layer Transformer encoder
  (d_model 128, 4 heads, sequences of 64, batch 32), a ResNet-style block with batch norm (16 channels,
  16x16, batch 16): SGD with momentum, cross-entropy;
- a GPT in the style of nanoGPT (token and position embeddings, 2 blocks of pre-norm causal self-attention
  with a ``tril`` mask and a GELU MLP, d 64, 4 heads, context 64, vocabulary 65, batch 16; AdamW);
- the LSTM language model of PyTorch's ``word_language_model`` example (embedding, 2-layer LSTM, decoder;
  vocabulary 1000, 128 units, bptt 35, batch 20; gradient clipping at 0.25, SGD);
- DCGAN as PyTorch's ``dcgan`` example (a generator of ``ConvTranspose2d`` + ``BatchNorm2d`` + ReLU and a
  discriminator of strided ``Conv2d`` + ``BatchNorm2d`` + LeakyReLU, 32x32 single-channel images, nz 16,
  16 base channels, batch 32; a discriminator step on real and fake then a generator step, Adam with
  betas (0.5, 0.999), BCE).

Only absolute imports of names every checkout has: ``benchmarks/revisions.py --ops`` runs this file
(``runpy``) against an older ferro too. ``tests/test_bench_models.py`` checks each step's losses
against PyTorch's for the same weights and batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ferro.bench._cases import Case, Target


def _mlp(xp: Any) -> Any:
    from ferro.demo import make_mlp
    return make_mlp(nn=xp.nn)


def _cnn(xp: Any) -> Any:
    from ferro.demo import make_cnn
    return make_cnn(xp.nn)


def _recurrent(kind: str) -> Callable[[Any], Any]:
    def build(xp: Any) -> Any:
        nn = xp.nn

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


def _encoder(xp: Any) -> Any:
    nn = xp.nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(128, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.enc(x).mean(1))
    return Net()


def _resblock(xp: Any) -> Any:
    nn = xp.nn

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


GPT = {"vocab": 65, "block": 64, "embd": 64, "heads": 4, "layers": 2, "batch": 16}


def _gpt(xp: Any) -> Any:
    """nanoGPT's model, small: the same modules and forward, dropout and weight tying left out."""
    nn, F, cfg = xp.nn, xp.nn.functional, GPT
    C, H, T = cfg["embd"], cfg["heads"], cfg["block"]

    class CausalSelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.register_buffer("bias", xp.tril(xp.ones(T, T)).view(1, 1, T, T))

        def forward(self, x: Any) -> Any:
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            k = k.view(B, T, H, C // H).transpose(1, 2)
            q = q.view(B, T, H, C // H).transpose(1, 2)
            v = v.view(B, T, H, C // H).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_fc = nn.Linear(C, 4 * C)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * C, C)

        def forward(self, x: Any) -> Any:
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(C), CausalSelfAttention()
            self.ln_2, self.mlp = nn.LayerNorm(C), MLP()

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(cfg["vocab"], C), nn.Embedding(T, C)
            self.h = nn.ModuleList([Block() for _ in range(cfg["layers"])])
            self.ln_f = nn.LayerNorm(C)
            self.lm_head = nn.Linear(C, cfg["vocab"], bias=False)

        def forward(self, idx: Any) -> Any:
            t = idx.size(1)
            x = self.wte(idx) + self.wpe(xp.arange(0, t, dtype=xp.long))
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))
    return Net()


def _gpt_batch(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    ids = rng.integers(0, GPT["vocab"], (GPT["batch"], GPT["block"] + 1))
    return ids[:, :-1], ids[:, 1:]


def _gpt_loss(xp: Any, model: Any, x: Any, y: Any) -> Any:
    logits = model(x)
    return xp.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))


LM = {"ntoken": 1000, "ninp": 128, "nhid": 128, "nlayers": 2, "bptt": 35, "batch": 20}


def _lstm_lm(xp: Any) -> Any:
    """``word_language_model``'s RNNModel with an LSTM, dropout 0."""
    nn, cfg = xp.nn, LM

    class RNNModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.Embedding(cfg["ntoken"], cfg["ninp"])
            self.rnn = nn.LSTM(cfg["ninp"], cfg["nhid"], cfg["nlayers"])
            self.decoder = nn.Linear(cfg["nhid"], cfg["ntoken"])

        def forward(self, input: Any) -> Any:
            output, _ = self.rnn(self.encoder(input))
            return self.decoder(output).view(-1, cfg["ntoken"])
    return RNNModel()


def _lm_batch(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    ids = rng.integers(0, LM["ntoken"], (LM["bptt"] + 1, LM["batch"]))
    return ids[:-1], ids[1:].reshape(-1)


def _lm_loss(xp: Any, model: Any, x: Any, y: Any) -> Any:
    return xp.nn.functional.nll_loss(xp.nn.functional.log_softmax(model(x), dim=1), y)


DCGAN = {"nz": 16, "ngf": 16, "ndf": 16, "nc": 1, "batch": 32}


def _dcgan(xp: Any) -> Any:
    """The ``dcgan`` example's Generator and Discriminator for 32x32 images (one stage fewer than its 64x64)."""
    nn, cfg = xp.nn, DCGAN
    nz, ngf, ndf, nc = cfg["nz"], cfg["ngf"], cfg["ndf"], cfg["nc"]

    class Pair(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.netG = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
                nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())
            self.netD = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 4, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    return Pair()


def _dcgan_batch(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    b = DCGAN["batch"]
    real = np.tanh(rng.standard_normal((b, DCGAN["nc"], 32, 32))).astype(np.float32)
    return real, rng.standard_normal((b, DCGAN["nz"], 1, 1)).astype(np.float32)


def _dcgan_optimizers(xp: Any, pair: Any) -> list[Any]:
    return [xp.optim.Adam(net.parameters(), lr=2e-4, betas=(0.5, 0.999)) for net in (pair.netD, pair.netG)]


def _dcgan_step(xp: Any, pair: Any, opts: list[Any], real: Any, noise: Any) -> Any:
    """One iteration of the example: update D on real and (detached) fake, then G; returns errD + errG."""
    optD, optG = opts
    netD, netG, crit = pair.netD, pair.netG, xp.nn.BCELoss()
    b = real.size(0)
    ones, zeros = xp.full((b,), 1.0), xp.full((b,), 0.0)
    netD.zero_grad()
    errD_real = crit(netD(real).view(-1), ones)
    errD_real.backward()
    fake = netG(noise)
    errD_fake = crit(netD(fake.detach()).view(-1), zeros)
    errD_fake.backward()
    optD.step()
    netG.zero_grad()
    errG = crit(netD(fake).view(-1), ones)
    errG.backward()
    optG.step()
    return errD_real.detach() + errD_fake.detach() + errG.detach()


def _classes(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 10, shape[0])


def _sgd(xp: Any, model: Any) -> list[Any]:
    return [xp.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)]


def _supervised(loss: Callable[..., Any], clip: float | None = None) -> Callable[..., Any]:
    """The classic step: loss, ``zero_grad``, backward, (gradient clipping,) ``step``; returns the loss."""
    def step(xp: Any, model: Any, opts: list[Any], *batch: Any) -> Any:
        out = loss(xp, model, *batch)
        opts[0].zero_grad()
        out.backward()
        if clip is not None:
            xp.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opts[0].step()
        return out
    return step


def _cross_entropy(xp: Any, model: Any, x: Any, y: Any) -> Any:
    return xp.nn.functional.cross_entropy(model(x), y)


class ModelStep:
    """``op(xp)``: one training step of a model in library ``xp`` (``ferro`` or ``torch``), built on the first call.

    ``build(xp)`` makes the model, ``batch(rng)`` the NumPy arrays of its one batch, ``optimizers(xp, model)``
    its optimizers and ``step(xp, model, optimizers, *batch)`` runs one step and returns its loss.
    """

    def __init__(self, build: Callable[[Any], Any], batch: Callable[[np.random.Generator], tuple[np.ndarray, ...]],
                 step: Callable[..., Any], optimizers: Callable[[Any, Any], list[Any]] = _sgd) -> None:
        self.build, self.batch, self.step, self.optimizers = build, batch, step, optimizers
        self.steps: dict[str, Callable[[], Any]] = {}

    def __call__(self, xp: Any) -> Any:
        step = self.steps.get(xp.__name__)
        if step is None:
            step = self.steps[xp.__name__] = self.make(xp)
        return step()

    def setup(self, xp: Any, state: dict[str, Any] | None = None) -> tuple[Any, list[Any], list[Any]]:
        """The model (seeded, or loaded from ``state``: name -> NumPy array), its optimizers and its batch."""
        xp.manual_seed(0)
        model = self.build(xp)
        if state is not None:
            model.load_state_dict({k: xp.tensor(v) for k, v in state.items()})
        data = [xp.tensor(a) for a in self.batch(np.random.default_rng(0))]
        return model, self.optimizers(xp, model), data

    def make(self, xp: Any, state: dict[str, Any] | None = None) -> Callable[[], Any]:
        """A function of no arguments that runs one step (see :meth:`setup` for ``state``)."""
        model, opts, data = self.setup(xp, state)
        return lambda: self.step(xp, model, opts, *data)


def _classifier(build: Callable[[Any], Any], shape: tuple[int, ...]) -> ModelStep:
    return ModelStep(build, lambda rng: _classes(rng, shape), _supervised(_cross_entropy))


def _adamw(xp: Any, model: Any) -> list[Any]:
    return [xp.optim.AdamW(model.parameters(), lr=1e-3)]


#: name -> step, in the table's order.
STEPS: dict[str, ModelStep] = {
    "digits MLP step (batch 64)": _classifier(_mlp, (64, 64)),
    "digits CNN step (batch 64)": _classifier(_cnn, (64, 1, 8, 8)),
    "LSTM step (hidden 128, seq 50, batch 32)": _classifier(_recurrent("LSTM"), (32, 50, 32)),
    "GRU step (hidden 128, seq 50, batch 32)": _classifier(_recurrent("GRU"), (32, 50, 32)),
    "Transformer encoder step (2 layers, d 128, seq 64, batch 32)": _classifier(_encoder, (32, 64, 128)),
    "ResNet block + batch norm step (16ch 16x16, batch 16)": _classifier(_resblock, (16, 16, 16, 16)),
    "GPT step (nanoGPT-style, 2 layers, d 64, ctx 64, batch 16)": ModelStep(_gpt, _gpt_batch,
                                                                            _supervised(_gpt_loss), _adamw),
    "LSTM language model step (2 layers, 128, bptt 35, batch 20)": ModelStep(
        _lstm_lm, _lm_batch, _supervised(_lm_loss, clip=0.25),
        lambda xp, model: [xp.optim.SGD(model.parameters(), lr=0.1)]),
    "DCGAN step (32x32, nz 16, batch 32)": ModelStep(_dcgan, _dcgan_batch, _dcgan_step, _dcgan_optimizers),
}

#: The rows of the model table.
MODELS: list[Case] = [Case(name, (), step, Target("torch", 1.0), unit="ms", overrides={"numpy": None})
                      for name, step in STEPS.items()]
