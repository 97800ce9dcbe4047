"""The closed-book baseline as a ``seed-gym eval`` policy: importing this module registers
``closed_book`` (``seed-gym eval --import seed_gym.envs.search.policies --policy closed_book``)."""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym

from seed_gym.policies import register_policy


class ClosedBookPolicy:
    """Answers at once without searching (``SearchQAEnv.closed_book_action``)."""

    name = "closed_book"
    acts_on: Literal["game", "agent"] = "game"

    def reset(self, env: gym.Env, *, seed: int) -> None:
        pass

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        return env.unwrapped.closed_book_action()

    def close(self) -> None:
        pass


register_policy("closed_book", lambda arg: ClosedBookPolicy())
