"""Trajectory files: what the report's trajectory viewer reads.

Where they live: ``RUN_DIR/trajectories/iter_000003.jsonl`` for the rollouts of training iteration
3 (``write_trajectories``, called by the training loop) and ``EVAL_DIR/trajectories/eval.jsonl``
for ``seed-gym eval --save-trajectories`` (appended one episode at a time).

Format (``seed-gym/trajectory-v1``): one JSON object per line, one trajectory each::

    {"format": "seed-gym/trajectory-v1", "source": "train" | "eval", "iteration": 3 | null,
     "split": "train", "traj_id": "it3-b0-g1", "group_id": "it3-b0", "task_id": "...",
     "task_type": "...", "task": "...", "seed": 17, "won": false, "score": null, "return": -0.1,
     "truncated": false,
     "skill": "..." | null,            # SEED: the Episode-Level Skill the teacher saw
     "skill_summary": "..." | null,
     "control_skill": "...",           # SEED, only on the --skill-control trajectories: the
                                       # other task's skill the control scored them under
     "steps": [{"observation": "...",  # the raw text observation the step was decided on
                "images": ["data:image/png;base64,..."],   # prompt images, inline
                "response": "...",     # the completion as the policy wrote it
                "tokens": ["<th", "ink", ...] | null,     # response tokens, decoded one by one
                "logprobs": [-0.3, ...] | null,           # student (sampling policy) logprobs
                "teacher_logprobs": [-0.1, ...] | null,   # SEED: same tokens, skill in context
                "control_logprobs": [-0.2, ...],          # with "control_skill": same tokens,
                                                          # the other task's skill in context
                "action": "up" | null, "valid": true, "reward": 0.0}]}

``tokens``, ``logprobs``, ``teacher_logprobs`` and ``control_logprobs`` of a step have the same
length when present.
Readers ignore unknown keys; a partially written last line (a killed writer) is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_gym.images import png_data_url
from seed_gym.jsonl import clean_text, json_line, read_jsonl  # noqa: F401 - readers import them here

FORMAT = "seed-gym/trajectory-v1"
TRAJ_DIR = "trajectories"


def iteration_path(run_dir: str | Path, iteration: int) -> Path:
    """``RUN_DIR/trajectories/iter_{iteration:06d}.jsonl``."""
    return Path(run_dir) / TRAJ_DIR / f"iter_{int(iteration):06d}.jsonl"


def _floats(values: Any) -> list[float] | None:
    if values is None:
        return None
    if hasattr(values, "tolist"):  # tensors and arrays
        values = values.tolist()
    return [float(v) for v in values]


def _skill_text(skill: Any) -> tuple[str | None, str | None]:
    """(skill, summary) from a ``trainer.analyzer.Skill``, a dict, a string or None."""
    if skill is None:
        return None, None
    if isinstance(skill, str):
        return skill, None
    if isinstance(skill, dict):
        return skill.get("skill") or skill.get("episode_skill"), skill.get(
            "summary", skill.get("episode_summary")
        )
    return getattr(skill, "skill", None), getattr(skill, "summary", None)


def image_urls(images: Sequence[Any]) -> list[str]:
    return [png_data_url(im) for im in images]


def step_record(
    *,
    observation: str,
    response: str,
    action: str | None,
    valid: bool,
    reward: float,
    images: Sequence[Any] = (),
    tokens: Sequence[str] | None = None,
    logprobs: Sequence[float] | None = None,
    teacher_logprobs: Sequence[float] | None = None,
    control_logprobs: Sequence[float] | None = None,
) -> dict[str, Any]:
    """One step of the format above (images: PIL images / arrays, or data URLs already);
    ``control_logprobs`` is written only when given."""
    lp, tlp, clp = _floats(logprobs), _floats(teacher_logprobs), _floats(control_logprobs)
    n = len(tokens) if tokens is not None else None
    for name, values in (("logprobs", lp), ("teacher_logprobs", tlp), ("control_logprobs", clp)):
        if values is not None and n is not None and len(values) != n:
            raise ValueError(f"{name} has {len(values)} entries for {n} response tokens")
    urls = [im if isinstance(im, str) else None for im in images]
    if any(u is None for u in urls):
        urls = image_urls(images)
    return {
        "observation": str(observation),
        "images": urls,
        "response": str(response),
        "tokens": None if tokens is None else [str(t) for t in tokens],
        "logprobs": lp,
        "teacher_logprobs": tlp,
        **({"control_logprobs": clp} if clp is not None else {}),
        "action": action,
        "valid": bool(valid),
        "reward": float(reward),
    }


def trajectory_record(
    *,
    traj_id: str,
    task_id: str,
    steps: list[dict[str, Any]],
    won: bool,
    task_type: str = "",
    task: str = "",
    seed: int | None = None,
    group_id: str | None = None,
    score: float | None = None,
    truncated: bool = False,
    skill: Any = None,
    source: str = "train",
    iteration: int | None = None,
    split: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    skill_text, summary = _skill_text(skill)
    return {
        "format": FORMAT,
        "source": source,
        "iteration": iteration,
        "split": split,
        "traj_id": traj_id,
        "group_id": group_id if group_id is not None else traj_id,
        "task_id": task_id,
        "task_type": task_type,
        "task": task,
        "seed": seed,
        "won": bool(won),
        "score": score,
        "return": float(sum(s["reward"] for s in steps)),
        "truncated": bool(truncated),
        "skill": skill_text,
        "skill_summary": summary,
        **extra,
        "steps": steps,
    }


def write_trajectories(
    path: str | Path,
    trajectories: Sequence[Any],
    *,
    tokenizer: Any,
    skills: Sequence[Any] | None = None,
    teacher_logprobs: Sequence[Sequence[Any] | None] | None = None,
    control: dict[int, tuple[Any, Sequence[Any]]] | None = None,
    iteration: int | None = None,
    split: str = "train",
    source: str = "train",
    images: bool = True,
) -> Path:
    """Write ``trainer.trajectory.Trajectory`` objects as one JSONL file (atomically).

    Args:
        path: the file, e.g. ``trajlog.iteration_path(run_dir, iteration)``.
        trajectories: the iteration's trajectories.
        tokenizer: decodes each response id to its token string (``None``: no tokens stored).
        skills: per trajectory, the skill its teacher saw (``analyzer.Skill``, str, or None).
        teacher_logprobs: per trajectory, per step, the teacher logprob of each response token
            (lists or tensors; None where the step or trajectory was not rescored).
        control: SEED's shuffled-skill control, trajectory index -> (the other task's skill it
            was scored under, its per-step logprobs as ``teacher_logprobs``); written as the
            trajectory's ``control_skill`` and its steps' ``control_logprobs``.
        iteration, split, source: recorded on every line.
        images: embed prompt images as PNG data URLs (False leaves them out).
    """
    n = len(trajectories)
    if skills is not None and len(skills) != n:
        raise ValueError(f"{len(skills)} skills for {n} trajectories")
    if teacher_logprobs is not None and len(teacher_logprobs) != n:
        raise ValueError(f"{len(teacher_logprobs)} teacher logprob lists for {n} trajectories")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for i, traj in enumerate(trajectories):
            per_step = teacher_logprobs[i] if teacher_logprobs is not None else None
            control_skill, per_step_control = (control or {}).get(i, (None, None))
            for name, lists in (("teacher", per_step), ("control", per_step_control)):
                if lists is not None and len(lists) != len(traj.steps):
                    raise ValueError(
                        f"trajectory {traj.traj_id}: {len(lists)} {name} logprob lists for "
                        f"{len(traj.steps)} steps"
                    )
            steps = []
            for j, s in enumerate(traj.steps):
                tokens = (
                    None
                    if tokenizer is None
                    else [tokenizer.decode([int(t)]) for t in s.response_ids]
                )
                steps.append(
                    step_record(
                        observation=s.observation,
                        response=s.response_text,
                        action=s.action,
                        valid=s.valid,
                        reward=s.reward,
                        images=s.images if images else (),
                        tokens=tokens,
                        logprobs=s.old_logprobs if tokens is not None else None,
                        teacher_logprobs=None if per_step is None else per_step[j],
                        control_logprobs=None if per_step_control is None else per_step_control[j],
                    )
                )
            extra = (
                {} if control_skill is None else {"control_skill": _skill_text(control_skill)[0]}
            )
            record = trajectory_record(
                traj_id=traj.traj_id,
                group_id=traj.group_id,
                task_id=traj.task_id,
                task_type=traj.task_type,
                task=traj.task,
                seed=traj.seed,
                won=traj.won,
                score=traj.score,
                truncated=traj.truncated,
                skill=None if skills is None else skills[i],
                steps=steps,
                source=source,
                iteration=iteration,
                split=split,
                **extra,
            )
            f.write(json_line(record))
    os.replace(tmp, path)
    return path


def append_trajectory(path: str | Path, record: dict[str, Any]) -> None:
    """Append one record (eval writes an episode as soon as it ends)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json_line(record))
        f.flush()


def trajectory_files(run_dir: str | Path) -> list[Path]:
    """The trajectory files of a run or eval folder, iterations in order, ``eval.jsonl`` last."""
    folder = Path(run_dir) / TRAJ_DIR
    if not folder.is_dir():
        return []
    iters = sorted(folder.glob("iter_*.jsonl"))
    return iters + sorted(p for p in folder.glob("*.jsonl") if p not in iters)
