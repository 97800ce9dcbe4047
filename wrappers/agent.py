"""``wrap_agent``: the raw game as a chat env (the agent-env contract), built from small wrappers.

From the inside out::

    raw game (TimeLimit)          obs {"text", "image"?}, action str
    ParseAction                   action = completion; unparseable -> no-op (game not stepped)
    InvalidActionPenalty          reward -= spec.invalid_penalty on unparseable completions
    TimeLimit                     every agent turn counts, invalid ones too, so a model that never
                                  emits a valid action still ends its episode
    AnchorInfo                    info["anchor"], info["task"]
    TurnHistory                   the last k (observation, action) turns
    AttachImages                  obs["image"] -> obs["images"] (PIL) + "<image>" placeholder
    PromptObservation             obs -> {"messages", "images"} via spec.render
    AgentEnv                      exposes agent_spec
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.wrappers import TimeLimit

from seed_gym.registration import agent_spec, make
from seed_gym.wrappers.history import AnchorInfo, TurnHistory
from seed_gym.wrappers.parse import ParseAction
from seed_gym.wrappers.prompt import PromptObservation
from seed_gym.wrappers.reward import InvalidActionPenalty
from seed_gym.wrappers.spec import AgentSpec
from seed_gym.wrappers.vision import AttachImages


class AgentEnv(gym.Wrapper):
    """The outermost agent wrapper: ``step(completion)``; ``agent_spec`` for rollout engines."""

    def __init__(self, env: gym.Env, spec: AgentSpec):
        super().__init__(env)
        self.agent_spec = spec

    @property
    def history(self):
        return self.env.get_wrapper_attr("history")


def max_episode_steps(env: gym.Env) -> int | None:
    """The step limit of the first ``TimeLimit`` in ``env``'s wrapper chain, if any."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, TimeLimit):
            return env._max_episode_steps
        env = env.env
    return None


def make_agent_env(
    env_id: str,
    split: str = "train",
    modality: str | None = None,
    history: int | None = None,
    **kwargs: Any,
) -> AgentEnv:
    """The chat-facing env of ``env_id`` (``seed_gym.make`` wrapped by ``wrap_agent`` with the
    env's registered ``AgentSpec``): prompts with a history window, parsed completions,
    penalties. Extra kwargs go to the env constructor."""
    env = make(env_id, split=split, modality=modality, **kwargs)
    return wrap_agent(env, agent_spec(env_id), history=history)


def wrap_agent(env: gym.Env, spec: AgentSpec, history: int | None = None) -> AgentEnv:
    """Wrap a made raw env (``seed_gym.make``) into the chat env of the agent-env contract.

    ``history`` is the window k of past turns shown in the prompt (default ``spec.history``).
    """
    k = spec.history if history is None else int(history)
    limit = max_episode_steps(env)
    env = ParseAction(env, spec.parse)
    env = InvalidActionPenalty(env, spec.invalid_penalty)
    if limit is not None:
        env = TimeLimit(env, limit)
    env = AnchorInfo(env)
    env = TurnHistory(env, k)
    env = AttachImages(env)
    env = PromptObservation(env, spec)
    return AgentEnv(env, spec)
