"""SEED's instruments: the skill's own effect on the teacher (teacher minus the sampling policy,
on forks and by outcome), the shuffled-skill control, and the gradient probe."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seed_gym.trainer.algorithms.seed.skill_effect import control_skills, skill_gap_metrics
from seed_gym.trainer.trajectory import StepSample, Trajectory
from seed_gym.trainer.update import adamw_step_stats, gradient_probe


def step(old: list[float]) -> StepSample:
    return StepSample([], [1], [2] * len(old), old, "", "", "a", True, 0.0)


def traj(task: str, won: bool, *steps: StepSample) -> Trajectory:
    return Trajectory(f"{task}-{won}", task, task, "", "", 0, list(steps), won=won)


def test_skill_gap_by_hand():
    # won: tokens at -0.05 (no fork) and -1.0 (fork); the teacher moves them by +0.01 and +0.5
    won = traj("a", True, step([-0.05, -1.0]))
    # lost: two steps; the second is not scored (no skill)
    lost = traj("b", False, step([-2.0, -0.01, -0.5]), step([-3.0]))
    teacher = [[[-0.04, -0.5]], [[-2.5, -0.01, -0.7], None]]
    m = skill_gap_metrics([won, lost], teacher)
    assert m["opd/skill_gap"] == pytest.approx((0.01 + 0.5 - 0.5 + 0.0 - 0.2) / 5)
    assert m["opd/skill_gap_won"] == pytest.approx((0.01 + 0.5) / 2)
    assert m["opd/skill_gap_lost"] == pytest.approx((-0.5 + 0.0 - 0.2) / 3)
    assert m["opd/skill_gap_fork"] == pytest.approx((0.5 - 0.5 - 0.2) / 3)
    assert m["opd/skill_gap_fork_won"] == pytest.approx(0.5)
    assert m["opd/skill_gap_fork_lost"] == pytest.approx((-0.5 - 0.2) / 2)
    assert m["opd/skill_gap_fork_share"] == pytest.approx(3 / 5)
    assert skill_gap_metrics([won], [[None]]) == {}  # nothing scored: nothing reported
    ctrl = skill_gap_metrics([won], [[[-0.05, -1.0]]], prefix="opd/control_gap")
    assert ctrl["opd/control_gap"] == 0.0 and "opd/control_gap_lost" not in ctrl


def test_control_skills_come_from_another_task():
    trajs = [traj(t, w) for t in "abc" for w in (True, False)]
    skills = [f"skill of {t.task_id} {t.won}" for t in trajs]
    skills[5] = None  # c-lost has no skill: never chosen, never lent
    idx, borrowed = control_skills(trajs, skills, n=4, rng=np.random.default_rng(0))
    assert len(idx) == 4 and 5 not in idx and len(set(idx)) == 4
    for i, s in zip(idx, borrowed, strict=True):
        assert s is not None and not s.startswith(f"skill of {trajs[i].task_id} ")
    again = control_skills(trajs, skills, n=4, rng=np.random.default_rng(0))
    assert again == (idx, borrowed)  # seeded
    one_task = [traj("a", True), traj("a", False)]
    assert control_skills(one_task, ["x", "y"], n=4, rng=np.random.default_rng(0)) == ([], [])
    assert control_skills(trajs, skills, n=0, rng=np.random.default_rng(0)) == ([], [])


def test_gradient_probe_by_hand():
    # loss parts of one parameter vector w: pg = w . a, teacher = w . b; gradients a and b
    w = torch.zeros(3, requires_grad=True)
    a, b = torch.tensor([3.0, 0.0, 4.0]), torch.tensor([0.0, 1.0, 0.0])
    pg, teacher = (w * a).sum(), (w * b).sum()
    m = gradient_probe(pg, teacher, [w])
    assert m["opd/grad_norm_pg"] == pytest.approx(5.0)
    assert m["opd/grad_norm_teacher"] == pytest.approx(1.0)
    assert m["opd/grad_ratio"] == pytest.approx(0.2) and m["opd/grad_cosine"] == pytest.approx(0.0)
    assert w.grad is None  # the probe leaves .grad to the real backward
    (pg + teacher).backward()  # and the graph is still there for it
    assert torch.equal(w.grad, a + b)
    w2 = torch.zeros(2, requires_grad=True)
    m = gradient_probe((w2 * 0).sum(), (w2 * torch.tensor([1.0, 1.0])).sum(), [w2])
    assert "opd/grad_ratio" not in m and m["opd/grad_norm_pg"] == 0.0  # all advantages 0
    m = gradient_probe((w2 * torch.tensor([1.0, 1.0])).sum(), (w2 * -2).sum(), [w2])
    assert m["opd/grad_cosine"] == pytest.approx(-1.0) and m["opd/grad_ratio"] == pytest.approx(2)


def test_adamw_step_stats_measure_the_step_taken():
    """The step norm and its cosine with -grad, read from AdamW's state, against the weights'
    change measured directly: at the first step, and at a later one whose gradient is ~0 (a
    saturated update) where momentum alone moves the weights, away from that gradient."""
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(5, 3))
    b = torch.nn.Parameter(torch.randn(3))
    opt = torch.optim.AdamW([w, b], lr=0.1, weight_decay=0.05)
    assert adamw_step_stats(opt, [w, b]) == {}  # no step yet
    grads = [torch.randn(5, 3), torch.randn(3)], [torch.randn(5, 3) * 1e-6, torch.randn(3) * 1e-6]
    for step_grads in grads:
        before = [w.detach().clone(), b.detach().clone()]
        w.grad, b.grad = (g.clone() for g in step_grads)
        opt.step()
        change = torch.cat(
            [(p.detach() - q).flatten() for p, q in zip([w, b], before, strict=True)]
        )
        g = torch.cat([x.flatten() for x in step_grads])
        stats = adamw_step_stats(opt, [w, b])
        assert stats["step_norm"] == pytest.approx(float(change.norm()), rel=1e-5)
        cosine = float(-(change @ g) / (change.norm() * g.norm()))
        assert stats["step_cosine"] == pytest.approx(cosine, abs=1e-5)
    # the second step's gradient is a millionth of the first's; the step is still ~0.9 of the
    # first's size, carried by the first moment
    assert stats["step_norm"] > 0.05
