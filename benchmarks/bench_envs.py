"""Throughput of the procedural games: reset, step and whole oracle episodes, text and image.

    pytest benchmarks/bench_envs.py --benchmark-enable --benchmark-columns=median,ops

Room generation is cached per task id, so ``reset`` over *fresh* ids (``reset_fresh``) is
measured separately from ``reset`` over a warm cache. Nothing is asserted about speed.
"""

from __future__ import annotations

import itertools

import pytest

import seed_gym

ENVS = {"sokoban": "seed_gym/Sokoban-v0", "ezpoints": "seed_gym/EZPoints-v0"}
MODALITIES = ("text", "image")
CASES = [(name, m) for name in ENVS for m in MODALITIES]


def _make(name: str, modality: str, split: str = "train"):
    return seed_gym.make(ENVS[name], split=split, modality=modality)


@pytest.mark.parametrize(("name", "modality"), CASES)
def test_reset(benchmark, name, modality):
    env = _make(name, modality)
    seeds = itertools.cycle(range(64))
    for s in range(64):  # warm the room cache
        env.reset(seed=s)
    benchmark(lambda: env.reset(seed=next(seeds)))


def test_reset_fresh_sokoban_rooms(benchmark):
    from seed_gym.envs.sokoban_rooms import room_for_task

    env = _make("sokoban", "text")
    ids = itertools.cycle(env.unwrapped.task_ids)

    def fresh():
        room_for_task.cache_clear()
        env.reset(options={"task_id": next(ids)})

    benchmark(fresh)


@pytest.mark.parametrize(("name", "modality"), CASES)
def test_step(benchmark, name, modality):
    # the raw env (no TimeLimit) so the loop never has to reset; actions keep the episode going
    env = _make(name, modality).unwrapped
    env.reset(seed=0)
    actions = itertools.cycle(("up", "down", "left", "right") if name == "sokoban" else ("x",))
    benchmark(lambda: env.step(next(actions)))


@pytest.mark.parametrize(("name", "modality"), CASES)
def test_oracle_episode(benchmark, name, modality):
    env = _make(name, modality, split="seen")
    raw = env.unwrapped
    ids = itertools.cycle(raw.task_ids)

    def episode():
        env.reset(options={"task_id": next(ids)})
        while True:
            *_, terminated, truncated, _ = env.step(raw.oracle_action())
            if terminated or truncated:
                return

    benchmark(episode)
