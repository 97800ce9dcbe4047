"""Teacher logprobs: the same sampled response ids, scored under a skill-augmented prompt by π_old.

SEED.md, Stage 2 step 4. For every step-sample of an analyzed trajectory the chat messages that
produced the prompt are rebuilt with the Episode-Level Skill block inserted (``insert_skill``), the
new prompt alone is tokenized, the *stored* response ids are appended unchanged (never decoded and
re-encoded), and one forward pass scores them; only response positions get logits
(``logprobs.response_logprobs``). Nothing is generated.

Where the block goes: ``wrappers.skill.insert_skill``, SEED.md's rule (after the task line, else
before "Now it's your turn", else at the end of the prompt), the same for the actor prompts of
Stage 1 and ``skill-grpo``.

Samples whose skill is ``None`` are not scored: teacher logprobs 0, teacher mask 0. An empty skill
``""`` inserts nothing and is scored under the unchanged prompt, mask 0: a control that reproduces
the plain logprobs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seed_gym.seeding import derive_seed
from seed_gym.trainer.algorithms.base import Teacher
from seed_gym.trainer.algorithms.seed.skill_effect import control_skills, skill_gap_metrics
from seed_gym.trainer.backends.image_inputs import encode_image_prompt, is_processor
from seed_gym.trainer.backends.image_inputs import sanitize_skill as _sanitize
from seed_gym.trainer.backends.models import autocast
from seed_gym.trainer.trajectory import StepSample, Trajectory
from seed_gym.wrappers.skill import DEFAULT_FALLBACK_MARKER, DEFAULT_TASK_MARKERS, insert_skill


# --- scoring ------------------------------------------------------------------------------------
@dataclass
class TeacherScores:
    """Teacher logprobs of the stored response ids, right-padded to the longest response L."""

    logprobs: Any  # torch.Tensor [N, L] fp32, 0 where masked
    mask: Any  # torch.Tensor [N, L] fp32: 1 on response tokens of samples with a skill
    per_sample: list[Any]  # list of [L_i] tensors (None where not scored)
    where: list[str]  # insertion point per sample ("task" | "fallback" | "append" | "none")


def default_encode_prompt(tokenizer: Any) -> Callable[[list[dict[str, Any]]], list[int]]:
    from seed_gym.trainer.backends.engines import encode_chat  # torch; rescore imports without it

    return lambda messages: encode_chat(tokenizer, messages)


def _split_processor(tokenizer: Any) -> tuple[Any | None, Any]:
    """(processor, tokenizer): a vision-language policy passes its processor as ``tokenizer``."""
    if is_processor(tokenizer):
        return tokenizer, tokenizer.tokenizer
    return None, tokenizer


def _image_encoder(
    processor: Any, images: Sequence[Any]
) -> Callable[[list[dict[str, Any]]], list[int]]:
    return lambda messages: encode_image_prompt(processor, messages, images)


def sanitize_skill(skill: str | None, processor: Any) -> str | None:
    return _sanitize(skill, processor)


def teacher_inputs(
    tokenizer: Any,
    samples: Sequence[StepSample],
    skills: Sequence[str | None],
    *,
    task_markers: Sequence[str] = DEFAULT_TASK_MARKERS,
    fallback_marker: str | None = DEFAULT_FALLBACK_MARKER,
    encode_prompt: Callable[[list[dict[str, Any]]], list[int]] | None = None,
    verify_plain: str = "warn",
) -> tuple[list[int], list[list[int]], list[list[int]], list[str]]:
    """What ``teacher_logprobs`` scores: (indices of scored samples, teacher prompt ids, response
    ids — the stored ones, copied unchanged — and the insertion point per sample)."""
    if len(samples) != len(skills):
        raise ValueError(f"{len(samples)} samples but {len(skills)} skills")
    if verify_plain not in ("warn", "raise", "off"):
        raise ValueError(f"verify_plain must be 'warn', 'raise' or 'off', not {verify_plain!r}")
    processor, tokenizer = _split_processor(tokenizer)
    encode = encode_prompt or default_encode_prompt(tokenizer)
    scored, prompts, responses, where = [], [], [], ["none"] * len(samples)
    mismatches = 0
    for i, (sample, skill) in enumerate(zip(samples, skills, strict=True)):
        if skill is None:
            continue
        enc = encode
        if sample.images:  # the same pictures, the skill text around their placeholders
            if processor is None:
                raise NotImplementedError(
                    "teacher_logprobs rescoring of image samples needs the policy's processor "
                    "(pass it as `tokenizer`); text-only tokenizers cannot encode pictures"
                )
            enc = _image_encoder(processor, sample.images)
            skill = sanitize_skill(skill, processor)
        if verify_plain != "off" and list(enc(sample.messages)) != list(sample.prompt_ids):
            mismatches += 1
        messages, where[i] = insert_skill(
            sample.messages, skill, task_markers, fallback_marker, return_where=True
        )
        scored.append(i)
        prompts.append(list(enc(messages)))
        responses.append(list(sample.response_ids))
    if mismatches:
        msg = (
            f"{mismatches} of {len(scored)} samples: re-encoding the plain messages does not give "
            "the stored prompt_ids; pass the rollout's encode_prompt to teacher_logprobs"
        )
        if verify_plain == "raise":
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)
    return scored, prompts, responses, where


def teacher_logprobs(
    model: Any,
    tokenizer: Any,
    samples: Sequence[StepSample],
    skills: Sequence[str | None],
    *,
    task_markers: Sequence[str] = DEFAULT_TASK_MARKERS,
    fallback_marker: str | None = DEFAULT_FALLBACK_MARKER,
    micro_batch: int = 8,
    pad_id: int | None = None,
    encode_prompt: Callable[[list[dict[str, Any]]], list[int]] | None = None,
    verify_plain: str = "warn",
    temperature: float = 1.0,
) -> TeacherScores:
    """Score ``samples[i].response_ids`` after the skill-augmented prompt of ``skills[i]`` under
    ``model`` (π_old: call before the update). No grad; batched ``micro_batch`` pairs per forward.

    ``encode_prompt`` must tokenize messages exactly as the rollout did (default: the chat template
    with the generation prompt). ``verify_plain`` ("warn" | "raise" | "off") re-encodes the *plain*
    messages and compares them with the stored ``prompt_ids``: a mismatch means teacher and student
    prompts are tokenized differently and the gap would measure tokenization, not the skill.
    Image samples (vision-language policies): pass the policy's processor as ``tokenizer``; the
    pictures go with both prompts and a skill cannot add image placeholders. With a plain
    tokenizer they raise ``NotImplementedError``.
    ``temperature`` scales the logits as for the student logprobs the loss compares them with.
    """
    import torch

    from seed_gym.trainer.backends.logprobs import response_logprobs  # torch

    processor, text_tokenizer = _split_processor(tokenizer)
    if pad_id is None:
        pad_id = (
            text_tokenizer.pad_token_id
            if text_tokenizer.pad_token_id is not None
            else text_tokenizer.eos_token_id
        )
    inputs = teacher_inputs(
        tokenizer,
        samples,
        skills,
        task_markers=task_markers,
        fallback_marker=fallback_marker,
        encode_prompt=encode_prompt,
        verify_plain=verify_plain,
    )
    scored, prompts, responses, where = inputs
    per_sample: list[Any] = [None] * len(samples)
    if scored:
        lps, _ = response_logprobs(
            model,
            prompts,
            responses,
            micro_batch=micro_batch,
            pad_id=pad_id,
            temperature=temperature,
            **_image_args(processor, [samples[i] for i in scored]),
        )
        for i, lp in zip(scored, lps, strict=True):
            per_sample[i] = lp
    width = max([1] + [len(s.response_ids) for s in samples])
    logprobs = torch.zeros((len(samples), width), dtype=torch.float32)  # [N, L]
    mask = torch.zeros((len(samples), width), dtype=torch.float32)  # [N, L]
    for i, lp in enumerate(per_sample):
        if lp is None:
            continue
        logprobs[i, : len(lp)] = lp
        if skills[i]:  # "" is the no-insertion control: scored, but not a teacher
            mask[i, : len(lp)] = 1.0
    return TeacherScores(logprobs, mask, per_sample, where)


def _image_args(processor: Any | None, samples: Sequence[StepSample]) -> dict[str, Any]:
    """``images=`` / ``processor=`` for ``response_logprobs`` when a sample carries pictures."""
    if processor is None or not any(s.images for s in samples):
        return {}
    return {"images": [list(s.images) for s in samples], "processor": processor}


# --- per-trajectory bookkeeping -----------------------------------------------------------------
def flatten_with_skills(
    trajectories: Sequence[Trajectory], skills: Sequence[Any]
) -> tuple[list[StepSample], list[str | None], list[int]]:
    """Step-samples of all trajectories with each trajectory's skill text (``Skill``, str or None)
    repeated per step, and the trajectory index of each sample."""
    if len(trajectories) != len(skills):
        raise ValueError(f"{len(trajectories)} trajectories but {len(skills)} skills")
    samples, texts, owner = [], [], []
    for t_idx, (traj, skill) in enumerate(zip(trajectories, skills, strict=True)):
        text = getattr(skill, "skill", skill)
        for step in traj.steps:
            samples.append(step)
            texts.append(text)
            owner.append(t_idx)
    return samples, texts, owner


def mean_teacher_gap(
    samples: Sequence[StepSample], scores: TeacherScores, owner: Sequence[int], n_traj: int
) -> list[float | None]:
    """Per trajectory: mean over its masked response tokens of ``teacher_lp − old_lp`` (the stored
    sampling logprobs), or None when it has no teacher tokens. For the skill log."""
    sums = [0.0] * n_traj
    counts = [0] * n_traj
    for i, sample in enumerate(samples):
        lp = scores.per_sample[i]
        if lp is None or not float(scores.mask[i].sum()):
            continue
        k = min(len(lp), len(sample.old_logprobs))
        sums[owner[i]] += float(sum(lp[:k].tolist()) - sum(sample.old_logprobs[:k]))
        counts[owner[i]] += k
    return [s / c if c else None for s, c in zip(sums, counts, strict=True)]


def trajectory_teacher_logprobs(
    cfg: Any,
    model: Any,
    tokenizer: Any,
    spec: Any,
    trajs: Sequence[Trajectory],
    skills: Sequence[Any],
    *,
    pad_id: int,
) -> tuple[list[list[list[float] | None]], list[float | None]]:
    """Teacher logprobs per trajectory, per step (None where the trajectory has no skill or the
    step no response), and each trajectory's mean teacher gap (for the skill log). Call before
    the update: ``model`` is π_old."""
    samples, texts, owner = flatten_with_skills(trajs, skills)
    texts = [t if s.response_ids else None for s, t in zip(samples, texts, strict=True)]
    with autocast(cfg.bf16):
        scores = teacher_logprobs(
            model,
            tokenizer,
            samples,
            texts,
            task_markers=spec.task_markers,
            fallback_marker=spec.fallback_marker,
            micro_batch=cfg.optim.micro_batch,
            pad_id=pad_id,
            temperature=cfg.rollout.temperature,
        )
    per_traj: list[list[list[float] | None]] = [[] for _ in trajs]
    for i, lp in enumerate(scores.per_sample):
        per_traj[owner[i]].append(None if lp is None else [float(x) for x in lp.tolist()])
    return per_traj, mean_teacher_gap(samples, scores, owner, len(trajs))


CONTROL = 5
"""The seed purpose of the shuffled control's draw (``derive_seed(seed, CONTROL, iteration)``;
the loop's own purposes are 0-4, ``train.py``)."""


def rescore_trajectories(
    cfg: Any, policy: Any, spec: Any, trajs: Sequence[Trajectory], skills: Sequence[Any], it: int
) -> Any:
    """The distilling algorithms' teacher: ``trajectory_teacher_logprobs`` under pi_old
    (``policy``: a ``LoadedModel`` before this iteration's update), and the skill's own effect on
    the teacher (``skill_effect.py``) over every trajectory and over ``--skill-control`` of them
    scored under another task's skill (the shuffled control, ``Teacher.extra["control"]``)."""
    tokenizer = policy.processor or policy.tokenizer

    def score(some_trajs: list, some_skills: list) -> tuple[list, list]:
        return trajectory_teacher_logprobs(cfg, policy.model, tokenizer, spec, some_trajs,
                                           some_skills, pad_id=policy.pad_id)  # fmt: skip

    teacher, gaps = score(list(trajs), list(skills))
    metrics = skill_gap_metrics(trajs, teacher)
    rng = np.random.default_rng(derive_seed(cfg.seed, CONTROL, it))
    idx, borrowed = control_skills(trajs, skills, n=cfg.opd.skill_control, rng=rng)
    control = score([trajs[i] for i in idx], borrowed)[0] if idx else []
    if idx:
        chosen = [trajs[i] for i in idx]
        metrics.update(skill_gap_metrics(chosen, control, prefix="opd/control_gap"))
    # trajectory index -> (the borrowed skill, its per-step logprobs): the trajectory log keeps it
    kept = {i: (b, c) for i, b, c in zip(idx, borrowed, control, strict=True)}
    return Teacher(teacher, gaps, metrics, {"control": kept})
