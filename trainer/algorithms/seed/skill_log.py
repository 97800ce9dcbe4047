"""The skill log: every hindsight skill of every iteration, as JSON lines, so users can watch the
skills evolve with the policy (``<run_dir>/skills/iter_000003.jsonl``).

One record per analyzed trajectory: iteration, trajectory/group/task ids, the task, whether the
episode succeeded, the skill and summary (``null`` when the analysis failed), whether it took the
retry, and the mean teacher gap it produced (mean over the trajectory's response tokens of
``teacher_logprobs - old_logprobs``; ``rescore.mean_teacher_gap``). A failed analysis also records
the analyzer's answer and the parse error (``analyzer_answer``, ``analyzer_error``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_gym.trainer.algorithms.seed.analyzer import Skill
from seed_gym.trainer.trajectory import Trajectory

ANSWER_CHARS = 2000  # of a failed analyzer answer kept in the log


def skill_records(
    trajectories: Sequence[Trajectory],
    skills: Sequence[Skill | None],
    *,
    iteration: int,
    gaps: Sequence[float | None] | None = None,
    failures: dict[str, dict[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """One JSON-ready record per trajectory (``gaps`` aligned with ``trajectories``). A trajectory
    in ``failures`` (``analyzer.analyze``'s) also gets ``analyzer_error`` and ``analyzer_answer``
    (the analyzer's last answer, clipped to ``ANSWER_CHARS``)."""
    if len(skills) != len(trajectories) or (gaps is not None and len(gaps) != len(trajectories)):
        raise ValueError("trajectories, skills and gaps must have the same length")
    records = []
    for i, (traj, skill) in enumerate(zip(trajectories, skills, strict=True)):
        records.append(
            {
                "iteration": int(iteration),
                "traj_id": traj.traj_id,
                "group_id": traj.group_id,
                "task_id": traj.task_id,
                "task_type": traj.task_type,
                "task": traj.task,
                "success": bool(traj.won),
                "steps": len(traj.steps),
                "return": traj.episode_return,
                "skill": None if skill is None else skill.skill,
                "summary": None if skill is None else skill.summary,
                "retried": None if skill is None else skill.retried,
                "mean_teacher_gap": None if gaps is None or gaps[i] is None else float(gaps[i]),
            }
        )
        failure = (failures or {}).get(traj.traj_id)
        if failure is not None:
            records[-1]["analyzer_error"] = failure["error"]
            records[-1]["analyzer_answer"] = failure["answer"][:ANSWER_CHARS]
    return records


class SkillLog:
    """``write(iteration, records)`` -> ``<run_dir>/skills/iter_{iteration:06d}.jsonl``."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir) / "skills"

    def path(self, iteration: int) -> Path:
        return self.dir / f"iter_{int(iteration):06d}.jsonl"

    def write(self, iteration: int, records: Sequence[dict[str, Any]]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.path(iteration)
        tmp = path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        tmp.replace(path)
        return path

    def read(self, iteration: int) -> list[dict[str, Any]]:
        with self.path(iteration).open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def iterations(self) -> list[int]:
        if not self.dir.exists():
            return []
        return sorted(int(p.stem.split("_")[1]) for p in self.dir.glob("iter_*.jsonl"))
