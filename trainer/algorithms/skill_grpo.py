"""``skill-grpo``: GRPO with the policy's own skills in the *actor* prompt (no distillation).

The skill for a task is the one from the last analysis of that task (a won episode's, if its
group had one); a task never analyzed gets the most recent skill of any task. The table is part
of the checkpoint (exact resume). Stage 1 runs first, as for ``seed``.
"""

from __future__ import annotations

from typing import Any

from seed_gym.trainer.algorithms.registry import register_algorithm
from seed_gym.trainer.algorithms.seed.self_analysis import SelfAnalysis
from seed_gym.trainer.trajectory import Trajectory


@register_algorithm
class SkillGRPO(SelfAnalysis):
    """The policy's own skill for a task (its last analysis) goes into the *actor* prompt the
    next time the task comes; a task never analyzed yet gets the most recent skill of any task."""

    name = "skill-grpo"
    description = "GRPO with the policy's own skill (last analysis of the task) in the actor prompt"

    def __init__(self, cfg: Any):
        super().__init__(cfg)
        self.by_task: dict[str, str] = {}
        self.latest: str | None = None

    def actor_skills(self, task_ids):
        return [self.by_task.get(t, self.latest) for t in task_ids]

    def skills(self, trajs, stats, failures):
        skills = super().skills(trajs, stats, failures)
        groups: dict[str, list[tuple[Trajectory, Any]]] = {}
        for t, s in zip(trajs, skills, strict=True):
            if s is not None:
                groups.setdefault(t.group_id, []).append((t, s))
        for pairs in groups.values():  # a won episode's skill if the group has one
            won = [s for t, s in pairs if t.won]
            self.by_task[pairs[0][0].task_id] = self.latest = (won or [pairs[0][1]])[0].skill
        return skills

    def state(self):
        return {"by_task": dict(self.by_task), "latest": self.latest}

    def load_state(self, state):
        self.by_task, self.latest = dict(state.get("by_task", {})), state.get("latest")
