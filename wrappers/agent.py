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
    EncodableInfo                 strings in info made UTF-8 encodable (lone surrogates -> U+FFFD)
    FreezeAtEnd                   steps after the end (terminated or truncated) are no-ops:
                                  reward 0, no format penalty, no win, the end state repeated
    AgentEnv                      exposes agent_spec
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.wrappers import TimeLimit

from seed_gym.core import FreezeAtEnd
from seed_gym.jsonl import clean_text
from seed_gym.registration import agent_spec, make
from seed_gym.wrappers.history import AnchorInfo, TurnHistory
from seed_gym.wrappers.parse import ParseAction
from seed_gym.wrappers.prompt import PromptObservation
from seed_gym.wrappers.reward import InvalidActionPenalty
from seed_gym.wrappers.spec import AgentSpec
from seed_gym.wrappers.vision import AttachImages

AFTER_END_ZEROED = ("format_penalty", "env_reward")
"""The agent layer's per-step charges, 0.0 on a step after the end (``FreezeAtEnd``)."""


def _encodable(value: Any) -> Any:
    """``value`` with every string in it (nested dicts, lists, tuples) UTF-8 encodable."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {k: _encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_encodable(v) for v in value)
    return value


class EncodableInfo(gym.Wrapper):
    """Replace lone surrogates in ``info``'s strings with U+FFFD.

    Description:
        A completion is model text, and a model server's JSON may decode to a lone surrogate
        (``"\\ud800"``) that UTF-8 cannot encode; through ``parsed_action``, ``parse_error`` or
        an observation that echoes the action, it reached ``info``, and ``json.dumps(info,
        ensure_ascii=False).encode()`` raised. The game still gets the action as parsed.
    """

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, _encodable(info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, _encodable(info)


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
    env = EncodableInfo(env)
    # outermost, so a step after the end (also the agent's own TimeLimit) reaches no layer that
    # would charge for it or record it in the history
    env = FreezeAtEnd(env, zeroed=AFTER_END_ZEROED)
    return AgentEnv(env, spec)
