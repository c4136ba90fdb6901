"""ferro.nn layers against torch.nn: the same weights give the same outputs and gradients.

Each case builds the layer in both libraries with the same arguments, copies the ferro
weights into torch through ``load_state_dict`` (so the parameter and buffer names must
match torch's too), runs both in float64 and compares the output, the input gradients
and every parameter gradient.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import nn

torch = pytest.importorskip("torch")
tnn = torch.nn

rng = np.random.default_rng(0)


def r(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


def sig(*shape: int) -> np.ndarray:
    return 1 / (1 + np.exp(-r(*shape)))


def logp(*shape: int) -> np.ndarray:
    x = r(*shape)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def T(lib: Any, a: Any) -> Any:
    """An array as a tensor of ``lib`` (ferro.nn or torch.nn)."""
    return ferro.tensor(np.asarray(a)) if lib is nn else torch.tensor(np.asarray(a))


CW = np.array([0.3, 1.0, 2.0])
LABELS = np.array([0, 2, 1, 2, -100])
PAIR = np.array([1.0, -1.0, 1.0, -1.0])

#: name -> (layer in lib, inputs: float arrays get gradients, integer arrays do not)
CASES: dict[str, tuple[Callable[[Any], Any], list[np.ndarray]]] = {
    "Linear": (lambda lib: lib.Linear(5, 3), [r(4, 5)]),
    "Linear no bias 3d": (lambda lib: lib.Linear(5, 3, bias=False), [r(2, 4, 5)]),
    "Bilinear": (lambda lib: lib.Bilinear(3, 4, 2), [r(5, 3), r(5, 4)]),
    "Identity": (lambda lib: lib.Identity(7, k=1), [r(3)]),
    "Conv1d stride pad": (lambda lib: lib.Conv1d(2, 4, 3, stride=2, padding=1), [r(2, 2, 7)]),
    "Conv2d": (lambda lib: lib.Conv2d(2, 4, 3, padding=1), [r(2, 2, 5, 5)]),
    "Conv2d unbatched": (lambda lib: lib.Conv2d(2, 3, 2), [r(2, 4, 4)]),
    "Conv2d groups dilation": (lambda lib: lib.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=(1, 2), groups=2),
                               [r(2, 4, 6, 6)]),
    "Conv2d same reflect": (lambda lib: lib.Conv2d(2, 3, 3, padding="same", padding_mode="reflect"),
                            [r(1, 2, 5, 5)]),
    "Conv2d same even kernel": (lambda lib: lib.Conv2d(2, 3, 4, padding="same", bias=False), [r(1, 2, 5, 6)]),
    "Conv2d circular": (lambda lib: lib.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="circular"), [r(1, 2, 4, 5)]),
    "Conv2d replicate": (lambda lib: lib.Conv2d(2, 3, 3, padding=1, padding_mode="replicate"), [r(1, 2, 4, 4)]),
    "Conv3d": (lambda lib: lib.Conv3d(2, 2, 2), [r(1, 2, 3, 3, 3)]),
    "ConvTranspose1d": (lambda lib: lib.ConvTranspose1d(2, 3, 3, stride=2, output_padding=1), [r(2, 2, 4)]),
    "ConvTranspose2d groups": (lambda lib: lib.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1,
                                                               groups=2), [r(1, 4, 3, 3)]),
    "ConvTranspose2d dilation": (lambda lib: lib.ConvTranspose2d(2, 3, 2, dilation=2, bias=False), [r(1, 2, 3, 3)]),
    "MaxPool1d": (lambda lib: lib.MaxPool1d(3, stride=2, padding=1), [r(2, 3, 7)]),
    "MaxPool2d": (lambda lib: lib.MaxPool2d(2), [r(2, 3, 4, 4)]),
    "MaxPool2d dilation": (lambda lib: lib.MaxPool2d(2, stride=1, padding=1, dilation=2), [r(1, 2, 5, 5)]),
    "AvgPool1d": (lambda lib: lib.AvgPool1d(2), [r(2, 3, 6)]),
    "AvgPool2d pad": (lambda lib: lib.AvgPool2d(3, stride=2, padding=1), [r(1, 2, 5, 5)]),
    "AvgPool2d exclude pad": (lambda lib: lib.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
                              [r(1, 2, 5, 5)]),
    "MaxPool2d ceil": (lambda lib: lib.MaxPool2d(3, stride=2, ceil_mode=True), [r(1, 2, 6, 7)]),
    "MaxPool2d ceil pad": (lambda lib: lib.MaxPool2d(2, stride=2, padding=1, ceil_mode=True), [r(1, 2, 5, 4)]),
    "MaxPool1d ceil unbatched": (lambda lib: lib.MaxPool1d(2, stride=3, ceil_mode=True), [r(2, 8)]),
    "MaxPool3d": (lambda lib: lib.MaxPool3d(2, stride=1, padding=1), [r(1, 1, 3, 3, 3)]),
    "AvgPool2d ceil": (lambda lib: lib.AvgPool2d(3, stride=2, ceil_mode=True), [r(1, 2, 6, 7)]),
    "AvgPool2d ceil pad": (lambda lib: lib.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), [r(1, 2, 6, 6)]),
    "AvgPool2d ceil exclude pad": (lambda lib: lib.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                                             count_include_pad=False), [r(1, 2, 6, 6)]),
    "AvgPool2d divisor": (lambda lib: lib.AvgPool2d(2, padding=1, divisor_override=3), [r(1, 2, 4, 5)]),
    "AvgPool1d exclude pad unbatched": (lambda lib: lib.AvgPool1d(3, 2, 1, count_include_pad=False), [r(2, 7)]),
    "AvgPool3d": (lambda lib: lib.AvgPool3d((2, 1, 2), padding=(1, 0, 0)), [r(1, 2, 3, 2, 4)]),
    "AdaptiveAvgPool2d": (lambda lib: lib.AdaptiveAvgPool2d((2, 3)), [r(2, 2, 5, 7)]),
    "AdaptiveMaxPool2d": (lambda lib: lib.AdaptiveMaxPool2d(2), [r(1, 2, 5, 5)]),
    "ZeroPad2d": (lambda lib: lib.ZeroPad2d((1, 0, 2, 1)), [r(1, 2, 3, 3)]),
    "ConstantPad1d": (lambda lib: lib.ConstantPad1d(2, 3.5), [r(2, 3, 4)]),
    "ConstantPad3d": (lambda lib: lib.ConstantPad3d((1, 0, 0, 1, 1, 1), -1.0), [r(1, 1, 2, 2, 2)]),
    "ReflectionPad1d": (lambda lib: lib.ReflectionPad1d((2, 1)), [r(1, 2, 5)]),
    "ReflectionPad2d": (lambda lib: lib.ReflectionPad2d((1, 1, 2, 0)), [r(2, 2, 4, 4)]),
    "ReplicationPad2d unbatched": (lambda lib: lib.ReplicationPad2d(2), [r(2, 3, 3)]),
    "ReplicationPad3d": (lambda lib: lib.ReplicationPad3d(1), [r(1, 1, 2, 3, 2)]),
    "CircularPad2d": (lambda lib: lib.CircularPad2d((1, 2, 1, 0)), [r(1, 2, 3, 4)]),
    "Upsample nearest": (lambda lib: lib.Upsample(scale_factor=2), [r(1, 2, 3, 3)]),
    "Upsample bilinear size": (lambda lib: lib.Upsample(size=(5, 4), mode="bilinear"), [r(1, 2, 3, 3)]),
    "UpsamplingBilinear2d": (lambda lib: lib.UpsamplingBilinear2d(scale_factor=2), [r(1, 2, 3, 2)]),
    "UpsamplingNearest2d": (lambda lib: lib.UpsamplingNearest2d(size=(4, 5)), [r(1, 2, 2, 3)]),
    "PixelShuffle": (lambda lib: lib.PixelShuffle(2), [r(2, 8, 3, 2)]),
    "PixelUnshuffle unbatched": (lambda lib: lib.PixelUnshuffle(2), [r(2, 4, 6)]),
    "BatchNorm1d": (lambda lib: lib.BatchNorm1d(3), [r(6, 3)]),
    "BatchNorm1d 3d": (lambda lib: lib.BatchNorm1d(3, affine=False), [r(4, 3, 5)]),
    "BatchNorm2d": (lambda lib: lib.BatchNorm2d(3), [r(2, 3, 4, 4)]),
    "BatchNorm2d eval": (lambda lib: lib.BatchNorm2d(3, momentum=None).eval(), [r(2, 3, 2, 2)]),
    "BatchNorm2d untracked eval": (lambda lib: lib.BatchNorm2d(3, track_running_stats=False).eval(),
                                   [r(2, 3, 2, 2)]),
    "BatchNorm3d": (lambda lib: lib.BatchNorm3d(2, bias=False), [r(2, 2, 2, 2, 3)]),
    "InstanceNorm1d affine": (lambda lib: lib.InstanceNorm1d(3, affine=True), [r(2, 3, 6)]),
    "InstanceNorm2d": (lambda lib: lib.InstanceNorm2d(3), [r(2, 3, 4, 4)]),
    "InstanceNorm2d unbatched": (lambda lib: lib.InstanceNorm2d(3), [r(3, 4, 4)]),
    "InstanceNorm2d tracked": (lambda lib: lib.InstanceNorm2d(2, affine=True, track_running_stats=True),
                               [r(3, 2, 3, 3)]),
    "LayerNorm": (lambda lib: lib.LayerNorm((4, 5)), [r(3, 4, 5)]),
    "LayerNorm no bias": (lambda lib: lib.LayerNorm(5, bias=False), [r(3, 5)]),
    "LayerNorm no affine": (lambda lib: lib.LayerNorm(5, elementwise_affine=False), [r(3, 5)]),
    "GroupNorm": (lambda lib: lib.GroupNorm(2, 4), [r(2, 4, 3)]),
    "RMSNorm": (lambda lib: lib.RMSNorm(5), [r(3, 5)]),
    "RMSNorm eps 2d": (lambda lib: lib.RMSNorm([4, 5], eps=1e-3), [r(2, 4, 5)]),
    "LocalResponseNorm": (lambda lib: lib.LocalResponseNorm(3), [r(2, 5, 3)]),
    "Embedding padding": (lambda lib: lib.Embedding(10, 4, padding_idx=2), [np.array([[1, 2, 3], [2, 9, 0]])]),
    "Embedding scale_grad_by_freq": (lambda lib: lib.Embedding(6, 3, scale_grad_by_freq=True, padding_idx=0),
                                     [np.array([[1, 1, 0], [4, 1, 0]])]),
    "Flatten": (lambda lib: lib.Flatten(), [r(2, 3, 4)]),
    "Flatten dims": (lambda lib: lib.Flatten(0, 1), [r(2, 3, 4)]),
    "Unflatten": (lambda lib: lib.Unflatten(1, (2, 3)), [r(4, 6)]),
    "CosineSimilarity": (lambda lib: lib.CosineSimilarity(dim=1), [r(4, 5), r(4, 5)]),
    "PairwiseDistance": (lambda lib: lib.PairwiseDistance(p=1.0), [r(4, 5), r(4, 5)]),
    "PReLU": (lambda lib: lib.PReLU(), [r(3, 4)]),
    "PReLU channels": (lambda lib: lib.PReLU(3, init=0.1), [r(2, 3, 4)]),
    "Softmax": (lambda lib: lib.Softmax(dim=1), [r(3, 4)]),
    "LogSoftmax": (lambda lib: lib.LogSoftmax(dim=-1), [r(3, 4)]),
    "Softmin": (lambda lib: lib.Softmin(dim=0), [r(3, 4)]),
    "GLU": (lambda lib: lib.GLU(dim=0), [r(4, 3)]),
    "Hardshrink": (lambda lib: lib.Hardshrink(0.3), [r(3, 4)]),
    "Softshrink": (lambda lib: lib.Softshrink(), [r(3, 4)]),
    "Softmax2d": (lambda lib: lib.Softmax2d(), [r(2, 3, 2, 2)]),
    "LeakyReLU slope": (lambda lib: lib.LeakyReLU(0.2), [r(3, 4)]),
    "ELU alpha": (lambda lib: lib.ELU(alpha=0.5), [r(3, 4)]),
    "CELU alpha": (lambda lib: lib.CELU(2.0), [r(3, 4)]),
    "GELU tanh": (lambda lib: lib.GELU(approximate="tanh"), [r(3, 4)]),
    "Softplus": (lambda lib: lib.Softplus(beta=2.0, threshold=1.5), [r(3, 4)]),
    "Hardtanh": (lambda lib: lib.Hardtanh(-0.5, 0.7), [r(3, 4)]),
    "Threshold": (lambda lib: lib.Threshold(0.1, 20.0), [r(3, 4)]),
    "L1Loss": (lambda lib: lib.L1Loss(), [r(3, 4), r(3, 4)]),
    "MSELoss sum": (lambda lib: lib.MSELoss(reduction="sum"), [r(3, 4), r(3, 4)]),
    "MSELoss legacy none": (lambda lib: lib.MSELoss(reduce=False), [r(3, 4), r(3, 4)]),
    "NLLLoss weight": (lambda lib: lib.NLLLoss(weight=T(lib, CW)), [logp(5, 3), LABELS]),
    "CrossEntropyLoss": (lambda lib: lib.CrossEntropyLoss(), [r(5, 3), np.array([0, 2, 1, 2, 1])]),
    "CrossEntropyLoss smoothing": (lambda lib: lib.CrossEntropyLoss(weight=T(lib, CW), label_smoothing=0.1),
                                   [r(5, 3), LABELS]),
    "CrossEntropyLoss probs": (lambda lib: lib.CrossEntropyLoss(reduction="sum"), [r(4, 3), np.exp(logp(4, 3))]),
    "BCELoss": (lambda lib: lib.BCELoss(), [sig(3, 4), sig(3, 4)]),
    "BCEWithLogitsLoss": (lambda lib: lib.BCEWithLogitsLoss(pos_weight=T(lib, np.full(4, 2.0))),
                          [r(3, 4), sig(3, 4)]),
    "HuberLoss": (lambda lib: lib.HuberLoss(delta=0.5), [r(3, 4), r(3, 4)]),
    "SmoothL1Loss": (lambda lib: lib.SmoothL1Loss(beta=0.5), [r(3, 4), r(3, 4)]),
    "KLDivLoss": (lambda lib: lib.KLDivLoss(reduction="batchmean"), [logp(3, 4), np.exp(logp(3, 4))]),
    "KLDivLoss log_target": (lambda lib: lib.KLDivLoss(reduction="sum", log_target=True), [logp(3, 4), logp(3, 4)]),
    "CosineEmbeddingLoss": (lambda lib: lib.CosineEmbeddingLoss(margin=0.2), [r(4, 5), r(4, 5), PAIR]),
    "MarginRankingLoss": (lambda lib: lib.MarginRankingLoss(margin=0.1), [r(4), r(4), PAIR]),
}

#: every table activation with its default arguments
ACTIVATIONS = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "CELU", "SELU", "GELU", "SiLU", "Mish", "Softplus", "Softsign",
               "Hardtanh", "Hardsigmoid", "Hardswish", "LogSigmoid", "Tanhshrink", "Sigmoid", "Tanh"]
for _name in ACTIVATIONS:
    CASES[f"{_name} default"] = ((lambda n: lambda lib: getattr(lib, n)())(_name), [r(3, 4) * 4])


def pair(build: Callable[[Any], Any]) -> tuple[Any, Any]:
    """The layer in ferro (float64) and in torch with ferro's weights and buffers."""
    ferro.manual_seed(0)
    f = build(nn).double()
    t = build(tnn).double()
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in f.state_dict().items()})
    assert [n for n, _ in f.named_parameters()] == [n for n, _ in t.named_parameters()]
    return f, t


def run(f: Any, t: Any, arrays: list[np.ndarray]) -> None:
    fin = [ferro.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    tin = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    fo, to = f(*fin), t(*tin)
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=1e-7, atol=1e-9)
    g = rng.standard_normal(tuple(to.shape))
    (fo * ferro.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    for i, (a, b) in enumerate(zip(fin, tin)):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=f"input {i}")
    for (name, p), q in zip(f.named_parameters(), t.parameters()):
        if q.grad is None:
            assert p.grad is None, name
        else:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=name)
    for (name, b), c in zip(f.named_buffers(), t.buffers()):
        np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=1e-7, atol=1e-9, err_msg=name)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel", "ignore:size_average and reduce")
@pytest.mark.parametrize("name", list(CASES))
def test_layer_matches_torch(name: str) -> None:
    build, arrays = CASES[name]
    run(*pair(build), arrays)


# -- gradcheck ------------------------------------------------------------------------------


def functional_call(module: nn.Module, names: list[str], params: tuple[Any, ...], *inputs: Any) -> Any:
    """``module(*inputs)`` with the named parameters replaced by ``params`` (as torch.func.functional_call)."""
    saved = []
    for name, p in zip(names, params):
        owner = module.get_submodule(name.rpartition(".")[0])
        attr = name.rpartition(".")[2]
        saved.append((owner, attr, owner._parameters[attr]))
        owner._parameters[attr] = p
    try:
        return module(*inputs)
    finally:
        for owner, attr, p in saved:
            owner._parameters[attr] = p


GRADCHECK: dict[str, tuple[Callable[[], Any], list[np.ndarray]]] = {
    "Linear": (lambda: nn.Linear(3, 2), [r(2, 3)]),
    "Bilinear": (lambda: nn.Bilinear(2, 3, 2), [r(2, 2), r(2, 3)]),
    "Conv2d groups stride": (lambda: nn.Conv2d(2, 2, 2, stride=2, groups=2, padding=1), [r(1, 2, 3, 3)]),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 1, 2, stride=2), [r(1, 2, 2, 2)]),
    "BatchNorm2d train": (lambda: nn.BatchNorm2d(2), [r(2, 2, 2, 2)]),
    "LayerNorm": (lambda: nn.LayerNorm(3), [r(2, 3)]),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), [r(2, 4, 2)]),
    "PReLU": (lambda: nn.PReLU(2), [r(2, 2, 3)]),
    "Embedding": (lambda: nn.Embedding(4, 3), [np.array([0, 3, 3])]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck(name: str) -> None:
    build, arrays = GRADCHECK[name]
    m = build().double()
    names = [n for n, _ in m.named_parameters()]
    inputs = [ferro.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    params = [p.detach().clone().requires_grad_(True) for p in m.parameters()]
    k = len(inputs)
    assert ferro.autograd.gradcheck(lambda *a: functional_call(m, names, a[k:], *a[:k]), [*inputs, *params])


# -- running statistics, dropout ----------------------------------------------------------------


@pytest.mark.parametrize("momentum", [0.1, None, 0.5])
def test_batchnorm_running_stats_follow_torch(momentum: float | None) -> None:
    f, t = pair(lambda lib: lib.BatchNorm2d(3, momentum=momentum))
    for _ in range(3):
        x = r(4, 3, 2, 2) * 3 + 1
        np.testing.assert_allclose(f(ferro.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-7, atol=1e-9)
    for (name, a), b in zip(f.named_buffers(), t.buffers()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, err_msg=name)
    assert f.num_batches_tracked.item() == 3
    f.eval(), t.eval()
    x = r(2, 3, 2, 2)
    np.testing.assert_allclose(f(ferro.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-7)
    before = f.running_mean.numpy().copy()
    f(ferro.tensor(x))
    np.testing.assert_array_equal(f.running_mean.numpy(), before)  # eval mode leaves the stats alone
    f.reset_running_stats()
    assert f.num_batches_tracked.item() == 0 and not f.running_mean.numpy().any()


def test_instancenorm_running_stats_follow_torch() -> None:
    f, t = pair(lambda lib: lib.InstanceNorm1d(2, track_running_stats=True))
    for _ in range(2):
        x = r(3, 2, 5) + 2
        f(ferro.tensor(x)), t(torch.tensor(x))
    for (name, a), b in zip(f.named_buffers(), t.buffers()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, err_msg=name)
    f.eval(), t.eval()
    x = r(2, 2, 5)
    np.testing.assert_allclose(f(ferro.tensor(x)).numpy(), t(torch.tensor(x)).numpy(), rtol=1e-7)


def test_batchnorm_checks_its_input() -> None:
    bn = nn.BatchNorm2d(3)
    with pytest.raises(ferro.errors.ShapeError, match=r"expected 4D input \(got 3D input\)"):
        bn(ferro.randn(3, 2, 2))
    with pytest.raises(ferro.errors.ShapeError, match="expected 3 channels"):
        bn(ferro.randn(2, 4, 2, 2))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(ferro.randn(1, 3))


def test_dropout_train_and_eval() -> None:
    ferro.manual_seed(1)
    d = nn.Dropout(0.3)
    x = ferro.ones(20000)
    y = d(x).numpy()
    zero = y == 0
    assert abs(zero.mean() - 0.3) < 0.02  # 4.6 standard deviations of a binomial share
    np.testing.assert_allclose(y[~zero], 1 / 0.7)
    d.eval()
    assert d(x) is x
    d2 = nn.Dropout2d(0.5)
    y2 = d2(ferro.ones(8, 16, 3, 3)).numpy()
    per_channel = y2.reshape(8, 16, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()  # whole channels, scaled by 2
    assert 0 < (per_channel == 0).all(-1).mean() < 1
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


@pytest.mark.parametrize(("layer", "shape", "channel_dims"), [
    (lambda: nn.Dropout1d(0.5), (8, 16, 5), 2), (lambda: nn.Dropout1d(0.5), (16, 5), 1),
    (lambda: nn.Dropout3d(0.5), (4, 16, 2, 3, 2), 2), (lambda: nn.Dropout2d(0.5), (16, 3, 3), 1),
])
def test_channel_dropouts_drop_whole_channels(layer: Callable[[], Any], shape: tuple[int, ...],
                                              channel_dims: int) -> None:
    y = layer()(ferro.ones(*shape)).numpy().reshape(*shape[:channel_dims], -1)
    dropped, kept = (y == 0).all(-1), (y == 2).all(-1)
    assert (dropped | kept).all() and dropped.any() and kept.any()
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.Dropout1d()(ferro.ones(2, 3, 4, 5))


def test_dropout_gradient_uses_the_same_mask() -> None:
    x = ferro.ones(1000, requires_grad=True)
    y = nn.Dropout(0.5)(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


# -- layer specifics ----------------------------------------------------------------------------


def test_conv_transpose_output_size_like_torch() -> None:
    f, t = pair(lambda lib: lib.ConvTranspose2d(2, 3, 3, stride=2, padding=1))
    x = r(1, 2, 3, 4)
    fo = f(ferro.tensor(x), output_size=[6, 8])
    to = t(torch.tensor(x), output_size=[6, 8])
    assert tuple(fo.shape) == tuple(to.shape) == (1, 3, 6, 8)
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="valid sizes range from 5 to 6"):
        f(ferro.tensor(x), output_size=[9, 8])


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool_indices_like_torch(ceil_mode: bool) -> None:
    x = np.round(r(2, 3, 5, 6), 1)  # rounding makes ties: the first maximum wins in both
    fo, fi = nn.MaxPool2d(3, stride=2, padding=1, return_indices=True, ceil_mode=ceil_mode)(ferro.tensor(x))
    to, ti = tnn.MaxPool2d(3, stride=2, padding=1, return_indices=True, ceil_mode=ceil_mode)(torch.tensor(x))
    np.testing.assert_array_equal(fo.numpy(), to.numpy())
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())
    assert fi.dtype is ferro.int64
    fo1, fi1 = nn.MaxPool1d(2, return_indices=True)(ferro.tensor(x[0, 0]))
    to1, ti1 = tnn.MaxPool1d(2, return_indices=True)(torch.tensor(x[0, 0]))
    np.testing.assert_array_equal(fo1.numpy(), to1.numpy())
    np.testing.assert_array_equal(fi1.numpy(), ti1.numpy())


def test_embedding_max_norm_and_from_pretrained() -> None:
    f, t = pair(lambda lib: lib.Embedding(6, 3, max_norm=1.0))
    idx = np.array([0, 2, 2, 5])
    np.testing.assert_allclose(f(ferro.tensor(idx)).detach().numpy(), t(torch.tensor(idx)).detach().numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(f.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-6)
    w = ferro.tensor(r(4, 2))
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad and e.weight.shape == (4, 2)
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
    emb = nn.Embedding(5, 2, padding_idx=-1)
    assert emb.padding_idx == 4 and not emb.weight[4].detach().numpy().any()


# Those with an in-place function (F.relu_...) write through it; ReLU6, SiLU and Hardswish copy the result in.
INPLACE_ACTIVATIONS = [("ReLU", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("CELU", (0.5,)), ("SELU", ()),
                       ("Hardtanh", (-0.5, 0.5)), ("Threshold", (0.1, -1.0)), ("ReLU6", ()), ("SiLU", ()),
                       ("Hardswish", ())]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,args", INPLACE_ACTIVATIONS)
def test_inplace_activation_writes_its_input_and_differentiates(name: str, args: tuple, dtype: str) -> None:
    x = (r(2, 3, 4) * 2).astype(dtype)
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fh, th = fx * 2, tx * 2
    fo, to = getattr(nn, name)(*args, inplace=True)(fh), getattr(tnn, name)(*args, inplace=True)(th)
    assert fo is fh and fh._vc[0] == 1
    np.testing.assert_allclose(fh.detach().numpy(), th.detach().numpy(), rtol=1e-6)
    g = r(2, 3, 4).astype(dtype)
    fo.backward(ferro.tensor(g))
    to.backward(torch.tensor(g))
    # float32: PyTorch's ELU family differentiates through the output, ferro's through the input
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-10}
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **tol)
    with pytest.raises(RuntimeError, match="leaf Variable"):  # refused before anything is written
        getattr(nn, name)(*args, inplace=True)(fx)
    np.testing.assert_array_equal(fx.detach().numpy(), x)


def test_softmax_without_dim_warns_and_picks_torchs_dim() -> None:
    for shape in [(4,), (2, 3), (2, 3, 4), (2, 2, 3, 4)]:
        x = r(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension"):
            fo = nn.Softmax()(ferro.tensor(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            to = tnn.Softmax()(torch.tensor(x))
        np.testing.assert_allclose(fo.numpy(), to.numpy(), rtol=1e-7)


def test_layer_argument_errors() -> None:
    with pytest.raises(ValueError, match=r"in_channels \(3\) must be divisible by groups \(2\)"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="not supported for strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="num_channels"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ferro.errors.ShapeError, match=r"4 channels \(dim 1\), got shape \[2, 6, 3\]"):
        nn.GroupNorm(2, 4)(ferro.randn(2, 6, 3))
    with pytest.raises(ferro.errors.ShapeError, match="has 4 features but weight"):
        nn.Linear(3, 2)(ferro.randn(2, 4))
    with pytest.raises(ValueError, match="pad should be at most half"):
        nn.MaxPool2d(2, padding=2)
    with pytest.raises(ValueError, match=r"expected 3D or 4D input, got 2D"):
        nn.MaxPool2d(2, ceil_mode=True)(ferro.randn(4, 4))
    with pytest.raises(TypeError, match="unexpected keyword argument 'slope'"):
        nn.LeakyReLU(slope=0.1)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="avg")


REPRS: list[Callable[[Any], Any]] = [
    lambda lib: lib.Linear(3, 2, bias=False),
    lambda lib: lib.Bilinear(2, 3, 4),
    lambda lib: lib.Conv2d(3, 8, 3),
    lambda lib: lib.Conv2d(4, 8, (3, 5), stride=2, padding=(1, 2), dilation=2, groups=2, bias=False,
                           padding_mode="reflect"),
    lambda lib: lib.Conv1d(2, 2, 3, padding="same"),
    lambda lib: lib.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
    lambda lib: lib.MaxPool2d(2),
    lambda lib: lib.MaxPool1d(3, stride=1, padding=1),
    lambda lib: lib.AvgPool2d(3, padding=1),
    lambda lib: lib.AdaptiveAvgPool2d((1, 1)),
    lambda lib: lib.AdaptiveMaxPool2d(3),
    lambda lib: lib.BatchNorm1d(4, momentum=None, affine=False),
    lambda lib: lib.InstanceNorm2d(3),
    lambda lib: lib.LayerNorm([2, 3]),
    lambda lib: lib.GroupNorm(2, 4),
    lambda lib: lib.RMSNorm(4, eps=1e-6),
    lambda lib: lib.LocalResponseNorm(2),
    lambda lib: lib.Dropout(0.2),
    lambda lib: lib.Dropout2d(),
    lambda lib: lib.Dropout1d(0.1, inplace=True),
    lambda lib: lib.ZeroPad2d((1, 0, 2, 1)),
    lambda lib: lib.ConstantPad2d(1, 2.5),
    lambda lib: lib.ReflectionPad1d(3),
    lambda lib: lib.ReplicationPad3d((1, 2, 3, 4, 5, 6)),
    lambda lib: lib.CircularPad2d(2),
    lambda lib: lib.Upsample(scale_factor=(2, 3), mode="bilinear"),
    lambda lib: lib.Upsample(size=7),
    lambda lib: lib.UpsamplingBilinear2d(scale_factor=2),
    lambda lib: lib.PixelShuffle(3),
    lambda lib: lib.PixelUnshuffle(2),
    lambda lib: lib.Embedding(10, 3, padding_idx=0, max_norm=2.0),
    lambda lib: lib.Embedding(10, 3, norm_type=1.0, scale_grad_by_freq=True),
    lambda lib: lib.Flatten(),
    lambda lib: lib.Unflatten(1, (2, 3)),
    lambda lib: lib.ReLU(inplace=True),
    lambda lib: lib.LeakyReLU(0.2, inplace=True),
    lambda lib: lib.GELU(approximate="tanh"),
    lambda lib: lib.Softplus(beta=2),
    lambda lib: lib.Hardtanh(-2.0, 2.0),
    lambda lib: lib.Threshold(0.1, 0.0),
    lambda lib: lib.Softmax(dim=-1),
    lambda lib: lib.Mish(),
    lambda lib: lib.SiLU(inplace=True),
    lambda lib: lib.PReLU(3),
    lambda lib: lib.Hardshrink(0.3),
    lambda lib: lib.Softshrink(),
    lambda lib: lib.Softmax2d(),
    lambda lib: lib.CrossEntropyLoss(label_smoothing=0.1),
    lambda lib: lib.Identity(),
    *[(lambda n: lambda lib: getattr(lib, n)())(n) for n in ACTIVATIONS],
]


@pytest.mark.parametrize("i", range(len(REPRS)))
def test_repr_matches_torch(i: int) -> None:
    assert repr(REPRS[i](nn)) == repr(REPRS[i](tnn))
