"""EnvPool and make_group_pool: backends agree, group copies agree, failures are loud."""

from __future__ import annotations

import functools
import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from conftest import GUESS_ID, canon, import_example

import seed_gym
from seed_gym.wrappers import EnvPool, EnvPoolError, WorkerDiedError, make_group_pool

import_example()


def completions(rng: np.random.Generator, n: int) -> list[str]:
    """A mix of valid guesses and garbage, as a sampling model would produce."""
    out = []
    for _ in range(n):
        k = int(rng.integers(4))
        guess = int(rng.integers(1, 101))
        out.append(
            [
                f"<think>try</think><action>{guess}</action>",
                "no tags at all",
                f"<think>x</think><action>{guess}",
                f"<think>t</think><action>{guess // 2}</action>",
            ][k]
        )
    return out


def play(pool: EnvPool, seeds: list[int], turns: int, seed: int = 0) -> list:
    """Reset with ``seeds``, then step every still-running env with scripted completions."""
    rng = np.random.default_rng(seed)
    record = [canon(pool.reset(seeds))]
    live = list(range(len(pool)))
    for _ in range(turns):
        if not live:
            break
        results = pool.step(live, completions(rng, len(live)))
        record.append((list(live), canon(results)))
        live = [i for i, r in zip(live, results, strict=True) if not (r[2] or r[3])]
    return record


def test_local_and_subprocess_give_identical_trajectories():
    tasks = seed_gym.task_ids(GUESS_ID, "train")[:3]
    seeds = [11, 11, 12, 12, 13, 13]
    runs = {}
    for backend in ("local", "subprocess"):
        with make_group_pool(
            GUESS_ID, tasks, 2, split="train", backend=backend, n_workers=2
        ) as pool:
            assert len(pool) == 6
            runs[backend] = play(pool, seeds, turns=14)
    assert runs["local"] == runs["subprocess"]
    # the episodes really ran: some steps, the step limit reached or won
    assert len(runs["local"]) > 5


def test_raw_env_pool_backends_agree():
    factories = [functools.partial(seed_gym.make, GUESS_ID, split="seen")] * 3
    rngs = {}
    for backend in ("local", "subprocess"):
        with EnvPool(factories, backend) as pool:
            resets = pool.reset([5, 6, 7])
            steps = pool.step([2, 0], ["17", "garbage"])
            rngs[backend] = canon((resets, steps))
    assert rngs["local"] == rngs["subprocess"]


def test_group_copies_of_one_task_are_identical_episodes():
    tasks = seed_gym.task_ids(GUESS_ID, "seen")[:2]
    G = 4
    with make_group_pool(GUESS_ID, tasks, G, split="seen", backend="subprocess") as pool:
        assert pool.tasks == tasks and pool.group_size == G
        resets = pool.reset([3] * len(pool))
        for b, task in enumerate(tasks):
            group = [canon(resets[b * G + g]) for g in range(G)]
            assert all(x == group[0] for x in group)
            assert resets[b * G][1]["task_id"] == task
        script = [
            "<think>a</think><action>50</action>",
            "junk",
            "<think>b</think><action>25</action>",
        ]
        for completion in script:
            results = pool.step(range(len(pool)), [completion] * len(pool))
            for b in range(len(tasks)):
                group = [canon(results[b * G + g]) for g in range(G)]
                assert all(x == group[0] for x in group)


def test_only_listed_envs_advance_and_results_follow_the_order():
    with make_group_pool(GUESS_ID, ["secret-5"], 3, split="seen", backend="subprocess") as pool:
        pool.reset([0, 0, 0])
        out = pool.step(
            [2, 0], ["<think></think><action>9</action>", "<think></think><action>1</action>"]
        )
        assert [o[4]["anchor"] for o in out] == ["9? Lower.", "1? Higher."]
        # env 1 was not stepped: its next step is its first
        ((obs, *_),) = pool.step([1], ["<think></think><action>5</action>"])
        assert (
            "Your last guesses:\n- Make your first guess. You guessed 5."
            in obs["messages"][-1]["content"]
        )


def test_reset_options_override_the_pinned_task():
    with make_group_pool(GUESS_ID, ["secret-5", "secret-10"], 1, split="seen") as pool:
        out = pool.reset([0, 0], [None, {"task_id": "secret-95"}])
        assert [i["task_id"] for _, i in out] == ["secret-5", "secret-95"]


def test_bad_arguments_raise():
    with make_group_pool(GUESS_ID, ["secret-5"], 2, split="seen") as pool:
        pool.reset([0, 0])
        with pytest.raises(ValueError):
            pool.reset([0])
        with pytest.raises(ValueError):
            pool.step([0, 0], ["a", "b"])
        with pytest.raises(ValueError):
            pool.step([0], ["a", "b"])
        with pytest.raises(IndexError):
            pool.step([2], ["a"])
    with pytest.raises(ValueError):
        EnvPool([], "local")
    with pytest.raises(ValueError):
        EnvPool([lambda: None], "threads")


def test_killed_worker_gives_a_clear_error_not_a_hang():
    pool = make_group_pool(
        GUESS_ID, ["secret-5", "secret-10"], 2, split="seen", backend="subprocess", n_workers=2
    )
    pool.reset([0] * 4)
    victim = pool._workers[1]
    os.kill(victim.process.pid, signal.SIGKILL)
    with pytest.raises(WorkerDiedError, match=r"worker 1 .*killed by SIGKILL during step"):
        pool.step([0, 3], ["<think></think><action>3</action>"] * 2)
    # the pool stays broken with the same message, and closing it is clean
    with pytest.raises(WorkerDiedError, match="worker 1"):
        pool.reset([0] * 4)
    pool.close()
    with pytest.raises(EnvPoolError, match="closed"):
        pool.step([0], ["x"])


class _Exploding(gym.Env):
    observation_space = gym.spaces.Discrete(1)
    action_space = gym.spaces.Discrete(1)

    def reset(self, *, seed=None, options=None):
        return 0, {}

    def step(self, action):
        raise RuntimeError("boom from the env")


def test_an_env_that_raises_reports_its_traceback():
    with EnvPool([_Exploding, _Exploding], "subprocess") as pool:
        pool.reset([0, 0])
        with pytest.raises(EnvPoolError, match="boom from the env"):
            pool.step([1], [0])
        # the worker survived: the pool still answers
        assert len(pool.reset([0, 0])) == 2


def test_a_factory_that_raises_fails_at_construction():
    def bad():
        raise OSError("no data here")

    with pytest.raises(EnvPoolError, match="no data here"):
        EnvPool([bad], "subprocess")


def test_image_observations_cross_the_pipe_unchanged():
    pytest.importorskip("seed_gym.envs.sokoban")
    tasks = seed_gym.task_ids("seed_gym/Sokoban-v0", "seen")[:2]
    runs = {}
    for backend in ("local", "subprocess"):
        with make_group_pool(
            "seed_gym/Sokoban-v0", tasks, 2, split="seen", modality="image", backend=backend
        ) as pool:
            record = [canon(pool.reset([1] * 4))]
            for move in (
                "<think></think><action>up</action>",
                "??",
                "<think></think><action>left</action>",
            ):
                record.append(canon(pool.step(range(4), [move] * 4)))
            runs[backend] = record
    assert runs["local"] == runs["subprocess"]
    assert runs["local"][0][0][0]["images"][0][0] == "Image"
