"""benchmarks/skill_gap_regions.py: the skill gap of saved trajectories split by response region
(the executed ``<action>`` or the reasoning), outcome and iteration, on hand-worked files."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "skill_gap_regions.py"
spec = importlib.util.spec_from_file_location("skill_gap_regions", SCRIPT)
regions = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = regions  # dataclasses look their module up there
spec.loader.exec_module(regions)


def step(tokens, logprobs, teacher, control=None):
    out = {"tokens": tokens, "response": "".join(tokens), "logprobs": logprobs,
           "teacher_logprobs": teacher}  # fmt: skip
    return out if control is None else {**out, "control_logprobs": control}


def write_run(root: Path) -> Path:
    run = root / "seed-s0"
    (run / "trajectories").mkdir(parents=True)
    won = {"won": True, "steps": [
        step(["<think>a</think>", "<action>", "up", "</action>"],
             [-0.05, -0.01, -0.5, -0.02], [-0.04, -0.01, -0.2, -0.02]),
    ]}  # fmt: skip
    lost = {"won": False, "steps": [
        step(["<think>c</think><action>", "up", "</action>"], [-1.0, -1.0, -1.0], None),
        step(["<think>b</think><action>", "left", "</action>"],
             [-0.2, -0.3, -0.01], [-0.4, -0.1, -0.01], control=[-0.2, -0.9, -0.01]),
    ]}  # fmt: skip
    (run / "trajectories" / "iter_000001.jsonl").write_text(json.dumps(won) + "\n")
    (run / "trajectories" / "iter_000002.jsonl").write_text(json.dumps(lost) + "\n\n")
    return run


def test_action_tokens_are_those_inside_the_last_action_block():
    assert regions.action_mask(["<think>x</think>", "<action>", "up", "</action>"],
                               "<think>x</think><action>up</action>") == [False, False, True, False]  # fmt: skip
    # a token that straddles the tag counts: it holds part of the action
    assert regions.action_mask(["<action>u", "p</action>"], "<action>up</action>") == [True, True]
    assert regions.action_mask(["<think>no action</think>"], "<think>no action</think>") == [False]
    # tokens that do not spell the response cannot be placed: none is an action token
    assert regions.action_mask(["<action>", "up"], "<action>up</action>") == [False, False]


def test_gaps_by_iteration_outcome_and_region(tmp_path):
    cells = regions.gap_table([write_run(tmp_path)])
    # iteration 1, won: the action token 'up' (NLL 0.5, a fork) rose from -0.5 to -0.2
    assert cells[("first", "won", "action")].row() == pytest.approx((1, 0.3, 0.5, 1, 0.3))
    n, gap, nll, forks, fork_gap = cells[("first", "won", "reasoning")].row()
    assert (
        (n, forks) == (3, 0) and gap == pytest.approx(0.01 / 3) and nll == pytest.approx(0.08 / 3)
    )
    # iteration 2, lost: the step without teacher logprobs is left out
    assert cells[("later", "lost", "action")].row() == pytest.approx((1, 0.2, 0.3, 1, 0.2))
    assert cells[("later", "lost", "reasoning")].row() == pytest.approx((2, -0.1, 0.105, 1, -0.2))
    # the same tokens under another task's skill: 'left' fell by 0.6 where its own skill raised it
    assert cells[("later", "lost", "action")].control_row() == pytest.approx(
        (1, -0.6, 0.3, 1, -0.6)
    )
    assert cells[("later", "lost", "reasoning")].control_row()[:3] == pytest.approx((2, 0.0, 0.105))
    assert cells[("first", "won", "action")].control_row()[0] == 0  # not in the control
    assert set(cells) == {("first", "won", "action"), ("first", "won", "reasoning"),
                          ("later", "lost", "action"), ("later", "lost", "reasoning")}  # fmt: skip


def test_the_command_prints_the_table_and_refuses_a_run_without_trajectories(tmp_path, capsys):
    assert regions.main([str(write_run(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "| 1 | won | action | 1 | +0.3000 | 0.5000 | 1 | +0.300 | 0 | +nan | 0 | +nan |" in out
    assert (
        "| 2+ | lost | action | 1 | +0.2000 | 0.3000 | 1 | +0.200 | 1 | -0.6000 | 1 | -0.600 |"
        in out
    )
    (tmp_path / "bare").mkdir()
    with pytest.raises(SystemExit, match="no trajectories/iter_"):
        regions.main([str(tmp_path / "bare")])


def test_the_decision_is_the_first_non_blank_token_after_the_phrase(tmp_path):
    tokens = [
        "<think>I append",
        " ",
        "10",
        ". I append",
        " +",
        "</think><action>",
        "10",
        "</action>",
    ]
    assert regions.decision_mask(tokens, "I append") == [
        False, False, True, False, True, False, False, False
    ]  # fmt: skip
    assert regions.decision_mask(tokens, "I remove") == [False] * len(tokens)
    run = tmp_path / "seed-s1"
    (run / "trajectories").mkdir(parents=True)
    traj = {
        "won": True,
        "steps": [step(tokens, [-0.1] * 8, [-0.1, -0.1, 0.0, -0.1, -0.5] + [-0.1] * 3)],
    }
    (run / "trajectories" / "iter_000003.jsonl").write_text(json.dumps(traj))
    cells = regions.gap_table([run], "I append")
    # '10' rose by 0.1, '+' fell by 0.4; the action token '10' is the action's, not a decision
    assert cells[("later", "won", "decision")].row() == pytest.approx(
        (2, -0.15, 0.1, 0, float("nan")), nan_ok=True
    )
    assert cells[("later", "won", "action")].row()[:2] == pytest.approx((1, 0.0))
    assert cells[("later", "won", "reasoning")].row()[0] == 5


def test_a_half_written_last_line_is_skipped_not_fatal(tmp_path):
    run = write_run(tmp_path)
    with (run / "trajectories" / "iter_000002.jsonl").open("a") as f:
        f.write('{"won": true, "steps": [{"tok')  # a writer killed mid-line
    with pytest.warns(UserWarning):
        cells = regions.gap_table([run])
    assert cells[("later", "lost", "action")].row()[0] == 1  # the whole lines still count
