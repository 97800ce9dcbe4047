"""``seed-gym train``: the training loop, top to bottom.

    seed-gym train --env seed_gym/Sokoban-v0 --algo grpo --preset smollm2-cpu --out runs/sokoban
    seed-gym train --out runs/sokoban --resume --iterations 8      # continue the same run

One iteration: rollout (B tasks × G copies, multi-turn) -> GRPO advantages -> [SEED: analyze ->
skills -> rescore (teacher logprobs under π_old)] -> PPO-clip update (+ λ · gated OPD; micro-batched,
gradient accumulation) -> engine weight sync -> log -> checkpoint -> eval. ``--algo seed`` first
runs Stage 1 (``sft.run_stage1``) into RUN_DIR/stage1; the SEED phases live in ``seed_phase.py``.

Everything the run writes lives in RUN_DIR:
    config.json          the full config (``--resume`` starts from it)
    metrics.jsonl        one JSON line per iteration (and per eval)
    tb/                  TensorBoard events
    checkpoint.pt        model, optimizer, RNG states, iteration, data position (exact resume)
    model/               the final policy as a Hugging Face folder (adapters only under LoRA)
    trajectories/        iter_*.jsonl: every rollout (with skill and teacher logprobs for SEED)
    skills/              iter_*.jsonl: every skill with its trajectory, success and teacher gap
    stage1/              SEED Stage 1: dataset JSONL with provenance, stage1.json, model/

Resume is exact: every random draw of an iteration (task order, env seeds, sampling, mini-batch
shuffling) is derived from (seed, iteration), and model and optimizer states are restored, so a
run stopped after iteration k and resumed ends with the same parameters as an uninterrupted one.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.seeding import derive_seed
from seed_gym.trainer.config import TrainConfig, parse_args
from seed_gym.trainer.run_state import (
    Logger,
    eval_summary,
    load_checkpoint,
    save_checkpoint,
    truncate_metrics,
)

# --- small helpers (the loop below reads top to bottom) -----------------------------------------
# purposes of derived seeds
TASKS, ENV_SEEDS, SAMPLING, SHUFFLE, EVAL = range(5)


def task_batch(task_ids: Sequence[str], seed: int, position: int, n: int) -> list[str]:
    """Tasks ``position .. position + n`` of an endless stream: each epoch is a fresh seeded
    permutation of the split, so the data position alone fixes what comes next."""
    out = []
    for p in range(position, position + n):
        epoch, k = divmod(p, len(task_ids))
        perm = np.random.default_rng(derive_seed(seed, TASKS, epoch)).permutation(len(task_ids))
        out.append(task_ids[int(perm[k])])
    return out


def grpo_advantages(
    trajs: Sequence[Any], *, mode: str = "step", std_normalize: bool = True
) -> list[list[float]]:
    """One GRPO advantage per step of every trajectory (``TrainConfig.advantage``).

    ``step``: each step-sample scores its episode's env return minus its own format penalty;
    mean and std over all step-samples of the group (verl-agent's default). ``trajectory``: one
    return per trajectory (penalties included), normalised over the group's trajectories and
    given to every step of the trajectory.
    """
    import torch

    from seed_gym.trainer.losses import group_advantages, step_scores

    if mode == "trajectory":
        returns = torch.tensor([t.episode_return for t in trajs], dtype=torch.float64)  # [B*G]
        adv = group_advantages(returns, [t.group_id for t in trajs], std_normalize=std_normalize)
        return [[float(a)] * len(t.steps) for t, a in zip(trajs, adv, strict=True)]
    scores, groups = [], []
    for t in trajs:
        scores += step_scores(t.env_return, [s.penalty for s in t.steps])
        groups += [t.group_id] * len(t.steps)
    adv = group_advantages(
        torch.tensor(scores, dtype=torch.float64), groups, std_normalize=std_normalize
    ).tolist()  # [sum of steps]
    out, k = [], 0
    for t in trajs:
        out.append(adv[k : k + len(t.steps)])
        k += len(t.steps)
    return out


def n_mini_batches(n_samples: int, cfg: TrainConfig) -> int:
    """Optimizer steps per epoch: ``cfg.mini_batches`` if set, else ceil(N / mini_batch_size)."""
    if cfg.mini_batches is not None:
        return cfg.mini_batches
    return max(1, -(-n_samples // cfg.mini_batch_size))


def evaluate(
    cfg: TrainConfig, engine, split: str, iteration: int, run_dir: Path | None = None
) -> dict[str, float]:
    """``eval_samples`` episodes on each task of a fixed seeded subset of ``split``, greedy unless
    ``eval_temperature`` > 0. Env and sampling seeds are the same at every eval, so successive evals
    differ only by the policy. With ``run_dir`` each episode's outcome goes to
    ``run_dir/evals/iter_{iteration:04d}-{split}.jsonl`` (for paired comparisons across evals)."""
    from seed_gym.registration import split_manifest
    from seed_gym.trainer.collect import SamplingParams, collect, rollout_metrics
    from seed_gym.wrappers.group import make_group_pool

    manifest = split_manifest(cfg.env, split)
    tasks = list(manifest.iterate(limit=cfg.eval_tasks, seed=cfg.seed))
    pool = make_group_pool(
        cfg.env,
        tasks,
        cfg.eval_samples,
        split=split,
        modality=cfg.modality,
        history=cfg.history,
        backend=cfg.backend,
    )
    try:
        trajs = collect(
            pool,
            engine,
            tasks,
            [derive_seed(cfg.seed, EVAL, i) % 2**31 for i in range(len(tasks))],
            sampling=SamplingParams(
                cfg.eval_max_new_tokens or cfg.max_new_tokens, cfg.eval_temperature, 1.0
            ),
            seed=derive_seed(cfg.seed, EVAL),
            prefix=f"eval{iteration}-{split}-",
            max_turns=cfg.max_turns,
            progress=cfg.progress,
        )
    finally:
        pool.close()
    if run_dir is not None:
        path = run_dir / "evals" / f"iter_{iteration:04d}-{split}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [
            {
                "task_id": t.task_id,
                "task_type": t.task_type,
                "sample": i % cfg.eval_samples,
                "won": t.won,
                "return": t.episode_return,
                "steps": len(t.steps),
            }
            for i, t in enumerate(trajs)
        ]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rollout_metrics(trajs, prefix=f"eval/{split}/")


# --- the loop -----------------------------------------------------------------------------------
def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run (or resume) ``cfg``; returns the last iteration's metrics."""
    import torch
    from tqdm.auto import tqdm

    from seed_gym.registration import agent_spec, import_env_modules, task_ids
    from seed_gym.trainer.collect import SamplingParams, collect, rollout_metrics
    from seed_gym.trainer.distributed import NullLogger, init_distributed, resolve_device
    from seed_gym.trainer.engines import HFEngine
    from seed_gym.trainer.logprobs import pack, packed_logprobs, response_logprobs
    from seed_gym.trainer.losses import (
        broadcast_to_tokens,
        entropy_bonus,
        kl_k3,
        masked_mean,
        opd_loss,
        ppo_clip_loss,
        teacher_advantages,
        token_mean,
    )
    from seed_gym.trainer.models import autocast, load_policy, save_policy
    from seed_gym.trainer.seed_phase import (
        ActorSkills,
        OPDStats,
        distills,
        make_skill_source,
        rescore,
        stage1_policy_path,
        teacher_batch,
        write_iteration_logs,
    )
    from seed_gym.trainer.vision import image_inputs
    from seed_gym.wrappers.group import make_group_pool

    # --- setup ----------------------------------------------------------------------------------
    run_dir = Path(cfg.out)
    run_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path = run_dir / "checkpoint.pt"
    if not cfg.resume and ckpt_path.exists():
        raise SystemExit(f"{run_dir} already holds a run: pass --resume, or choose another --out")
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    import_env_modules(list(cfg.imports))  # user envs register before anything is made
    # torchrun: join the process group (one process: every dist helper is the identity)
    dist = init_distributed(rollout=cfg.dist_rollout)
    device = resolve_device(cfg.device, dist)
    # the starting policy: format warm-up (cached; warmup.py), then SEED Stage 1 (seed, skill-grpo;
    # once per run). Under torchrun rank 0 builds both while the others wait; they then find both
    # already on disk instead of building them again into the same folders.
    if not dist.is_main:
        dist.barrier()
    policy_base = cfg.model
    if cfg.format_warmup_episodes > 0:
        from seed_gym.trainer.warmup import warmup_for_config

        policy_base = str(warmup_for_config(cfg))
    if cfg.algo != "prompt":
        stage1_cfg = dataclasses.replace(cfg, model=policy_base)
        cfg = dataclasses.replace(cfg, sft_model=stage1_policy_path(stage1_cfg, run_dir, device))
    if dist.is_main:
        dist.barrier()
    random.seed(cfg.seed)  # Stage 1 drew from these generators (on rank 0 only): reset them
    np.random.seed(cfg.seed % 2**32)
    torch.manual_seed(cfg.seed)
    if dist.is_main:  # rank 0 alone writes the run directory
        TrainConfig(**{**cfg.to_dict(), "resume": False}).save(run_dir / "config.json")

    lora = {"r": cfg.lora_r, "lora_alpha": cfg.lora_alpha} if cfg.lora_r > 0 else None
    policy = load_policy(cfg.sft_model or policy_base, seed=cfg.seed, lora=lora, device=device)
    model, tokenizer = policy.model, policy.tokenizer
    engine = HFEngine(
        model,
        tokenizer,
        max_batch=cfg.gen_batch,
        autocast_bf16=cfg.bf16,
        processor=policy.processor,  # vision-language policies: pictures go with the prompts
    )
    training = cfg.algo != "prompt"
    skill_fn = make_skill_source(cfg, engine, tokenizer)  # None for grpo / prompt
    distill = distills(cfg)  # seed, static-skills, opsd: rescoring + OPD (or teacher advantages)
    spec = agent_spec(cfg.env)
    actor_skills = ActorSkills()  # skill-grpo: the skills shown to the actor
    env_steps_total = 0
    ref_model = None
    if training and cfg.kl_coef > 0 and lora is None:  # under LoRA the reference is the base
        ref_model = copy.deepcopy(model).eval().requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = (
        torch.optim.AdamW(params, lr=cfg.lr, betas=cfg.adam_betas, weight_decay=cfg.weight_decay)
        if training
        else None
    )

    start_iteration, data_position = 0, 0
    logger = Logger(run_dir, cfg.tensorboard) if dist.is_main else NullLogger()
    if cfg.resume and ckpt_path.exists():
        payload = load_checkpoint(ckpt_path, model, optimizer)
        start_iteration, data_position = payload["iteration"], payload["data_position"]
        actor_skills = ActorSkills(payload.get("actor_skills"))
        env_steps_total = int(payload.get("env_steps", 0))
        if dist.is_main:
            committed = payload.get("metrics")  # the line committed with this checkpoint
            truncate_metrics(run_dir / "metrics.jsonl", start_iteration - (committed is not None))
            if committed is not None:
                logger.log(start_iteration, committed)
        print(f"resumed {run_dir} at iteration {start_iteration}", file=sys.stderr)
    dist.broadcast_parameters(model)  # every rank starts from rank 0's weights

    def ckpt_state(iteration: int, metrics: dict[str, Any]) -> dict:
        return {
            "metrics": metrics,
            "iteration": iteration,
            "data_position": data_position,
            "actor_skills": actor_skills.state(),
            "env_steps": env_steps_total,
            "lora": lora is not None,
            "config": cfg.to_dict(),
        }

    def run_eval(iteration: int) -> dict[str, float]:
        t0 = time.perf_counter()
        metrics: dict[str, float] = {}
        for split in cfg.eval_splits:
            metrics.update(evaluate(cfg, engine, split, iteration, run_dir))
        metrics["time/eval"] = time.perf_counter() - t0
        return metrics

    if not training:  # the prompting baseline: evaluate and stop
        metrics = run_eval(0)
        logger.log(0, metrics)
        logger.close()
        return metrics

    if cfg.eval_at_start and start_iteration == 0 and dist.is_main:
        truncate_metrics(run_dir / "metrics.jsonl", -1)  # a run killed before its 1st checkpoint
        logger.log(0, run_eval(0))

    train_tasks = task_ids(cfg.env, "train")
    B, G = cfg.tasks_per_iter, cfg.group_size
    pool = dist.make_pool(  # this rank's share of the B tasks (all of them with one process)
        make_group_pool,
        cfg.env,
        train_tasks[:B],
        G,
        split="train",
        modality=cfg.modality,
        history=cfg.history,
        backend=cfg.backend,
    )
    sampling = SamplingParams(cfg.max_new_tokens, cfg.temperature, cfg.top_p)
    metrics: dict[str, Any] = {}
    bar = tqdm(
        range(start_iteration, cfg.iterations),
        desc="train",
        unit="it",
        initial=start_iteration,
        total=cfg.iterations,
        disable=not cfg.progress or not dist.is_main,
    )
    try:
        for it in bar:
            times: dict[str, float] = {}
            iteration = it + 1  # 1-based: "after iteration k" is what checkpoints and logs say

            # --- rollout ------------------------------------------------------------------------
            t0 = time.perf_counter()
            tasks = task_batch(train_tasks, cfg.seed, data_position, B)
            env_seeds = [derive_seed(cfg.seed, ENV_SEEDS, it, b) % 2**31 for b in range(B)]
            trajs = dist.collect(  # under torchrun: each rank's share, then all gathered
                collect,
                pool,
                engine,
                tasks,
                env_seeds,
                sampling=sampling,
                seed=derive_seed(cfg.seed, SAMPLING, it),
                prefix=f"it{iteration}-",
                max_turns=cfg.max_turns,
                progress=cfg.progress,
                skills=actor_skills.for_tasks(tasks) if cfg.algo == "skill-grpo" else None,
                privileged=cfg.algo == "opsd",  # taken at reset: the solver sees the start state
            )
            data_position += B
            env_steps_total += sum(len(t.steps) for t in trajs)
            times["rollout"] = time.perf_counter() - t0

            # --- advantages ---------------------------------------------------------------------
            adv = grpo_advantages(trajs, mode=cfg.advantage, std_normalize=cfg.std_normalize)
            samples = [
                (s, a)
                for t, a_t in zip(trajs, adv, strict=True)
                for s, a in zip(t.steps, a_t, strict=True)
            ]
            adv_abs_mean = float(np.mean([abs(a) for _, a in samples])) if samples else 0.0
            samples = [(s, a) for s, a in samples if s.response_ids]
            if cfg.recompute_old_logprobs:
                t0 = time.perf_counter()
                with autocast(cfg.bf16):
                    olds, _ = response_logprobs(
                        model,
                        [s.prompt_ids for s, _ in samples],
                        [s.response_ids for s, _ in samples],
                        micro_batch=cfg.micro_batch,
                        pad_id=policy.pad_id,
                        temperature=cfg.temperature,
                        images=[s.images for s, _ in samples],
                        processor=policy.processor,
                    )
                old_lp = [o.tolist() for o in olds]
                times["old_logprobs"] = time.perf_counter() - t0
            else:
                old_lp = [s.old_logprobs for s, _ in samples]

            # --- analyze: a skill per trajectory (policy greedy / bank / privileged) -------------
            skills, analyzer_stats, analyzer_failures = None, {}, {}
            if skill_fn is not None:
                t0 = time.perf_counter()
                skills = skill_fn(trajs, analyzer_stats, analyzer_failures)
                if cfg.algo == "skill-grpo":  # shown to the actor the next time the task comes
                    actor_skills.update(trajs, skills)
                times["analyze"] = time.perf_counter() - t0

            # --- rescore: the same response ids under π_old with the skill in the prompt ---------
            teacher, gaps, teacher_of = None, None, None
            if distill:
                t0 = time.perf_counter()
                teacher, gaps = rescore(
                    cfg,
                    model,
                    policy.processor or tokenizer,
                    spec,
                    trajs,
                    skills,
                    pad_id=policy.pad_id,
                )
                teacher_of = {  # step -> teacher logprobs (None: no skill)
                    id(s): lp
                    for t, tl in zip(trajs, teacher, strict=True)
                    for s, lp in zip(t.steps, tl, strict=True)
                }
                times["rescore"] = time.perf_counter() - t0
            opd_acc = OPDStats()

            # --- update -------------------------------------------------------------------------
            t0 = time.perf_counter()
            model.train()
            stats: dict[str, list[float]] = {}
            rng = np.random.default_rng(derive_seed(cfg.seed, SHUFFLE, it))
            n_mini = n_mini_batches(len(samples), cfg)
            optimizer_steps = 0
            for _epoch in range(cfg.ppo_epochs):
                order = rng.permutation(len(samples))
                for mb_idx in np.array_split(order, n_mini):
                    if len(mb_idx) == 0:
                        continue
                    # long samples together: less padding per micro-batch
                    mb_idx = sorted(
                        mb_idx.tolist(),
                        key=lambda i: (
                            len(samples[i][0].prompt_ids) + len(samples[i][0].response_ids)
                        ),
                    )
                    n_tokens = sum(len(samples[i][0].response_ids) for i in mb_idx)
                    n_teacher = (
                        sum(  # OPD token-mean denominator: response·teacher tokens
                            len(teacher_of.get(id(samples[i][0])) or []) for i in mb_idx
                        )
                        if distill
                        else 0
                    )
                    mb_idx = dist.shard(mb_idx)  # this rank's share; n_tokens stays global
                    optimizer.zero_grad(set_to_none=True)
                    for start in range(0, len(mb_idx), cfg.micro_batch):
                        idx = mb_idx[start : start + cfg.micro_batch]
                        batch = pack(
                            [samples[i][0].prompt_ids for i in idx],
                            [samples[i][0].response_ids for i in idx],
                            pad_id=policy.pad_id,
                            share_prefix=policy.processor is None,  # images: rows run whole
                        )
                        batch = batch.to(device)
                        # pixel values of the rows' pictures ({} for text samples)
                        vision = image_inputs(
                            policy.processor, [samples[i][0].images for i in idx], device
                        )
                        mask = batch.response_mask  # [n, L]
                        old_logprobs = torch.zeros_like(mask)  # [n, L]
                        for row, i in enumerate(idx):
                            old_logprobs[row, : len(old_lp[i])] = torch.tensor(old_lp[i])
                        adv = broadcast_to_tokens(
                            torch.tensor([samples[i][1] for i in idx], device=mask.device), mask
                        )
                        if distill:
                            t_lp, t_mask = teacher_batch(
                                [teacher_of.get(id(samples[i][0])) for i in idx], mask
                            )  # [n, L], [n, L]
                            if cfg.teacher_advantage:  # OPID: A + w·(teacher_lp − old_lp)
                                adv = teacher_advantages(
                                    adv,
                                    t_lp,
                                    old_logprobs,
                                    t_mask * mask,
                                    weight=cfg.teacher_advantage_coef,
                                    clip=cfg.teacher_advantage_clip,
                                )
                        with autocast(cfg.bf16):
                            logprobs, entropy = packed_logprobs(
                                model,
                                batch,
                                temperature=cfg.temperature,
                                with_entropy=True,
                                **vision,
                            )  # [n, L], [n, L]
                        pg_loss, pg_stats = ppo_clip_loss(
                            logprobs,
                            old_logprobs,
                            adv,
                            mask,
                            clip_low=cfg.clip_low,
                            clip_high=cfg.clip_high,
                            dual_clip=cfg.dual_clip,
                            num_tokens=n_tokens,
                        )
                        loss = pg_loss
                        if cfg.ent_coef > 0:
                            loss = loss - cfg.ent_coef * entropy_bonus(
                                entropy, mask, num_tokens=n_tokens
                            )
                        if cfg.kl_coef > 0:
                            with torch.no_grad(), autocast(cfg.bf16):
                                if ref_model is not None:
                                    ref_lp, _ = packed_logprobs(
                                        ref_model, batch, temperature=cfg.temperature, **vision
                                    )
                                else:
                                    with model.disable_adapter():
                                        ref_lp, _ = packed_logprobs(
                                            model, batch, temperature=cfg.temperature, **vision
                                        )
                            kl = kl_k3(logprobs, ref_lp)  # [n, L]
                            loss = loss + cfg.kl_coef * token_mean(kl, mask, num_tokens=n_tokens)
                            stats.setdefault("kl_ref", []).append(
                                float(masked_mean(kl.detach(), mask))
                            )
                        if distill and float(t_mask.sum()) > 0:
                            # gated OPD: raises sampled tokens, most where the skill agrees
                            opd, opd_stats = opd_loss(
                                logprobs,
                                t_lp,
                                mask,
                                t_mask,
                                beta=cfg.opd_beta,
                                positive_only=cfg.positive_only,
                                num_tokens=n_teacher,
                            )
                            if not cfg.teacher_advantage:
                                loss = loss + cfg.opd_coef * opd
                            opd_acc.add(
                                opd_stats, 0.0 if cfg.teacher_advantage else float(opd.detach())
                            )
                        loss.backward()
                        w = float(mask.sum()) / n_tokens  # micro-batch share of the step's tokens
                        stats.setdefault("loss", []).append(float(loss.detach()))
                        stats.setdefault("entropy", []).append(
                            float(masked_mean(entropy.detach(), mask)) * w
                        )
                        for k, v in pg_stats.items():
                            stats.setdefault(k, []).append(v * w)
                    dist.all_reduce_gradients(params)  # sum of the ranks' shares
                    if cfg.max_grad_norm > 0:
                        grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                    else:
                        grad_norm = torch.linalg.vector_norm(
                            torch.stack([p.grad.norm() for p in params if p.grad is not None])
                        )
                    stats.setdefault("grad_norm", []).append(float(grad_norm))
                    optimizer.step()
                    optimizer_steps += 1
            stats = dist.gather_stats(stats)  # every rank's micro-batches
            n_steps = max(1, optimizer_steps)
            times["update"] = time.perf_counter() - t0

            # --- sync ---------------------------------------------------------------------------
            t0 = time.perf_counter()
            engine.sync_weights(model)
            times["sync"] = time.perf_counter() - t0

            # --- log ----------------------------------------------------------------------------
            metrics = rollout_metrics(trajs, prefix="rollout/")
            # per-step sums over micro-batches, averaged over optimizer steps
            for k in ("loss", "entropy", "clip_frac", "dual_clip_frac", "approx_kl"):
                if k in stats:
                    metrics[f"train/{k}"] = float(np.sum(stats[k])) / n_steps
            if "kl_ref" in stats:
                metrics["train/kl_ref"] = float(np.mean(stats["kl_ref"]))
            metrics["train/grad_norm"] = (
                float(np.mean(stats["grad_norm"])) if "grad_norm" in stats else 0.0
            )
            metrics["train/adv_abs_mean"] = adv_abs_mean
            metrics["train/optimizer_steps"] = float(n_steps)
            metrics["train/samples"] = float(len(samples))
            metrics["train/response_tokens"] = float(sum(len(s.response_ids) for s, _ in samples))
            metrics["train/data_position"] = float(data_position)
            metrics["train/lr"] = cfg.lr
            metrics["rollout/env_steps"] = float(sum(len(t.steps) for t in trajs))  # this iteration
            metrics["train/env_steps_total"] = float(env_steps_total)
            metrics.update(analyzer_stats)
            if distill:
                metrics.update(opd_acc.metrics(n_steps))
            if dist.is_main:
                write_iteration_logs(
                    run_dir,
                    iteration,
                    trajs,
                    tokenizer=tokenizer,
                    skills=skills,
                    teacher=teacher,
                    gaps=gaps,
                    trajectories=cfg.save_trajectories,
                    failures=analyzer_failures,
                )
            for k, v in times.items():
                metrics[f"time/{k}"] = v

            # --- eval -------------------------------------------------------------------------
            if dist.is_main and (
                (cfg.eval_every and iteration % cfg.eval_every == 0) or iteration == cfg.iterations
            ):
                metrics.update(run_eval(iteration))
            total = sum(v for k, v in metrics.items() if k.startswith("time/"))
            for k in list(metrics):
                if k.startswith("time/") and total > 0:
                    metrics[f"time_share/{k[5:]}"] = metrics[k] / total

            # --- commit: the checkpoint holds this iteration's metrics line, then the line --------
            if dist.is_main:
                if iteration % cfg.save_every == 0 or iteration == cfg.iterations:
                    save_checkpoint(ckpt_path, model, optimizer, ckpt_state(iteration, metrics))
                logger.log(iteration, metrics)
            bar.set_postfix(
                success=f"{metrics['rollout/success']:.2f}",
                ret=f"{metrics['rollout/return']:.2f}",
                invalid=f"{metrics['rollout/invalid_ratio']:.2f}",
            )
    finally:
        bar.close()
        pool.close()
        logger.close()
        dist.shutdown()
    # the final policy; also when a run killed while exporting it is resumed after its last step
    if (
        cfg.save_hf
        and dist.is_main
        and (start_iteration < cfg.iterations or not (run_dir / "model" / "config.json").exists())
    ):
        tmp = run_dir / "model.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        save_policy(policy, tmp)
        shutil.rmtree(run_dir / "model", ignore_errors=True)
        os.replace(tmp, run_dir / "model")  # a kill mid-export leaves no half-written model/
    return metrics


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    train(cfg)
    for line in eval_summary(Path(cfg.out), cfg.eval_splits):
        print(line, file=sys.stderr)
    print(f"run written to {cfg.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
