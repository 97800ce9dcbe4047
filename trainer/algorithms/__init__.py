"""Training algorithms as plug-ins: one object per algorithm (``base.Algorithm``), found by name
in a registry (``registry.ALGORITHMS``), as envs are found by id.

| algorithm | module | skills come from | skills go to | the loss |
|---|---|---|---|---|
| ``grpo`` | grpo.py | - | - | PPO-clip of GRPO advantages (+ KL, entropy) |
| ``seed`` | seed/algorithm.py | the policy, analyzing its episodes (after Stage 1) | the teacher's prompt | + lambda * gated OPD, or OPID's teacher advantage (opid.py) |
| ``skill-grpo`` | skill_grpo.py | the policy, analyzing its episodes (after Stage 1) | the actor's prompt, next visit | GRPO's |
| ``static-skills`` | static_skills.py | a fixed bank per task type | the teacher's prompt | as ``seed`` |
| ``opsd`` | opsd.py | the privileged annotator | the teacher's prompt | as ``seed`` |
| ``prompt`` | prompt.py | - | - | no training |

A new algorithm: subclass ``Algorithm`` (or ``Distilling``), override what differs, decorate it
with ``@register_algorithm``, and pass its file to ``seed-gym train --import FILE --algo NAME``
(docs/adding_an_algorithm.md).
"""

from __future__ import annotations

from seed_gym.trainer.algorithms import grpo, opsd, prompt, skill_grpo, static_skills
from seed_gym.trainer.algorithms.base import Algorithm, Teacher
from seed_gym.trainer.algorithms.registry import ALGORITHMS, make_algorithm, register_algorithm
from seed_gym.trainer.algorithms.seed import algorithm as seed
from seed_gym.trainer.algorithms.seed.distill import Distilling

__all__ = ["ALGORITHMS", "Algorithm", "Distilling", "Teacher", "make_algorithm",
           "register_algorithm"]  # fmt: skip
_BUILT_IN = (grpo, prompt, seed, skill_grpo, static_skills, opsd)  # registered on import
