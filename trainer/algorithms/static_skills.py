"""``static-skills`` (SDAR-like): a fixed skill bank per task type as the teacher's context,
``lambda * gated OPD`` as SEED's. ``--skill-bank bank.json``: ``{task_type: skill, "*": fallback}``;
without it one generic instruction for every task."""

from __future__ import annotations

from seed_gym.trainer.algorithms.registry import register_algorithm
from seed_gym.trainer.algorithms.seed.annotators import StaticSkillAnnotator
from seed_gym.trainer.algorithms.seed.distill import Distilling

# static-skills without --skill-bank: one generic instruction for every task type
DEFAULT_SKILL_BANK = {
    "*": "Read the task and the current observation carefully, write exactly one action in the "
    "required format, and never repeat an action that left the observation unchanged."
}


@register_algorithm
class StaticSkills(Distilling):
    name = "static-skills"
    description = "GRPO + gated OPD with a fixed skill bank as the teacher context (SDAR-like)"

    def bind(self, engine, policy):
        path = self.cfg.opd.skill_bank
        bank = StaticSkillAnnotator.from_json(path) if path else None
        self.bank = bank or StaticSkillAnnotator(DEFAULT_SKILL_BANK)

    def skills(self, trajs, stats, failures):
        return self.bank.annotate(trajs)
