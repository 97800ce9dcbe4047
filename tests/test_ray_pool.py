"""RayEnvPool: same trajectories as in-process envs, and failed workers never hang a rollout."""

from __future__ import annotations

import functools
import importlib
import os
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import canon

from seed_gym.checker import _equal

ray = pytest.importorskip("ray")

from seed_gym.wrappers.pool_errors import EnvPoolError  # noqa: E402
from seed_gym.wrappers.ray_pool import ERROR_KEY, RayEnvPool  # noqa: E402

# workers unpickle the factories below; this test module is not importable there
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class DiceEnv(gym.Env):
    """A seeded game whose every observation and reward depends on ``np_random``, plus actions
    that misbehave on purpose: ``hang`` sleeps, ``raise`` raises, ``exit`` kills the process."""

    def __init__(self, name: str = "dice"):
        self.name = name
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if (options or {}).get("explode"):
            raise RuntimeError("bad task")
        self.t = 0
        self.target = int(self.np_random.integers(1000))
        task = (options or {}).get("task_id", "t0")
        return {"text": f"{task} target={self.target}"}, {"task_id": task, "won": False}

    def step(self, action):
        if action == "hang":
            time.sleep(3600)
        if action == "raise":
            raise RuntimeError("boom")
        if action == "exit":
            os._exit(3)
        self.t += 1
        roll = int(self.np_random.integers(1000))
        won = abs(roll - self.target) < 100
        obs = {
            "text": f"{action} -> {roll}",
            "image": self.np_random.integers(0, 255, (2, 2, 3), dtype=np.uint8),
        }
        info = {"task_id": "x", "won": won, "action_is_valid": True}
        return obs, float(won), won, self.t >= 6, info


def make_dice(k: int) -> gym.Env:
    return DiceEnv(f"dice{k}")


@pytest.fixture(scope="module")
def local_ray():
    if ray.is_initialized():  # another test module's Ray: start ours with known resources
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _play(step, reset, n_envs, seeds, n_steps):
    """Reset with ``seeds`` and step a fixed action script; record every result."""
    record = [reset(seeds, [{"task_id": f"t{i // 3}"} for i in range(n_envs)])]
    rng = np.random.default_rng(0)
    for _ in range(n_steps):
        # a changing subset of envs advances each call, as in a real group rollout
        indices = sorted(
            rng.choice(n_envs, size=int(rng.integers(1, n_envs + 1)), replace=False).tolist()
        )
        record.append(step(indices, [f"a{int(rng.integers(5))}" for _ in indices]))
    return record


def test_same_trajectories_as_local(local_ray):
    n = 6
    factories = [functools.partial(make_dice, k) for k in range(n)]
    local = [f() for f in factories]

    def local_reset(seeds, options):
        return [
            env.reset(seed=s, options=o) for env, s, o in zip(local, seeds, options, strict=True)
        ]

    def local_step(indices, actions):
        return [local[i].step(a) for i, a in zip(indices, actions, strict=True)]

    seeds = [11, 11, 11, 12, 12, 12]  # G=3 copies of 2 tasks
    expected = _play(local_step, local_reset, n, seeds, 12)
    pool = RayEnvPool(factories, envs_per_worker=4)  # 2 workers, uneven on purpose
    try:
        assert len(pool) == n and len(pool.workers) == 2
        got = _play(pool.step, pool.reset, n, seeds, 12)
        pids = ray.get([w.pid.remote() for w in pool.workers])
    finally:
        pool.close()
    assert _equal(got, expected)
    assert len(set(pids)) == 2 and os.getpid() not in pids
    # copies of one task with the same seed see the same episode
    assert got[0][0] == got[0][1] == got[0][2] and got[0][0] != got[0][3]


def _kill_and_wait(worker) -> None:
    """``ray.kill`` only sends the kill: a call made right after it may still be served. Wait
    until the actor answers calls with ``RayActorError`` (bounded by tries, not by time)."""
    ray.kill(worker)
    for _ in range(600):
        try:
            ray.get(worker.pid.remote(), timeout=30)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.1)
    raise AssertionError("the killed actor kept answering")


def test_killed_worker_fails_its_episodes_and_restarts(local_ray):
    pool = RayEnvPool([functools.partial(make_dice, k) for k in range(4)], envs_per_worker=2)
    try:
        first = pool.reset([0, 1, 2, 3])
        _kill_and_wait(pool.workers[0])  # hosts envs 0 and 1
        out = pool.step([1, 2], ["a", "a"])
        obs, reward, terminated, truncated, info = out[0]
        assert terminated and truncated and reward == 0.0
        assert "died" in info[ERROR_KEY] and info["won"] is False
        assert obs == first[1][0]  # the last observation the env produced
        assert ERROR_KEY not in out[1][4]  # env 2 lives on another worker
        assert pool.restarts == 1
        # env 0 was on the killed worker too: its episode is lost though it was not stepped
        assert ERROR_KEY in pool.step([0], ["a"])[0][4]
        with pytest.raises(EnvPoolError, match="died"):
            pool.call(0, "target")
        # after a reset everything works again, on the fresh worker, with identical episodes
        again = pool.reset([0, 1, 2, 3])
        assert _equal(again, first)
        assert all(ERROR_KEY not in r[4] for r in pool.step([0, 1, 2, 3], ["a"] * 4))
        reference = make_dice(1)
        reference.reset(seed=1)
        assert pool.call(1, "target") == reference.target
    finally:
        pool.close()


def test_crashing_env_process_is_restarted(local_ray):
    pool = RayEnvPool([functools.partial(make_dice, k) for k in range(2)], envs_per_worker=1)
    try:
        pool.reset([5, 6])
        out = pool.step([0, 1], ["exit", "a"])
        assert ERROR_KEY in out[0][4] and out[0][2] and out[0][3]
        assert ERROR_KEY not in out[1][4]
        assert pool.restarts == 1
        pool.reset([5, 6])
        assert ERROR_KEY not in pool.step([0], ["a"])[0][4]
    finally:
        pool.close()


def test_hung_step_times_out_and_restarts(local_ray):
    pool = RayEnvPool(
        [functools.partial(make_dice, k) for k in range(2)], envs_per_worker=1, step_timeout=3
    )
    try:
        pool.reset([5, 6])
        out = pool.step([0, 1], ["hang", "a"])
        assert "hung" in out[0][4][ERROR_KEY] and out[0][2] and out[0][3]
        assert ERROR_KEY not in out[1][4]
        assert pool.restarts == 1
        fresh = [make_dice(0).reset(seed=5), make_dice(1).reset(seed=6)]
        assert _equal(pool.reset([5, 6]), fresh)
    finally:
        pool.close()


def test_env_exception_fails_only_that_episode(local_ray):
    pool = RayEnvPool([functools.partial(make_dice, k) for k in range(2)], envs_per_worker=2)
    try:
        pool.reset([1, 2])
        out = pool.step([0, 1], ["raise", "a"])
        assert "RuntimeError: boom" in out[0][4][ERROR_KEY]
        assert ERROR_KEY not in out[1][4]
        assert pool.restarts == 0  # the worker is healthy; only env 0's episode is over
        assert ERROR_KEY in pool.step([0], ["a"])[0][4]
        assert ERROR_KEY not in pool.step([1], ["a"])[0][4]
    finally:
        pool.close()


def test_failed_reset_raises_and_pool_recovers(local_ray):
    pool = RayEnvPool([functools.partial(make_dice, k) for k in range(3)], envs_per_worker=2)
    try:
        with pytest.raises(
            EnvPoolError, match="env 1: env raised in reset: RuntimeError: bad task"
        ):
            pool.reset([1, 2, 3], [None, {"explode": True}, None])
        _kill_and_wait(pool.workers[1])  # the reset after a dead worker is retried on a fresh one
        assert _equal(pool.reset([1, 2, 3]), [make_dice(k).reset(seed=k + 1) for k in range(3)])
        assert pool.restarts == 1
    finally:
        pool.close()


def test_bad_calls_raise_clear_errors(local_ray):
    pool = RayEnvPool([functools.partial(make_dice, 0)])
    try:
        with pytest.raises(ValueError, match="seeds"):
            pool.reset([1, 2])
        pool.reset([1])
        with pytest.raises(IndexError):
            pool.step([3], ["a"])
        with pytest.raises(ValueError, match="at most once"):
            pool.step([0, 0], ["a", "b"])
    finally:
        pool.close()
    with pytest.raises(ValueError, match="at least one"):
        RayEnvPool([])


# --- user envs and the real suite through make_group_pool --------------------------------------
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def register_example() -> None:
    """What a user's worker_setup does: import the module that registers their env."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    importlib.import_module("guess_number")


def test_worker_setup_registers_user_envs(local_ray):
    from seed_gym.wrappers.pool import make_group_pool

    register_example()
    guess = "example/GuessNumber-v0"
    tasks = ["secret-7", "secret-42"]
    actions = ["<think>a</think><action>50</action>", "fifty", "<think>b</think><action>7</action>"]
    runs = {}
    for backend, kwargs in (("local", {}), ("ray", {"worker_setup": register_example})):
        pool = make_group_pool(guess, tasks, 2, backend=backend, **kwargs)
        try:
            runs[backend] = [canon(pool.reset([0, 0, 1, 1]))]
            runs[backend] += [canon(pool.step([0, 1, 2, 3], [a] * 4)) for a in actions]
        finally:
            pool.close()
    assert runs["ray"] == runs["local"]
    assert runs["local"][3][0][4]["won"] is True and runs["local"][3][2][4]["won"] is False


# --- the real suite through make_group_pool ------------------------------------------------------
SOKOBAN = "seed_gym/Sokoban-v0"


def sokoban_completions(rng: np.random.Generator, n: int) -> list[str]:
    """Valid moves and malformed outputs, as a sampling model would produce."""
    moves = ["up", "down", "left", "right"]
    out = []
    for _ in range(n):
        move = moves[int(rng.integers(4))]
        out.append(
            [
                f"<think>go {move}</think><action>{move}</action>",
                f"<think>hm</think><action>{move}</action>",
                "I will move somewhere",
                f"<action>{move}",
            ][int(rng.integers(4))]
        )
    return out


def play_group(pool, seeds: list[int], turns: int) -> list:
    rng = np.random.default_rng(3)
    record = [canon(pool.reset(seeds))]
    live = list(range(len(pool)))
    for _ in range(turns):
        if not live:
            break
        results = pool.step(live, sokoban_completions(rng, len(live)))
        record.append((list(live), canon(results)))
        live = [i for i, r in zip(live, results, strict=True) if not (r[2] or r[3])]
    record.append([pool.call(i, "privileged_info") for i in range(len(pool))])
    return record


@pytest.mark.parametrize("modality", ["text", "image"])
def test_sokoban_group_pool_ray_matches_local(local_ray, modality):
    import seed_gym
    from seed_gym.wrappers.pool import make_group_pool

    if SOKOBAN not in seed_gym.list_envs():
        pytest.skip("Sokoban is not registered")
    tasks = seed_gym.task_ids(SOKOBAN, "train")[:2]
    seeds = [7, 7, 8, 8]  # 2 tasks x G=2
    runs = {}
    for backend, kwargs in (("local", {}), ("ray", {"envs_per_worker": 3})):
        pool = make_group_pool(SOKOBAN, tasks, 2, modality=modality, backend=backend, **kwargs)
        try:
            runs[backend] = play_group(pool, seeds, turns=16 if modality == "text" else 3)
        finally:
            pool.close()
    assert runs["ray"] == runs["local"]
    first = runs["local"][0]
    assert first[0] == first[1] and first[0] != first[2]  # copies of a task start alike
    assert len(runs["local"]) > 3
    if modality == "image":
        assert first[0][0]["images"][0][0] == "Image"
