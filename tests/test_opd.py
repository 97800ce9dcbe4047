"""Gated OPD (SEED.md Stage 2 step 5) and the OPID teacher-advantage mode, on hand-worked numbers."""

from __future__ import annotations

import math

import pytest
import torch

from seed_gym.trainer.losses import opd_loss, opd_token_loss, teacher_advantages


def sig(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# two samples, three token slots; sample 1 has 2 real tokens
LP = [[-1.0, -2.0, -0.5], [-0.3, -1.2, 0.0]]
TEACHER = [[-0.5, -2.5, -0.5], [-0.1, -1.2, -9.0]]
RESPONSE_MASK = [[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]


def tensors(teacher_mask=((1.0, 1.0, 1.0), (1.0, 1.0, 1.0))):
    lp = torch.tensor(LP, requires_grad=True)
    return lp, torch.tensor(TEACHER), torch.tensor(RESPONSE_MASK), torch.tensor(teacher_mask)


def test_gate_and_token_loss_by_hand():
    lp, teacher, _, _ = tensors()
    loss, gate, gap = opd_token_loss(lp, teacher, beta=5.0)
    expected_gap = [[0.5, -0.5, 0.0], [0.2, 0.0, -9.0]]
    torch.testing.assert_close(gap, torch.tensor(expected_gap))
    expected_gate = [[sig(2.5), sig(-2.5), 0.5], [sig(1.0), 0.5, sig(-45.0)]]
    torch.testing.assert_close(gate, torch.tensor(expected_gate))
    assert gate[0, 0].item() == pytest.approx(0.9241418, abs=1e-6)
    assert gate[0, 1].item() == pytest.approx(0.0758582, abs=1e-6)
    torch.testing.assert_close(
        loss, torch.tensor(expected_gate) * torch.tensor(expected_gap), rtol=1e-6, atol=1e-6
    )
    assert not gate.requires_grad and not gap.requires_grad


def test_opd_loss_token_mean_over_response_and_teacher_mask():
    # sample 1 has no skill: only sample 0's three tokens count
    lp, teacher, rmask, tmask = tensors(((1.0, 1.0, 1.0), (0.0, 0.0, 0.0)))
    total, stats = opd_loss(lp, teacher, rmask, tmask, beta=5.0)
    per_token = [sig(2.5) * 0.5, sig(-2.5) * -0.5, 0.5 * 0.0]
    assert total.item() == pytest.approx(sum(per_token) / 3, abs=1e-6)
    assert total.item() == pytest.approx((0.4620709 - 0.0379291) / 3, abs=1e-6)
    assert stats["opd/loss"] == pytest.approx(total.item())
    assert stats["opd/gate_mean"] == pytest.approx((sig(2.5) + sig(-2.5) + 0.5) / 3, abs=1e-6)
    assert stats["opd/active_ratio"] == pytest.approx(
        1 / 3
    )  # only gap 0.5 > 0 (gate 0.5 is not > 0.5)
    assert stats["opd/teacher_gap_mean"] == pytest.approx(0.0, abs=1e-7)
    assert stats["opd/teacher_tokens"] == 3


def test_padding_is_excluded_even_with_teacher_mask_one():
    lp, teacher, rmask, tmask = tensors()
    total, stats = opd_loss(lp, teacher, rmask, tmask, beta=5.0)
    # tokens: sample 0 all three, sample 1 the first two (the -9 gap sits on padding)
    per_token = [sig(2.5) * 0.5, sig(-2.5) * -0.5, 0.0, sig(1.0) * 0.2, 0.0]
    assert total.item() == pytest.approx(sum(per_token) / 5, abs=1e-6)
    assert stats["opd/teacher_tokens"] == 5
    assert stats["opd/active_ratio"] == pytest.approx(2 / 5)
    assert stats["opd/teacher_gap_mean"] == pytest.approx(
        (0.5 - 0.5 + 0.0 + 0.2 + 0.0) / 5, abs=1e-6
    )


def test_gradient_raises_the_sampled_token_scaled_by_the_gate():
    lp, teacher, rmask, tmask = tensors()
    total, _ = opd_loss(lp, teacher, rmask, tmask, beta=5.0)
    total.backward()
    _, gate, _ = opd_token_loss(lp.detach(), teacher, beta=5.0)
    expected = -gate * rmask * tmask / 5.0  # dL/dlogprob = -gate / n_tokens
    torch.testing.assert_close(lp.grad, expected)
    assert (lp.grad[rmask.bool()] < 0).all()  # descending the loss raises every logprob
    # strongest where the skill context agrees (gap > 0), weakest where it disagrees
    assert lp.grad[0, 0] < lp.grad[0, 2] < lp.grad[0, 1] < 0


def test_one_sgd_step_raises_the_sampled_token_probability_more_when_the_gate_is_open():
    torch.manual_seed(0)
    base = torch.randn(2, 5)  # two identical-position distributions over 5 tokens
    base[1] = base[0]
    sampled = torch.tensor([[3], [3]])
    logits = base.clone().requires_grad_(True)
    lp = torch.log_softmax(logits, -1).gather(-1, sampled)  # [2, 1]
    teacher = torch.stack([lp[0].detach() + 1.0, lp[1].detach() - 1.0])  # agree / disagree
    ones = torch.ones(2, 1)
    total, _ = opd_loss(lp, teacher, ones, ones, beta=5.0)
    total.backward()
    with torch.no_grad():
        new_lp = torch.log_softmax(logits - 1.0 * logits.grad, -1).gather(-1, sampled)
    rise = (new_lp - lp.detach()).squeeze(-1)
    assert rise[0] > 0 and rise[1] > 0  # the sampled token goes up in both cases...
    assert rise[0] > 10 * rise[1]  # ...much more where the gate is open (sig(5) vs sig(-5))


def test_teacher_logprobs_get_no_gradient():
    lp, teacher, rmask, tmask = tensors()
    teacher = teacher.clone().requires_grad_(True)
    total, _ = opd_loss(lp, teacher, rmask, tmask)
    total.backward()
    assert teacher.grad is None


def test_positive_only_keeps_the_denominator():
    lp, teacher, rmask, tmask = tensors()
    total, stats = opd_loss(lp, teacher, rmask, tmask, beta=5.0, positive_only=True)
    assert total.item() == pytest.approx((sig(2.5) * 0.5 + sig(1.0) * 0.2) / 5, abs=1e-6)
    total.backward()
    assert lp.grad[0, 1] == 0 and lp.grad[0, 2] == 0 and lp.grad[1, 1] == 0
    assert lp.grad[0, 0].item() == pytest.approx(-sig(2.5) / 5, abs=1e-6)
    assert stats["opd/active_ratio"] == pytest.approx(2 / 5)


def test_beta_and_num_tokens():
    lp, teacher, rmask, tmask = tensors(((1.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    total, stats = opd_loss(lp, teacher, rmask, tmask, beta=1.0, num_tokens=4)
    assert total.item() == pytest.approx(sig(0.5) * 0.5 / 4, abs=1e-6)
    assert stats["opd/gate_mean"] == pytest.approx(sig(0.5), abs=1e-6)


def test_empty_teacher_mask_gives_zero_loss_and_zero_metrics():
    lp, teacher, rmask, _ = tensors()
    total, stats = opd_loss(lp, teacher, rmask, torch.zeros(2, 3))
    assert total.item() == 0.0
    total.backward()
    assert lp.grad.abs().sum() == 0
    assert stats == {
        "opd/gate_mean": 0.0,
        "opd/active_ratio": 0.0,
        "opd/teacher_gap_mean": 0.0,
        "opd/teacher_tokens": 0.0,
        "opd/loss": 0.0,
    }


def test_teacher_advantage_mode_by_hand():
    adv = torch.tensor([[1.0, 1.0, 1.0], [-0.5, -0.5, 0.0]])
    old = torch.tensor(LP)
    teacher = torch.tensor(TEACHER)
    tmask = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    out = teacher_advantages(adv, teacher, old, tmask, weight=0.5)
    expected = [[1.0 + 0.25, 1.0 - 0.25, 1.0], [-0.5, -0.5, 0.0]]
    torch.testing.assert_close(out, torch.tensor(expected))
    clipped = teacher_advantages(adv, teacher, old, torch.ones(2, 3), weight=1.0, clip=0.3)
    torch.testing.assert_close(clipped, torch.tensor([[1.3, 0.7, 1.0], [-0.3, -0.5, -0.3]]))
