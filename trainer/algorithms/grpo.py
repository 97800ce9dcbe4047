"""GRPO (``--algo grpo``): group-normalised returns, PPO-clip with dual clip, token-mean, k3 KL to
the starting policy. Every default of ``Algorithm`` is GRPO's."""

from __future__ import annotations

from seed_gym.trainer.algorithms.base import Algorithm
from seed_gym.trainer.algorithms.registry import register_algorithm


@register_algorithm
class GRPO(Algorithm):
    name = "grpo"
