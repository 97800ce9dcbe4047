"""``seed-gym train``: the training loop, top to bottom.

    seed-gym train --algo seed --preset smollm2-cpu --out runs/ezpoints     # EZPoints, SmolLM2
    seed-gym train --out runs/ezpoints --resume --iterations 8            # continue the same run

One iteration: rollout (B tasks x G copies, multi-turn) -> the algorithm's skills (SEED: the
policy analyzes its episodes) -> its teacher (SEED: the sampled tokens rescored under pi_old with
the skill in the prompt) -> update (PPO-clip of the algorithm's advantages + KL + entropy + its
extra term, ``update.py``) -> engine weight sync -> eval -> commit (checkpoint holding the
metrics line, then the line). What differs between algorithms is one object
(``trainer/algorithms``); the loop branches on none of them. The starting policy is the format
warm-up (``warmup.py``), then the algorithm's own start (SEED: Stage 1, cached).

Everything the run writes lives in RUN_DIR:
    config.json          the full config (``--resume`` starts from it)
    provenance.jsonl     one line per start or resume: time, package versions, machine, threads
    metrics.jsonl        one JSON line per iteration (and per eval)
    tb/                  TensorBoard events
    checkpoint.pt        model, optimizer, RNG states, iteration, data position (exact resume)
    model/               the final policy as a Hugging Face folder (adapters only under LoRA)
    trajectories/        iter_*.jsonl: every rollout (with skill and teacher logprobs for SEED)
    skills/              iter_*.jsonl: every skill with its trajectory, success and teacher gap
    evals/               iter_*-SPLIT.jsonl: every eval episode's outcome
    stage1/              SEED Stage 1: stage1.json (what it did; the model and rows are cached)
    .lock                held (flock) by the train writing the folder: a second one refuses

Resume is exact: every random draw of an iteration (task order, env seeds, sampling, mini-batch
shuffling) is derived from (seed, iteration), and model and optimizer states are restored, so a
run stopped after iteration k and resumed ends with the same parameters as an uninterrupted one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from seed_gym.folder_lock import FolderLockedError
from seed_gym.jsonl import write_jsonl
from seed_gym.oneline import USAGE_EXIT, one_line
from seed_gym.registration import agent_spec, split_manifest, task_ids
from seed_gym.seeding import derive_seed
from seed_gym.trainer.backends.logprobs import response_logprobs
from seed_gym.trainer.backends.models import autocast, state_dict_sha256
from seed_gym.trainer.backends.plan import dry_run
from seed_gym.trainer.collect import SamplingParams, collect, rollout_metrics
from seed_gym.trainer.config import PROG, TrainConfig, parse_args
from seed_gym.trainer.eval_cache import CachedEval, eval_key, load_eval, store_eval
from seed_gym.trainer.phases import PhaseMeter, eager_release
from seed_gym.trainer.run_setup import Run, export_model, run_folder_lock, run_problem, start_run
from seed_gym.trainer.run_state import (
    RunStateError,
    eval_summary,
    instrument_summary,
    phase_summary,
    quiet_progress_bars,
    save_checkpoint,
    time_metrics,
    truncate_metrics,
    write_iteration_logs,
)
from seed_gym.trainer.update import Sample, run_update
from seed_gym.wrappers.pool import make_group_pool

# purposes of derived seeds
TASKS, ENV_SEEDS, SAMPLING, SHUFFLE, EVAL = range(5)  # (5: SEED's control, its rescore.py)


def task_batch(task_ids: Sequence[str], seed: int, position: int, n: int) -> list[str]:
    """Tasks ``position .. position + n`` of an endless stream: each epoch is a fresh seeded
    permutation of the split, so the data position alone fixes what comes next."""
    out = []
    for p in range(position, position + n):
        epoch, k = divmod(p, len(task_ids))
        perm = np.random.default_rng(derive_seed(seed, TASKS, epoch)).permutation(len(task_ids))
        out.append(task_ids[int(perm[k])])
    return out


def evaluate(
    cfg: TrainConfig, engine, split: str, iteration: int
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """``eval_samples`` episodes on each task of a fixed seeded subset of ``split``, greedy unless
    ``eval_temperature`` > 0. Env and sampling seeds are the same at every eval, so successive evals
    differ only by the policy. Returns the metrics and one row per episode (its outcome, for
    paired comparisons across evals)."""
    tasks = list(
        split_manifest(cfg.env, split, **cfg.env_kwargs).iterate(
            limit=cfg.eval.tasks, seed=cfg.seed
        )
    )
    pool = make_group_pool(cfg.env, tasks, cfg.eval.samples, split=split, **_env_args(cfg))
    budget = cfg.eval.max_new_tokens or cfg.rollout.max_new_tokens
    try:
        trajs = collect(
            pool,
            engine,
            tasks,
            [derive_seed(cfg.seed, EVAL, i) % 2**31 for i in range(len(tasks))],
            sampling=SamplingParams(budget, cfg.eval.temperature, 1.0),
            seed=derive_seed(cfg.seed, EVAL),
            prefix=f"eval{iteration}-{split}-",
            max_turns=cfg.rollout.max_turns,
            progress=cfg.system.progress,
        )
    finally:
        pool.close()
    rows = [
        {"task_id": t.task_id, "task_type": t.task_type, "sample": i % cfg.eval.samples,
         "won": t.won, "return": t.episode_return, "steps": len(t.steps)}
        for i, t in enumerate(trajs)
    ]  # fmt: skip
    return rollout_metrics(trajs, prefix=f"eval/{split}/"), rows


def _env_args(cfg: TrainConfig) -> dict[str, Any]:
    return {"modality": cfg.modality, "history": cfg.history, "backend": cfg.system.backend,
            "env_kwargs": cfg.env_kwargs}  # fmt: skip


def run_eval(run: Run, iteration: int) -> dict[str, float]:
    """Every eval split; each episode's outcome goes to ``RUN_DIR/evals/iter_NNNN-SPLIT.jsonl``.
    With ``--eval-cache`` the start eval (iteration 0) of weights that were already evaluated
    under the same settings is read back instead (``eval_cache.py``)."""
    cfg, meter = run.cfg, PhaseMeter()
    metrics: dict[str, float] = {}
    with meter.phase("eval"):
        cached_start = cfg.eval.cache and iteration == 0
        weights = state_dict_sha256(run.policy.model) if cached_start else None  # once
        for split in cfg.eval.splits:
            key = eval_key(cfg, weights, split) if weights else None
            cached = load_eval(key) if key else None
            if cached is not None:
                split_metrics, rows = cached.metrics, cached.rows
                metrics[f"eval/{split}/cached"] = 1.0
            else:
                split_metrics, rows = evaluate(cfg, run.engine, split, iteration)
                if key:
                    store_eval(key, CachedEval(split_metrics, rows))
            metrics.update(split_metrics)
            write_jsonl(rows, run.run_dir / "evals" / f"iter_{iteration:04d}-{split}.jsonl")
    return {**metrics, **meter.metrics()}


def update_samples(run: Run, trajs: list, teacher: list | None) -> list[Sample]:
    """Every step with a response, its advantage (the algorithm's), its old logprobs (as sampled,
    or recomputed with ``--recompute-old-logprobs``) and its teacher logprobs."""
    cfg = run.cfg
    adv = run.algorithm.advantages(trajs)
    teacher = teacher or [[None] * len(t.steps) for t in trajs]
    samples = [
        Sample(s, a, s.old_logprobs, t_lp)
        for t, a_t, tl in zip(trajs, adv, teacher, strict=True)
        for s, a, t_lp in zip(t.steps, a_t, tl, strict=True)
        if s.response_ids
    ]
    if cfg.optim.recompute_old_logprobs:
        with autocast(cfg.bf16):
            olds, _ = response_logprobs(
                run.policy.model, [s.step.prompt_ids for s in samples],
                [s.step.response_ids for s in samples], micro_batch=cfg.optim.micro_batch,
                pad_id=run.policy.pad_id, temperature=cfg.rollout.temperature,
                images=[s.step.images for s in samples], processor=run.policy.processor,
            )  # fmt: skip
        for s, o in zip(samples, olds, strict=True):
            s.old_logprobs = o.tolist()
    return samples


# --- the loop -------------------------------------------------------------------------------------
def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run (or resume) ``cfg``; returns the last iteration's metrics. Rank 0 holds the run
    folder's lock throughout: a second ``train`` into the folder raises ``FolderLockedError``."""
    with run_folder_lock(cfg.out):
        return _train(cfg)


def _train(cfg: TrainConfig) -> dict[str, Any]:
    run = start_run(cfg)
    cfg, algo, dist, logger = run.cfg, run.algorithm, run.dist, run.logger
    if not algo.trains:  # the prompting baseline: evaluate and stop
        return evaluate_only(run)
    setup = eval_at_start(run)  # what is left to log with this process's first line
    train_tasks = task_ids(cfg.env, "train", **cfg.env_kwargs)
    B, G = cfg.rollout.tasks_per_iter, cfg.rollout.group_size
    # this rank's share of the B tasks (all of them with one process)
    pool = dist.make_pool(make_group_pool, cfg.env, train_tasks[:B], G, split="train",
                          **_env_args(cfg))  # fmt: skip
    sampling = SamplingParams(
        cfg.rollout.max_new_tokens, cfg.rollout.temperature, cfg.rollout.top_p
    )
    spec, model = agent_spec(cfg.env), run.policy.model
    metrics: dict[str, Any] = {}
    iterations = range(run.start_iteration, cfg.iterations)
    bar = tqdm(iterations, desc="train", unit="it", initial=run.start_iteration, total=cfg.iterations,
               disable=not cfg.system.progress or not dist.is_main)  # fmt: skip
    try:
        for it in bar:
            meter = PhaseMeter()
            iteration = it + 1  # 1-based: "after iteration k" is what checkpoints and logs say

            # --- rollout: every rank collects its share, then all are gathered ----------------
            with meter.phase("rollout"):
                tasks = task_batch(train_tasks, cfg.seed, run.data_position, B)
                env_seeds = [derive_seed(cfg.seed, ENV_SEEDS, it, b) % 2**31 for b in range(B)]
                trajs = dist.collect(
                    collect, pool, run.engine, tasks, env_seeds, sampling=sampling,
                    seed=derive_seed(cfg.seed, SAMPLING, it), prefix=f"it{iteration}-",
                    max_turns=cfg.rollout.max_turns, progress=cfg.system.progress,
                    skills=algo.actor_skills(tasks), privileged=algo.privileged_rollouts,
                )  # fmt: skip
                run.data_position += B
                run.env_steps += sum(len(t.steps) for t in trajs)

            # --- skills: the algorithm's (SEED: the policy analyzes its own episodes) ---------
            analyzer_stats: dict[str, float] = {}
            failures: dict[str, dict] = {}
            with meter.phase("analyze"):
                skills = algo.skills(trajs, analyzer_stats, failures)
            if skills is None:  # an algorithm without skills has no analyze phase
                meter.forget("analyze")

            # --- teacher: pi_old's logprobs of the sampled tokens in the algorithm's context -----
            with meter.phase("rescore"):  # (SEED: the same ids with the skill in the prompt)
                scored = algo.teacher(run.policy, spec, trajs, skills, it)
            if scored is None:
                meter.forget("rescore")
            teacher = scored.per_step if scored else None

            # --- update: GRPO advantages, PPO-clip (+ KL, entropy, gated OPD) ------------------
            low_memory = cfg.system.gradient_checkpointing  # freed activations go back at once
            with meter.phase("update"), eager_release(low_memory):
                run.engine.sleep()  # vLLM: the GPU is the trainer's until the weights are synced
                samples = update_samples(run, trajs, teacher)
                train_metrics = run_update(
                    model, run.optimizer, samples, reference=run.reference, terms=algo,
                    teacher=scored is not None, cfg=cfg,
                    rng=np.random.default_rng(derive_seed(cfg.seed, SHUFFLE, it)),
                    pad_id=run.policy.pad_id, processor=run.policy.processor,
                    device=run.device, dist=dist,
                )  # fmt: skip
            with meter.phase("sync"):
                run.engine.wake()
                run.engine.sync_weights(model)

            # --- log, eval, commit ------------------------------------------------------------
            metrics = {**rollout_metrics(trajs, prefix="rollout/"), **train_metrics}
            metrics.update(iteration_metrics(run, trajs, samples, analyzer_stats))
            metrics.update(scored.metrics if scored else {})
            if dist.is_main:
                write_iteration_logs(
                    run.run_dir, iteration, trajs, tokenizer=run.policy.tokenizer, skills=skills,
                    teacher=teacher, gaps=scored.gaps if scored else None,
                    trajectories=cfg.system.save_trajectories,
                    failures=failures, control=scored.extra.get("control") if scored else None,
                )  # fmt: skip
                if eval_due(cfg, iteration):
                    metrics.update(run_eval(run, iteration))
            metrics.update(time_metrics(meter, metrics.get("time/eval")))
            metrics.update(setup)
            setup = {}
            commit(run, iteration, metrics)
            bar.set_postfix(success=f"{metrics['rollout/success']:.2f}",
                            ret=f"{metrics['rollout/return']:.2f}")  # fmt: skip
        if cfg.system.save_hf and (dist.is_main or dist.fsdp):
            export_model(run)  # under FSDP every rank sends its shards
        dist.barrier()  # no rank destroys the group while another still uses it (gloo aborted)
    finally:
        bar.close()
        pool.close()
        logger.close()
        dist.shutdown()
    return metrics


def evaluate_only(run: Run) -> dict[str, Any]:
    """An algorithm that does not train (the prompting baseline): evaluate, log, stop."""
    metrics = {**run.setup, **run_eval(run, 0)}
    run.logger.log(0, metrics)
    run.logger.close()
    return metrics


def eval_at_start(run: Run) -> dict[str, Any]:
    """The starting policy's eval as iteration 0 (``--eval-at-start``, on a fresh run); returns
    the setup metrics still to be logged (none once this line carried them)."""
    if not (run.cfg.eval.at_start and run.start_iteration == 0 and run.dist.is_main):
        return run.setup
    truncate_metrics(run.run_dir / "metrics.jsonl", -1)  # killed before the 1st checkpoint
    run.logger.log(0, {**run.setup, **run_eval(run, 0)})
    return {}


def eval_due(cfg: TrainConfig, iteration: int) -> bool:
    return bool(cfg.eval.every and iteration % cfg.eval.every == 0) or iteration == cfg.iterations


def commit(run: Run, iteration: int, metrics: dict[str, Any]) -> None:
    """Checkpoint (every ``save_every`` iterations and at the end; it holds this iteration's
    metrics line), then log the line. Under FSDP every rank writes its shards."""
    cfg, dist = run.cfg, run.dist
    if (dist.is_main or dist.fsdp) and (
        iteration % cfg.system.save_every == 0 or iteration == cfg.iterations
    ):
        save_checkpoint(run.run_dir / "checkpoint.pt", run.policy.model, run.optimizer,
                        run.checkpoint_state(iteration, metrics), main=dist.is_main)  # fmt: skip
    run.logger.log(iteration, metrics)


def iteration_metrics(run: Run, trajs: list, samples: list[Sample], analyzer: dict) -> dict:
    return {
        "train/adv_abs_mean": float(np.mean([abs(s.advantage) for s in samples]))
        if samples
        else 0.0,
        "train/samples": float(len(samples)),
        "train/response_tokens": float(sum(len(s.step.response_ids) for s in samples)),
        "train/data_position": float(run.data_position),
        "train/lr": run.cfg.optim.lr,
        "rollout/env_steps": float(sum(len(t.steps) for t in trajs)),  # this iteration
        "train/env_steps_total": float(run.env_steps),
        **analyzer,
    }


def main(argv: list[str] | None = None) -> int:
    """``seed-gym train``. Failing safe: a bad flag or value, env, model or ``--import`` is one
    line naming it, exit status 2, before anything is written (``parse_args``, ``run_problem``);
    a run folder that cannot be used as asked (in use by another ``train``, holding a run
    without ``--resume``, a damaged ``config.json``, ``metrics.jsonl`` or ``checkpoint.pt``,
    nothing to resume from) is one line naming the folder or file, exit status 1."""
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    if not cfg.system.progress:
        quiet_progress_bars()  # transformers' and the hub's bars too
    problem = run_problem(cfg)
    if problem is not None:  # a user error: one line, nothing written
        print(f"{PROG}: {one_line(problem)}", file=sys.stderr)
        return USAGE_EXIT
    if cfg.system.dry_run:
        return dry_run(cfg)
    try:
        train(cfg)
    except (FolderLockedError, RunStateError) as e:
        print(f"{PROG}: {one_line(e)}", file=sys.stderr)
        return 1
    run_dir = Path(cfg.out)  # the summary: phases, SEED's instruments, success per eval split
    summary = phase_summary(run_dir) + instrument_summary(run_dir)
    for line in summary + eval_summary(run_dir, cfg.eval.splits):
        print(line, file=sys.stderr)
    print(
        f"run written to {cfg.out} (seed-gym report {cfg.out} --out report.html)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
