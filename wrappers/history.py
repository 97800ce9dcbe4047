"""The text an agent's prompt is built from: the anchor observation, the task, the last k turns."""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym

from seed_gym.wrappers.spec import Turn

INVALID_TURN_ACTION = "(invalid output)"
"""What the history shows as the action of a turn whose completion did not parse."""


class AnchorInfo(gym.Wrapper):
    """Add ``info["anchor"]`` (the raw text observation) and ``info["task"]`` (the task text).

    Description:
        The anchor is the observation as the game wrote it, before any prompt or image
        placeholder; trainers key per-state statistics on it and the recorder logs it.
    """

    def _annotate(self, obs: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        info = dict(info)
        info["anchor"] = obs["text"]
        info["task"] = getattr(self.unwrapped, "task_description", "") or ""
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, self._annotate(obs, info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._annotate(obs, info)


class TurnHistory(gym.Wrapper):
    """Keep the last ``k`` (observation, action) turns of the episode for the prompt.

    Description:
        ``history`` is a tuple of ``Turn``s, oldest first: the text observation a step was
        decided on and the parsed action taken (``INVALID_TURN_ACTION`` when the completion did
        not parse). ``step_count`` counts every agent turn since reset, the invalid ones too.
        ``k = 0`` keeps nothing. Reads ``info["parsed_action"]`` from ``ParseAction``.
    """

    def __init__(self, env: gym.Env, k: int):
        super().__init__(env)
        if k < 0:
            raise ValueError(f"history window must be >= 0, got {k}")
        self.k = int(k)
        self._turns: deque[Turn] = deque(maxlen=self.k)
        self._last_text = ""
        self.step_count = 0

    @property
    def history(self) -> tuple[Turn, ...]:
        return tuple(self._turns)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._turns.clear()
        self.step_count = 0
        self._last_text = obs["text"]
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        taken = info.get("parsed_action")
        self._turns.append(
            Turn(self._last_text, taken if taken is not None else INVALID_TURN_ACTION)
        )
        self.step_count += 1
        self._last_text = obs["text"]
        return obs, reward, terminated, truncated, info
