"""``InvalidActionPenalty``: a fixed negative reward for completions that do not parse."""

from __future__ import annotations

import gymnasium as gym


class InvalidActionPenalty(gym.Wrapper):
    """Subtract ``penalty`` from the reward of every step whose completion did not parse.

    Description:
        Sits outside ``ParseAction`` and reads its ``info["format_valid"]``. Well-formed actions
        the game rejects ("Nothing happens.") are the game's business and are not penalised here,
        as in the reference suite.
    Rewards:
        ``reward - penalty`` when ``info["format_valid"]`` is False, else unchanged.
    Info:
        Adds ``format_penalty``: the penalty charged on this step (0.0 or ``penalty``), so a
        trainer can keep it on the step it belongs to (step-level GRPO scores).
    """

    def __init__(self, env: gym.Env, penalty: float):
        super().__init__(env)
        if penalty < 0:
            raise ValueError(f"penalty is a magnitude and must be >= 0, got {penalty}")
        self.penalty = float(penalty)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        charged = 0.0 if info.get("format_valid", True) else self.penalty
        info = {**info, "format_penalty": charged}
        return obs, float(reward) - charged, terminated, truncated, info
