"""GRPO advantages of an iteration's trajectories: one value per step (``--advantage``).

``step`` (the reference's default, verl-agent's ``compute_mean_std_cross_steps=True``): each
step-sample scores its episode's env return minus the format penalty of *that* step; mean and std
run over all step-samples of the group. ``trajectory`` (seed-gym 0.1): one return per trajectory,
penalties included, normalised over the group's trajectories and given to each of its steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from seed_gym.trainer.losses import group_advantages, step_scores
from seed_gym.trainer.trajectory import Trajectory

MODES = ("step", "trajectory")


def grpo_advantages(
    trajs: Sequence[Trajectory], *, mode: str = "step", std_normalize: bool = True
) -> list[list[float]]:
    """The advantage of every step of every trajectory, trajectory by trajectory."""
    if mode == "trajectory":
        returns = torch.tensor([t.episode_return for t in trajs], dtype=torch.float64)  # [B*G]
        adv = group_advantages(returns, [t.group_id for t in trajs], std_normalize=std_normalize)
        return [[float(a)] * len(t.steps) for t, a in zip(trajs, adv, strict=True)]
    scores, groups = [], []
    for t in trajs:
        scores += step_scores(t.env_return, [s.penalty for s in t.steps])
        groups += [t.group_id] * len(t.steps)
    adv = group_advantages(
        torch.tensor(scores, dtype=torch.float64), groups, std_normalize=std_normalize
    ).tolist()  # [sum of steps]
    out, k = [], 0
    for t in trajs:
        out.append(adv[k : k + len(t.steps)])
        k += len(t.steps)
    return out
