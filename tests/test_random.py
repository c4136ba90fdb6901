"""Random sampling: generators, reproducibility after restoring state, distributions."""

from __future__ import annotations

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F


def test_generator_streams_are_reproducible_and_independent() -> None:
    g1, g2 = ferro.Generator().manual_seed(5), ferro.Generator().manual_seed(5)
    assert (ferro.rand(8, generator=g1) == ferro.rand(8, generator=g2)).all().item()
    ferro.manual_seed(1)
    expected = ferro.rand(3)
    ferro.manual_seed(1)
    ferro.randn(4, generator=g1)  # drawing from g1 leaves the device's own stream alone
    assert (ferro.rand(3) == expected).all().item()
    state = g1.get_state()
    a = ferro.randn(5, generator=g1)
    g1.set_state(state)
    assert (ferro.randn(5, generator=g1) == a).all().item()
    assert g1.initial_seed() == 5 and repr(g1) == "<ferro.Generator device=cpu>"


def test_dropout_masks_repeat_after_restoring_the_state() -> None:
    x = ferro.ones(1000)
    state = ferro.get_rng_state()
    a = F.dropout(x, 0.5)
    ferro.set_rng_state(state)
    assert (F.dropout(x, 0.5) == a).all().item()


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_frequencies(replacement: bool) -> None:
    ferro.manual_seed(0)
    p = ferro.tensor([0.1, 0.0, 0.6, 0.3])
    if replacement:
        draws = ferro.multinomial(p, 40000, replacement=True).numpy()
        np.testing.assert_allclose(np.bincount(draws, minlength=4) / 40000, [0.1, 0.0, 0.6, 0.3], atol=0.01)
    else:
        counts = np.zeros(4)
        for _ in range(2000):
            counts[ferro.multinomial(p, 1).item()] += 1
        np.testing.assert_allclose(counts / 2000, [0.1, 0.0, 0.6, 0.3], atol=0.03)
        three = ferro.multinomial(p, 3).tolist()
        assert sorted(three) == [0, 2, 3], "without replacement: distinct, never a zero-weight category"
    with pytest.raises(ferro.errors.ShapeError, match="without replacement"):
        ferro.multinomial(p, 5)
    rows = ferro.multinomial(ferro.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), 1)
    assert rows.shape == (2, 1) and rows[1].item() == 2


def test_distributions() -> None:
    ferro.manual_seed(3)
    b = ferro.bernoulli(ferro.full((40000,), 0.3))
    assert abs(b.mean().item() - 0.3) < 0.01 and set(np.unique(b.numpy())) <= {0.0, 1.0}
    n = ferro.normal(ferro.zeros(40000) + 2, 3.0).numpy()
    assert abs(n.mean() - 2) < 0.05 and abs(n.std() - 3) < 0.05
    assert ferro.normal(0.0, 1.0, (2, 3)).shape == (2, 3)
    perm = ferro.randperm(50)
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))
    u = ferro.empty(40000).uniform_(-2, 3)
    assert u.amin().item() >= -2 and u.amax().item() < 3 and abs(u.mean().item() - 0.5) < 0.05
    assert abs(ferro.empty(40000, dtype=ferro.float64).normal_(1, 2).numpy().std() - 2) < 0.05
    assert set(np.unique(ferro.empty(100).bernoulli_(0.5).numpy())) <= {0.0, 1.0}
    with pytest.raises(RuntimeError, match="leaf"):
        ferro.zeros(3, requires_grad=True).uniform_()


def test_restoring_states_skips_a_device_this_machine_lacks_with_a_warning() -> None:
    ferro.manual_seed(3)
    states = ferro.random.get_all_rng_states()
    expected = ferro.rand(4).tolist()
    states["devices"]["nosuchbackend:0"] = b"\x00"
    with pytest.warns(RuntimeWarning, match="'nosuchbackend:0' was not restored"):
        ferro.random.set_all_rng_states(states)
    assert ferro.rand(4).tolist() == expected, "the devices that exist are restored"
