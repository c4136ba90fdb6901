"""The ``jax.jit`` contender of ``benchmarks/compile.py``: the same training steps, written in JAX.

Each model of the compile table is written here as a pure function of its parameters, which are PyTorch's
model's parameters for the same seed (``ModelStep.setup(torch)``), so the JAX step starts from the very
weights and batch the other contenders use. The step (forward, cross-entropy, gradients, SGD with momentum
0.9 as ``torch.optim.SGD`` computes it) is one ``jax.jit`` function; :func:`make_step` checks that its
first loss is PyTorch's before the benchmark times it. JAX is the benchmark's optional extra
(``pip install -e "./ferro-core[bench-jax]"``); without it the column is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Params = dict[str, Any]
_LR, _MOMENTUM = 0.01, 0.9


def _linear(p: Params, name: str, x: Any) -> Any:
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def _mlp(p: Params, x: Any) -> Any:
    x = jax.nn.relu(_linear(p, "0", x))
    x = jax.nn.relu(_linear(p, "2", x))
    return _linear(p, "4", x)


def _conv(p: Params, name: str, x: Any) -> Any:
    y = jax.lax.conv_general_dilated(x, p[f"{name}.weight"], (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + p[f"{name}.bias"][None, :, None, None]


def _max_pool2(x: Any) -> Any:
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def _cnn(p: Params, x: Any) -> Any:
    x = _max_pool2(jax.nn.relu(_conv(p, "0", x)))
    x = _max_pool2(jax.nn.relu(_conv(p, "3", x)))
    x = jax.nn.relu(_linear(p, "7", x.reshape(x.shape[0], -1)))
    return _linear(p, "9", x)


def _lstm(p: Params, x: Any) -> Any:
    w_ih, w_hh = p["rnn.weight_ih_l0"], p["rnn.weight_hh_l0"]
    b = p["rnn.bias_ih_l0"] + p["rnn.bias_hh_l0"]
    hidden = w_hh.shape[1]
    inputs = jnp.swapaxes(x @ w_ih.T + b, 0, 1)  # (seq, batch, 4 * hidden): every step's input projection

    def cell(carry: tuple[Any, Any], gx: Any) -> tuple[tuple[Any, Any], None]:
        h, c = carry
        i, f, g, o = jnp.split(gx + h @ w_hh.T, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        return (jax.nn.sigmoid(o) * jnp.tanh(c), c), None

    zeros = jnp.zeros((x.shape[0], hidden), x.dtype)
    (h, _), _ = jax.lax.scan(cell, (zeros, zeros), inputs)
    return _linear(p, "head", h)


def _layer_norm(p: Params, name: str, x: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * p[f"{name}.weight"] + p[f"{name}.bias"]


def _encoder_layer(p: Params, name: str, x: Any, heads: int = 4) -> Any:
    b, s, d = x.shape
    qkv = x @ p[f"{name}.self_attn.in_proj_weight"].T + p[f"{name}.self_attn.in_proj_bias"]
    q, k, v = (t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3) for t in jnp.split(qkv, 3, axis=-1))
    att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads), axis=-1)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    x = _layer_norm(p, f"{name}.norm1", x + _linear(p, f"{name}.self_attn.out_proj", y))
    ff = _linear(p, f"{name}.linear2", jax.nn.relu(_linear(p, f"{name}.linear1", x)))
    return _layer_norm(p, f"{name}.norm2", x + ff)


def _encoder(p: Params, x: Any) -> Any:
    for i in range(2):
        x = _encoder_layer(p, f"enc.layers.{i}", x)
    return _linear(p, "head", x.mean(1))


#: the compile table's row -> the JAX forward of its model.
FORWARDS: dict[str, Callable[[Params, Any], Any]] = {
    "digits MLP step (batch 64)": _mlp,
    "digits CNN step (batch 64)": _cnn,
    "LSTM step (hidden 128, seq 50, batch 32)": _lstm,
    "Transformer encoder step (2 layers, d 128, seq 64, batch 32)": _encoder,
}


def _loss(forward: Callable[[Params, Any], Any], p: Params, x: Any, y: Any) -> Any:
    logp = jax.nn.log_softmax(forward(p, x), axis=-1)
    return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()


def make_step(row: str, torch_model: Any, batch: list[Any]) -> Callable[[], Any]:
    """One jitted SGD step of ``row``'s model from ``torch_model``'s weights on ``batch`` (torch tensors).

    Raises ``AssertionError`` when the JAX loss on the first step is not PyTorch's for the same weights.
    """
    forward = FORWARDS[row]
    params = {k: jnp.asarray(v.detach().numpy()) for k, v in torch_model.named_parameters()}
    x, y = (jnp.asarray(t.numpy()) for t in batch)
    grad = jax.value_and_grad(lambda p: _loss(forward, p, x, y))

    @jax.jit
    def step(p: Params, buf: Params) -> tuple[Params, Params, Any]:
        loss, g = grad(p)
        buf = jax.tree_util.tree_map(lambda b, gi: _MOMENTUM * b + gi, buf, g)
        return jax.tree_util.tree_map(lambda w, b: w - _LR * b, p, buf), buf, loss

    import torch
    with torch.no_grad():
        expected = float(torch.nn.functional.cross_entropy(torch_model(batch[0]), batch[1]))
    # torch's first momentum step sets buf = grad: the same as 0.9 * 0 + grad
    state = [params, jax.tree_util.tree_map(jnp.zeros_like, params)]
    first = float(step(*state)[2])
    assert abs(first - expected) <= 1e-4 * max(1.0, abs(expected)), f"{row}: JAX loss {first}, PyTorch {expected}"

    def run() -> Any:
        state[0], state[1], loss = step(*state)
        return loss.block_until_ready()
    return run
