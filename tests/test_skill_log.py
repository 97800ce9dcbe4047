from __future__ import annotations

import json

import pytest

from seed_gym.trainer.algorithms.seed.analyzer import Skill
from seed_gym.trainer.algorithms.seed.skill_log import SkillLog, skill_records
from seed_gym.trainer.trajectory import StepSample, Trajectory


def traj(tid: str, won: bool) -> Trajectory:
    step = StepSample([], [1], [2], [-1.0], "r", "o", "up", True, 10.0 if won else 0.0)
    return Trajectory(
        tid, "g0", "task-1", "6x6-b1", "Push every box onto a target.", 3, [step], won=won
    )


def test_records_and_files_per_iteration(tmp_path):
    trajs = [traj("it2-b0-g0", True), traj("it2-b0-g1", False)]
    skills = [Skill("solved", "Push the box right then up.", "it2-b0-g0", retried=True), None]
    records = skill_records(trajs, skills, iteration=2, gaps=[0.25, None])
    assert records[0] == {
        "iteration": 2,
        "traj_id": "it2-b0-g0",
        "group_id": "g0",
        "task_id": "task-1",
        "task_type": "6x6-b1",
        "task": "Push every box onto a target.",
        "success": True,
        "steps": 1,
        "return": 10.0,
        "skill": "Push the box right then up.",
        "summary": "solved",
        "retried": True,
        "mean_teacher_gap": 0.25,
    }
    assert records[1]["skill"] is None and records[1]["mean_teacher_gap"] is None
    assert "analyzer_error" not in records[1]
    failed = skill_records(
        trajs,
        skills,
        iteration=2,
        failures={"it2-b0-g1": {"answer": "<action>up</action>" * 500, "error": "no JSON object"}},
    )
    assert "analyzer_error" not in failed[0]
    assert failed[1]["analyzer_error"] == "no JSON object"
    assert failed[1]["analyzer_answer"].startswith("<action>up</action>")
    assert len(failed[1]["analyzer_answer"]) == 2000  # clipped
    log = SkillLog(tmp_path)
    path = log.write(2, records)
    assert path == tmp_path / "skills" / "iter_000002.jsonl"
    assert [json.loads(line) for line in path.read_text().splitlines()] == records
    log.write(10, records[:1])
    assert log.iterations() == [2, 10] and log.read(10) == records[:1]
    assert SkillLog(tmp_path / "none").iterations() == []


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="same length"):
        skill_records([traj("a", True)], [], iteration=0)
