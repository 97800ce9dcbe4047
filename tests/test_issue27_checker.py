"""Issue 27, item 5: ``check_env`` says what it could not verify (an ``EnvCheckWarning``, never a
silent skip), warns about a game that charges for unparseable input itself, ``seed-gym check``
names every check it fails in, and docs/adding_an_env.md lists every check and hook."""

from __future__ import annotations

import re
import warnings

import pytest
from conftest import ROOT, import_example
from gymnasium.wrappers import TimeLimit

import seed_gym
from seed_gym import check_env
from seed_gym.checker import EnvCheckWarning, check_nothing_paid_after_the_end
from seed_gym.cli import main as cli_main
from seed_gym.core import FreezeAtEnd
from seed_gym.splits import SplitManifest

guess_number = import_example()
Base = guess_number.GuessNumberEnv
DOC = ROOT / "docs" / "adding_an_env.md"


def made(cls, split="train"):
    return FreezeAtEnd(TimeLimit(cls(split=split), 12))


def check_warnings(env) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    return [str(w.message) for w in caught if issubclass(w.category, EnvCheckWarning)]


class KeepsTheRule(Base):
    """The example as it is: a non-number pays 0 (the wrapper charges), and the content of a task
    is its secret."""


class ChargesForGarbage(KeepsTheRule):
    """Breaks the penalty rule: -0.1 for a non-number, on top of the wrapper's 0.1."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, (-0.1 if not info["action_is_valid"] else reward), terminated, truncated, info


class HidesItsContent(KeepsTheRule):
    content_key = seed_gym.SeedEnv.content_key  # None: splits checkable by id only


class NeverEnds(KeepsTheRule):
    """An oracle that never finds the secret: no episode terminates."""

    def oracle_action(self):
        return str(self.top + 1)


def test_an_env_that_keeps_every_rule_gets_no_warning():
    assert check_warnings(made(KeepsTheRule)) == []


def test_a_missing_content_key_is_a_warning_not_a_silent_skip():
    said = [w for w in check_warnings(made(HidesItsContent)) if "content_key" in w]
    assert len(said) == 1 and said[0].startswith("check_splits_disjoint_by_content:"), said
    assert "disjoint by id only" in said[0]


def test_a_game_that_charges_for_unparseable_input_is_warned():
    # -0.1 for a non-number: with the wrapper's 0.1, garbage would cost -0.2
    said = [
        w for w in check_warnings(made(ChargesForGarbage)) if w.startswith("check_invalid_output")
    ]
    assert len(said) == 1, said
    assert "step(None) pays -0.100 where the worst in-format action pays +0.000" in said[0]
    assert "AgentSpec.invalid_penalty" in said[0]


def test_ends_the_checker_could_not_reach_are_warned():
    said = check_warnings(made(NeverEnds))
    assert len(said) == 1 and "no episode of seeds [0, 1] terminated within 60 steps" in said[0]
    with pytest.warns(EnvCheckWarning, match="no TimeLimit .* after truncation were not checked"):
        check_nothing_paid_after_the_end(KeepsTheRule())


# --- seed-gym check --------------------------------------------------------------------------
class Overlapping(KeepsTheRule):
    env_id = "example/Overlapping-v0"

    def manifest(self, split):
        m = super().manifest(split)
        if split == "seen":  # a training task leaks into the held-out split
            return SplitManifest(m.env_id, split, (*m.task_ids, "secret-1"))
        return m


class Quiet(KeepsTheRule):
    env_id = "example/Quiet-v0"


class NoContentKey(Quiet):
    env_id = "example/NoContentKey-v0"
    content_key = seed_gym.SeedEnv.content_key


for _cls in (Overlapping, Quiet, NoContentKey):
    seed_gym.register(_cls.env_id, _cls, max_episode_steps=12, agent_spec=guess_number.SPEC)


def test_check_prints_warnings_as_one_line_each_and_still_passes(capsys):
    assert cli_main(["check", Quiet.env_id]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"ok   {Quiet.env_id} (") and err == ""
    assert cli_main(["check", NoContentKey.env_id]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"ok   {NoContentKey.env_id} (")
    assert err.splitlines() == [
        f"warn {NoContentKey.env_id}: check_splits_disjoint_by_content: "
        "NoContentKey.content_key('secret-1') is None, so splits were checked disjoint by id "
        "only; return what a task is (its start state, question or goal)"
    ]


def test_check_names_the_split_check_an_overlap_fails():
    # 0.4 called it "gymnasium's check_disjoint" (seed_gym.splits' function, not gymnasium's)
    from seed_gym.cli import _check_one

    problem, said = _check_one(Overlapping.env_id, "train", None)
    assert said == []
    assert problem == "check_disjoint: ValueError: task 'secret-1' is in both 'train' and 'seen'"


# --- the guide --------------------------------------------------------------------------------
def test_the_guide_lists_every_check_and_hook():
    from seed_gym import checker

    doc = " ".join(DOC.read_text().split())
    source = checker.__loader__.get_source(checker.__name__)
    body = source[source.index("def check_env(") :]
    sections = re.findall(r"^    # (.+)$", body, re.M)
    called = set(re.findall(r"\b(check_\w+)\(", body)) - {"check_env"}
    assert len(sections) >= 7 and {"check_invalid_output_never_pays"} <= called
    for name in [*sections, *called, "gymnasium's check_env"]:
        assert name in doc, f"docs/adding_an_env.md does not name the check {name!r}"
    for hook in ("privileged_info()", "AgentSpec.hindsight", "AgentSpec.reasoning",
                 "oracle_action()", "oracle_can_win()", "content_key(task_id)",
                 "reward_potential()", "AgentSpec.task_markers", "AgentSpec.score_key"):  # fmt: skip
        assert hook in doc, f"docs/adding_an_env.md does not name the hook {hook!r}"
    assert "called 20 more times after the end" in doc
    assert "the agent wrapper (`InvalidActionPenalty`) alone charges" in doc
