"""The teacher-advantage (OPID) mode of the distilling algorithms (``--teacher-advantage``): the
teacher adds ``w * (teacher_lp - old_lp)`` to each token's advantage and the PPO-clip loss carries
it; there is no separate distillation loss. ``distill.Distilling`` uses it in place of gated OPD
when the flag is on."""

from __future__ import annotations

from typing import Any

import torch

from seed_gym.trainer.losses import teacher_advantages


def opid_token_advantages(
    advantages: torch.Tensor,
    teacher_logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    mask: torch.Tensor,
    opd: Any,
) -> torch.Tensor:
    """``A + w * (teacher_lp - old_lp)`` on teacher tokens (``opd``: the ``OPDConfig`` group:
    ``teacher_advantage_coef`` w, ``teacher_advantage_clip``). All [n, L]."""
    return teacher_advantages(
        advantages,
        teacher_logprobs,
        old_logprobs,
        mask,
        weight=opd.teacher_advantage_coef,
        clip=opd.teacher_advantage_clip,
    )  # [n, L]
