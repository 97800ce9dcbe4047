"""``ParseAction``: the env takes LLM completions; an unparseable one is a no-op step of the game."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from seed_gym.wrappers.spec import ParsedAction

NO_ACTION = None
"""What the game is stepped with when the completion does not parse: not a string, so every
seed-gym env treats it as invalid input (a no-op at the env's step cost)."""


class ParseAction(gym.Wrapper):
    """Parse each completion with ``parse`` and step the inner env with the parsed action.

    Description:
        The outer action is the model's whole completion (``str``); the inner action is what the
        parser extracted. A completion the parser rejects steps the inner env with ``NO_ACTION``
        (``None``): every seed-gym env answers it as invalid input, a no-op that costs what the
        env charges for a step (Sokoban -0.1, the others 0) and counts against its step limit,
        as the reference suite turns unparseable output into the game's no-op action.
    Rewards:
        The inner env's reward, for the no-op too (the format penalty is
        ``InvalidActionPenalty``'s job).
    Info:
        Adds ``parsed_action`` (``str | None``), ``format_valid`` (the parser accepted it),
        ``action_is_valid`` (format valid *and* the env accepted the action), ``env_reward``
        (the inner reward) and ``parse_error`` (the parser's reason or None).
    """

    def __init__(self, env: gym.Env, parse: Callable[[str], ParsedAction]):
        super().__init__(env)
        self.parse = parse
        self._was_reset = False
        self._warned = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._was_reset = True
        return obs, dict(info)

    def _parse(self, completion: Any) -> ParsedAction:
        try:
            parsed = self.parse(completion)
        except Exception as e:  # noqa: BLE001 - garbage output must never crash a rollout
            if not self._warned:
                warnings.warn(f"agent-spec parser raised on a completion: {e!r}", stacklevel=3)
                self._warned = True
            return ParsedAction(None, False, error=f"parser raised {type(e).__name__}")
        if parsed.valid and not isinstance(parsed.action, str):
            return ParsedAction(None, False, thought=parsed.thought, error="parser gave no action")
        return parsed

    def step(self, completion: str):
        if not self._was_reset:
            raise gym.error.ResetNeeded("call reset() before step()")
        parsed = self._parse(completion)
        action = parsed.action if parsed.valid else NO_ACTION
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        info.update(
            parsed_action=action,
            format_valid=parsed.valid,
            action_is_valid=parsed.valid and bool(info.get("action_is_valid", True)),
            env_reward=float(reward),
            parse_error=None if parsed.valid else (parsed.error or "invalid output"),
        )
        return obs, float(reward), terminated, truncated, info
