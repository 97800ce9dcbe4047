"""A training run's setup: the run directory, processes, the starting policy (format warm-up,
then the algorithm's own start: SEED's Stage 1), engine, algorithm, optimizer and KL
reference, the checkpoint a resumed run restores, and the final export. The loop that uses it
is ``train.py``."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import json
import os
import random
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seed_gym.core import SeedEnv
from seed_gym.folder_lock import folder_lock, out_problem
from seed_gym.jsonl import json_line
from seed_gym.provenance import provenance_record
from seed_gym.registration import env_args_problem, env_class, import_env_modules
from seed_gym.trainer.algorithms import Algorithm, make_algorithm
from seed_gym.trainer.algorithms.seed.annotators import StaticSkillAnnotator
from seed_gym.trainer.backends.distributed import (
    NullLogger,
    env_rank,
    full_state_dict,
    init_distributed,
    is_sharded,
    resolve_device,
    shard_model,
)
from seed_gym.trainer.backends.engines import HFEngine
from seed_gym.trainer.backends.models import (
    VLM_BUILDERS,
    LoadedModel,
    build_smollm2,
    load_policy,
    model_dir,
    save_policy,
)
from seed_gym.trainer.backends.plan import ModelShape, measure_budget, memory_plan, vllm_share
from seed_gym.trainer.config import TrainConfig
from seed_gym.trainer.model_cache import here, in_child
from seed_gym.trainer.phases import PhaseMeter
from seed_gym.trainer.run_state import (
    Logger,
    RunStateError,
    load_checkpoint,
    metric_lines,
    truncate_metrics,
)
from seed_gym.trainer.update import reference_logprobs
from seed_gym.trainer.warmup import warmup_for_config

# one line per start or resume of a run: versions, machine, threads (seed_gym.provenance)
PROVENANCE = "provenance.jsonl"


@dataclass
class Run:
    """What the loop works with: the policy and its engine, the algorithm, the optimizer and
    reference, the data position, and where everything is written."""

    cfg: TrainConfig
    run_dir: Path
    dist: Any
    device: str
    policy: LoadedModel
    engine: Any  # HFEngine or VLLMEngine
    algorithm: Algorithm
    optimizer: Any
    reference: Any
    logger: Any
    start_iteration: int = 0
    data_position: int = 0
    env_steps: int = 0
    setup: dict[str, float] = field(default_factory=dict)  # time/memory of warm-up, Stage 1, load

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


def run_problem(cfg: TrainConfig, *, system: bool = True) -> str | None:
    """Why ``cfg`` cannot start, in one line naming the bad value (None when it can): an
    ``--out`` that is a file or not writable, an ``--import`` that fails, an env that is not
    registered or cannot be made with its split, modality and ``--env-kwarg``, or a model that is
    neither built in, a local folder nor a reachable hub id. Checked before anything is written
    (the env is built once; a hub id fetches its config.json only). With ``system`` and outside
    ``--dry-run`` (a plan runs anywhere), also a GPU, engine or env backend this machine lacks
    (``system_problem``; ``sft`` passes ``system=False``: Stage 1 runs on this CPU). Always: a
    text-only ``--model`` the env would show images (``modality_problem``) and a format warm-up
    on an env without ``oracle_action()`` (``warmup_problem``)."""
    problem = out_problem(cfg.out, holds="the run's config, metrics and checkpoints")
    if problem is not None:
        return problem
    try:
        import_env_modules(list(cfg.imports))
    except ImportError as e:  # one line naming the module (``import_env_modules``)
        return str(e)
    problem = env_args_problem(
        cfg.env, split="train", modality=cfg.modality, env_kwargs=cfg.env_kwargs
    )
    if problem is not None:
        return problem
    problem = system_problem(cfg) if system and not cfg.system.dry_run else None
    if problem is not None:
        return problem
    if cfg.opd.skill_bank:
        try:
            StaticSkillAnnotator.from_json(cfg.opd.skill_bank)
        except (OSError, ValueError, TypeError, AttributeError) as e:
            return f"--skill-bank {cfg.opd.skill_bank}: {type(e).__name__}: {e}"
    for model in filter(None, (cfg.model, cfg.stage1.model)):
        if model in ("tiny", "smollm2", *VLM_BUILDERS):
            continue
        try:
            model_dir(model, files=["config.json"])
        except FileNotFoundError as e:
            return f"--model: {e}"
    return modality_problem(cfg) or warmup_problem(cfg)


def warmup_problem(cfg: TrainConfig) -> str | None:
    """Why the format warm-up cannot run on ``cfg.env``: it clones the env's ``oracle_action()``,
    which the env does not implement (0.4 raised NotImplementedError mid-run)."""
    if cfg.warmup.episodes <= 0:
        return None
    cls = env_class(cfg.env)
    implemented = getattr(cls, "oracle_action", None)
    if implemented is not None and implemented is not SeedEnv.oracle_action:
        return None
    return (
        f"the format warm-up (--format-warmup-episodes {cfg.warmup.episodes}) clones "
        f"{cfg.env}'s oracle_action(), which {cls.__name__} does not implement; implement it "
        "or pass --format-warmup-episodes 0"
    )


def reads_images(model: str) -> bool:
    """Whether policy ``model`` sees pictures: the built-in vision-language models, and a folder
    or hub id whose ``config.json`` has a ``vision_config`` (what ``load_policy`` loads with a
    processor). Reads config.json only."""
    if model in VLM_BUILDERS:
        return True
    if model in ("tiny", "smollm2"):
        return False
    config = json.loads((model_dir(model, files=["config.json"]) / "config.json").read_text())
    return "vision_config" in config


def modality_problem(cfg: TrainConfig) -> str | None:
    """Why ``cfg.model`` cannot see what ``cfg.env`` shows in ``cfg.modality`` (the env's
    default when None): a text-only model given images would train on ``<image>`` placeholders
    (0.3 trained a text model on EZPoints' default image modality without a word). None when
    the modality is text or the model reads images."""
    if not cfg.model:
        return None
    cls = env_class(cfg.env)
    shown = cfg.modality or getattr(cls, "default_modality", "text")
    if shown == "text" or reads_images(cfg.model):
        return None
    default = " (its default)" if cfg.modality is None else ""
    vlm = "a vision-language --model (tiny-vlm, smollm2-vlm or a folder with a vision_config)"
    hint = f"pass --modality text, or {vlm}" if "text" in getattr(cls, "modalities", ()) else vlm
    return (
        f"--model {cfg.model} reads text only, and {cfg.env} shows images in modality "
        f"{shown!r}{default}; {hint}"
    )


@contextlib.contextmanager
def run_folder_lock(out: str | Path) -> Iterator[None]:
    """One writer per run folder: rank 0 holds ``OUT/.lock`` (``seed_gym.folder_lock``) for the
    whole run, so a second ``train`` into the folder raises ``FolderLockedError`` at once. Under
    torchrun the other ranks write only through rank 0 or into its checkpoint's shard folder, and
    end when rank 0 does."""
    if env_rank() != 0:
        yield
        return
    with folder_lock(out, holder="seed-gym train"):
        yield


def resumes(cfg: TrainConfig, run_dir: Path) -> bool:
    """Whether the run restores ``checkpoint.pt``; checked before anything is built.

    ``RunStateError`` (one line naming the folder) for a new run into a folder holding a run
    (a checkpoint, or finished iterations in ``metrics.jsonl``), and for ``--resume`` where
    ``metrics.jsonl`` logs finished iterations but there is no checkpoint to go on from (it was
    removed, or the run stopped before its first ``--save-every`` checkpoint): starting again
    would log those iterations twice. A run that stopped before logging any iteration (in the
    warm-up, Stage 1, the start eval or its first iteration) starts from iteration 0."""
    checkpoint = run_dir / "checkpoint.pt"
    logged = sorted({it for _, it in metric_lines(run_dir / "metrics.jsonl") if it >= 1})
    if not cfg.resume:
        if checkpoint.exists() or logged:
            raise RunStateError(
                f"{run_dir} already holds a run: pass --resume, or choose another --out"
            )
        return False
    if checkpoint.exists():
        return True
    if logged:
        raise RunStateError(
            f"--resume: {run_dir} logs iterations {logged[0]}..{logged[-1]} in metrics.jsonl but "
            "has no checkpoint.pt to go on from (removed, or the run stopped before its first "
            "--save-every checkpoint); starting again would log them twice: train into another "
            "--out"
        )
    if env_rank() == 0:
        print(
            f"{run_dir} has no checkpoint yet (the run stopped before its first iteration "
            "ended): starting it from iteration 0",
            file=sys.stderr,
        )
    return False


def system_problem(cfg: TrainConfig) -> str | None:
    """Why this machine cannot run ``cfg`` as asked (one line), or None: a CUDA ``--device``
    without that GPU, ``--engine vllm`` or ``--backend ray`` without their extra."""
    device = cfg.system.device
    if device.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0)
        if index >= count:
            return (
                f"--device {device}: this machine has {count} CUDA device(s) (torch "
                f"{torch.__version__}); use --device cpu or auto"
            )
    for needed, module, extra in (
        (cfg.system.engine == "vllm", "vllm", "vllm"),
        (cfg.system.backend == "ray", "ray", "ray"),
    ):
        if needed and importlib.util.find_spec(module) is None:
            flag = "--engine vllm" if module == "vllm" else "--backend ray"
            return f"{flag} needs {module}: pip install 'seed-gym[{extra}]'"
    return None


def start_run(cfg: TrainConfig) -> Run:
    """Run directory, processes, the starting policy (format warm-up, then Stage 1 for the
    self-analyzing algorithms; rank 0 builds both while other ranks wait), engine, algorithm,
    optimizer and KL reference; restores the checkpoint with ``--resume``. The run folder's
    files are checked before anything is built (``resumes``); ``config.json`` is written once
    the checkpoint has loaded, so a checkpoint that does not fit leaves the folder as it was."""
    run_dir = Path(cfg.out)
    run_dir.mkdir(parents=True, exist_ok=True)
    restore = resumes(cfg, run_dir)
    if cfg.system.threads is not None:
        torch.set_num_threads(cfg.system.threads)
    import_env_modules(list(cfg.imports))  # user envs register before anything is made
    # one process: every helper is the identity (FSDP still gets a process group of one)
    dist = init_distributed(rollout=cfg.system.dist_rollout, group=cfg.system.fsdp)
    device = resolve_device(cfg.system.device, dist)
    algorithm = make_algorithm(cfg)
    if not dist.is_main:
        dist.barrier()
    base, setup = cfg.model, PhaseMeter()
    # the one-off SFTs run in a child process unless their model is cached already: their memory
    # goes back to the system before this process trains
    build = in_child if cfg.system.isolate_builds else here
    if cfg.warmup.episodes > 0:
        with setup.phase("warmup"):
            base = str(warmup_for_config(cfg, threads=cfg.system.warmup_threads, build=build))
    if algorithm.trains:
        with setup.phase("stage1"):  # the algorithm's own start (SEED: its Stage 1), or none
            sft = algorithm.start_model(cfg, base, run_dir, device, build)
        if sft is None:
            setup.forget("stage1")
        cfg = cfg.replace(sft_model=sft)
    if dist.is_main:
        dist.barrier()
    random.seed(cfg.seed)  # Stage 1 drew from these generators (on rank 0 only): reset them
    np.random.seed(cfg.seed % 2**32)
    torch.manual_seed(cfg.seed)
    with setup.phase("load"):
        policy, engine, optimizer, reference = build_policy(cfg, base, device, dist, algorithm)
    wandb = cfg.to_dict() if cfg.system.wandb else None  # the run's config, as W&B shows it
    logger = Logger(run_dir, cfg.system.tensorboard, wandb=wandb) if dist.is_main else NullLogger()
    run = Run(cfg, run_dir, dist, device, policy, engine, algorithm, optimizer, reference, logger)
    run.setup = setup.metrics()
    if restore:
        payload = load_checkpoint(run_dir / "checkpoint.pt", policy.model, optimizer)
        if optimizer is not None:  # the resumed run's flags, not the saved ones (load_state_dict
            set_optimizer_settings(optimizer, cfg.optim)  # restores lr, betas and weight decay)
        run.start_iteration, run.data_position = payload["iteration"], payload["data_position"]
        run.env_steps = int(payload.get("env_steps", 0))
        algorithm.load_state(payload.get("actor_skills") or {})
        if dist.is_main:
            committed = payload.get("metrics")  # the line committed with this checkpoint
            truncate_metrics(run_dir / "metrics.jsonl", run.start_iteration - bool(committed))
            if committed is not None:
                logger.log(run.start_iteration, committed)
        engine.sync_weights(policy.model)  # an engine with its own copy samples the resumed weights
        print(f"resumed {run_dir} at iteration {run.start_iteration}", file=sys.stderr)
    elif dist.is_main:  # no checkpoint yet: lines of iteration 0 (a start eval) are redone
        truncate_metrics(run_dir / "metrics.jsonl", -1)
    if dist.is_main:  # rank 0 alone writes the run directory
        cfg.replace(resume=False).save(run_dir / "config.json")
        record = provenance_record(iteration=run.start_iteration, torch_threads=torch.get_num_threads(),
                                   world_size=dist.world_size, device=str(device))  # fmt: skip
        with open(run_dir / PROVENANCE, "a", encoding="utf-8") as f:
            f.write(json_line(record))
    return run


def build_policy(
    cfg: TrainConfig, base: str, device: str, dist: Any, algorithm: Algorithm
) -> tuple[LoadedModel, Any, Any, Any]:
    """(policy, engine, optimizer, KL reference). Under ``--fsdp`` the policy (and a frozen
    reference copy) are sharded after rank 0's weights are broadcast, the HF engine samples from
    a whole copy synced after every update, and the optimizer holds only this rank's shards."""
    lora = {"r": cfg.lora_r, "lora_alpha": cfg.lora_alpha} if cfg.lora_r > 0 else None
    source = cfg.stage1.model or base
    policy = load_policy(source, seed=cfg.seed, lora=lora, device=device)
    model = policy.model
    dist.broadcast_parameters(model)  # every rank starts from rank 0's weights
    if cfg.system.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    sampler = copy.deepcopy(model) if cfg.system.fsdp and cfg.system.engine == "hf" else model
    ref = None
    # the frozen KL reference; under LoRA the base weights (adapters off) are the reference
    if algorithm.trains and cfg.optim.kl_coef > 0 and lora is None:
        ref = copy.deepcopy(model).eval().requires_grad_(False)
        if cfg.bf16 and not cfg.system.fsdp:  # its forward runs under bf16 autocast anyway
            ref = ref.to(torch.bfloat16)
    if cfg.system.fsdp:
        shard_model(model, dist, device=device, bf16=cfg.bf16)
        if ref is not None:
            shard_model(ref, dist, device=device, bf16=cfg.bf16)
    optimizer = reference = None
    if algorithm.trains:  # after sharding: FSDP2's optimizer holds the local shards
        params = [p for p in model.parameters() if p.requires_grad]
        # torch's default AdamW (not the fused kernel the SFTs use): the same implementation
        # under FSDP and in one process, whose losses the distributed tests match at 1e-4
        optimizer = torch.optim.AdamW(
            params, lr=cfg.optim.lr, betas=cfg.optim.adam_betas, weight_decay=cfg.optim.weight_decay
        )
        if cfg.optim.kl_coef > 0:
            reference = reference_logprobs(model, ref, cfg)
    engine = make_engine(cfg, policy, sampler, source, dist)
    algorithm.bind(engine, policy)
    return policy, engine, optimizer, reference


def set_optimizer_settings(optimizer: Any, optim: Any) -> None:
    """Every parameter group's lr, betas and weight decay set from ``optim`` (the ``OptimConfig``
    group). A resumed run calls it after loading the checkpoint, whose optimizer state carries the
    settings it was saved with: without it ``--resume --lr 1e-5`` trained on at the saved lr while
    config.json and ``train/lr`` said 1e-5 (before 0.4.0)."""
    for group in optimizer.param_groups:
        group.update(lr=optim.lr, betas=tuple(optim.adam_betas), weight_decay=optim.weight_decay)


def make_engine(cfg: TrainConfig, policy: LoadedModel, sampler: Any, source: str, dist: Any) -> Any:
    """``--engine hf``: the policy itself (or, under FSDP, a whole copy) batched on its device;
    vision-language policies send pictures with the prompts. ``--engine vllm``: a vLLM engine on
    the same GPU started from the starting policy's folder, its share of the GPU from the plan."""
    if cfg.system.engine == "hf":
        return HFEngine(
            sampler, policy.tokenizer, max_batch=cfg.rollout.gen_batch, autocast_bf16=cfg.bf16,
            processor=policy.processor,
        )  # fmt: skip
    from seed_gym.trainer.backends.vllm_engine import VLLMEngine  # the vllm extra

    folder = build_smollm2() if source == "smollm2" else model_dir(source)
    share = cfg.system.vllm_gpu_memory_utilization
    if share is None:
        shape = ModelShape.from_config(folder)
        plan = memory_plan(shape, cfg, measure_budget(cfg, policy.tokenizer), dist.world_size)
        share = vllm_share(plan, cfg)
    engine = VLLMEngine(
        folder, tokenizer=policy.tokenizer, dtype="bfloat16" if cfg.bf16 else "float32",
        gpu_memory_utilization=share, sleep_mode=cfg.system.vllm_sleep, seed=cfg.seed,
    )  # fmt: skip
    engine.sync_weights(policy.model)  # LoRA or a resumed run: the trainer's weights
    return engine


def export_model(run: Run) -> None:
    """The final policy as a Hugging Face folder (atomically: a kill mid-export leaves no
    half-written ``model/``); also when a finished run is resumed and ``model/`` is missing.
    Every rank calls it (under FSDP the whole state dict is gathered); rank 0 writes."""
    out = run.run_dir / "model"
    if run.start_iteration >= run.cfg.iterations and (out / "config.json").exists():
        return
    state = full_state_dict(run.policy.model) if is_sharded(run.policy.model) else None
    if not run.dist.is_main:
        return
    tmp = run.run_dir / "model.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    save_policy(run.policy, tmp, state_dict=state)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
