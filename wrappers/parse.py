"""``ParseAction``: the env takes LLM completions; an unparseable one is a no-op for the game."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from seed_gym.wrappers.spec import ParsedAction


class ParseAction(gym.Wrapper):
    """Parse each completion with ``parse`` and step the inner env with the parsed action.

    Description:
        The outer action is the model's whole completion (``str``); the inner action is what the
        parser extracted. A completion the parser rejects is a *no-op*: the inner env is not
        stepped and the previous observation repeats.
    Rewards:
        The inner env's reward for a valid completion, ``0.0`` for an invalid one (the penalty is
        ``InvalidActionPenalty``'s job).
    Info:
        Adds ``parsed_action`` (``str | None``), ``format_valid`` (the parser accepted it),
        ``action_is_valid`` (format valid *and* the env accepted the action), ``env_reward``
        (the inner reward, ``0.0`` on a no-op) and ``parse_error`` (the parser's reason or None).
    """

    def __init__(self, env: gym.Env, parse: Callable[[str], ParsedAction]):
        super().__init__(env)
        self.parse = parse
        self._last_obs: Any = None
        self._last_info: dict[str, Any] = {}
        self._warned = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._last_obs, self._last_info = obs, info
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
        if self._last_obs is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        parsed = self._parse(completion)
        if not parsed.valid:
            info = dict(self._last_info)
            info.update(
                parsed_action=None,
                format_valid=False,
                action_is_valid=False,
                env_reward=0.0,
                parse_error=parsed.error or "invalid output",
            )
            return self._last_obs, 0.0, False, False, info
        obs, reward, terminated, truncated, info = self.env.step(parsed.action)
        self._last_obs, self._last_info = obs, info
        info = dict(info)
        info.update(
            parsed_action=parsed.action,
            format_valid=True,
            action_is_valid=bool(info.get("action_is_valid", True)),
            env_reward=float(reward),
            parse_error=None,
        )
        return obs, float(reward), terminated, truncated, info
