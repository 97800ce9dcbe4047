"""Sokoban: the contract, hand-worked rewards, seeded rooms, splits, the oracle, images, the spec."""

from __future__ import annotations

import random

import numpy as np
import pytest

import seed_gym
from seed_gym.checker import check_splits_disjoint_by_content
from seed_gym.envs.sokoban import SokobanEnv, sokoban_manifest
from seed_gym.envs.sokoban_rooms import CONFIGS, generate_room, room_for_task, room_from_text
from seed_gym.envs.sokoban_solver import solve
from seed_gym.splits import check_disjoint
from seed_gym.wrappers.spec import PromptContext, Turn
from seed_gym.wrappers.templates.sokoban import SPEC

ENV_ID = "seed_gym/Sokoban-v0"

TWO_BOXES = """
# # # # # # #
# P X O _ _ #
# _ _ X O _ #
# _ _ _ _ _ #
# # # # # # #
"""


def _custom(text: str, modality: str = "text") -> SokobanEnv:
    env = SokobanEnv(split="train", modality=modality)
    env.reset(seed=0)
    env.load_room(room_from_text(text))
    return env


@pytest.mark.parametrize("modality", ["text", "image", "text+image"])
def test_check_env_every_modality(modality):
    for split in ("train", "unseen"):
        env = seed_gym.make(ENV_ID, split=split, modality=modality)
        seed_gym.check_env(env, check_splits=split == "train")


# --- hand-worked rewards ------------------------------------------------------------------------
def test_box_onto_target_off_target_wall_bump_and_solve():
    env = _custom(TWO_BOXES)
    assert env.render_text() == TWO_BOXES.strip()
    # wall bump: nothing moves, only the step cost
    _, r, term, _, info = env.step("up")
    assert r == pytest.approx(-0.1) and not term and info["action_is_valid"]
    assert env.render_text() == TWO_BOXES.strip()
    # box onto target: -0.1 + 1
    _, r, term, _, info = env.step("right")
    assert r == pytest.approx(0.9) and not term and not info["won"]
    assert info["sokoban.boxes_on_target"] == 1
    assert env.render_text().splitlines()[1] == "# _ P √ _ _ #"
    # and off it again: -0.1 - 1
    _, r, _, _, info = env.step("right")
    assert r == pytest.approx(-1.1) and info["sokoban.boxes_on_target"] == 0
    assert env.render_text().splitlines()[1] == "# _ _ S X _ #"


def test_solving_gives_ten_more_and_terminates():
    env = _custom(TWO_BOXES)
    rewards = [env.step(a)[1] for a in ("right", "down")]
    assert rewards == pytest.approx([0.9, -0.1])
    _, r, term, trunc, info = env.step("right")  # second box onto its target: solved
    assert r == pytest.approx(-0.1 + 1 + 10)
    assert term and not trunc and info["won"]


def test_box_cannot_be_pushed_into_a_box_or_a_wall():
    env = _custom(
        """
        # # # # # # #
        # P X X O O #
        # # # # # # #
        """
    )
    before = env.render_text()
    _, r, _, _, info = env.step("right")
    assert r == pytest.approx(-0.1) and info["action_is_valid"] and env.render_text() == before


def test_invalid_actions_are_noops_with_feedback_and_step_cost():
    env = _custom(TWO_BOXES)
    for bad in ("jump", "", "up up", None, 3, "push right"):
        obs, r, term, trunc, info = env.step(bad)
        assert r == pytest.approx(-0.1) and not term and not trunc
        assert info["action_is_valid"] is False
        assert obs["text"].startswith("Invalid action")
        assert info["sokoban.grid"] == TWO_BOXES.strip()
    _, r, _, _, info = env.step("  RIGHT ")  # case and spaces do not matter
    assert info["action_is_valid"] and r == pytest.approx(0.9)


# --- generation and determinism -----------------------------------------------------------------
def test_task_id_alone_determines_the_room():
    tid = "sokoban-6x6-b1-000123"
    a = generate_room(CONFIGS["6x6-b1"], 123)
    room_for_task.cache_clear()
    assert room_for_task(tid) == a
    env1 = seed_gym.make(ENV_ID, split="train")
    env2 = seed_gym.make(ENV_ID, split="train")
    o1, _ = env1.reset(seed=1, options={"task_id": tid})
    o2, _ = env2.reset(seed=99, options={"task_id": tid})
    assert o1 == o2


def test_known_room_is_stable_across_machines():
    # PCG64 streams are platform independent: this room must never change
    room_for_task.cache_clear()
    env = SokobanEnv(split="seen")
    obs, _ = env.reset(options={"task_id": "sokoban-6x6-b1-100170"})
    assert obs["text"] == (
        "# # # # # #\n# _ _ _ _ #\n# P _ X _ #\n# _ O # # #\n# _ _ # # #\n# # # # # #"
    )


def test_generator_never_uses_the_global_rng():
    rooms = []
    for global_seed in (0, 1):
        np.random.seed(global_seed)
        random.seed(global_seed)
        np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
        rooms.append([generate_room(CONFIGS[k], s) for k in CONFIGS for s in range(20)])
        assert np.array_equal(np.random.get_state()[1], np_state)
        assert random.getstate() == py_state
    assert rooms[0] == rooms[1]


def test_same_seed_same_episode():
    def run(seed):
        env = seed_gym.make(ENV_ID, split="train", modality="text+image")
        obs, info = env.reset(seed=seed)
        out = [(obs["text"], obs["image"].tobytes(), info["task_id"])]
        for a in ("up", "left", "down", "right", "right", "xx"):
            obs, r, *_ = env.step(a)
            out.append((obs["text"], obs["image"].tobytes(), r))
        return out

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_generated_rooms_are_solvable_within_the_step_limit():
    for key, config in CONFIGS.items():
        for seed in range(50):
            room = generate_room(config, seed)
            assert not (set(room.boxes) & room.targets), key
            plan = solve(room.floor, room.targets, room.start, room.width)
            assert plan is not None and len(plan) == room.solution_length
            assert config.min_solution <= len(plan) <= config.max_solution
            assert len(room.boxes) == config.boxes and room.fixed().shape == (config.height,) * 2


# --- splits -------------------------------------------------------------------------------------
SEEN_HASH_PREFIX = "c2adfbb3dd2f"  # sha256 of the seen ids, split version 2


def test_splits_disjoint_sized_and_stable():
    manifests = [sokoban_manifest(s) for s in seed_gym.SPLITS]
    check_disjoint(manifests)
    assert [len(m) for m in manifests] == [10_000, 200, 200]
    assert all(
        t.startswith("sokoban-6x6-b1-") for t in manifests[0].task_ids + manifests[1].task_ids
    )
    assert all(t.startswith("sokoban-7x7-b2-") for t in manifests[2].task_ids)
    seeds = [{int(t.rsplit("-", 1)[1]) for t in m.task_ids} for m in manifests]
    assert not (seeds[0] & seeds[1]) and not (seeds[0] & seeds[2]) and not (seeds[1] & seeds[2])
    assert seed_gym.task_ids(ENV_ID, "seen") == list(manifests[1].task_ids)
    # the hash is over the ids only: pinned so a change to the split is a visible decision
    assert manifests[1].hash == sokoban_manifest.__wrapped__("seen").hash
    assert manifests[1].hash[:12] == SEEN_HASH_PREFIX


def test_seen_rooms_are_not_train_rooms():
    # split version 1 took seeds 100000..100199 and 64 of those rooms were train rooms, e.g.
    # 100001 is the room of 000255; version 2 skips repeats, so the splits differ by content
    same = room_for_task("sokoban-6x6-b1-100001").content_key()
    assert same == room_for_task("sokoban-6x6-b1-000255").content_key()
    seen = sokoban_manifest("seen").task_ids
    assert "sokoban-6x6-b1-100001" not in seen and len(seen) == 200
    env = seed_gym.make(ENV_ID, split="seen")
    check_splits_disjoint_by_content(env)
    train = {env.unwrapped.content_key(t) for t in sokoban_manifest("train").task_ids}
    seen_keys = [env.unwrapped.content_key(t) for t in seen]
    assert len(set(seen_keys)) == 200 and not train & set(seen_keys)


# --- oracle ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_oracle_wins_every_task(split):
    env = seed_gym.make(ENV_ID, split=split)
    raw = env.unwrapped
    wins, lengths = 0, []
    for tid in raw.task_ids:
        _, info = env.reset(options={"task_id": tid})
        plan = raw.privileged_info()["solution"]
        steps = 0
        done = False
        while not done:
            _, _, term, trunc, info = env.step(raw.oracle_action())
            steps += 1
            done = term or trunc
        wins += info["won"]
        assert steps == len(plan)
        lengths.append(steps)
    assert wins == len(raw.task_ids)
    assert max(lengths) <= 15


def test_privileged_info_is_the_solution_from_the_current_state():
    env = _custom(TWO_BOXES)
    info = env.privileged_info()
    assert info["solution_length"] == 3 and info["solution"] == ["right", "down", "right"]
    env.step("right")
    assert env.privileged_info()["solution"] == ["down", "right"]


# --- images ---------------------------------------------------------------------------------------
def test_images_are_uint8_fixed_size_and_change_with_the_state():
    for split in ("train", "unseen"):
        env = seed_gym.make(ENV_ID, split=split, modality="image")
        obs, _ = env.reset(seed=3)
        img = obs["image"]
        assert img.dtype == np.uint8 and img.shape == (192, 192, 3)
        assert obs["text"] == ""
        action = env.unwrapped.oracle_action()
        obs2, *_ = env.step(action)
        assert obs2["image"].shape == img.shape and not np.array_equal(obs2["image"], img)
    env = _custom(TWO_BOXES, modality="text+image")
    a = env.render_image()
    env.step("right")  # box onto target changes its colour, the player moves
    assert not np.array_equal(a, env.render_image())


# --- agent spec -----------------------------------------------------------------------------------
def test_agent_spec_prompt_and_parser():
    grid = TWO_BOXES.strip()
    ctx = PromptContext(
        task="Push every box onto a target.",
        observation=grid,
        history=(Turn(grid, "up"),),
        step=2,
        admissible_actions=("up", "down", "left", "right"),
    )
    text = SPEC.render(ctx)
    assert grid in text and "Action 1: up" in text and "<image>" not in text
    assert text.rstrip().endswith("<action> </action> tags.")
    image_text = SPEC.render(
        PromptContext("t", "<image>", (Turn("", "left"),), 2, ("up", "down", "left", "right"))
    )
    assert image_text.count("<image>") == 1 and "[image]" in image_text
    assert SPEC.history == 2 and SPEC.invalid_penalty == pytest.approx(0.1)
    ok = SPEC.parse("<think>push it</think><action>Right</action>")
    assert ok.valid and ok.action == "Right"
    assert not SPEC.parse("right").valid
