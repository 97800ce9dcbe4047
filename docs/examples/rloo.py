"""RLOO as a seed-gym algorithm plug-in: one file, outside the package.

REINFORCE leave-one-out (Ahmadian et al., 2024): each trajectory's baseline is the mean return of
the *other* trajectories of its group, with no division by the group's std. Everything else (the
PPO-clip loss, the KL to the starting policy, rollouts, evaluation, checkpoints) is the trainer's.

    seed-gym train --import docs/examples/rloo.py --algo rloo --preset tiny --out runs/rloo

``--import`` takes a file path or a module name; the import runs ``@register_algorithm``, which
makes ``--algo rloo`` valid. ``seed-gym list --import docs/examples/rloo.py`` lists it.
"""

from __future__ import annotations

from collections import defaultdict

from seed_gym.trainer.algorithms import Algorithm, register_algorithm
from seed_gym.trainer.trajectory import Trajectory


def leave_one_out(returns: list[float], groups: list[str]) -> list[float]:
    """R_i - mean_{j != i, same group} R_j for every trajectory; 0.0 in a group of one."""
    members: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    out = [0.0] * len(returns)
    for idx in members.values():
        total, n = sum(returns[i] for i in idx), len(idx)
        for i in idx:
            out[i] = returns[i] - (total - returns[i]) / (n - 1) if n > 1 else 0.0
    return out


@register_algorithm
class RLOO(Algorithm):
    name = "rloo"
    description = "RLOO: leave-one-out group baseline, no std normalisation, PPO-clip, k3 KL"

    def advantages(self, trajs: list[Trajectory]) -> list[list[float]]:
        # one advantage per trajectory (its episode return, format penalties included), given to
        # every step of it; --algo-arg scale=0.5 multiplies them (an option of the plug-in)
        scale = float(self.cfg.algo_kwargs.get("scale", 1.0))
        adv = leave_one_out([t.episode_return for t in trajs], [t.group_id for t in trajs])
        return [[scale * a] * len(t.steps) for t, a in zip(trajs, adv, strict=True)]
