"""A training run's setup: the run directory, processes, the starting policy (format warm-up,
then SEED Stage 1 for the self-analyzing algorithms), engine, algorithm, optimizer and KL
reference, the checkpoint a resumed run restores, and the final export. The loop that uses it
is ``train.py``."""

from __future__ import annotations

import copy
import dataclasses
import os
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seed_gym.registration import import_env_modules
from seed_gym.trainer.algorithms import Algorithm, make_algorithm
from seed_gym.trainer.config import TrainConfig
from seed_gym.trainer.distributed import NullLogger, init_distributed, resolve_device
from seed_gym.trainer.engines import HFEngine
from seed_gym.trainer.models import LoadedModel, load_policy, save_policy
from seed_gym.trainer.run_state import Logger, load_checkpoint, truncate_metrics
from seed_gym.trainer.sft import stage1_model
from seed_gym.trainer.update import reference_logprobs
from seed_gym.trainer.warmup import warmup_for_config


@dataclass
class Run:
    """What the loop works with: the policy and its engine, the algorithm, the optimizer and
    reference, the data position, and where everything is written."""

    cfg: TrainConfig
    run_dir: Path
    dist: Any
    device: str
    policy: LoadedModel
    engine: HFEngine
    algorithm: Algorithm
    optimizer: Any
    reference: Any
    logger: Any
    start_iteration: int = 0
    data_position: int = 0
    env_steps: int = 0

    def checkpoint_state(self, iteration: int, metrics: dict[str, Any]) -> dict[str, Any]:
        return {
            "metrics": metrics,
            "iteration": iteration,
            "data_position": self.data_position,
            "actor_skills": self.algorithm.state(),
            "env_steps": self.env_steps,
            "lora": self.cfg.lora_r > 0,
            "config": self.cfg.to_dict(),
        }


def start_run(cfg: TrainConfig) -> Run:
    """Run directory, processes, the starting policy (format warm-up, then Stage 1 for the
    self-analyzing algorithms; rank 0 builds both while other ranks wait), engine, algorithm,
    optimizer and KL reference; restores the checkpoint with ``--resume``."""
    run_dir = Path(cfg.out)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not cfg.resume and (run_dir / "checkpoint.pt").exists():
        raise SystemExit(f"{run_dir} already holds a run: pass --resume, or choose another --out")
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    import_env_modules(list(cfg.imports))  # user envs register before anything is made
    dist = init_distributed(rollout=cfg.dist_rollout)  # one process: every helper is the identity
    device = resolve_device(cfg.device, dist)
    algorithm = make_algorithm(cfg)
    if not dist.is_main:
        dist.barrier()
    base = str(warmup_for_config(cfg)) if cfg.format_warmup_episodes > 0 else cfg.model
    if algorithm.trains:
        stage1_cfg = dataclasses.replace(cfg, model=base)
        sft = stage1_model(stage1_cfg, run_dir, device, self_analyzes=algorithm.self_analyzes)
        cfg = dataclasses.replace(cfg, sft_model=sft)
    if dist.is_main:
        dist.barrier()
    random.seed(cfg.seed)  # Stage 1 drew from these generators (on rank 0 only): reset them
    np.random.seed(cfg.seed % 2**32)
    torch.manual_seed(cfg.seed)
    if dist.is_main:  # rank 0 alone writes the run directory
        TrainConfig(**{**cfg.to_dict(), "resume": False}).save(run_dir / "config.json")

    lora = {"r": cfg.lora_r, "lora_alpha": cfg.lora_alpha} if cfg.lora_r > 0 else None
    policy = load_policy(cfg.sft_model or base, seed=cfg.seed, lora=lora, device=device)
    # vision-language policies: pictures go with the prompts
    engine = HFEngine(
        policy.model, policy.tokenizer, max_batch=cfg.gen_batch, autocast_bf16=cfg.bf16,
        processor=policy.processor,
    )  # fmt: skip
    algorithm.bind(engine, policy.tokenizer)
    optimizer = reference = None
    if algorithm.trains:
        params = [p for p in policy.model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=cfg.adam_betas, weight_decay=cfg.weight_decay
        )
    if algorithm.trains and cfg.kl_coef > 0:  # under LoRA the reference is the base model
        ref = copy.deepcopy(policy.model).eval().requires_grad_(False) if lora is None else None
        reference = reference_logprobs(policy.model, ref, cfg)
    logger = Logger(run_dir, cfg.tensorboard) if dist.is_main else NullLogger()
    run = Run(cfg, run_dir, dist, device, policy, engine, algorithm, optimizer, reference, logger)
    if cfg.resume and (run_dir / "checkpoint.pt").exists():
        payload = load_checkpoint(run_dir / "checkpoint.pt", policy.model, optimizer)
        run.start_iteration, run.data_position = payload["iteration"], payload["data_position"]
        run.env_steps = int(payload.get("env_steps", 0))
        algorithm.load_state(payload.get("actor_skills") or {})
        if dist.is_main:
            committed = payload.get("metrics")  # the line committed with this checkpoint
            truncate_metrics(run_dir / "metrics.jsonl", run.start_iteration - bool(committed))
            if committed is not None:
                logger.log(run.start_iteration, committed)
        print(f"resumed {run_dir} at iteration {run.start_iteration}", file=sys.stderr)
    dist.broadcast_parameters(policy.model)  # every rank starts from rank 0's weights
    return run


def export_model(run: Run) -> None:
    """The final policy as a Hugging Face folder (atomically: a kill mid-export leaves no
    half-written ``model/``); also when a finished run is resumed and ``model/`` is missing."""
    out = run.run_dir / "model"
    if run.start_iteration >= run.cfg.iterations and (out / "config.json").exists():
        return
    tmp = run.run_dir / "model.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    save_policy(run.policy, tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
