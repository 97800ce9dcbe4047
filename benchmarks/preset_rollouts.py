"""One iteration of rollouts with a preset's starting policy, for the benchmarks that time one
phase of the trainer on real episodes (``bench_update_batching.py``, ``bench_analyzer.py``)."""

from __future__ import annotations

from typing import Any


def preset_rollouts(preset: str, threads: int) -> tuple[Any, Any, Any, list]:
    """(config, policy, HF engine, trajectories): the preset's B tasks x G episodes of the first
    train tasks, sampled by its starting policy (the format-warmed model when the preset has a
    warm-up: built and cached if missing), ``threads`` torch threads."""
    import torch

    from seed_gym.registration import task_ids
    from seed_gym.seeding import derive_seed
    from seed_gym.trainer.collect import SamplingParams, collect
    from seed_gym.trainer.config import PRESETS
    from seed_gym.trainer.engines import HFEngine
    from seed_gym.trainer.models import load_policy
    from seed_gym.trainer.warmup import warmup_for_config
    from seed_gym.wrappers.pool import make_group_pool

    torch.set_num_threads(threads)
    cfg = PRESETS[preset]().replace(progress=False)
    rollout = cfg.rollout
    source = str(warmup_for_config(cfg)) if cfg.warmup.episodes else cfg.model
    policy = load_policy(source, seed=0)
    engine = HFEngine(
        policy.model, policy.tokenizer, max_batch=rollout.gen_batch, autocast_bf16=cfg.bf16
    )
    tasks = task_ids(cfg.env, "train")[: rollout.tasks_per_iter]
    pool = make_group_pool(cfg.env, tasks, rollout.group_size, split="train", modality=cfg.modality)
    sampling = SamplingParams(rollout.max_new_tokens, rollout.temperature, 1.0)
    try:
        trajs = collect(pool, engine, tasks, [derive_seed(0, 1, b) for b in range(len(tasks))],
                        sampling=sampling, seed=0, max_turns=rollout.max_turns)  # fmt: skip
    finally:
        pool.close()
    return cfg, policy, engine, trajs
