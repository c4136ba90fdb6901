"""ferro.nn.MultiheadAttention and the Transformer layers against torch.nn (eval mode, masks, gradients)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import nn
from ferro.autograd import gradcheck
from ferro.errors import DTypeError, ShapeError

torch = pytest.importorskip("torch")
# torch's own notes on its nested-tensor fast path and on mixing float and bool masks (ferro accepts both)
pytestmark = pytest.mark.filterwarnings("ignore:.*(nested_tensor|mismatched).*:UserWarning")

F64 = ferro.float64
E, HEADS, L, S, N = 8, 2, 3, 4, 2


def copy_into(fm: Any, tm: Any) -> None:
    """Load torch's state_dict values into the ferro module (same keys required)."""
    state = {k: ferro.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    assert sorted(fm.state_dict()) == sorted(state)
    fm.load_state_dict(state)


def leaf(a: np.ndarray) -> tuple[Any, Any]:
    return ferro.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def close(f: Any, t: Any, what: str, tol: float = 1e-10) -> None:
    assert f is not None and t is not None, what
    np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol, err_msg=what)


def check_param_grads(fm: Any, tm: Any) -> None:
    tparams = dict(tm.named_parameters())
    for name, p in fm.named_parameters():
        close(p.grad, tparams[name].grad, f"grad of {name}")


def masks(kind: str, rng: np.random.Generator, n: int = N, tgt: int = L, src: int = S) -> tuple[dict, dict]:
    """attn_mask / key_padding_mask of one kind, for ferro and torch."""
    f: dict[str, Any] = {}
    t: dict[str, Any] = {}
    if kind in ("bool", "bool+kpm"):
        m = rng.random((tgt, src)) < 0.4
        m[:, 0] = False  # every query keeps one key: no all -inf rows
        f["attn_mask"], t["attn_mask"] = ferro.tensor(m), torch.tensor(m)
    if kind in ("float3d", "float3d+kpm"):
        m = rng.standard_normal((n * HEADS, tgt, src))
        f["attn_mask"], t["attn_mask"] = ferro.tensor(m), torch.tensor(m)
    if kind.endswith("kpm"):
        m = np.zeros((n, src), bool)
        m[-1, -2:] = True
        f["key_padding_mask"], t["key_padding_mask"] = ferro.tensor(m), torch.tensor(m)
    if kind == "float_kpm":
        m = rng.standard_normal((n, src))
        f["key_padding_mask"], t["key_padding_mask"] = ferro.tensor(m), torch.tensor(m)
    return f, t


MASKS = ["none", "bool", "float3d", "kpm", "bool+kpm", "float3d+kpm", "float_kpm"]


# -- MultiheadAttention -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"kdim": 5, "vdim": 6}, {"bias": False}, {"add_bias_kv": True}])
def test_mha_parameters_match_torch(kwargs: dict[str, Any]) -> None:
    fm, tm = nn.MultiheadAttention(E, HEADS, **kwargs), torch.nn.MultiheadAttention(E, HEADS, **kwargs)
    assert [(n, list(p.shape)) for n, p in fm.named_parameters()] == \
        [(n, list(p.shape)) for n, p in tm.named_parameters()]


def test_mha_default_initialization() -> None:
    m = nn.MultiheadAttention(16, 4, add_bias_kv=True)
    w = m.in_proj_weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 48))  # Xavier-uniform of a (3E, E) matrix
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    assert 0 < np.std(m.bias_k.detach().numpy()) < 1


@pytest.mark.parametrize(("batch_first", "mask", "weights"),
                         list(itertools.product([False, True], MASKS, ["avg", "per_head", "none"])))
def test_mha_matches_torch(batch_first: bool, mask: str, weights: str) -> None:
    fm = nn.MultiheadAttention(E, HEADS, batch_first=batch_first, dtype=F64).eval()
    tm = torch.nn.MultiheadAttention(E, HEADS, batch_first=batch_first).double().eval()
    copy_into(fm, tm)
    rng = np.random.default_rng(0)
    qshape, kshape = ((N, L, E), (N, S, E)) if batch_first else ((L, N, E), (S, N, E))
    (fq, tq), (fk, tk), (fv, tv) = leaf(rng.standard_normal(qshape)), *(leaf(rng.standard_normal(kshape))
                                                                         for _ in range(2))
    fmask, tmask = masks(mask, rng)
    kw = {"need_weights": weights != "none", "average_attn_weights": weights == "avg"}
    fo, fw = fm(fq, fk, fv, **fmask, **kw)
    to, tw = tm(tq, tk, tv, **tmask, **kw)
    close(fo, to, "attn_output")
    if weights == "none":
        assert fw is None and tw is None
    else:
        assert list(fw.shape) == list(tw.shape)
        close(fw, tw, "attn_weights")
    g = rng.standard_normal(tuple(to.shape))
    (fo * ferro.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    for name, f, t in (("query", fq, tq), ("key", fk, tk), ("value", fv, tv)):
        close(f.grad, t.grad, f"grad of {name}")
    check_param_grads(fm, tm)


@pytest.mark.parametrize(("kwargs", "mask"), list(itertools.product(
    [{"kdim": 5, "vdim": 6}, {"bias": False}, {"add_bias_kv": True}, {"add_zero_attn": True},
     {"add_bias_kv": True, "add_zero_attn": True, "kdim": 5, "vdim": 5}], ["none", "bool+kpm", "float3d"])))
def test_mha_options_match_torch(kwargs: dict[str, Any], mask: str) -> None:
    fm = nn.MultiheadAttention(E, HEADS, dtype=F64, **kwargs).eval()
    tm = torch.nn.MultiheadAttention(E, HEADS, **kwargs).double().eval()
    copy_into(fm, tm)
    rng = np.random.default_rng(1)
    fq, tq = leaf(rng.standard_normal((L, N, E)))
    fk, tk = leaf(rng.standard_normal((S, N, kwargs.get("kdim", E))))
    fv, tv = leaf(rng.standard_normal((S, N, kwargs.get("vdim", E))))
    fmask, tmask = masks(mask, rng)
    (fo, fw), (to, tw) = fm(fq, fk, fv, **fmask), tm(tq, tk, tv, **tmask)
    close(fo, to, "attn_output")
    close(fw, tw, "attn_weights")
    ((fo ** 2).sum() + (fw ** 2).sum()).backward()
    ((to ** 2).sum() + (tw ** 2).sum()).backward()
    for name, f, t in (("query", fq, tq), ("key", fk, tk), ("value", fv, tv)):
        close(f.grad, t.grad, f"grad of {name}")
    check_param_grads(fm, tm)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_self_attention_and_unbatched_match_torch(need_weights: bool) -> None:
    fm = nn.MultiheadAttention(E, HEADS, dtype=F64).eval()
    tm = torch.nn.MultiheadAttention(E, HEADS).double().eval()
    copy_into(fm, tm)
    rng = np.random.default_rng(2)
    fx, tx = leaf(rng.standard_normal((L, E)))  # unbatched self-attention: query is key is value
    kpm = np.array([False, False, True])
    am = rng.standard_normal((HEADS, L, L))
    fo, fw = fm(fx, fx, fx, key_padding_mask=ferro.tensor(kpm), attn_mask=ferro.tensor(am),
                need_weights=need_weights, average_attn_weights=False)
    to, tw = tm(tx, tx, tx, key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am),
                need_weights=need_weights, average_attn_weights=False)
    assert list(fo.shape) == [L, E]
    close(fo, to, "attn_output")
    if need_weights:
        assert list(fw.shape) == [HEADS, L, L]
        close(fw, tw, "attn_weights")
    (fo ** 2).sum().backward()
    (to ** 2).sum().backward()
    close(fx.grad, tx.grad, "grad of the input")
    check_param_grads(fm, tm)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_causal_hint_matches_torch(need_weights: bool) -> None:
    fm = nn.MultiheadAttention(E, HEADS, batch_first=True, dtype=F64).eval()
    tm = torch.nn.MultiheadAttention(E, HEADS, batch_first=True).double().eval()
    copy_into(fm, tm)
    x = np.random.default_rng(3).standard_normal((N, L, E))
    fmask = nn.Transformer.generate_square_subsequent_mask(L, dtype=F64)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    np.testing.assert_array_equal(fmask.numpy(), tmask.numpy())
    fo, _ = fm(*(ferro.tensor(x),) * 3, attn_mask=fmask, is_causal=True, need_weights=need_weights)
    to, _ = tm(*(torch.tensor(x),) * 3, attn_mask=tmask, is_causal=True, need_weights=need_weights)
    close(fo, to, "attn_output")
    # a causal mask means: the first query sees only the first key, whatever comes later
    y = x.copy()
    y[:, 1:] += 1.0
    fo2, _ = fm(*(ferro.tensor(y),) * 3, attn_mask=fmask, is_causal=True, need_weights=need_weights)
    np.testing.assert_allclose(fo2.detach().numpy()[:, 0], fo.detach().numpy()[:, 0], atol=1e-12)


def test_mha_dropout_in_training_only() -> None:
    m = nn.MultiheadAttention(E, HEADS, dropout=1.0, dtype=F64)
    with ferro.no_grad():
        m.out_proj.bias.copy_(ferro.arange(E, dtype=F64))
    x = ferro.randn(L, N, E, dtype=F64)
    out, w = m(x, x, x)  # every attention weight dropped: the output is the output projection's bias
    np.testing.assert_allclose(out.detach().numpy(), np.broadcast_to(np.arange(E), (L, N, E)))
    assert not w.detach().numpy().any()
    m.eval()
    out, w = m(x, x, x)
    np.testing.assert_allclose(w.detach().numpy().sum(-1), 1.0)


def test_mha_gradcheck() -> None:
    m = nn.MultiheadAttention(4, 2, dtype=F64, add_bias_kv=True)
    q = ferro.randn(2, 1, 4, dtype=F64, requires_grad=True)
    kv = ferro.randn(3, 1, 4, dtype=F64, requires_grad=True)
    kpm = ferro.tensor([[False, False, True]])
    assert gradcheck(lambda q, kv: m(q, kv, kv, key_padding_mask=kpm)[0], [q, kv])


def test_mha_bad_arguments_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="greater than 0"):
        nn.MultiheadAttention(0, 1)
    m = nn.MultiheadAttention(E, HEADS)
    x = ferro.randn(L, N, E)
    with pytest.raises(ShapeError, match=r"attn_mask of shape \[3, 3\] should be \[3, 4\]"):
        m(x, ferro.randn(S, N, E), ferro.randn(S, N, E), attn_mask=ferro.zeros(L, L))
    with pytest.raises(ShapeError, match=r"key_padding_mask of shape \[2, 3\] should be \[2, 4\]"):
        m(x, ferro.randn(S, N, E), ferro.randn(S, N, E), key_padding_mask=ferro.zeros(N, L, dtype=ferro.bool_))
    with pytest.raises(ShapeError, match="should have 8 features"):
        m(ferro.randn(L, N, 5), x, x)
    with pytest.raises(ShapeError, match="different batch sizes"):
        m(x, ferro.randn(S, 3, E), ferro.randn(S, 3, E))
    with pytest.raises(ShapeError, match="3-D"):
        m(x, ferro.randn(S, E), ferro.randn(S, E))
    with pytest.raises(DTypeError, match="bool and floating"):
        m(x, x, x, attn_mask=ferro.zeros(L, L, dtype=ferro.int64))
    with pytest.raises(RuntimeError, match="is_causal needs attn_mask"):
        m(x, x, x, is_causal=True)


# -- Transformer layers --------------------------------------------------------------------------------


ENC_MASKS = ["none", "causal", "kpm", "causal+kpm", "bool"]


def encoder_masks(kind: str, seq: int, rng: np.random.Generator, prefix: str = "") -> tuple[dict, dict]:
    f: dict[str, Any] = {}
    t: dict[str, Any] = {}
    mask_key = "mask" if not prefix else f"{prefix}_mask"
    if kind.startswith("causal"):
        f[mask_key] = nn.Transformer.generate_square_subsequent_mask(seq, dtype=F64)
        t[mask_key] = torch.nn.Transformer.generate_square_subsequent_mask(seq, dtype=torch.float64)
        f[f"{prefix}_is_causal" if prefix else "is_causal"] = True
        t[f"{prefix}_is_causal" if prefix else "is_causal"] = True
    if kind == "bool":
        m = rng.random((seq, seq)) < 0.4
        m[:, 0] = False
        f[mask_key], t[mask_key] = ferro.tensor(m), torch.tensor(m)
    if kind.endswith("kpm"):
        m = np.zeros((N, seq), bool)
        m[-1, -2:] = True
        key = f"{prefix or 'src'}_key_padding_mask"
        f[key], t[key] = ferro.tensor(m), torch.tensor(m)
    return f, t


@pytest.mark.parametrize(("batch_first", "norm_first", "activation", "mask"), list(itertools.product(
    [False, True], [False, True], ["relu", "gelu"], ENC_MASKS)))
def test_encoder_matches_torch(batch_first: bool, norm_first: bool, activation: str, mask: str) -> None:
    kw = {"dim_feedforward": 16, "batch_first": batch_first, "norm_first": norm_first, "activation": activation}
    tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, HEADS, **kw), 2,
                                     norm=torch.nn.LayerNorm(E), enable_nested_tensor=False).double().eval()
    fm = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, **kw, dtype=F64), 2,
                               norm=nn.LayerNorm(E, dtype=F64)).eval()
    copy_into(fm, tm)
    rng = np.random.default_rng(4)
    fx, tx = leaf(rng.standard_normal((N, S, E) if batch_first else (S, N, E)))
    fmask, tmask = encoder_masks(mask, S, rng)
    fo, to = fm(fx, **fmask), tm(tx, **tmask)
    close(fo, to, "encoder output")
    g = rng.standard_normal(tuple(to.shape))
    (fo * ferro.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    close(fx.grad, tx.grad, "grad of the input")
    check_param_grads(fm, tm)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_unbatched_and_callable_activation_match_torch(norm_first: bool) -> None:
    tm = torch.nn.TransformerEncoderLayer(E, HEADS, 16, activation=torch.nn.functional.silu,
                                          norm_first=norm_first, bias=False).double().eval()
    fm = nn.TransformerEncoderLayer(E, HEADS, 16, activation=nn.functional.silu, norm_first=norm_first, bias=False,
                                    dtype=F64).eval()
    copy_into(fm, tm)
    fx, tx = leaf(np.random.default_rng(5).standard_normal((S, E)))
    fo, to = fm(fx), tm(tx)
    assert list(fo.shape) == [S, E]
    close(fo, to, "layer output")
    (fo ** 2).sum().backward()
    (to ** 2).sum().backward()
    close(fx.grad, tx.grad, "grad of the input")
    check_param_grads(fm, tm)


@pytest.mark.parametrize(("batch_first", "norm_first", "mask"), list(itertools.product(
    [False, True], [False, True], ["none", "causal", "causal+kpm"])))
def test_transformer_matches_torch(batch_first: bool, norm_first: bool, mask: str) -> None:
    kw = {"dim_feedforward": 16, "batch_first": batch_first, "norm_first": norm_first}
    tm = torch.nn.Transformer(E, HEADS, 2, 2, **kw).double().eval()
    fm = nn.Transformer(E, HEADS, 2, 2, **kw, dtype=F64).eval()
    copy_into(fm, tm)
    rng = np.random.default_rng(6)
    fs, ts = leaf(rng.standard_normal((N, S, E) if batch_first else (S, N, E)))
    ft, tt = leaf(rng.standard_normal((N, L, E) if batch_first else (L, N, E)))
    fmask, tmask = encoder_masks(mask, L, rng, prefix="tgt")
    if mask.endswith("kpm"):
        m = np.zeros((N, S), bool)
        m[0, -1] = True
        fmask["memory_key_padding_mask"], tmask["memory_key_padding_mask"] = ferro.tensor(m), torch.tensor(m)
        fmask["src_key_padding_mask"], tmask["src_key_padding_mask"] = ferro.tensor(m), torch.tensor(m)
    fo, to = fm(fs, ft, **fmask), tm(ts, tt, **tmask)
    close(fo, to, "transformer output")
    (fo ** 2).sum().backward()
    (to ** 2).sum().backward()
    close(fs.grad, ts.grad, "grad of src")
    close(ft.grad, tt.grad, "grad of tgt")
    check_param_grads(fm, tm)


def test_stacks_hold_independent_copies_of_the_layer() -> None:
    layer = nn.TransformerEncoderLayer(E, HEADS, 16)
    enc = nn.TransformerEncoder(layer, 3)
    ws = [lay.linear1.weight for lay in enc.layers]
    assert len({id(w) for w in ws}) == 3 and all(w is not layer.linear1.weight for w in ws)
    for w in ws[1:]:
        np.testing.assert_array_equal(w.detach().numpy(), ws[0].detach().numpy())
    assert [n for n, _ in enc.named_parameters()][:2] == ["layers.0.self_attn.in_proj_weight",
                                                          "layers.0.self_attn.in_proj_bias"]
    with ferro.no_grad():
        ws[0].add_(1.0)
    assert not np.allclose(ws[0].detach().numpy(), ws[1].detach().numpy())


def test_encoder_dropout_only_in_training() -> None:
    m = nn.TransformerEncoderLayer(E, HEADS, 16, dropout=0.5)
    x = ferro.randn(S, N, E)
    train_out = m(x).detach().numpy()
    m.eval()
    eval_out, eval_again = m(x).detach().numpy(), m(x).detach().numpy()
    np.testing.assert_array_equal(eval_out, eval_again)
    assert not np.allclose(train_out, eval_out)


def test_transformer_weights_start_xavier_uniform() -> None:
    m = nn.Transformer(16, 2, 1, 1, dim_feedforward=32)
    w = m.encoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound


def test_transformer_bad_arguments_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="activation should be relu/gelu"):
        nn.TransformerEncoderLayer(E, HEADS, activation="tanh")
    m = nn.Transformer(E, HEADS, 1, 1, dim_feedforward=16)
    with pytest.raises(ShapeError, match="batch number"):
        m(ferro.randn(S, 2, E), ferro.randn(L, 3, E))
    with pytest.raises(ShapeError, match="d_model=8"):
        m(ferro.randn(S, 2, 4), ferro.randn(L, 2, 4))
    with pytest.raises(RuntimeError, match="is_causal needs attn_mask"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, 16), 1)(ferro.randn(S, N, E), is_causal=True)
