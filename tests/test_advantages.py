"""GRPO advantages as the reference computes them (step level), the per-trajectory variant, and
optimizer steps by mini-batch size: hand-worked numbers."""

from __future__ import annotations

import json

import pytest

from seed_gym.trainer.advantages import grpo_advantages
from seed_gym.trainer.config import TrainConfig
from seed_gym.trainer.trajectory import StepSample, Trajectory
from seed_gym.trainer.update import n_mini_batches


def traj(group: str, n_steps: int, *, env_return: float, invalid: int = 0) -> Trajectory:
    """``n_steps`` steps, the first ``invalid`` of them unparseable (0.1 format penalty each);
    the env return sits on the last step."""
    t = Trajectory(f"{group}-{id(object())}", group, "task", "type", "", 0)
    for i in range(n_steps):
        penalty = 0.1 if i < invalid else 0.0
        env_reward = env_return if i == n_steps - 1 else 0.0
        t.steps.append(
            StepSample([], [1], [2], [-1.0], "r", "o", None if penalty else "a", not penalty,
                       env_reward - penalty, penalty=penalty)
        )  # fmt: skip
    return t


def test_all_fail_group_penalises_exactly_the_invalid_steps():
    # SEED.md / issue 13, worked example 1: 4 lost episodes of 30 steps with 1, 3, 0, 0 invalid
    # scores: 116 step-samples at 0, 4 at -0.1; mean -1/300; unbiased std over the 120
    group = [traj("g", 30, env_return=0.0, invalid=k) for k in (1, 3, 0, 0)]
    mean = -0.4 / 120
    std = ((116 * mean**2 + 4 * (-0.1 - mean) ** 2) / 119) ** 0.5  # 0.018026
    adv = grpo_advantages(group, mode="step")
    for t, a in zip(group, adv, strict=True):
        for s, x in zip(t.steps, a, strict=True):
            expected = (-0.1 - mean) / std if s.penalty else -mean / std  # -5.363 / +0.185
            assert x == pytest.approx(expected, abs=1e-3)  # float32
    assert adv[1][0] == pytest.approx(-5.363, abs=1e-3) and adv[2][0] == pytest.approx(
        0.185, abs=1e-3
    )
    # per trajectory (seed-gym before 0.2): one value per trajectory, on every step
    adv = grpo_advantages(group, mode="trajectory")
    assert [a[0] for a in adv] == pytest.approx([0.0, -1.414, 0.707, 0.707], abs=1e-3)
    assert all(len(set(a)) == 1 for a in adv)


def test_long_losses_weigh_more_at_step_level():
    # worked example 2: 2 wins of 5 steps (R = 10) and 2 losses of 30 steps (R = 0)
    group = [traj("g", 5, env_return=10.0)] * 2 + [traj("g", 30, env_return=0.0)] * 2
    adv = grpo_advantages(group, mode="step")
    assert {round(x, 2) for x in adv[0] + adv[1]} == {2.43}
    assert {round(x, 2) for x in adv[2] + adv[3]} == {-0.41}  # -0.405
    adv = grpo_advantages(group, mode="trajectory")
    assert [a[0] for a in adv] == pytest.approx([0.866, 0.866, -0.866, -0.866], abs=1e-3)


def test_groups_are_normalised_separately_and_mean_only_option():
    a = [traj("a", 2, env_return=1.0), traj("a", 2, env_return=0.0)]
    b = [traj("b", 3, env_return=5.0), traj("b", 1, env_return=5.0)]  # all equal: no signal
    adv = grpo_advantages(a + b, mode="step")
    assert adv[2] == [0.0] * 3 and adv[3] == [0.0]
    assert adv[0] == pytest.approx([0.866] * 2, abs=1e-3)  # (1 - .5) / std([1,1,0,0])
    adv = grpo_advantages(a, mode="step", std_normalize=False)
    assert adv == [[0.5, 0.5], [-0.5, -0.5]]


@pytest.mark.parametrize(
    ("n", "size", "legacy", "steps"),
    [(300, 256, None, 2), (256, 256, None, 1), (10, 256, None, 1), (0, 4, None, 1),
     (24, 4, None, 6), (24, 256, 3, 3)],
)  # fmt: skip
def test_optimizer_steps_by_mini_batch_size(n, size, legacy, steps):
    cfg = TrainConfig().replace(mini_batch_size=size, mini_batches=legacy)
    assert n_mini_batches(n, cfg) == steps


def test_configs_saved_before_step_advantages_keep_their_semantics(tmp_path):
    old = TrainConfig().flags()  # the flat config.json of seed-gym <= 0.2
    del old["advantage"], old["mini_batch_size"], old["analyzer_structured"]
    old["mini_batches"] = 1
    (tmp_path / "config.json").write_text(json.dumps(old))
    cfg = TrainConfig.load(tmp_path / "config.json")
    assert cfg.optim.advantage == "trajectory" and cfg.optim.mini_batches == 1
    assert TrainConfig.from_dict(TrainConfig().to_dict()).optim.advantage == "step"
    assert cfg.opd.analyzer_structured is False
