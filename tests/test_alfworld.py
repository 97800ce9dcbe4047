"""``seed_gym/ALFWorld-v0`` on the generated suite (built into the cache on first use, ~4 min of
two CPUs; ``seed-gym data build alfworld`` does the same ahead of time)."""

from __future__ import annotations

import json
import pickle
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("alfworld")
pytest.importorskip("textworld")

import seed_gym  # noqa: E402
from seed_gym.data import file_sha256  # noqa: E402
from seed_gym.envs.alfworld import TASK_TYPES, ALFWorldEnv, build  # noqa: E402
from seed_gym.envs.alfworld.generate import GENERATOR_VERSION  # noqa: E402

ENV_ID = "seed_gym/ALFWorld-v0"


@pytest.fixture(scope="module")
def unseen():
    env = seed_gym.make(ENV_ID, split="unseen")
    yield env
    env.close()


def _play_oracle(env, task_id: str, seed: int = 0) -> tuple[dict, float, int]:
    env.reset(seed=seed, options={"task_id": task_id})
    total, steps = 0.0, 0
    while True:
        _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            return info, total, steps


def test_first_observation_and_info(unseen):
    obs, info = unseen.reset(seed=0)
    raw = unseen.unwrapped
    text = obs["text"]
    assert text.startswith("-= Welcome to TextWorld, ALFRED! =-")
    assert "You are in the middle of a room. Looking quickly around you, you see" in text
    assert f"Your task is to: {raw.task_description}." in text
    assert info["task_type"] in TASK_TYPES and info["split"] == "unseen" and not info["won"]
    assert "help" not in info["admissible_actions"] and "look" in info["admissible_actions"]
    assert all(a.startswith(("go to ", "inventory", "look")) for a in info["admissible_actions"])
    plan = raw.privileged_info()["expert_plan"]
    assert plan and plan[0] == raw.oracle_action()
    json.dumps(raw.privileged_info())


def test_inadmissible_and_garbage_commands(unseen):
    _, info = unseen.reset(seed=1)
    before = info["admissible_actions"]
    for action in (
        "go to the moon",
        "take mug 1 from fridge 7",
        "",
        None,
        7,
        "x" * 500,
        "look\x00",
    ):
        obs, reward, terminated, truncated, info = unseen.step(action)
        assert obs["text"] == "Nothing happens."
        assert (reward, terminated, info["action_is_valid"]) == (0.0, False, False)
        assert info["admissible_actions"] == before  # the state did not change
    target = before[0]
    obs, _, _, _, info = unseen.step("  " + target.upper().replace(" ", "   ") + " ")
    assert info["action_is_valid"] and obs["text"].startswith("You arrive at")


def test_same_seed_same_episode():
    a, b = seed_gym.make(ENV_ID, split="seen"), seed_gym.make(ENV_ID, split="seen")
    try:
        for seed in (0, 5):
            oa, ia = a.reset(seed=seed)
            ob, ib = b.reset(seed=seed)
            assert oa == ob and ia == ib
            for _ in range(4):
                action = a.unwrapped.oracle_action()
                assert a.step(action) == b.step(action)
    finally:
        a.close()
        b.close()


def test_unpickled_env_continues_mid_episode(unseen):
    unseen.reset(seed=2)
    unseen.step(unseen.unwrapped.oracle_action())
    clone = pickle.loads(pickle.dumps(unseen))
    try:
        for _ in range(3):
            action = unseen.unwrapped.oracle_action()
            assert clone.unwrapped.oracle_action() == action
            assert clone.step(action) == unseen.step(action)
    finally:
        clone.close()


def test_check_env_train():
    env = seed_gym.make(ENV_ID, split="train")
    try:
        seed_gym.check_env(env)
    finally:
        env.close()


@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_oracle_wins_a_sample_of_every_type(split):
    env = seed_gym.make(ENV_ID, split=split)
    try:
        ids = env.unwrapped.manifest(split).task_ids
        by_type: dict[str, list[str]] = {}
        for task_id in ids:
            by_type.setdefault(task_id.split("-", 1)[0], []).append(task_id)
        assert set(by_type) == set(TASK_TYPES)
        for task_type, tasks in by_type.items():
            for task_id in tasks[:2]:
                info, total, steps = _play_oracle(env, task_id)
                assert info["won"] and info["task_type"] == task_type
                assert total == 10.0 and steps < 50
    finally:
        env.close()


def test_planner_expert_on_a_small_room():
    """ALFWorld's own fast-downward expert also solves a game (a bathroom: planning is quick)."""
    env = seed_gym.make(ENV_ID, split="unseen", expert="planner")
    try:
        ids = env.unwrapped.manifest("unseen").task_ids
        task_id = next(
            t
            for t in ids
            if t.startswith("pick_and_place_simple-") and t.split("/")[0].endswith("-424")
        )
        info, total, _ = _play_oracle(env, task_id)
        assert info["won"] and total == 10.0
    finally:
        env.close()


def test_agent_env_prompt():
    env = seed_gym.make_agent_env(ENV_ID, split="unseen")
    try:
        obs, info = env.reset(seed=3)
        text = obs["messages"][-1]["content"]
        assert "expert agent operating in the ALFRED Embodied Environment" in text
        assert (
            f"\nYour task is to: {info['task']}." in text
        )  # the engine's line, in the observation
        assert "\n'inventory'\n'look'\n" in text  # quoted, one per line
        assert "'help'" not in text and "<think>" in text and "<action>" in text
        action = env.unwrapped.oracle_action()
        obs, reward, _, _, info = env.step(f"<think>go</think><action>{action}</action>")
        assert info["action_is_valid"] and info["parsed_action"] == action
        text = obs["messages"][-1]["content"]
        assert "already taken 1 step(s)" in text and f"Action 1: '{action}'" in text
        assert f"\nYour task is to: {info['task']}\n" in text
        obs, reward, _, _, info = env.step("no tags")
        assert not info["format_valid"] and reward == pytest.approx(-0.1)
    finally:
        env.close()


def test_manifest_records_generator_and_hashes():
    env = ALFWorldEnv(split="seen")
    m = env.manifest("seen")
    assert len(m) == build.SPLIT_SIZES["seen"] and m.version == GENERATOR_VERSION
    assert m.meta["generator"] == GENERATOR_VERSION
    root = Path(m.meta["root"])
    suite = json.loads((root / "manifest.json").read_text())
    assert suite["generator"] == GENERATOR_VERSION and suite["domain_sha256"]
    assert suite["splits"]["seen"]["sha256"] == m.hash
    for record in suite["splits"]["seen"]["games"][:10]:
        path = root / "json_2.1.1" / "valid_seen" / record["task_id"] / "game.tw-pddl"
        assert file_sha256(path) == record["sha256"]


@pytest.mark.slow
def test_full_unseen_split_oracle_and_disjoint_rooms():
    env = seed_gym.make(ENV_ID, split="unseen")
    try:
        ids = env.unwrapped.manifest("unseen").task_ids
        assert len(ids) == build.SPLIT_SIZES["unseen"]
        wins: Counter[str] = Counter()
        for task_id in ids:
            info, _, _ = _play_oracle(env, task_id)
            wins[info["task_type"]] += info["won"]
        assert sum(wins.values()) >= 0.95 * len(ids)
        assert set(wins) == set(TASK_TYPES)
    finally:
        env.close()
    suite = json.loads(
        (Path(env.unwrapped.manifest("unseen").meta["root"]) / "manifest.json").read_text()
    )
    plans = {s: set(v["floor_plans"]) for s, v in suite["splits"].items()}
    assert plans["unseen"] == {f"FloorPlan{n}" for n in build.UNSEEN_FLOOR_PLANS}
    assert not plans["unseen"] & plans["train"]
    assert plans["seen"] <= plans["train"]
    for s, v in suite["splits"].items():
        assert Counter(g["task_type"] for g in v["games"]).keys() == set(TASK_TYPES), s


def test_seed_gym_eval_oracle_reports_per_type():
    from seed_gym.evaluate import evaluate

    results = evaluate(ENV_ID, "unseen", "oracle", episodes=12, seed=0, progress=False, n_boot=50)
    assert results["success_rate"] == 1.0
    assert results["macro_success_rate"] == 1.0
    assert set(results["per_task_type"]) <= set(TASK_TYPES)
