"""Nothing is paid after the end, by termination *or* truncation (the step limit), in every
registered env and every layer: the raw env made by ``seed_gym.make`` or ``gym.make``, the env
class stepped directly (its own termination), and the agent layer (``wrap_agent``). And the
agent layer's ``info`` is JSON-encodable as UTF-8 whatever the completion holds.

Before ``FreezeAtEnd``, 20 oracle steps after truncation paid +10.5 (Sokoban), +10 (EZPoints,
ALFWorld, WebShop) or +1 (SearchQA) with ``won=True``; raw Sokoban charged -0.1 a step and the
agent layer its format penalty after the end.
"""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest
from conftest import import_example
from gymnasium.envs.registration import EnvSpec

import seed_gym
from seed_gym.core import FreezeAtEnd

import_example()

# the package's envs and the docs' example, not the test envs other modules register on import
ENV_IDS = [e for e in seed_gym.list_envs() if not e.startswith("test/")]
AFTER = 20  # steps played after the end, as in the probe that found the bug


def _oracle(env: gym.Env) -> str:
    return env.unwrapped.oracle_action()


def _assert_frozen(env: gym.Env, step, actions, *, won: bool, where: str) -> None:
    """Each of ``actions`` after the end pays exactly 0.0, wins nothing new, charges no format
    penalty and is flagged as not played."""
    for n, action in enumerate(actions):
        _, reward, terminated, truncated, info = step(action)
        what = f"{where}, step {n + 1} after the end ({action!r:.40})"
        assert reward == 0.0, f"{what} paid {reward}"
        assert info["won"] is won, f"{what}: won={info['won']}, the episode ended with won={won}"
        assert info["action_is_valid"] is False, f"{what} was played"
        assert info.get("format_penalty", 0.0) == 0.0, f"{what} charged the format penalty"
        assert terminated or truncated, f"{what}: the episode is live again"


def _after_actions(env: gym.Env) -> list:
    """The probe's 20 oracle steps, then garbage (which the agent layer would charge)."""
    return [_oracle(env) for _ in range(AFTER)] + [None, "x", ""]


# --- the raw env --------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("maker", ["seed_gym.make", "gym.make"])
def test_raw_env_pays_nothing_after_truncation(env_id, maker):
    make = seed_gym.make if maker == "seed_gym.make" else gym.make
    env = make(env_id, split="seen", max_episode_steps=1)
    env.reset(seed=0)
    # a no-op counts against the step limit and never ends the game: truncated, game still live
    _, _, terminated, truncated, info = env.step(None)
    assert truncated and not terminated and info["won"] is False
    # the oracle's next action would make progress (and, played on, win) if it were played
    _assert_frozen(env, env.step, _after_actions(env), won=False, where=f"{env_id} truncated")
    # the end holds until reset, which starts a live episode again
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step(None)
    assert truncated and not terminated
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_raw_env_pays_nothing_after_truncation_mid_oracle_play(env_id):
    env = seed_gym.make(env_id, split="seen", max_episode_steps=2)
    env.reset(seed=0)
    for n in range(2):
        terminated, truncated = env.step(_oracle(env))[2:4]
        if terminated:
            pytest.skip(f"{env_id}'s oracle finishes in {n + 1} step(s); nothing to truncate")
    assert truncated
    _assert_frozen(env, env.step, _after_actions(env), won=False, where=f"{env_id} truncated")
    env.close()


def _play_oracle_to_the_end(env: gym.Env, step, limit: int = 200) -> tuple[bool, bool]:
    """Play the oracle until the episode ends: (terminated, won)."""
    for _ in range(limit):
        _, _, terminated, truncated, info = step(_oracle(env))
        if terminated or truncated:
            return terminated, info["won"]
    raise AssertionError(f"no end in {limit} oracle steps")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_raw_env_pays_nothing_after_termination(env_id):
    env = seed_gym.make(env_id, split="seen")
    env.reset(seed=0)
    terminated, won = _play_oracle_to_the_end(env, env.step)
    assert terminated and won, f"{env_id}'s oracle did not win task 0"
    _assert_frozen(env, env.step, _after_actions(env), won=True, where=f"{env_id} terminated")
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_env_class_stepped_directly_pays_nothing_after_its_own_termination(env_id):
    """Without ``make`` there is no step limit; an env's own termination is still final."""
    env = seed_gym.make(env_id, split="seen")
    raw = env.unwrapped
    raw.reset(seed=0)
    terminated, won = _play_oracle_to_the_end(raw, raw.step)
    assert terminated and won
    for action in [*(_oracle(raw) for _ in range(3)), None, "x"]:
        _, reward, _, _, info = raw.step(action)
        assert reward == 0.0 and info["won"] is True, f"{env_id}: {action!r:.40} paid {reward}"
    env.close()


def test_made_env_spec_round_trips_with_the_freeze():
    env = seed_gym.make("seed_gym/Sokoban-v0", split="seen", max_episode_steps=3)
    assert isinstance(env, FreezeAtEnd) and isinstance(env.env, gym.wrappers.TimeLimit)
    assert [w.name for w in env.spec.additional_wrappers] == ["FreezeAtEnd"]
    for copy in (
        gym.make(env.spec),
        gym.make(EnvSpec.from_json(env.spec.to_json())),
        pickle.loads(pickle.dumps(env)),
    ):
        assert isinstance(copy, FreezeAtEnd) and isinstance(copy.env, gym.wrappers.TimeLimit)
        assert copy.spec.max_episode_steps == 3
        assert [w.name for w in copy.spec.additional_wrappers] == ["FreezeAtEnd"]
        copy.close()
    env.close()


def test_freeze_at_end_repeats_the_end_and_pickles_mid_freeze():
    env = seed_gym.make("seed_gym/Sokoban-v0", split="seen", max_episode_steps=1)
    env.reset(seed=0)
    end = env.step(None)
    assert env.episode_over
    restored = pickle.loads(pickle.dumps(env))
    for e in (env, restored):
        obs, reward, terminated, truncated, info = e.step(_oracle(e))
        assert obs["text"] == end[0]["text"] and (terminated, truncated) == end[2:4]
        assert reward == 0.0 and info["task_id"] == end[4]["task_id"]
    env.reset(seed=0)
    assert not env.episode_over


# --- the agent layer ----------------------------------------------------------------------------
def _completion(env, action: str) -> str:
    return env.agent_spec.format_completion("The oracle says so.", action)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_agent_env_pays_nothing_after_truncation(env_id):
    env = seed_gym.make_agent_env(env_id, split="seen", max_episode_steps=2)
    env.reset(seed=0)
    # two unparseable completions use up the agent layer's step limit (each is charged once)
    for _ in range(2):
        _, reward, terminated, truncated, info = env.step("no tags at all")
        assert info["format_penalty"] == env.agent_spec.invalid_penalty > 0
        assert reward <= -info["format_penalty"]
    assert truncated and not terminated
    actions = [_completion(env, _oracle(env)) for _ in range(AFTER)] + ["garbage", None]
    _assert_frozen(env, env.step, actions, won=False, where=f"{env_id} agent, truncated")
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_agent_env_pays_nothing_after_termination(env_id):
    env = seed_gym.make_agent_env(env_id, split="seen")
    env.reset(seed=0)

    def step(action):
        return env.step(_completion(env, action))

    terminated, won = _play_oracle_to_the_end(env, step)
    assert terminated and won
    actions = [_completion(env, _oracle(env)) for _ in range(AFTER)] + ["garbage", None]
    _assert_frozen(env, env.step, actions, won=True, where=f"{env_id} agent, terminated")
    # the history holds no turn after the end
    assert len(env.history) <= env.agent_spec.history
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_agent_env_info_is_json_encodable_with_lone_surrogates(env_id):
    env = seed_gym.make_agent_env(env_id, split="seen")
    _, info = env.reset(seed=0)
    json.dumps(info, ensure_ascii=False).encode("utf-8")
    oracle = _oracle(env)
    completions = [
        "\ud800",
        "<think>\udfff</think>",
        _completion(env, f"{oracle} \ud800"),
        _completion(env, "\udc80\ud83d"),
        _completion(env, oracle),
    ]
    for completion in completions:
        _, _, terminated, truncated, info = env.step(completion)
        json.dumps(info, ensure_ascii=False).encode("utf-8")  # UnicodeEncodeError before
        if terminated or truncated:
            env.reset(seed=0)
    env.close()
