"""Policies for ``seed-gym eval``: ``random`` and ``oracle`` play the raw game; model policies
(``model:PATH``, ``openai:URL``) register themselves here and play the chat env.

A policy names the env it acts on (``acts_on``): ``"game"`` policies get the raw env and return
game actions (``"up"``, ``"click[Buy Now]"``); ``"agent"`` policies get the agent env of
``seed_gym.make_agent_env`` and return completions, which the env parses. ``make_policy("name")`` or
``make_policy("name:ARG")`` builds one from the registry; ``register_policy`` adds a kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np


@runtime_checkable
class Policy(Protocol):
    """What ``seed-gym eval`` drives: one episode is ``reset`` then ``act`` until it ends."""

    name: str
    acts_on: Literal["game", "agent"]

    def reset(self, env: gym.Env, *, seed: int) -> None:
        """Start an episode on ``env`` (already reset); ``seed`` seeds the policy's own sampling."""

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        """The next action (game policies) or completion (agent policies)."""

    def close(self) -> None:
        """Release models, connections, processes."""


class RandomPolicy:
    """Uniform over the admissible actions when the env lists them, else the env's own
    ``sample_action`` (``SeedEnv.sample_action``), seeded per episode."""

    name = "random"
    acts_on: Literal["game", "agent"] = "game"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, env: gym.Env, *, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        return env.unwrapped.sample_action(self.rng, info.get("admissible_actions"))

    def close(self) -> None:
        pass


class OraclePolicy:
    """The env's privileged expert (``oracle_action``): a solver or planner that sees the state."""

    name = "oracle"
    acts_on: Literal["game", "agent"] = "game"

    def reset(self, env: gym.Env, *, seed: int) -> None:
        pass

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        return env.unwrapped.oracle_action()

    def close(self) -> None:
        pass


PolicyFactory = Callable[[str | None], Policy]
POLICIES: dict[str, PolicyFactory] = {
    "random": lambda arg: RandomPolicy(),
    "oracle": lambda arg: OraclePolicy(),
}


def register_policy(kind: str, factory: PolicyFactory) -> None:
    """Make ``kind`` or ``kind:ARG`` buildable by ``make_policy``; ``factory(ARG or None)``."""
    if not kind or ":" in kind:
        raise ValueError(f"policy kind must be a plain name, got {kind!r}")
    POLICIES[kind] = factory


def make_policy(spec: str) -> Policy:
    """``"random"``, ``"oracle"``, or ``"kind:ARG"`` for a registered kind."""
    kind, sep, arg = spec.partition(":")
    if kind not in POLICIES:
        raise ValueError(f"unknown policy {spec!r}; known kinds: {', '.join(sorted(POLICIES))}")
    return POLICIES[kind](arg if sep else None)
