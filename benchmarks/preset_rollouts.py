"""A preset's starting policy and one iteration of its rollouts, for the benchmarks that time one
phase of the trainer on real episodes (``bench_update_batching.py``, ``bench_analyzer.py``,
``bench_engines.py``)."""

from __future__ import annotations

from typing import Any


def preset_policy(preset: str, threads: int, model: str | None = None) -> tuple[Any, Any, Any]:
    """(config, policy, HF engine) with ``threads`` torch threads: the preset's starting policy
    (the format-warmed model when the preset has a warm-up: built and cached if missing), or the
    local folder ``model``."""
    import torch

    from seed_gym.trainer.backends.engines import HFEngine
    from seed_gym.trainer.backends.models import load_policy
    from seed_gym.trainer.config import PRESETS
    from seed_gym.trainer.warmup import warmup_for_config

    torch.set_num_threads(threads)
    cfg = PRESETS[preset]().replace(progress=False)
    source = model or (str(warmup_for_config(cfg)) if cfg.warmup.episodes else cfg.model)
    policy = load_policy(source, seed=0)
    engine = HFEngine(
        policy.model, policy.tokenizer, max_batch=cfg.rollout.gen_batch, autocast_bf16=cfg.bf16
    )
    return cfg, policy, engine


def iteration_tasks(cfg: Any) -> tuple[list[str], list[int], Any, Any]:
    """(tasks, env seeds, sampling parameters, env pool) of one iteration: the first B train
    tasks, G episodes each, sampled as the config's rollouts are. The caller closes the pool."""
    from seed_gym.registration import task_ids
    from seed_gym.seeding import derive_seed
    from seed_gym.trainer.collect import SamplingParams
    from seed_gym.wrappers.pool import make_group_pool

    rollout = cfg.rollout
    tasks = task_ids(cfg.env, "train")[: rollout.tasks_per_iter]
    seeds = [derive_seed(0, 1, b) for b in range(len(tasks))]
    sampling = SamplingParams(rollout.max_new_tokens, rollout.temperature, 1.0)
    pool = make_group_pool(cfg.env, tasks, rollout.group_size, split="train", modality=cfg.modality)
    return tasks, seeds, sampling, pool


def preset_rollouts(preset: str, threads: int) -> tuple[Any, Any, Any, list]:
    """(config, policy, HF engine, trajectories): one iteration's B tasks x G episodes played by
    the preset's starting policy (``preset_policy``, ``iteration_tasks``)."""
    from seed_gym.trainer.collect import collect

    cfg, policy, engine = preset_policy(preset, threads)
    tasks, seeds, sampling, pool = iteration_tasks(cfg)
    try:
        trajs = collect(pool, engine, tasks, seeds, sampling=sampling, seed=0,
                        max_turns=cfg.rollout.max_turns)  # fmt: skip
    finally:
        pool.close()
    return cfg, policy, engine, trajs
