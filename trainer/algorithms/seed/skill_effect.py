"""What the skill does to the teacher, apart from the update's drift (SEED's instruments).

The OPD loss compares the teacher (pi_old under the skill-augmented prompt) with the *current*
policy under the plain prompt, so its logged gap (``opd/teacher_gap_mean``) mixes the skill's
effect with what the update has already changed. The skill's own effect is the teacher minus the
*sampling* policy on the same tokens: both are pi_old, one prompt has the skill and one has not.

- ``skill_gap_metrics``: that difference, as a token mean over every scored response token, over
  the *fork* tokens (those the sampling policy was unsure of: NLL > ``fork_nll``, where a skill
  can change the choice; the rest are format tokens that any prompt predicts), and split by won
  and lost episodes. A useful skill raises the tokens of won episodes (workflow: gap > 0) and
  lowers those of lost ones (avoidance rule: gap < 0), most on forks.
- ``control_skills``: the shuffled-skill control, each of a few trajectories paired with the
  skill of a trajectory of another task; scored the same way (``opd/control_*``), it shows the
  gap any skill-shaped text gives, which a skill has to beat to carry information.

Gaps are in nats per token. ``old_logprobs`` are the rollout engine's; where its numerics differ
from the trainer's forward (bf16 decoding with a KV cache), the control shows that part too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from seed_gym.trainer.trajectory import Trajectory

FORK_NLL = 0.1
"""A response token is a fork when its sampling NLL is above this (probability below ~0.905)."""


def gap_sums(
    traj: Trajectory, per_step: Sequence[Sequence[float] | None], *, fork_nll: float = FORK_NLL
) -> dict[str, tuple[float, int]]:
    """One trajectory's ``teacher - old_logprobs``: (sum, token count) over every scored token
    (``""``) and over the forks (``"_fork"``). ``per_step[t]``: step t's teacher logprobs (None:
    not scored)."""
    out = {"": (0.0, 0), "_fork": (0.0, 0)}
    for step, t_lp in zip(traj.steps, per_step, strict=True):
        if t_lp is None:
            continue
        k = min(len(t_lp), len(step.old_logprobs))
        old = np.asarray(step.old_logprobs[:k], dtype=float)
        gap = np.asarray(t_lp[:k], dtype=float) - old
        fork = gap[-old > fork_nll]
        for name, values in (("", gap), ("_fork", fork)):
            total, n = out[name]
            out[name] = (total + float(values.sum()), n + len(values))
    return out


def skill_gap_metrics(
    trajs: Sequence[Trajectory],
    teacher: Sequence[Sequence[Sequence[float] | None]],
    *,
    prefix: str = "opd/skill_gap",
    fork_nll: float = FORK_NLL,
) -> dict[str, float]:
    """Token means of ``teacher - old_logprobs`` over the scored tokens of ``trajs``:
    ``{prefix}`` (all), ``{prefix}_won`` / ``_lost``, ``{prefix}_fork`` (+ ``_won`` / ``_lost``),
    and ``{prefix}_fork_share`` (forks among scored tokens). ``teacher[i][t]`` is step t of
    trajectory i's teacher logprobs (None: not scored). A mean with no token is left out."""
    sums: dict[str, list[float]] = {}
    for traj, per_step in zip(trajs, teacher, strict=True):
        outcome = "_won" if traj.won else "_lost"
        for name, (total, n) in gap_sums(traj, per_step, fork_nll=fork_nll).items():
            for key in (name, name + outcome):
                acc = sums.setdefault(key, [0.0, 0])
                acc[0] += total
                acc[1] += n
    out = {f"{prefix}{name}": total / n for name, (total, n) in sums.items() if n}
    if sums.get("", [0, 0])[1]:
        out[f"{prefix}_fork_share"] = sums["_fork"][1] / sums[""][1]
    return out


def control_skills(
    trajs: Sequence[Trajectory], skills: Sequence[Any], *, n: int, rng: np.random.Generator
) -> tuple[list[int], list[Any]]:
    """The shuffled-skill control: up to ``n`` trajectories with a skill (a seeded choice, won
    and lost alike), each paired with the skill of a trajectory of *another* task. Returns their
    indices and the borrowed skills (empty when fewer than two tasks have skills)."""
    have = [i for i, s in enumerate(skills) if s is not None and _text(s)]
    tasks = {trajs[i].task_id for i in have}
    if n <= 0 or len(tasks) < 2:
        return [], []
    chosen = sorted(rng.choice(have, size=min(n, len(have)), replace=False).tolist())
    borrowed = []
    for i in chosen:
        donors = [j for j in have if trajs[j].task_id != trajs[i].task_id]
        borrowed.append(skills[donors[int(rng.integers(len(donors)))]])
    return chosen, borrowed


def _text(skill: Any) -> str:
    return str(getattr(skill, "skill", skill) or "")
