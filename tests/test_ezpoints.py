"""EZPoints: the contract, hand-worked rewards, card splits, the oracle, images, the agent spec."""

from __future__ import annotations

import random

import numpy as np
import pytest

import seed_gym
from seed_gym.envs.cards import Card, card_image
from seed_gym.envs.ezpoints import (
    DEALABLE_PAIRS,
    UNSEEN_PAIRS,
    evaluate,
    ezpoints_manifest,
    parse_task_id,
    value_pair,
)
from seed_gym.splits import check_disjoint
from seed_gym.wrappers.spec import PromptContext, Turn
from seed_gym.wrappers.templates.ezpoints import SPEC, SPEC_JSON

ENV_ID = "seed_gym/EZPoints-v0"


def _split_of(task_id: str) -> str:
    return next(s for s in seed_gym.SPLITS if task_id in ezpoints_manifest(s).task_ids)


def _play(task_id: str, actions: list, modality: str = "text"):
    env = seed_gym.make(ENV_ID, split=_split_of(task_id), modality=modality)
    env.reset(seed=0, options={"task_id": task_id})
    return [env.step(a) for a in actions]


def _rewards(steps) -> list[float]:
    return [s[1] for s in steps]


@pytest.mark.parametrize("modality", ["image", "text", "text+image"])
def test_check_env_every_modality(modality):
    for split in ("train", "unseen"):
        env = seed_gym.make(ENV_ID, split=split, modality=modality)
        seed_gym.check_env(env, check_splits=split == "train")


def test_default_modality_is_image():
    obs, _ = seed_gym.make(ENV_ID).reset(seed=0)
    assert obs["image"].shape == (300, 300, 3) and obs["text"] == "Formula:"


# --- hand-worked rewards ------------------------------------------------------------------------
def test_correct_formula_wins_ten():
    steps = _play("ezpoints-5H-7S", ["5", "+", "7", "="])
    assert _rewards(steps) == [0.0, 0.0, 0.0, 10.0]
    obs, _, term, trunc, info = steps[-1]
    assert term and not trunc and info["won"] and obs["text"].endswith("Formula: 5 + 7 =")
    # face cards are 10, multiplication works, two equal cards are both usable
    assert _rewards(_play("ezpoints-KS-2H", ["2", "+", "10", "="]))[-1] == 10.0
    assert _rewards(_play("ezpoints-3C-4D", ["4", "*", "3", "="]))[-1] == 10.0
    assert _rewards(_play("ezpoints-6C-6D", ["6", "+", "6", "="]))[-1] == 10.0


def test_wrong_equals_scores_zero_and_ends():
    for actions in (
        ["5", "*", "7", "="],
        ["="],
        ["5", "="],
        ["5", "+", "="],
        ["5", "+", "7", "+", "="],
    ):
        steps = _play("ezpoints-5H-7S", actions)
        _, r, term, _, info = steps[-1]
        assert r == 0.0 and term and not info["won"], actions  # the reference: 0
        assert all(s[1] == 0.0 for s in steps[:-1])


def test_juxtaposed_numbers_are_not_one_number():
    # the reference eval()-ed "2" "10" as 210; here it is a malformed formula
    assert evaluate(["2", "10"]) is None
    assert evaluate(["3", "+", "4", "*", "2"]) == 11
    steps = _play("ezpoints-KS-2H", ["2", "10", "="])
    assert steps[-1][1] == 0.0 and not steps[-1][-1]["won"]


def test_illegal_tokens_cost_nothing_and_change_nothing():
    # ten steps: past the 8-step limit, after which nothing is played (FreezeAtEnd)
    split = _split_of("ezpoints-5H-7S")
    env = seed_gym.make(ENV_ID, split=split, modality="text", max_episode_steps=10)
    env.reset(options={"task_id": "ezpoints-5H-7S"})
    for bad in ("3", "12", "x", "", None, "5 +", "-"):
        obs, r, term, trunc, info = env.step(bad)
        assert r == 0.0 and not term and not trunc and not info["action_is_valid"], bad
        assert obs["text"].startswith(("Illegal token", "No token"))
        assert info["ezpoints.formula"] == ""
    env.step("5")
    obs, r, _, _, info = env.step("5")  # the only 5 is used
    assert r == 0.0 and not info["action_is_valid"] and info["ezpoints.formula"] == "5"
    _, r, _, _, info = env.step(" + ")
    assert r == 0.0 and info["ezpoints.formula"] == "5 +"


def test_formula_longer_than_five_tokens_ends_the_episode():
    steps = _play("ezpoints-5H-7S", ["5", "+", "+", "*", "7", "+"])
    assert _rewards(steps) == [0.0] * 6
    _, _, term, _, info = steps[-1]
    assert term and not info["won"] and not info["action_is_valid"]


def test_steps_after_the_end_do_nothing():
    env = seed_gym.make(ENV_ID, split=_split_of("ezpoints-5H-7S"), modality="text")
    env.reset(options={"task_id": "ezpoints-5H-7S"})
    env.step("=")
    _, r, term, _, info = env.step("5")
    assert r == 0.0 and term and not info["action_is_valid"]


# --- splits ---------------------------------------------------------------------------------------
def test_splits_hold_out_card_value_pairs():
    manifests = [ezpoints_manifest(s) for s in seed_gym.SPLITS]
    check_disjoint(manifests)
    train, seen, unseen = ({value_pair(parse_task_id(t)) for t in m.task_ids} for m in manifests)
    assert unseen == set(UNSEEN_PAIRS) == {(2, 6), (4, 8)}
    assert not (train & unseen) and not (seen & unseen)
    assert train | unseen == set(DEALABLE_PAIRS)
    assert {(2, 10), (2, 6), (3, 9), (3, 4), (4, 8), (5, 7), (6, 6)} == DEALABLE_PAIRS
    assert [len(m) for m in manifests] == [182, 54, 64]
    assert [m.hash for m in manifests] == [
        ezpoints_manifest.__wrapped__(s).hash for s in seed_gym.SPLITS
    ]
    # both operators occur in training: 3 * 4 and the sums
    assert (3, 4) in train and (2, 10) in train


def test_reset_ignores_the_global_rng():
    def first_tasks():
        env = seed_gym.make(ENV_ID, split="train", modality="text")
        return [env.reset(seed=s)[1]["task_id"] for s in range(10)]

    np.random.seed(0)
    random.seed(0)
    a = first_tasks()
    np.random.seed(1)
    random.seed(1)
    assert first_tasks() == a


# --- oracle -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_oracle_wins_every_task(split):
    env = seed_gym.make(ENV_ID, split=split, modality="text")
    raw = env.unwrapped
    for tid in raw.task_ids:
        env.reset(options={"task_id": tid})
        solution = raw.privileged_info()["solution"].split()
        taken = []
        while True:
            taken.append(raw.oracle_action())
            _, r, term, trunc, info = env.step(taken[-1])
            if term or trunc:
                break
        assert info["won"] and r == 10.0 and taken == solution, tid


def test_oracle_ends_a_lost_episode():
    env = seed_gym.make(ENV_ID, split=_split_of("ezpoints-5H-7S"), modality="text")
    env.reset(options={"task_id": "ezpoints-5H-7S"})
    env.step("5")
    env.step("*")
    assert env.unwrapped.oracle_action() == "="
    env.reset(options={"task_id": "ezpoints-5H-7S"})
    env.step("7")
    assert env.unwrapped.oracle_action() == "+"


# --- images -------------------------------------------------------------------------------------
def test_images_are_uint8_and_change_with_the_formula_and_cards():
    env = seed_gym.make(ENV_ID, split="unseen", modality="text+image")
    obs, _ = env.reset(options={"task_id": "ezpoints-8C-4D"})
    img = obs["image"]
    assert img.dtype == np.uint8 and img.shape == (300, 300, 3)
    assert obs["text"] == "Cards: the 8 of Clubs and the 4 of Diamonds.\nFormula:"
    obs2, *_ = env.step("8")
    assert not np.array_equal(img, obs2["image"])
    obs3, _ = env.reset(options={"task_id": "ezpoints-8H-4D"})  # only the suit differs
    assert not np.array_equal(img, obs3["image"])
    again, _ = env.reset(options={"task_id": "ezpoints-8C-4D"})
    assert np.array_equal(img, again["image"])
    faces = {np.asarray(card_image(Card(r, "S"))).tobytes() for r in ("10", "J", "Q", "K")}
    assert len(faces) == 4  # four different-looking tens


# --- agent spec -----------------------------------------------------------------------------------
def test_parser_accepts_json_and_think_action():
    for completion, action in [
        ('{"thoughts": "5 + 7 = 12", "action": "5"}', "5"),
        ('Sure!\n```json\n{"thoughts": "x", "action": "+"}\n```', "+"),
        ('{"thoughts": "x", "action": 10}', "10"),
        ('{"action": "\'=\'"}', "="),
        ("<think>5 and 7</think>\n<action> 7 </action>", "7"),
        ('<think>x</think><action>"*"</action>', "*"),
    ]:
        parsed = SPEC.parse(completion)
        assert parsed.valid and parsed.action == action, completion
    assert SPEC.parse('{"thoughts": "x", "action": "5"}').thought == "x"
    for bad in ("5", '{"thoughts": "no action"}', '{"action": ""}', '{"action": [1]}', "{oops", ""):
        assert not SPEC.parse(bad).valid, bad


def test_prompts_follow_the_reference():
    ctx = PromptContext(
        task="t",
        observation="<image>\nFormula: 5",
        history=(Turn("Formula:", "5"),),
        step=2,
        admissible_actions=None,
    )
    tags, js = SPEC.render(ctx), SPEC_JSON.render(ctx)
    for text in (tags, js):
        assert (
            text.count("<image>") == 1
            and "evaluates to 12" in text
            and "shown in the image" in text
        )
    assert tags.rstrip().endswith("<action> </action> tags.")
    assert '"thoughts"' in js and '"action"' in js
    text_ctx = PromptContext(
        "t", "Cards: the 5 of Hearts and the 7 of Spades.\nFormula:", (), 1, None
    )
    assert "described below" in SPEC.render(text_ctx)
    assert 0 <= SPEC.history <= 2
