"""Every registered env × every modality it supports passes ``check_env``; same seed, same
actions give the same trajectory in two independently made envs; agent envs never raise on
garbage completions.

Envs are discovered from the registry at collection time, so a new ``register()`` line is tested
without editing this file. An env whose module cannot be imported yet is *not* skipped: its test
fails with the import error.
"""

from __future__ import annotations

import importlib

import gymnasium as gym
import numpy as np
import pytest
from conftest import import_example
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seed_gym
from seed_gym.checker import _equal

import_example()


def _env_class(env_id: str) -> type:
    entry = gym.spec(env_id).entry_point
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        return getattr(importlib.import_module(module), name)
    return entry


def _cases() -> list:
    cases = []
    for env_id in ENV_IDS:
        try:
            modalities = _env_class(env_id).modalities
        except Exception as e:  # noqa: BLE001 - reported by the test itself, never skipped
            cases.append(
                pytest.param(env_id, None, id=f"{env_id}-unimportable({type(e).__name__})")
            )
            continue
        cases += [pytest.param(env_id, m, id=f"{env_id}-{m}") for m in modalities]
    return cases


# the package's envs and the docs' example, not the test envs other modules register on import
ENV_IDS = [e for e in seed_gym.list_envs() if not e.startswith("test/")]


@pytest.mark.parametrize(("env_id", "modality"), _cases())
def test_check_env(env_id, modality):
    env = seed_gym.make(env_id, split="seen", modality=modality)
    try:
        seed_gym.check_env(env)
    finally:
        env.close()


def _trajectory(env_id: str, seed: int, n_steps: int = 20) -> list:
    """Reset with ``seed``; act from a seed-derived stream mixing random, oracle and garbage."""
    env = seed_gym.make(env_id, split="seen")
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    record = [(obs, info)]
    for t in range(n_steps):
        kind = t % 3
        if kind == 0:
            try:
                action = env.unwrapped.oracle_action()
            except NotImplementedError:
                action = env.unwrapped.sample_action(rng, info["admissible_actions"])
        elif kind == 1:
            action = env.unwrapped.sample_action(rng, info["admissible_actions"])
        else:
            action = ["", "garbage \u2603", "<action>up</action>"][int(rng.integers(3))]
        obs, reward, terminated, truncated, info = env.step(action)
        record.append((action, obs, float(reward), terminated, truncated, info))
        if terminated or truncated:
            obs, info = env.reset(seed=seed + 1000 + t)
            record.append((obs, info))
    env.close()
    return record


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_trajectory_in_two_fresh_envs(env_id):
    for seed in (0, 7):
        a, b = _trajectory(env_id, seed), _trajectory(env_id, seed)
        assert len(a) == len(b)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert _equal(x, y), f"seed {seed}: record {i} differs: {x!r:.300} vs {y!r:.300}"


GARBAGE = st.one_of(
    st.text(max_size=300),
    st.builds(lambda a: f"<think>t</think><action>{a}</action>", st.text(max_size=50)),
    st.sampled_from(["", "<action></action>", "<think>" * 1000, "x" * 50_000, '{"action": 5}']),
    st.none(),
)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_agent_env_never_raises_on_garbage_completions(env_id):
    env = seed_gym.make_agent_env(env_id, split="seen")
    env.reset(seed=0)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(completions=st.lists(GARBAGE, min_size=1, max_size=4))
    def run(completions):
        for completion in completions:
            obs, reward, terminated, truncated, info = env.step(completion)
            assert np.isfinite(reward)
            assert obs["messages"][-1]["role"] == "user"
            assert obs["messages"][-1]["content"].count("<image>") == len(obs["images"])
            assert isinstance(info["format_valid"], bool) and "anchor" in info
            if terminated or truncated:
                env.reset(seed=1)

    try:
        run()
    finally:
        env.close()


_BEFORE_RESET = """
import seed_gym
for env_id in ("seed_gym/Sokoban-v0", "seed_gym/EZPoints-v0", "seed_gym/WebShop-v0"):
    raw = seed_gym.make(env_id, split="unseen").unwrapped
    for name in ("step", "render_text", "oracle_action", "privileged_info"):
        call = getattr(raw, name)
        try:
            call("up") if name == "step" else call()
        except RuntimeError as e:
            assert "reset()" in str(e), (env_id, name, e)
        else:
            assert name == "privileged_info", (env_id, name, "no error")
print("ok")
"""


def test_use_before_reset_raises_runtime_error_even_under_python_O():
    # Sokoban / EZPoints / WebShop guarded these with assert: under -O a TypeError or
    # AttributeError surfaced instead of the RuntimeError the other envs raise
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-O", "-c", _BEFORE_RESET], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
