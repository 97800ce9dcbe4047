"""Stage 1 of SEED: teach the policy to analyze trajectories (SEED.md, Stage 1).

1. rollouts of the policy Stage 2 starts from (``tasks_per_type`` tasks of every type x
   ``rollouts``, the caller's ``collect``);
2. a skill per trajectory from an ``Annotator`` that is told the outcome (the privileged one
   offline, ``openai:URL`` with a stronger model);
3. rows: by default every parsed annotation (the reference's pipeline for the card games), the
   rarer outcome's rows repeated until won and lost weigh the same (``balance_outcomes``); with
   ``--sft-accept-filter`` only skills that help on a rerun (``accept_skill``: rerun the task with
   the skill in the actor prompt; successes must rise by >= 1 *and* the success rate by >= 0.125
   over the no-skill baseline), SEED.md's filter for ALFWorld and the text envs;
4. SFT the policy on ``{analyzer prompt -> JSON}`` rows (``sft_train``: loss on the answer tokens
   only, 3 epochs, 10 % validation), with ``--sft-replay`` x as many of its own rollout steps
   (``replay_rows``; not in SEED.md: a small model forgets how to act otherwise).

The model is cached like the format warm-up (``stage1_model``): keyed by the starting model, the
env and every setting Stage 1 reads, with its own seed (``--sft-seed``), so the runs of every
``--seed`` of an algorithm start from one Stage 1 model.

The rerun is a callable so the trainer can plug in ``collect``: ``rerun_fn(traj, skill, n)`` plays
``traj``'s task (same ``task_id`` and env seed) ``n`` times with ``skill`` inserted into the actor
prompt (``wrappers.skill.insert_skill``; ``None``: no skill) and returns the trajectories (or
success flags). The no-skill baseline is, by default, the base rollouts of the same group (SEED.md:
8 rollouts per task, the same 8 that were annotated); ``baseline="rerun"`` reruns it instead.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from seed_gym.jsonl import read_jsonl, write_jsonl  # noqa: F401 - read_jsonl: Stage 1 rows
from seed_gym.registration import split_manifest
from seed_gym.seeding import derive_seed
from seed_gym.trainer.algorithms.seed.analyzer import Skill, analyzer_kwargs, analyzer_messages
from seed_gym.trainer.algorithms.seed.annotators import OpenAIAnnotator, PrivilegedAnnotator
from seed_gym.trainer.backends.engines import HFEngine, encode_chat
from seed_gym.trainer.backends.logprobs import pack, packed_logprobs, prompt_order
from seed_gym.trainer.backends.models import adamw, autocast, load_policy, save_policy
from seed_gym.trainer.collect import SamplingParams, collect, rollout_metrics
from seed_gym.trainer.model_cache import base_key, here, model_cache_dir, publish, staging_dir
from seed_gym.trainer.trajectory import Trajectory
from seed_gym.wrappers.agent import make_agent_env
from seed_gym.wrappers.pool import make_group_pool

MIN_SUCCESS_GAIN = 1
MIN_RATE_GAIN = 0.125


# --- the acceptance rule ------------------------------------------------------------------------
@dataclass(frozen=True)
class Acceptance:
    baseline_successes: int
    baseline_n: int
    skill_successes: int
    skill_n: int
    accepted: bool

    @property
    def baseline_rate(self) -> float:
        return self.baseline_successes / self.baseline_n if self.baseline_n else 0.0

    @property
    def skill_rate(self) -> float:
        return self.skill_successes / self.skill_n if self.skill_n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "baseline_rate": self.baseline_rate, "skill_rate": self.skill_rate}


def accept_skill(
    baseline_successes: int,
    baseline_n: int,
    skill_successes: int,
    skill_n: int,
    *,
    min_gain: int = MIN_SUCCESS_GAIN,
    min_rate_gain: float = MIN_RATE_GAIN,
) -> Acceptance:
    """SEED's filter: accept iff ``skill_successes - baseline_successes >= min_gain`` and
    ``skill_rate - baseline_rate >= min_rate_gain`` (both; with 8 reruns each, one more success is
    exactly +0.125). A tolerance of 1e-9 keeps 1/8 from failing on floating point."""
    if min(baseline_n, skill_n) < 0 or not 0 <= baseline_successes <= baseline_n:
        raise ValueError(f"bad baseline counts {baseline_successes}/{baseline_n}")
    if not 0 <= skill_successes <= skill_n:
        raise ValueError(f"bad with-skill counts {skill_successes}/{skill_n}")
    b_rate = baseline_successes / baseline_n if baseline_n else 0.0
    s_rate = skill_successes / skill_n if skill_n else 0.0
    ok = (
        skill_n > 0
        and skill_successes - baseline_successes >= min_gain
        and s_rate - b_rate >= min_rate_gain - 1e-9
    )
    return Acceptance(baseline_successes, baseline_n, skill_successes, skill_n, ok)


# --- building the dataset -----------------------------------------------------------------------
RerunFn = Callable[[Trajectory, "str | None", int], Sequence[Any]]


def _successes(results: Sequence[Any]) -> int:
    return sum(bool(getattr(r, "won", r)) for r in results)


@dataclass
class Stage1Report:
    n_trajectories: int = 0
    n_annotated: int = 0
    n_accepted: int = 0
    reruns: int = 0  # rerun episodes played
    rows: list[dict[str, Any]] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        n = max(1, self.n_trajectories)
        won = sum(bool(r["provenance"]["won"]) for r in self.rows)
        return {
            "stage1/trajectories": float(self.n_trajectories),
            "stage1/annotated_rate": self.n_annotated / n,
            "stage1/accepted_rate": self.n_accepted / n,
            "stage1/rows": float(len(self.rows)),
            "stage1/won_rows": float(won),
            "stage1/lost_rows": float(len(self.rows) - won),
            "stage1/rerun_episodes": float(self.reruns),
        }


def build_stage1_rows(
    trajectories: Sequence[Trajectory],
    annotator: Any,
    rerun_fn: RerunFn | None,
    *,
    env_id: str,
    privileged: Sequence[dict[str, Any]] | None = None,
    reruns: int = 8,
    baseline: str = "group",
    analyzer_kwargs: dict[str, Any] | None = None,
) -> Stage1Report:
    """Annotate, keep every parsed skill (``rerun_fn`` None) or only those the rerun rule
    accepts, and return the SFT rows (with provenance).

    Each row: ``{"messages": analyzer chat, "completion": JSON answer, "provenance": {...}}``. The
    analyzer chat is exactly what the policy reads in Stage 2 (``analyzer_kwargs`` must match the
    trainer's truncation budget). Reruns are cached per (group, skill text).
    """
    if baseline not in ("group", "rerun"):
        raise ValueError(f"baseline must be 'group' or 'rerun', not {baseline!r}")
    trajectories = list(trajectories)
    report = Stage1Report(n_trajectories=len(trajectories))
    skills: list[Skill | None] = annotator.annotate(trajectories, privileged)
    if len(skills) != len(trajectories):
        raise ValueError(
            f"annotator returned {len(skills)} skills for {len(trajectories)} trajectories"
        )
    groups: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        groups.setdefault(t.group_id, []).append(t)
    cache: dict[tuple[str, str | None], int] = {}

    def rerun(traj: Trajectory, skill: str | None) -> int:
        key = (traj.group_id, skill)
        if key not in cache:
            cache[key] = _successes(rerun_fn(traj, skill, reruns))
            report.reruns += reruns
        return cache[key]

    for traj, skill in zip(trajectories, skills, strict=True):
        if skill is None:
            continue
        report.n_annotated += 1
        acc = None
        if rerun_fn is not None:
            if baseline == "group":
                group = groups[traj.group_id]
                base_s, base_n = sum(t.won for t in group), len(group)
            else:
                base_s, base_n = rerun(traj, None), reruns
            acc = accept_skill(base_s, base_n, rerun(traj, skill.skill), reruns)
            if not acc.accepted:
                continue
        report.n_accepted += 1
        report.rows.append(
            {
                "messages": analyzer_messages(traj, **(analyzer_kwargs or {})),
                "completion": skill.to_json(),
                "provenance": {
                    "annotator": getattr(annotator, "name", type(annotator).__name__),
                    "env_id": env_id,
                    "traj_id": traj.traj_id,
                    "group_id": traj.group_id,
                    "task_id": traj.task_id,
                    "task_type": traj.task_type,
                    "task": traj.task,
                    "seed": traj.seed,
                    "won": traj.won,
                    "acceptance": None if acc is None else acc.to_dict(),
                },
            }
        )
    return report


def replay_rows(trajectories: Sequence[Trajectory], n: int, *, seed: int) -> list[dict[str, Any]]:
    """``n`` steps of the rollouts, drawn uniformly (seeded) from every trajectory, won and lost
    alike, as SFT rows {the step's prompt -> the response the policy sampled}: rehearsal that
    keeps the policy acting as it did while it learns to analyze. Not in SEED.md: a 135M policy
    fine-tuned on analyzer rows alone answered its action prompts in JSON afterwards (0 of 32
    episodes won, from 18 of 32 before)."""
    steps = [(t, s) for t in trajectories for s in t.steps if s.response_text and s.messages]
    chosen = random.Random(seed).sample(steps, min(max(0, n), len(steps)))
    return [
        {"messages": s.messages, "completion": s.response_text,
         "provenance": {"source": "replay", "traj_id": t.traj_id, "task_id": t.task_id,
                        "won": t.won}}
        for t, s in chosen
    ]  # fmt: skip


def balance_outcomes(rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Every row, and the rows of the rarer outcome (won or lost) repeated, in a seeded order,
    until both outcomes have as many rows: the analyzer learns workflows and avoidance rules
    alike even when the policy it starts from rarely wins (a weak clone won 4 of 96 Stage 1
    episodes). With one outcome absent the rows are returned as they are."""
    won = [r for r in rows if r["provenance"]["won"]]
    lost = [r for r in rows if not r["provenance"]["won"]]
    if not won or not lost:
        return list(rows)
    few, many = (won, lost) if len(won) < len(lost) else (lost, won)
    rng = random.Random(seed)
    extra: list[dict[str, Any]] = []
    while len(few) + len(extra) < len(many):
        cycle = list(few)
        rng.shuffle(cycle)
        extra += cycle[: len(many) - len(few) - len(extra)]
    return list(rows) + extra


# --- SFT ----------------------------------------------------------------------------------------
@dataclass
class SFTResult:
    train_losses: list[float]  # one per optimizer step
    val_losses: list[float]  # before training, then after each epoch (empty without a val split)
    epoch_losses: list[float]  # mean train loss per epoch
    n_train: int
    n_val: int
    skipped: int  # rows longer than max_length


def encode_row(tokenizer: Any, row: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(prompt ids with the generation prompt, answer ids + eos): only the answer is trained."""

    prompt = encode_chat(tokenizer, row["messages"])
    answer = list(tokenizer(row["completion"], add_special_tokens=False)["input_ids"])
    return prompt, answer + [int(tokenizer.eos_token_id)]


def split_rows(n: int, val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Seeded (train, val) index split; ``round(n * val_fraction)`` validation rows (at least one
    when ``val_fraction > 0`` and n >= 2, never all of them)."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    n_val = round(n * val_fraction)
    if val_fraction > 0 and n >= 2:
        n_val = min(max(1, n_val), n - 1)
    return sorted(order[n_val:]), sorted(order[:n_val])


GROUP_WINDOW = 16
"""Micro-batches drawn together when ``sft_train`` groups rows by prompt (see ``micro_batches``)."""


def micro_batches(
    prompts: Sequence[Sequence[int]], batch_size: int, rng: random.Random, *, group: bool = True
) -> list[list[int]]:
    """One epoch's micro-batches of row indices. The rows are shuffled; with ``group`` each window
    of ``GROUP_WINDOW * batch_size`` shuffled rows is sorted by prompt tokens before it is cut, so
    a micro-batch holds rows with a long common prefix and similar length (the forward runs the
    shared prefix once and pads little), and the micro-batches are shuffled again. The HF
    ``group_by_length`` idea, keyed by prefix: in the EZPoints warm-up one analyzer row among
    three policy rows padded the micro-batch to ~4x its tokens."""
    order = list(range(len(prompts)))
    rng.shuffle(order)
    if not group:
        return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    window = GROUP_WINDOW * batch_size
    chunks = []
    for w in range(0, len(order), window):
        part = prompt_order(order[w : w + window], prompts)
        chunks += [part[s : s + batch_size] for s in range(0, len(part), batch_size)]
    rng.shuffle(chunks)
    return chunks


def answer_nll(model: Any, examples: Sequence[tuple[list[int], list[int]]], *, pad_id: int):
    """Token-mean negative log-likelihood of the answers given the prompts (scalar, with grad)."""

    batch = pack(
        [p for p, _ in examples], [a for _, a in examples], pad_id=pad_id, share_prefix=True
    )
    batch = batch.to(next(model.parameters()).device)
    logprobs, _ = packed_logprobs(model, batch)  # [N, L]
    mask = batch.response_mask  # [N, L]
    return -(logprobs * mask).sum() / mask.sum().clamp(min=1.0)


def sft_train(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    *,
    epochs: int = 3,
    lr: float = 5e-6,
    batch_size: int = 4,
    val_fraction: float = 0.1,
    max_length: int = 4096,
    weight_decay: float = 0.0,
    grad_clip: float | None = 1.0,
    seed: int = 0,
    group_rows: bool = True,
    log_fn: Callable[[dict[str, float]], None] | None = None,
    progress: str | None = None,
) -> SFTResult:
    """Supervised fine-tuning of the analyzer on ``rows`` (SEED.md: 3 epochs, lr 5e-6, 10 %
    validation). Loss: token mean over the JSON answer tokens (and the closing eos) only.
    ``group_rows``: micro-batches of rows with a common prompt prefix (``micro_batches``).
    ``progress``: the label of a progress bar over the optimizer steps (with an ETA); None: none."""

    if epochs < 0 or batch_size < 1:
        raise ValueError("epochs must be >= 0 and batch_size >= 1")
    pad_id = (
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )
    examples, skipped = [], 0
    for row in rows:
        prompt, answer = encode_row(tokenizer, row)
        if len(prompt) + len(answer) > max_length:
            skipped += 1
            continue
        examples.append((prompt, answer))
    train_idx, val_idx = split_rows(len(examples), val_fraction, seed)
    train = [examples[i] for i in train_idx]
    val = [examples[i] for i in val_idx]
    result = SFTResult([], [], [], len(train), len(val), skipped)
    if not train:
        return result
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = adamw(params, lr=lr, weight_decay=weight_decay)
    rng = random.Random(seed)

    def validate() -> None:
        if not val:
            return
        model.eval()
        with torch.no_grad():
            total, count = 0.0, 0
            for s in range(0, len(val), batch_size):
                chunk = val[s : s + batch_size]
                n_tok = sum(len(a) for _, a in chunk)
                total += float(answer_nll(model, chunk, pad_id=pad_id)) * n_tok
                count += n_tok
        result.val_losses.append(total / max(1, count))
        if log_fn:
            log_fn({"sft/val_loss": result.val_losses[-1]})

    steps = epochs * -(-len(train) // batch_size)
    bar = tqdm(total=steps, desc=progress, unit="step", disable=progress is None)
    was_training = model.training
    try:
        validate()
        for epoch in range(epochs):
            model.train()
            losses = []
            for idx in micro_batches([p for p, _ in train], batch_size, rng, group=group_rows):
                chunk = [train[i] for i in idx]
                loss = answer_nll(model, chunk, pad_id=pad_id)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if grad_clip is not None:
                    torch.nn.utils.clip_grad_norm_(params, grad_clip)
                optimizer.step()
                value = float(loss.detach())
                if not math.isfinite(value):
                    raise FloatingPointError(f"SFT loss is {value} at epoch {epoch}")
                losses.append(value)
                result.train_losses.append(value)
                bar.update(1)
                bar.set_postfix(epoch=epoch, loss=f"{value:.3f}")
                if log_fn:
                    log_fn({"sft/loss": value, "sft/epoch": float(epoch)})
            result.epoch_losses.append(sum(losses) / len(losses))
            validate()
    finally:
        bar.close()
        model.train(was_training)
        optimizer.zero_grad(set_to_none=True)  # the model lives on; its spent gradients need not
    return result


# --- the Stage 1 pipeline: rollouts -> annotate -> rerun filter -> SFT -> model folder ----------
STAGE1_FILES = {
    "dataset": "stage1_dataset.jsonl",  # accepted rows with provenance
    "meta": "stage1.json",  # config, counts, SFT losses, timings
    "model": "model",  # the SFT'd policy (a Hugging Face folder)
}


def make_annotator(cfg: Any, tokenizer: Any) -> Any:
    """``privileged`` -> ``PrivilegedAnnotator(env)``; ``openai:URL`` -> ``OpenAIAnnotator``."""

    if cfg.stage1.annotator == "privileged":
        return PrivilegedAnnotator(cfg.env)
    if cfg.stage1.annotator.startswith("openai:"):
        kw = analyzer_kwargs(cfg.opd.analyzer_budget, tokenizer)
        return OpenAIAnnotator(
            cfg.stage1.annotator[len("openai:") :],
            cfg.stage1.annotator_model,
            max_prompt_tokens=kw["max_prompt_tokens"],
            count_tokens=kw["count_tokens"],
        )
    raise ValueError(f"unknown annotator {cfg.stage1.annotator!r}: privileged or openai:URL")


def tasks_by_type(
    env_id: str,
    per_type: int,
    *,
    seed: int,
    modality: str | None = None,
    scan: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> list[str]:
    """Up to ``per_type`` training tasks of every task type, in a seeded order. Types are read off
    ``info["task_type"]`` at reset (one env, reused), scanning at most ``scan`` tasks (default
    ``50 * per_type``); envs without types count as one type."""

    env_kwargs = env_kwargs or {}
    manifest = split_manifest(env_id, "train", **env_kwargs)
    limit = scan if scan is not None else 50 * per_type
    env = make_agent_env(env_id, split="train", modality=modality, **env_kwargs)
    chosen: dict[str, list[str]] = {}
    try:
        for n, task in enumerate(manifest.iterate(seed=seed)):
            if n >= limit:
                break
            _, info = env.reset(seed=seed, options={"task_id": task})
            bucket = chosen.setdefault(str(info.get("task_type", "")), [])
            if len(bucket) < per_type:
                bucket.append(task)
            if (
                len(chosen) > 0
                and all(len(b) >= per_type for b in chosen.values())
                and n >= limit // 5
            ):
                break  # every type seen so far is full and a fifth of the scan found no new type
    finally:
        env.close()
    return [t for key in sorted(chosen) for t in chosen[key]]


def run_stage1(
    cfg: Any, out: str | Path, *, policy: Any = None, device: str = "cpu"
) -> dict[str, Any]:
    """SEED Stage 1 with the settings of ``cfg`` (a ``TrainConfig``: env, model, its ``stage1``
    group, the analyzer settings of ``opd``, the rollout budget) into ``out``; returns the meta
    dict (also ``out/stage1.json``).

    ``out/stage1_dataset.jsonl`` holds the rows, ``out/model`` the SFT'd policy (the base policy
    unchanged when there is no row: the meta says so)."""

    stage1, out = cfg.stage1, Path(out)
    out.mkdir(parents=True, exist_ok=True)
    threads = cfg.system.warmup_threads or cfg.system.threads  # a one-off build, as the warm-up
    if threads is not None:
        torch.set_num_threads(threads)
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    if policy is None:
        policy = load_policy(cfg.model, seed=stage1.seed, device=device)
    model, tokenizer = policy.model, policy.tokenizer
    engine = HFEngine(model, tokenizer, max_batch=cfg.rollout.gen_batch, autocast_bf16=cfg.bf16)
    sampling = SamplingParams(cfg.rollout.max_new_tokens, stage1.temperature, 1.0)

    # 1. rollouts: tasks per type x rollouts, every copy of a task from the same env seed
    tasks = tasks_by_type(cfg.env, stage1.tasks_per_type, seed=stage1.seed, modality=cfg.modality,
                          env_kwargs=cfg.env_kwargs)  # fmt: skip
    _say(f"{len(tasks)} tasks x {stage1.rollouts} rollouts (temperature {stage1.temperature})")
    env_seeds = [derive_seed(stage1.seed, 101, b) % 2**31 for b in range(len(tasks))]
    pool = _stage1_pool(cfg, tasks, stage1.rollouts)
    try:
        trajs = collect(pool, engine, tasks, env_seeds, sampling=sampling,
                        seed=derive_seed(stage1.seed, 102), prefix="s1-",
                        max_turns=cfg.rollout.max_turns, progress=cfg.system.progress,
                        privileged=True)  # fmt: skip
    finally:
        pool.close()
    base = rollout_metrics(trajs, prefix="stage1/base_")
    times["rollout"] = time.perf_counter() - t0

    # 2-3. annotate (the annotator is told the outcome); keep every parsed skill, or, with the
    # acceptance filter, those that help on a rerun with the skill in the actor prompt
    t0 = time.perf_counter()
    annotator = make_annotator(cfg, tokenizer)
    report = _annotate(cfg, annotator, engine, tasks, trajs, sampling, tokenizer)
    if stage1.balance:
        report.rows = balance_outcomes(report.rows, stage1.seed)
    replay = replay_rows(trajs, round(stage1.replay * len(report.rows)), seed=stage1.seed)
    rows = report.rows + replay
    dataset = write_jsonl(rows, out / STAGE1_FILES["dataset"])
    times["annotate"] = time.perf_counter() - t0
    counts = report.metrics()
    counts["stage1/replay_rows"] = float(len(replay))
    _say(f"{len(report.rows)} analyzer rows ({counts['stage1/won_rows']:.0f} won, "
         f"{counts['stage1/lost_rows']:.0f} lost) of {report.n_annotated} skills and "
         f"{len(replay)} replayed steps -> {dataset}")  # fmt: skip

    # 4. SFT the analyzer (the policy itself) on the rows
    t0 = time.perf_counter()
    result = None
    if report.rows:
        with autocast(cfg.bf16, model.device.type, across_steps=True):
            result = sft_train(model, tokenizer, rows, epochs=stage1.epochs, lr=stage1.lr,
                               batch_size=stage1.batch, seed=stage1.seed,
                               progress="stage 1 SFT" if cfg.system.progress else None)  # fmt: skip
        _say(f"SFT: {result.n_train} train / {result.n_val} val rows, val loss {result.val_losses}")
    else:
        _say("no row to train on: the Stage 2 policy is the base policy")
    times["sft"] = time.perf_counter() - t0
    save_policy(policy, out / STAGE1_FILES["model"])
    meta = {
        "env": cfg.env,
        "base_model": cfg.model,
        "annotator": getattr(annotator, "name", type(annotator).__name__),
        "tasks": tasks,
        "config": {k: v for k, v in cfg.flags().items() if k.startswith(("sft_", "analyzer_"))},
        "metrics": {**base, **counts},
        "sft": None if result is None else asdict(result),
        "trained": result is not None and result.n_train > 0,
        "times": times,
        "dataset": str(dataset),
        "model": str(out / STAGE1_FILES["model"]),
    }
    (out / STAGE1_FILES["meta"]).write_text(json.dumps(meta, indent=1))
    return meta


def _annotate(
    cfg: Any,
    annotator: Any,
    engine: HFEngine,
    tasks: list[str],
    trajs: list[Trajectory],
    sampling: SamplingParams,
    tokenizer: Any,
) -> Stage1Report:
    """Stage 1 steps 2-3: the annotator (told each outcome) writes a skill per trajectory; every
    parsed one is kept, or, with ``accept_filter``, those that help on with-skill reruns."""
    stage1 = cfg.stage1
    how = (f"{stage1.reruns} with-skill reruns per candidate skill" if stage1.accept_filter
           else "every parsed skill kept")  # fmt: skip
    _say(f"annotating {len(trajs)} trajectories ({getattr(annotator, 'name', 'annotator')}), {how}")
    rerun_pool = _stage1_pool(cfg, tasks[:1], stage1.reruns) if stage1.accept_filter else None
    reruns = iter(range(1, 1 << 30))

    def rerun_fn(traj: Trajectory, skill: str | None, n: int) -> list[Trajectory]:
        k = next(reruns)
        return collect(rerun_pool, engine, [traj.task_id], [traj.seed], sampling=sampling,
                       seed=derive_seed(stage1.seed, 103, k), prefix=f"s1r{k}-",
                       max_turns=cfg.rollout.max_turns, skills=[skill])  # fmt: skip

    try:
        report = build_stage1_rows(
            trajs,
            annotator,
            rerun_fn if stage1.accept_filter else None,
            env_id=cfg.env,
            privileged=[t.privileged or {} for t in trajs],
            reruns=stage1.reruns,
            analyzer_kwargs=analyzer_kwargs(cfg.opd.analyzer_budget, tokenizer),
        )
    finally:
        if rerun_pool is not None:
            rerun_pool.close()
    return report


def _say(msg: str) -> None:
    print(f"[stage1] {msg}", file=sys.stderr, flush=True)


def _stage1_pool(cfg: Any, tasks: list[str], group_size: int) -> Any:
    """A pool of ``group_size`` training envs per task, with the run's env settings."""
    return make_group_pool(cfg.env, tasks, group_size, split="train", modality=cfg.modality,
                           history=cfg.history, backend=cfg.system.backend,
                           env_kwargs=cfg.env_kwargs)  # fmt: skip


def stage1_done(out: str | Path) -> bool:
    """A finished Stage 1 folder (meta written last, after the model)."""
    out = Path(out)
    return (out / STAGE1_FILES["meta"]).exists() and (out / STAGE1_FILES["model"]).is_dir()


STAGE1_VERSION = 2  # 2: rows from every parsed annotation, balanced; the analyzer asks by outcome


def stage1_cache_dir(cfg: Any) -> Path:
    """The cached Stage 1 folder for ``cfg``: keyed by the starting model, the env and its
    settings, every ``stage1`` field that shapes the model, the rollout and analyzer budgets
    (the rows must look like Stage 2's analyzer prompts) and ``STAGE1_VERSION``."""
    shaping = {k: v for k, v in asdict(cfg.stage1).items() if k not in ("skip", "model", "cache")}
    key = {
        "env": cfg.env,
        "base": base_key(cfg.model),
        "base_seed": cfg.seed if cfg.model == "tiny" else None,  # the random tiny model's init
        "env_kwargs": list(cfg.env_kwarg),
        "modality": cfg.modality,
        "history": cfg.history,
        "stage1": shaping,
        "rollout": [cfg.rollout.max_new_tokens, cfg.rollout.max_turns, cfg.rollout.gen_batch],
        "analyzer_budget": cfg.opd.analyzer_budget,
        "bf16": cfg.bf16,
        "version": STAGE1_VERSION,
    }
    return model_cache_dir("stage1", cfg.env, cfg.model, key)


def stage1_model(
    cfg: Any,
    run_dir: Path,
    device: str = "cpu",
    *,
    build: Callable[..., Any] = here,
) -> str | None:
    """The folder Stage 2 starts from: ``cfg.stage1.model`` if given; without ``--no-sft``, Stage
    1's model: from the cache (``stage1_cache_dir``) or, with ``--no-sft-cache``, in
    ``RUN_DIR/stage1``, built first when missing (``build``: how, e.g. ``model_cache.in_child``);
    else None (start from ``cfg.model``). ``RUN_DIR/stage1/stage1.json`` records what Stage 1 did
    either way."""
    if cfg.stage1.model:
        return cfg.stage1.model
    if cfg.stage1.skip:
        return None
    out = stage1_cache_dir(cfg) if cfg.stage1.cache else run_dir / "stage1"
    if not stage1_done(out):
        build(build_stage1, cfg, out, device)
    if out != run_dir / "stage1":
        record = run_dir / "stage1" / STAGE1_FILES["meta"]
        record.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / STAGE1_FILES["meta"], record)
    return str(out / STAGE1_FILES["model"])


def build_stage1(cfg: Any, out: Path, device: str = "cpu") -> None:
    """Run Stage 1 into a staging folder and move it to ``out`` when done (a killed build leaves
    nothing a later run would load); the caller's torch thread count is restored."""
    tmp = staging_dir(out)
    before = torch.get_num_threads()
    try:
        run_stage1(cfg, tmp, device=device)
    finally:  # the run trains on its own thread count
        torch.set_num_threads(before)
    meta = json.loads((tmp / STAGE1_FILES["meta"]).read_text())
    meta["dataset"] = str(out / STAGE1_FILES["dataset"])
    meta["model"] = str(out / STAGE1_FILES["model"])
    (tmp / STAGE1_FILES["meta"]).write_text(json.dumps(meta, indent=1))
    publish(tmp, out)
