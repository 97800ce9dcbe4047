"""The prompting baseline (``--algo prompt``): no training, the starting policy evaluated."""

from __future__ import annotations

from seed_gym.trainer.algorithms.base import Algorithm
from seed_gym.trainer.algorithms.registry import register_algorithm


@register_algorithm
class Prompt(Algorithm):
    name = "prompt"
    description = "no training: evaluate the model as it is (the prompting baseline)"
    trains = False
