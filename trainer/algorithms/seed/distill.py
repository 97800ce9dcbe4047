"""``Distilling``: the algorithms whose teacher is the policy itself with a skill in its prompt
(``seed``, ``static-skills``, ``opsd``; SEED.md Stage 2 steps 4-5). They differ only in where
the skills come from (``skills``).

- teacher: every step's sampled response ids rescored by pi_old under the skill-augmented prompt
  (``seed.rescore.rescore_trajectories``), with the skill's own effect measured beside it;
- loss: ``lambda * gated OPD`` added to the PPO-clip loss (``losses.opd_loss``;
  ``--positive-only``), or, with ``--teacher-advantage``, OPID's teacher advantage instead
  (``opid.py``). The ``opd/*`` gate and gap metrics are logged either way.
"""

from __future__ import annotations

import torch

from seed_gym.trainer.algorithms.base import Algorithm, Teacher
from seed_gym.trainer.algorithms.opid import opid_token_advantages
from seed_gym.trainer.algorithms.seed.rescore import rescore_trajectories
from seed_gym.trainer.losses import opd_loss


class Distilling(Algorithm):
    """An algorithm with a teacher: the policy reading each trajectory's skill."""

    has_teacher = True  # --positive-only / --teacher-advantage shape its term (OPDConfig
    # checks that they exclude each other); groups are checked as for GRPO

    def teacher(self, policy, spec, trajs, skills, iteration) -> Teacher:
        return rescore_trajectories(self.cfg, policy, spec, trajs, skills, iteration)

    def token_advantages(self, advantages, *, teacher_logprobs, old_logprobs, mask):
        if not self.cfg.opd.teacher_advantage or not _any(teacher_logprobs, mask):
            return advantages
        return opid_token_advantages(advantages, teacher_logprobs, old_logprobs, mask, self.cfg.opd)

    def extra_loss(
        self, logprobs, *, teacher_logprobs, response_mask, teacher_mask, num_teacher_tokens
    ):
        if not _any(teacher_logprobs, teacher_mask):
            return None, {}
        # gated OPD: raises sampled tokens, most where the skill agrees
        opd, stats = opd_loss(
            logprobs,
            teacher_logprobs,
            response_mask,
            teacher_mask,
            beta=self.cfg.opd.beta,
            positive_only=self.cfg.opd.positive_only,
            num_tokens=num_teacher_tokens,
        )
        if self.cfg.opd.teacher_advantage:  # OPID carries the teacher; its gate is only logged
            stats["opd/loss"] = 0.0
            return None, stats
        return self.cfg.opd.coef * opd, stats


def _any(teacher_logprobs: torch.Tensor | None, mask: torch.Tensor | None) -> bool:
    return teacher_logprobs is not None and mask is not None and float(mask.sum()) > 0
