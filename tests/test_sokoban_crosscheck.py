"""Cross-check our Sokoban rules against gym-sokoban's, step by step, on the same rooms.

gym-sokoban 0.0.6 needs the old ``gym``, numpy < 2 and setuptools < 81, so it lives in its own
virtualenv, not in seed-gym's. The test skips when it cannot be imported. To run it:

    python -m venv /tmp/venv-sokoban
    /tmp/venv-sokoban/bin/pip install "setuptools<81" "numpy<2" gym==0.26.2 gym-sokoban==0.0.6 \
        gymnasium==1.4.0 pillow pytest
    /tmp/venv-sokoban/bin/pip install --no-deps -e .
    /tmp/venv-sokoban/bin/python -m pytest tests/test_sokoban_crosscheck.py -q

Both directions are checked: our seeded rooms played by gym-sokoban's step logic, and rooms from
gym-sokoban's own generator played by ours. Its push actions 1-4 are up / down / left / right.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    gym_sokoban_env = pytest.importorskip("gym_sokoban.envs.sokoban_env")
    room_utils = pytest.importorskip("gym_sokoban.envs.room_utils")

from seed_gym.envs.sokoban import SYMBOLS, SokobanEnv  # noqa: E402
from seed_gym.envs.sokoban_rooms import room_for_task, room_from_text  # noqa: E402

PUSH = {"up": 1, "down": 2, "left": 3, "right": 4}


def _reference(room_fixed: np.ndarray, room_state: np.ndarray, num_boxes: int):
    env = gym_sokoban_env.SokobanEnv(
        dim_room=room_fixed.shape, num_boxes=num_boxes, max_steps=10**6, reset=False
    )
    env.room_fixed = room_fixed.copy()
    env.room_state = room_state.copy()
    env.player_position = np.argwhere(room_state == 5)[0]
    env.num_env_steps = 0
    env.reward_last = 0
    env.boxes_on_target = int((room_state == 3).sum())
    return env


def _ours_as_reference_codes(env: SokobanEnv) -> np.ndarray:
    codes = env.codes().copy()
    codes[codes == 6] = 5  # gym-sokoban marks the player 5 whether or not it stands on a target
    return codes


def _play_both(ours: SokobanEnv, ref, actions: list[str]) -> int:
    steps = 0
    for action in actions:
        _, r_ours, won, _, info = ours.step(action)
        _, r_ref, done, _ = ref.step(PUSH[action], observation_mode="tiny_rgb_array")
        steps += 1
        assert r_ours == pytest.approx(r_ref), (action, steps)
        assert np.array_equal(_ours_as_reference_codes(ours), ref.room_state), (action, steps)
        assert won == bool(ref._check_if_all_boxes_on_target())
        if won:
            assert done
            break
    return steps


def _actions(rng: np.random.Generator, n: int) -> list[str]:
    return [("up", "down", "left", "right")[int(i)] for i in rng.integers(4, size=n)]


@pytest.mark.parametrize("task_prefix", ["sokoban-6x6-b1-", "sokoban-7x7-b2-"])
def test_our_rooms_play_identically_in_gym_sokoban(task_prefix):
    rng = np.random.default_rng(0)
    for seed in range(30):
        room = room_for_task(f"{task_prefix}{seed:06d}")
        for episode in range(3):
            ours = SokobanEnv(split="train")
            ours.reset(seed=0)
            ours.load_room(room)
            ref = _reference(room.fixed(), _ours_as_reference_codes(ours), len(room.boxes))
            # one episode follows the oracle (reaches the +1 / +10 rewards), two walk randomly
            actions = ours.solution() if episode == 0 else _actions(rng, 40)
            _play_both(ours, ref, actions)


def test_gym_sokoban_rooms_play_identically_in_ours():
    random.seed(0)
    np.random.seed(0)  # gym-sokoban's generator uses the global RNGs
    rng = np.random.default_rng(1)
    played = 0
    for dim, boxes in (((6, 6), 1), ((7, 7), 2)):
        for _ in range(25):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fixed, state, _ = room_utils.generate_room(
                        dim=dim, num_steps=20, num_boxes=boxes
                    )
            except (RuntimeError, RuntimeWarning):
                continue
            codes = state.copy()
            codes[(state == 5) & (fixed == 2)] = 6
            text = "\n".join(" ".join(SYMBOLS[int(c)] for c in row) for row in codes)
            ours = SokobanEnv(split="train")
            ours.reset(seed=0)
            ours.load_room(room_from_text(text))
            ref = _reference(fixed, state, boxes)
            plan = ours.solution() or []
            _play_both(ours, _reference(fixed, state, boxes), plan)
            ours.load_room(room_from_text(text))
            _play_both(ours, ref, _actions(rng, 60))
            played += 1
    assert played >= 20
