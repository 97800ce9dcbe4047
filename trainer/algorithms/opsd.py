"""``opsd``: on-policy self-distillation with privileged context: the teacher reads the privileged
annotator's skill (the solver's plan, the gold answer, the goal's attributes, taken at reset)."""

from __future__ import annotations

from seed_gym.trainer.algorithms.registry import register_algorithm
from seed_gym.trainer.algorithms.seed.annotators import PrivilegedAnnotator
from seed_gym.trainer.algorithms.seed.distill import Distilling


@register_algorithm
class OPSD(Distilling):
    name = "opsd"
    description = (
        "GRPO + gated OPD with privileged env info (solver, gold answer) as the teacher context"
    )
    privileged_rollouts = True  # taken at reset: the solver sees the start state

    def bind(self, engine, policy):
        self.annotator = PrivilegedAnnotator(self.cfg.env)

    def skills(self, trajs, stats, failures):
        return self.annotator.annotate(trajs, [t.privileged or {} for t in trajs])
