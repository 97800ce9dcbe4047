"""SEED's phases for the training loop (``train.py`` calls these, top to bottom).

- ``stage1_policy_path``: run Stage 1 (``sft.run_stage1``) into ``RUN_DIR/stage1`` once, or use
  ``--sft-model``; the Stage 2 policy starts from the returned folder.
- ``make_skill_source``: who writes this iteration's skills — the current policy, greedy, through
  the rollout engine (``seed``, ``skill-grpo``), a fixed bank (``static-skills``) or the privileged
  annotator over ``privileged_info()`` taken at reset (``opsd``).
- ``rescore``: teacher logprobs of the *same* sampled response ids under π_old with the skill
  inserted into each step's prompt (SEED.md, Stage 2 step 4).
- ``teacher_batch`` / ``OPDStats``: the padded teacher tensors of a micro-batch and the
  token-weighted ``opd/*`` metrics over an iteration.
- ``ActorSkills``: ``skill-grpo``'s skills for the *actor* prompt (the last analysis of the task).
- ``write_iteration_logs``: the skill log and ``trajectories/iter_*.jsonl`` for the report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seed_gym.trainer.analyzer import Skill
from seed_gym.trainer.config import ANALYZER_ALGOS, DISTILL_ALGOS, TrainConfig
from seed_gym.trainer.trajectory import Trajectory

# static-skills without --skill-bank: one generic instruction for every task type
DEFAULT_SKILL_BANK = {
    "*": "Read the task and the current observation carefully, write exactly one action in the "
    "required format, and never repeat an action that left the observation unchanged."
}

# fn(trajectories, stats, failures) -> one skill or None per trajectory; ``stats`` receives the
# analyzer metrics, ``failures`` {traj_id: {"answer", "error"}} for analyses that did not parse
SkillFn = Callable[[list[Trajectory], dict[str, float], dict[str, dict]], list[Skill | None]]


# --- Stage 1 ------------------------------------------------------------------------------------
def stage1_policy_path(cfg: TrainConfig, run_dir: Path, device: str = "cpu") -> str | None:
    """The folder Stage 2 starts from: ``cfg.sft_model`` if given; for the self-analyzing algos
    (``seed``, ``skill-grpo``) without ``--no-sft``, Stage 1's model (run now into
    ``RUN_DIR/stage1`` unless a finished one is there); else None (start from ``cfg.model``)."""
    from seed_gym.trainer.sft import STAGE1_FILES, run_stage1, stage1_done

    if cfg.sft_model:
        return cfg.sft_model
    if cfg.algo not in ANALYZER_ALGOS or cfg.no_sft:
        return None
    out = run_dir / "stage1"
    if not stage1_done(out):
        run_stage1(cfg, out, device=device)
    return str(out / STAGE1_FILES["model"])


# --- skills -------------------------------------------------------------------------------------
def policy_generate_fn(cfg: TrainConfig, engine: Any) -> Callable[[list], list[str]]:
    """The analyzer's ``generate_fn``: the current policy, greedy, batched through the engine;
    under the answer's JSON schema unless ``--no-analyzer-structured``."""
    from seed_gym.trainer.analyzer import structured_generate_fn

    if cfg.analyzer_structured:
        return structured_generate_fn(engine, max_new_tokens=cfg.analyzer_max_new_tokens)

    def generate(chats: list[list[dict[str, str]]]) -> list[str]:
        gens = engine.generate(
            chats, max_new_tokens=cfg.analyzer_max_new_tokens, temperature=0.0, seed=0
        )
        return [g.text for g in gens]

    return generate


def make_skill_source(cfg: TrainConfig, engine: Any, tokenizer: Any) -> SkillFn | None:
    """``fn(trajectories, stats) -> skills`` for ``cfg.algo`` (None for grpo and prompt)."""
    if cfg.algo in ANALYZER_ALGOS:
        from seed_gym.trainer.analyzer import analyze
        from seed_gym.trainer.sft import analyzer_kwargs

        kwargs = analyzer_kwargs(cfg, tokenizer)
        generate = policy_generate_fn(cfg, engine)

        def policy_skills(
            trajs: list[Trajectory], stats: dict[str, float], failures: dict[str, dict]
        ) -> list[Skill | None]:
            return analyze(
                trajs,
                generate,
                retry=cfg.analyzer_retry,
                stats=stats,
                failures=failures,
                **kwargs,
            )

        return policy_skills
    if cfg.algo == "static-skills":
        from seed_gym.trainer.annotators import StaticSkillAnnotator

        bank = (
            StaticSkillAnnotator.from_json(cfg.skill_bank)
            if cfg.skill_bank
            else StaticSkillAnnotator(DEFAULT_SKILL_BANK)
        )
        return lambda trajs, stats, failures: bank.annotate(trajs)
    if cfg.algo == "opsd":
        from seed_gym.trainer.annotators import PrivilegedAnnotator

        annotator = PrivilegedAnnotator(cfg.env)
        return lambda trajs, stats, failures: annotator.annotate(
            trajs, [t.privileged or {} for t in trajs]
        )
    return None


class ActorSkills:
    """skill-grpo: the skill shown to the actor for a task is the one from the last analysis of
    that task (a successful episode's skill if the group had one, else the first parsed one);
    a task never analyzed yet gets the most recent skill of any task (None before the first)."""

    def __init__(self, state: dict[str, Any] | None = None):
        state = state or {}
        self.by_task: dict[str, str] = dict(state.get("by_task", {}))
        self.latest: str | None = state.get("latest")

    def for_tasks(self, task_ids: Sequence[str]) -> list[str | None]:
        return [self.by_task.get(t, self.latest) for t in task_ids]

    def update(self, trajs: Sequence[Trajectory], skills: Sequence[Skill | None]) -> None:
        groups: dict[str, list[tuple[Trajectory, Skill]]] = {}
        for t, s in zip(trajs, skills, strict=True):
            if s is not None:
                groups.setdefault(t.group_id, []).append((t, s))
        for pairs in groups.values():
            won = [s for t, s in pairs if t.won]
            chosen = (won or [pairs[0][1]])[0].skill
            self.by_task[pairs[0][0].task_id] = chosen
            self.latest = chosen

    def state(self) -> dict[str, Any]:
        return {"by_task": dict(self.by_task), "latest": self.latest}


# --- rescoring ----------------------------------------------------------------------------------
def rescore(
    cfg: TrainConfig,
    model: Any,
    tokenizer: Any,
    spec: Any,
    trajs: Sequence[Trajectory],
    skills: Sequence[Skill | None],
    *,
    pad_id: int,
) -> tuple[list[list[list[float] | None]], list[float | None]]:
    """Teacher logprobs per trajectory, per step (None where the trajectory has no skill or the
    step no response), and each trajectory's mean teacher gap (for the skill log). Call before
    the update: ``model`` is π_old."""
    from seed_gym.trainer.models import autocast
    from seed_gym.trainer.rescore import mean_teacher_gap, teacher_logprobs

    samples, texts, owner = [], [], []
    for t_idx, (traj, skill) in enumerate(zip(trajs, skills, strict=True)):
        for step in traj.steps:
            samples.append(step)
            texts.append(skill.skill if skill is not None and step.response_ids else None)
            owner.append(t_idx)
    with autocast(cfg.bf16):
        scores = teacher_logprobs(
            model,
            tokenizer,
            samples,
            texts,
            task_markers=spec.task_markers,
            fallback_marker=spec.fallback_marker,
            micro_batch=cfg.micro_batch,
            pad_id=pad_id,
            temperature=cfg.temperature,
        )
    per_traj: list[list[list[float] | None]] = [[] for _ in trajs]
    for i, lp in enumerate(scores.per_sample):
        per_traj[owner[i]].append(None if lp is None else [float(x) for x in lp.tolist()])
    return per_traj, mean_teacher_gap(samples, scores, owner, len(trajs))


def teacher_batch(teacher: Sequence[list[float] | None], mask: Any) -> tuple[Any, Any]:
    """(teacher logprobs [n, L], teacher mask [n, L]) of a micro-batch, shaped like ``mask``."""
    import torch

    t_lp = torch.zeros_like(mask)  # [n, L]
    t_mask = torch.zeros_like(mask)  # [n, L]
    for row, lp in enumerate(teacher):
        if lp:
            t_lp[row, : len(lp)] = torch.tensor(lp)
            t_mask[row, : len(lp)] = 1.0
    return t_lp, t_mask


class OPDStats:
    """``opd/*`` over an iteration: gate and gap means weighted by teacher tokens, the OPD loss
    summed over micro-batches and averaged over optimizer steps (as ``train/loss``)."""

    MEANS = ("opd/gate_mean", "opd/active_ratio", "opd/teacher_gap_mean")

    def __init__(self) -> None:
        self.sums = dict.fromkeys(self.MEANS, 0.0)
        self.tokens = 0.0
        self.loss = 0.0

    def add(self, stats: dict[str, float], loss: float) -> None:
        n = stats["opd/teacher_tokens"]
        for k in self.MEANS:
            self.sums[k] += stats[k] * n
        self.tokens += n
        self.loss += loss

    def metrics(self, n_steps: int) -> dict[str, float]:
        out = {k: v / self.tokens if self.tokens else 0.0 for k, v in self.sums.items()}
        out["opd/loss"] = self.loss / n_steps
        out["opd/teacher_tokens"] = self.tokens / n_steps
        return out


# --- logs ---------------------------------------------------------------------------------------
def write_iteration_logs(
    run_dir: Path,
    iteration: int,
    trajs: Sequence[Trajectory],
    *,
    tokenizer: Any,
    skills: Sequence[Skill | None] | None,
    teacher: Sequence[list[list[float] | None]] | None,
    gaps: Sequence[float | None] | None,
    trajectories: bool,
    failures: dict[str, dict] | None = None,
) -> None:
    """``skills/iter_*.jsonl`` (when there are skills) and ``trajectories/iter_*.jsonl``. For
    skill-grpo the trajectory's skill is the one its actor saw."""
    from seed_gym.trainer.skill_log import SkillLog, skill_records
    from seed_gym.trajlog import iteration_path, write_trajectories

    if skills is not None:
        SkillLog(run_dir).write(
            iteration,
            skill_records(trajs, skills, iteration=iteration, gaps=gaps, failures=failures),
        )
    if trajectories:
        shown: Sequence[Any] | None = skills if teacher is not None else None
        if teacher is None and any(t.actor_skill for t in trajs):
            shown = [t.actor_skill for t in trajs]
        write_trajectories(
            iteration_path(run_dir, iteration),
            trajs,
            tokenizer=tokenizer,
            skills=shown,
            teacher_logprobs=teacher,
            iteration=iteration,
        )


def distills(cfg: TrainConfig) -> bool:
    return cfg.algo in DISTILL_ALGOS
