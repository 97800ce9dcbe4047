"""The agent-env contract: prompts, history window, parsing, penalties, images, recording."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import GUESS_ID, import_example
from gymnasium.wrappers import TimeLimit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import seed_gym
from seed_gym.wrappers import (
    AgentSpec,
    EpisodeRecorder,
    ParsedAction,
    parse_think_action,
    wrap_agent,
)
from seed_gym.wrappers.history import INVALID_TURN_ACTION

guess_number = import_example()
SPEC = guess_number.SPEC


def act(x) -> str:
    return f"<think>thinking</think><action>{x}</action>"


class CountSteps(gym.Wrapper):
    """Counts how often the raw game is stepped."""

    def __init__(self, env):
        super().__init__(env)
        self.calls = 0

    def step(self, action):
        self.calls += 1
        return self.env.step(action)


class ImageGuess(guess_number.GuessNumberEnv):
    """The example game with a picture: the red channel of every pixel is the secret."""

    modalities = ("text", "image", "text+image")
    image_shape = (6, 8)

    def render_image(self):
        image = np.zeros((6, 8, 3), np.uint8)
        image[..., 0] = self.secret
        return image


def make_image_env(modality="image", spec=SPEC, history=None):
    return wrap_agent(TimeLimit(ImageGuess(split="seen", modality=modality), 12), spec, history)


def user_text(obs) -> str:
    return obs["messages"][-1]["content"]


# --- reset and the observation ------------------------------------------------------------------
def test_reset_gives_messages_and_annotated_info():
    env = seed_gym.make_agent_env(GUESS_ID, split="seen")
    assert env.agent_spec is SPEC
    obs, info = env.reset(seed=0)
    assert set(obs) == {"messages", "images"} and obs["images"] == []
    assert [m["role"] for m in obs["messages"]] == ["user"]
    assert info["anchor"] == "Make your first guess."
    assert info["task"] == "Guess the secret whole number between 1 and 100."
    for key in seed_gym.INFO_KEYS:
        assert key in info
    assert "Step 1. Make your first guess." in user_text(obs)


def test_system_prompt_comes_first():
    spec = AgentSpec(render=SPEC.render, parse=SPEC.parse, history=1, system_prompt="Be brief.")
    env = wrap_agent(seed_gym.make(GUESS_ID, split="seen"), spec)
    obs, _ = env.reset(seed=0)
    assert obs["messages"][0] == {"role": "system", "content": "Be brief."}
    assert obs["messages"][1]["role"] == "user"


def test_step_before_reset_raises():
    env = seed_gym.make_agent_env(GUESS_ID, split="seen")
    with pytest.raises(gym.error.ResetNeeded):
        env.step(act(3))


# --- history ------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_history_window_keeps_the_last_k_turns(k):
    env = seed_gym.make_agent_env(GUESS_ID, split="seen", history=k)
    env.reset(seed=0, options={"task_id": "secret-95"})
    guesses = [10, 20, 30, 40]
    for g in guesses:
        obs, *_ = env.step(act(g))
    turns = env.history
    assert len(turns) == min(k, len(guesses))
    assert [t.action for t in turns] == [str(g) for g in guesses[len(guesses) - len(turns) :]]
    text = user_text(obs)
    for i, g in enumerate(guesses):
        shown = f"You guessed {g}." in text
        assert shown == (i >= len(guesses) - len(turns)), (g, text)
    # a turn pairs the observation the action was decided on with the action
    if k:
        assert turns[-1].observation == "30? Higher." and turns[-1].action == "40"


def test_history_default_is_the_specs_and_resets_clear_it():
    env = seed_gym.make_agent_env(GUESS_ID, split="seen")
    env.reset(seed=0)
    for g in range(1, 6):
        env.step(act(g))
    assert len(env.history) == SPEC.history == 3
    env.reset(seed=1)
    assert env.history == ()


def test_invalid_turns_show_in_the_history():
    env = seed_gym.make_agent_env(GUESS_ID, split="seen", history=2)
    env.reset(seed=0)
    env.step("garbage")
    assert env.history[-1].action == INVALID_TURN_ACTION


# --- parsing, no-op and penalty -----------------------------------------------------------------
def test_invalid_output_is_a_noop_step_with_its_cost_and_the_penalty():
    spec = AgentSpec(render=SPEC.render, parse=parse_think_action, history=2, invalid_penalty=0.25)
    raw = CountSteps(seed_gym.make(GUESS_ID, split="seen"))
    env = wrap_agent(raw, spec)
    obs0, info0 = env.reset(seed=0, options={"task_id": "secret-40"})
    obs1, *_ = env.step(act(10))
    assert raw.calls == 1
    for k, bad in enumerate(
        ["", "<action>40</action>", "<think>x</think>", "<think>a</think><action> </action>"]
    ):
        obs, reward, terminated, truncated, info = env.step(bad)
        assert raw.calls == 2 + k  # the game takes its no-op step (it counts, and it costs)
        # GuessNumber's no-op pays 0 (the penalty rule); the agent layer alone charges its 0.25
        assert reward == pytest.approx(-0.25)
        assert info["env_reward"] == 0.0 and info["format_penalty"] == 0.25
        assert not terminated and not truncated
        assert info["format_valid"] is False and info["action_is_valid"] is False
        assert info["parsed_action"] is None
        assert info["anchor"] == "Invalid action: answer with one whole number."
        assert info["task_id"] == "secret-40"
    assert "Step 6. Invalid action" in user_text(obs)
    # a valid completion is charged nothing
    *_, info = env.step(act(40))
    assert info["format_penalty"] == 0.0 and info["won"]


def test_valid_output_steps_the_env_with_the_parsed_action():
    raw = CountSteps(seed_gym.make(GUESS_ID, split="seen"))
    env = wrap_agent(raw, SPEC)
    env.reset(seed=0, options={"task_id": "secret-40"})
    obs, reward, terminated, truncated, info = env.step(
        "<think>half</think>\n<action> 40 </action>"
    )
    assert raw.calls == 1
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["parsed_action"] == "40" and info["env_reward"] == 1.0
    assert info["format_valid"] and info["action_is_valid"] and info["won"]
    assert info["anchor"] == "40? Correct!"


def test_well_formed_but_illegal_action_goes_to_the_game():
    env = seed_gym.make_agent_env(GUESS_ID, split="seen")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(act("forty"))
    # the game's own answer and its no-op pay (0), not the format penalty
    assert info["format_valid"] is True and info["action_is_valid"] is False
    assert info["parsed_action"] == "forty" and reward == info["env_reward"] == 0.0
    assert info["format_penalty"] == 0.0
    assert info["anchor"].startswith("Invalid action")


def test_invalid_turns_count_toward_the_step_limit():
    env = seed_gym.make_agent_env(GUESS_ID, split="seen")
    env.reset(seed=0)
    for turn in range(1, 13):
        *_, terminated, truncated, _ = env.step("no tags")
        assert truncated == (turn == 12) and not terminated


def test_a_parser_that_raises_counts_as_invalid_output():
    def fragile(text):
        raise KeyError("bug in a template")

    spec = AgentSpec(render=SPEC.render, parse=fragile, history=1)
    env = wrap_agent(seed_gym.make(GUESS_ID, split="seen"), spec)
    env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, reward, *_, info = env.step("anything")
    assert reward == pytest.approx(-0.1) and info["format_valid"] is False  # the penalty alone
    assert "KeyError" in info["parse_error"] and caught


def test_a_parser_claiming_valid_without_an_action_is_invalid():
    spec = AgentSpec(render=SPEC.render, parse=lambda t: ParsedAction(None, True), history=1)
    env = wrap_agent(seed_gym.make(GUESS_ID, split="seen"), spec)
    env.reset(seed=0)
    *_, info = env.step("x")
    assert info["format_valid"] is False


HUGE = ["x" * 200_000, "<think>" * 10_000, "\u202e\U0001f642" * 20_000, "<action>" + "9" * 50_000]
GARBAGE = st.one_of(
    st.text(max_size=200),
    st.builds(lambda s, k: s * k, st.text(min_size=1, max_size=8), st.integers(100, 2000)),
    st.builds(lambda a, b: f"<think>{a}</think><action>{b}</action>", st.text(), st.text()),
    st.builds(lambda a: f"<think></think><action>{a}", st.text()),
    st.sampled_from(["", " ", "\x00", "<action></action>" * 50, *HUGE]),
    st.none(),
    st.integers(),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(completions=st.lists(GARBAGE, min_size=1, max_size=6))
def test_garbage_completions_never_raise(completions):
    for env in (seed_gym.make_agent_env(GUESS_ID, split="unseen"), make_image_env("text+image")):
        obs, _ = env.reset(seed=3)
        for completion in completions:
            obs, reward, terminated, truncated, info = env.step(completion)
            assert np.isfinite(reward)
            assert isinstance(user_text(obs), str)
            assert isinstance(info["format_valid"], bool)
            assert isinstance(info["action_is_valid"], bool)
            if terminated or truncated:
                obs, _ = env.reset(seed=4)


# --- images -------------------------------------------------------------------------------------
@pytest.mark.parametrize("modality", ["image", "text+image"])
def test_images_are_attached_with_one_placeholder_each(modality):
    env = make_image_env(modality)
    obs, info = env.reset(seed=0, options={"task_id": "secret-40"})
    (image,) = obs["images"]
    assert isinstance(image, Image.Image) and image.mode == "RGB" and image.size == (8, 6)
    assert np.asarray(image)[0, 0].tolist() == [40, 0, 0]
    assert user_text(obs).count("<image>") == 1
    assert info["anchor"] == "Make your first guess."  # the raw text, without the placeholder
    obs, *_, info = env.step(act(12))
    assert len(obs["images"]) == 1 and user_text(obs).count("<image>") == 1
    # the history shows raw text, never a placeholder of a picture that is not attached
    assert env.history[-1].observation == "Make your first guess."


def test_text_modality_has_no_images_or_placeholders():
    env = make_image_env("text")
    obs, _ = env.reset(seed=0)
    assert obs["images"] == [] and "<image>" not in user_text(obs)


@pytest.mark.parametrize(
    "render",
    [
        lambda ctx: "Look at this picture.",  # drops the observation: placeholder goes first
        lambda ctx: f"<image> here, and {ctx.observation} <image>",  # too many
    ],
)
def test_placeholder_count_always_matches_the_images(render):
    spec = AgentSpec(render=render, parse=parse_think_action, history=0)
    env = make_image_env("image", spec=spec)
    obs, _ = env.reset(seed=0)
    assert user_text(obs).count("<image>") == len(obs["images"]) == 1
    assert user_text(obs).startswith("<image>")


# --- recording ----------------------------------------------------------------------------------
def test_recorder_writes_one_line_per_step_and_pngs(tmp_path):
    env = EpisodeRecorder(make_image_env("text+image"), tmp_path, record_prompts=True)
    assert env.agent_spec is SPEC
    env.reset(seed=0, options={"task_id": "secret-40"})
    env.step(act(50))
    env.step("nonsense")
    env.step(act(40))
    env.reset(seed=1, options={"task_id": "secret-5"})
    env.step(act(5))
    env.close()
    lines = [json.loads(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert [(x["episode"], x["step"]) for x in lines] == [(0, 1), (0, 2), (0, 3), (1, 1)]
    first, bad, last = lines[:3]
    assert first["task_id"] == "secret-40" and first["seed"] == 0
    assert first["observation"].endswith("Make your first guess.")
    assert first["completion"] == act(50) and first["parsed_action"] == "50"
    assert first["reward"] == 0.0 and first["format_valid"] and first["action_is_valid"]
    assert bad["parsed_action"] is None and bad["reward"] == pytest.approx(-0.1)
    assert bad["format_valid"] is False and bad["action_is_valid"] is False
    assert bad["observation"].endswith("50? Lower.")
    assert last["won"] is True and last["terminated"] is True and last["reward"] == 1.0
    assert first["messages"][-1]["content"].count("<image>") == 1
    for line in lines:
        (path,) = line["images"]
        pixels = np.asarray(Image.open(tmp_path / path))
        assert pixels[0, 0, 0] == int(line["task_id"].split("-")[1])
    assert lines[3]["images"][0] != first["images"][0]


def test_recorder_appends_and_skips_images_for_text_envs(tmp_path):
    for seed in (0, 1):
        env = EpisodeRecorder(seed_gym.make_agent_env(GUESS_ID, split="seen"), tmp_path)
        env.reset(seed=seed)
        env.step(act(1))
        env.close()
    lines = [json.loads(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and all(x["images"] == [] for x in lines)
    assert "messages" not in lines[0]


# --- parsing cost -------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<a>", "</a>", "x", "<", "a>", "/", "\n"]), max_size=16))
def test_linear_tag_scan_equals_the_lazy_regex(pieces):
    import re

    from seed_gym.wrappers.spec import remove_tag_blocks, tag_blocks

    text = "".join(pieces)
    assert tag_blocks(text, "a") == re.findall(r"<a>(.*?)</a>", text, re.DOTALL)
    assert remove_tag_blocks(text, "a") == re.sub(r"<a>(.*?)</a>", " ", text, flags=re.DOTALL)


MEGABYTE = 1 << 20


@pytest.mark.parametrize(
    "completion",
    [
        # the lazy regexes rescanned to the end from every unclosed tag: "<action>" * 8000 took
        # 5.4 s and a 1 MB completion about 20 minutes; these return at once
        "<action>" * (MEGABYTE // 8),
        "<think>" * (MEGABYTE // 7),
        "<think>ok</think>" + "<search>" * (MEGABYTE // 8),
        '{"k":' * (MEGABYTE // 5),
    ],
    ids=["action", "think", "search", "json"],
)
def test_parsers_refuse_a_megabyte_and_scan_the_rest_in_linear_time(completion):
    from seed_gym.wrappers.spec import MAX_COMPLETION_CHARS
    from seed_gym.wrappers.templates import ezpoints, search

    for parse in (parse_think_action, search.parse, ezpoints.parse):
        parsed = parse(completion)
        assert not parsed.valid and "over 100,000 characters" in parsed.error
        # just under the cap the text is parsed, and found invalid, not refused
        parsed = parse(completion[:MAX_COMPLETION_CHARS])
        assert not parsed.valid and "characters" not in parsed.error
    # a long but well-formed completion still parses
    thought = "x" * (MAX_COMPLETION_CHARS - 100)
    assert parse_think_action(f"<think>{thought}</think><action>up</action>").action == "up"
    assert search.parse(f"<think>{thought}</think><search> q </search>").action == (
        "<search> q </search>"
    )
