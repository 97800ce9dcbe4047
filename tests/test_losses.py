"""Loss functions against values worked out by hand."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from seed_gym.trainer.losses import (  # noqa: E402
    broadcast_to_tokens,
    entropy_bonus,
    group_advantages,
    kl_k3,
    masked_mean,
    ppo_clip_loss,
    ppo_clip_token_loss,
    token_mean,
)


def t(*xs):
    return torch.tensor(xs, dtype=torch.float32)


# --- group advantages ---------------------------------------------------------------------------
def test_group_advantages_std_normalized_by_hand():
    # group a: returns 0, 10 -> mean 5, unbiased std sqrt(50) = 7.0711 -> -/+ 0.70711
    # group b: returns 1, 2, 3 -> mean 2, std 1 -> -1, 0, 1
    adv = group_advantages(t(0, 10, 1, 2, 3), ["a", "a", "b", "b", "b"], eps=0.0)
    s = 5 / math.sqrt(50)
    assert adv.tolist() == pytest.approx([-s, s, -1.0, 0.0, 1.0], abs=1e-6)


def test_group_advantages_mean_only():
    adv = group_advantages(t(0, 10, 1, 2, 3), [0, 0, 1, 1, 1], std_normalize=False)
    assert adv.tolist() == pytest.approx([-5.0, 5.0, -1.0, 0.0, 1.0])


def test_group_advantages_interleaved_groups():
    adv = group_advantages(t(1, 5, 3, 5), ["x", "y", "x", "y"], std_normalize=False)
    assert adv.tolist() == pytest.approx([-1.0, 0.0, 1.0, 0.0])


def test_all_equal_group_and_singletons_give_zero():
    adv = group_advantages(t(10, 10, 10, 7), ["a", "a", "a", "b"])
    assert adv.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert torch.isfinite(adv).all()


def test_empty_input():
    adv = group_advantages(torch.zeros(0), [])
    assert adv.shape == (0,)


def test_group_advantages_shape_mismatch():
    with pytest.raises(ValueError, match="group ids"):
        group_advantages(t(1, 2), ["a"])


def test_broadcast_to_tokens():
    mask = t(1, 1, 0, 1, 0, 0).view(2, 3)
    assert broadcast_to_tokens(t(2, -1), mask).tolist() == [[2, 2, 0], [-1, 0, 0]]


# --- aggregation --------------------------------------------------------------------------------
def test_token_mean_weighs_tokens_not_sequences():
    values = t(1, 1, 1, 4, 0, 0).view(2, 3)
    mask = t(1, 1, 1, 1, 0, 0).view(2, 3)
    assert float(token_mean(values, mask)) == pytest.approx(7 / 4)  # sequence-mean would be 2.5
    assert float(token_mean(values, mask, num_tokens=8)) == pytest.approx(7 / 8)
    assert float(masked_mean(values, torch.zeros_like(mask))) == 0.0


# --- PPO-clip -----------------------------------------------------------------------------------
def _lp(ratios):
    return torch.log(torch.tensor([ratios], dtype=torch.float32))


def test_ppo_clip_cases_by_hand():
    # columns: (ratio, advantage) -> loss
    #  1.0, +1 -> -1.0 (inside the trust region)
    #  1.5, +1 -> -1.2 (clipped at 1 + 0.2; clip active)
    #  0.5, +1 -> -0.5 (ratio below 1 - eps with A > 0: unclipped term is the max)
    #  0.5, -1 -> +0.8 (clipped at 1 - 0.2; clip active)
    #  2.0, -1 -> +2.0 (A < 0, ratio large: the unclipped term wins, below the dual bound 3)
    #  5.0, -1 -> +3.0 (dual clip: bounded by -A * 3)
    #  5.0, -2 -> +6.0 (dual clip scales with |A|)
    ratios = [1.0, 1.5, 0.5, 0.5, 2.0, 5.0, 5.0]
    adv = torch.tensor([[1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -2.0]])
    old = torch.zeros(1, 7)
    loss, clipped, dual = ppo_clip_token_loss(
        _lp(ratios), old, adv, clip_low=0.2, clip_high=0.2, dual_clip=3.0
    )
    assert loss[0].tolist() == pytest.approx([-1.0, -1.2, -0.5, 0.8, 2.0, 3.0, 6.0], abs=1e-5)
    assert clipped[0].tolist() == [False, True, False, True, False, False, False]
    assert dual[0].tolist() == [False, False, False, False, False, True, True]


def test_ppo_without_dual_clip_and_asymmetric_clip():
    loss, _, dual = ppo_clip_token_loss(
        _lp([5.0, 1.5]),
        torch.zeros(1, 2),
        torch.tensor([[-1.0, 1.0]]),
        clip_low=0.2,
        clip_high=0.28,
        dual_clip=None,
    )
    assert loss[0].tolist() == pytest.approx([5.0, -1.28], abs=1e-5)
    assert not dual.any()
    with pytest.raises(ValueError, match="dual_clip"):
        ppo_clip_token_loss(_lp([1.0]), torch.zeros(1, 1), torch.ones(1, 1), dual_clip=0.5)


def test_ppo_clip_loss_token_mean_and_gradient():
    lp = torch.zeros(2, 3, requires_grad=True)  # ratio 1 everywhere
    old = torch.zeros(2, 3)
    adv = torch.tensor([[1.0, 1.0, 1.0], [-2.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    loss, stats = ppo_clip_loss(lp, old, adv, mask)
    # token mean: (-1 -1 -1 + 2) / 4
    assert float(loss) == pytest.approx(-0.25)
    assert stats["clip_frac"] == 0.0 and stats["approx_kl"] == pytest.approx(0.0)
    loss.backward()
    # d loss / d lp = -A * ratio / 4 on real tokens, 0 on padding
    assert lp.grad.flatten().tolist() == pytest.approx([-0.25, -0.25, -0.25, 0.5, 0.0, 0.0])


def test_clipped_tokens_have_no_gradient():
    lp = torch.log(torch.tensor([[1.5]])).requires_grad_(True)
    loss, stats = ppo_clip_loss(lp, torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1))
    loss.backward()
    assert float(lp.grad) == 0.0
    assert stats["clip_frac"] == 1.0


# --- KL and entropy -----------------------------------------------------------------------------
def test_kl_k3_by_hand():
    lp = torch.tensor([[0.0, math.log(0.5), math.log(0.25)]])
    ref = torch.tensor([[0.0, math.log(0.25), math.log(0.5)]])
    # d = ref - lp: 0, -ln2, +ln2 -> e^d - d - 1
    expected = [0.0, 0.5 + math.log(2) - 1, 2 - math.log(2) - 1]
    assert kl_k3(lp, ref)[0].tolist() == pytest.approx(expected, abs=1e-6)
    assert (kl_k3(torch.randn(4, 5), torch.randn(4, 5)) >= 0).all()


def test_entropy_bonus():
    ent = torch.tensor([[1.0, 3.0], [2.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    assert float(entropy_bonus(ent, mask)) == pytest.approx(2.0)


def test_kl_k3_value_is_clamped_as_verl():
    lp = torch.tensor([[0.0, 0.0]])
    ref = torch.tensor([[-30.0, 5.0]])
    # log-ratio -30 -> clamped to -20 -> k3 = e^-20 + 20 - 1 = 19; +5 -> e^5 - 6 = 142.4
    assert kl_k3(lp, ref, max_value=None)[0].tolist() == pytest.approx([19.0, 142.413], abs=1e-3)
    assert kl_k3(lp, ref)[0].tolist() == pytest.approx([10.0, 10.0])  # low_var_kl's value clamp
