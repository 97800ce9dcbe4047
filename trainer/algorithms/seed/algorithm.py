"""SEED (``--algo seed``): Stage 1 (the policy learns to analyze trajectories), then each
iteration the policy analyzes its own episodes into hindsight skills, rescores its sampled
tokens under the skill-augmented prompt (pi_old) and learns from that shift jointly with GRPO:
``lambda * gated OPD``, or the teacher advantage with ``--teacher-advantage`` (OPID)."""

from __future__ import annotations

from seed_gym.trainer.algorithms.registry import register_algorithm
from seed_gym.trainer.algorithms.seed.distill import Distilling
from seed_gym.trainer.algorithms.seed.self_analysis import SelfAnalysis


@register_algorithm
class SEED(SelfAnalysis, Distilling):
    name = "seed"
    description = (
        "SEED: Stage 1 SFT of the analyzer, then GRPO + lambda * gated OPD from self-made skills"
    )
