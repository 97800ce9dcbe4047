"""benchmarks/reasoning_consistency.py: EZPoints reasoning checked against the executed action
and the observed formula, on hand-written trajectory files."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "reasoning_consistency.py"
spec = importlib.util.spec_from_file_location("reasoning_consistency", SCRIPT)
rc = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = rc  # dataclasses look their module up there
spec.loader.exec_module(rc)


def step(formula: str, think: str, action: str) -> dict:
    return {
        "observation": f"Cards: the King of Hearts and the 2 of Hearts.\nFormula: {formula}",
        "response": f"<think>The cards count 10 and 2. {think}</think><action>{action}</action>",
        "action": action,
    }


def write(run: Path, iteration: int, episodes: list[list[dict]], tail: str = "") -> None:
    folder = run / "trajectories"
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"won": False, "steps": s}) + "\n" for s in episodes)
    (folder / f"iter_{iteration:06d}.jsonl").write_text(lines + tail)


def test_both_checks_by_hand(tmp_path):
    run = tmp_path / "seed-s0"
    write(run, 1, [[
        step("", "The formula is empty. I append 10.", "10"),  # state ok, decision ok
        step("10", "10 + 2 = 12. I append +.", "2"),  # no restated state; decision != action
        step("10 2", "The formula so far is '10 +'. I append 2.", "2"),  # state != observed
    ]])  # fmt: skip
    write(run, 2, [[step("", "The formula so far is '10 + 2'. I append =.", "=")]],
          tail='{"won": false, "steps": [')  # a half-written last line: skipped  # fmt: skip
    with pytest.warns(UserWarning):
        per = rc.run_consistency(run)
    assert per[1] == {"decisions": 3, "decision_mismatch": pytest.approx(1 / 3), "states": 2,
                      "state_mismatch": 0.5}  # fmt: skip
    assert per[2] == {"decisions": 1, "decision_mismatch": 0.0, "states": 1, "state_mismatch": 1.0}
    assert "| seed-s0 | 33 % / 50 % | 0 % / 100 % |" in rc.table({"seed-s0": per})


def test_whitespace_does_not_count_and_unmatched_phrases_are_not_checked(tmp_path):
    counts = rc.Counts()
    counts.add(step("10  +", "The formula so far is '10 +'. I append 2 .", "2"))
    counts.add({"observation": "Formula: 10", "response": "<action>+</action>", "action": "+"})
    assert counts.row() == {"decisions": 1, "decision_mismatch": 0.0, "states": 1,
                            "state_mismatch": 0.0}  # fmt: skip


def test_cli_writes_json_and_refuses_runs_without_trajectories(tmp_path, capsys):
    run = tmp_path / "grpo-s1"
    write(run, 1, [[step("", "The formula is empty. I append 10.", "10")]])
    (tmp_path / "empty").mkdir()
    assert rc.main([str(run), str(tmp_path / "empty"), "--json", str(tmp_path / "c.json")]) == 0
    assert "empty: no trajectories" in capsys.readouterr().out
    assert json.loads((tmp_path / "c.json").read_text())["grpo-s1"]["1"]["decisions"] == 1
    with pytest.raises(SystemExit, match="no trajectories"):
        rc.main([str(tmp_path / "empty")])


def test_runs_with_the_same_folder_name_keep_a_row_each(tmp_path, capsys):
    for parent, action in (("replay-a", "10"), ("replay-b", "2")):
        write(
            tmp_path / parent / "skip",
            1,
            [[step("", "The formula is empty. I append 10.", action)]],
        )
    rc.main([str(tmp_path / "replay-a" / "skip"), str(tmp_path / "replay-b" / "skip")])
    out = capsys.readouterr().out
    assert "| replay-a/skip | 0 % / 0 % |" in out and "| replay-b/skip | 100 % / 0 % |" in out
    assert rc.run_labels([tmp_path / "x" / "run", tmp_path / "y" / "other"]) == ["run", "other"]
