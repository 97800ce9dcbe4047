"""Training configuration: one flat dataclass with per-field help, presets, and the CLI.

``seed-gym train --env ID --algo grpo --preset NAME --out RUN_DIR [--resume] [--field value ...]``

A preset is a function returning a ``TrainConfig``; command-line flags override its fields. With
``--resume`` the run's saved ``config.json`` is the starting point instead (a preset is ignored),
so ``--resume --iterations 20`` continues the same run for longer.

New algorithms register their name in ``ALGOS`` and add their fields in their own section.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seed_gym.splits import SPLITS

# algorithm name -> one-line description; the train loop branches on cfg.algo
ALGOS: dict[str, str] = {
    "grpo": "GRPO: group-normalized episode returns, PPO-clip (dual clip), optional k3 KL",
    "prompt": "no training: evaluate the model as it is (the prompting baseline)",
}


@dataclass
class TrainConfig:
    # --- run ----------------------------------------------------------------------------------
    env: str = "seed_gym/Sokoban-v0"
    """env id (``seed-gym list``)"""
    algo: str = "grpo"
    """algorithm: one of ALGOS (grpo, prompt, ...)"""
    out: str = "runs/default"
    """run directory: config, metrics, TensorBoard events, checkpoints all go here"""
    resume: bool = False
    """continue the run in ``out`` from its last checkpoint (its saved config is the base)"""
    preset: str | None = None
    """the preset this config started from (informational)"""
    seed: int = 0
    """seeds task order, env seeds, sampling and the tiny model's weights"""
    iterations: int = 2
    """training iterations (rollout -> update)"""
    threads: int | None = None
    """torch intra-op threads (1 is fastest for tiny models on a busy machine); None: torch default"""
    progress: bool = True
    """tqdm progress bars"""

    # --- model --------------------------------------------------------------------------------
    model: str = "tiny"
    """``tiny`` (random tiny Llama), ``smollm2`` (embedded SmolLM2-135M-Instruct) or a local HF folder"""
    bf16: bool = False
    """bf16 autocast for sampling and training (weights stay fp32)"""
    lora_r: int = 0
    """LoRA rank; 0 trains every weight"""
    lora_alpha: int = 16
    """LoRA alpha (scale = alpha / r)"""
    format_warmup_episodes: int = 0
    """format warm-up (not in SEED.md; for small models that never write the agent format):
    behaviour-clone N oracle train episodes first (trainer/warmup.py; cached); 0: off"""
    format_warmup_epochs: int = 2
    """format warm-up: passes over the demonstrations"""
    format_warmup_lr: float = 5e-5
    """format warm-up: AdamW learning rate"""
    format_warmup_noise: float = 0.3
    """format warm-up: share of demonstration steps that take a random admissible action instead
    of the oracle's (a noisy expert leaves RL room to improve)"""

    # --- env ----------------------------------------------------------------------------------
    modality: str | None = None
    """observation modality (text, image, text+image); None: the env's default"""
    history: int | None = None
    """past turns shown in the prompt; None: the env's agent-spec default"""
    backend: str = "local"
    """env pool backend: local, subprocess or ray"""

    # --- rollout ------------------------------------------------------------------------------
    tasks_per_iter: int = 2
    """B: distinct training tasks per iteration"""
    group_size: int = 4
    """G: episodes per task (same task, same env seed)"""
    max_new_tokens: int = 64
    """completion budget per turn"""
    temperature: float = 1.0
    """sampling temperature of training rollouts"""
    top_p: float = 1.0
    """nucleus sampling of training rollouts"""
    max_turns: int | None = None
    """cap on turns per episode (the env's own step limit applies anyway); cut episodes are truncated"""
    gen_batch: int = 64
    """prompts per generation forward pass"""

    # --- GRPO ---------------------------------------------------------------------------------
    lr: float = 1e-5
    """AdamW learning rate"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    adam_betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas"""
    max_grad_norm: float = 1.0
    """gradient clipping by global norm (<= 0: off)"""
    std_normalize: bool = True
    """divide group-centered returns by the group std; False: mean-only advantages"""
    clip_low: float = 0.2
    """PPO clip: ratio >= 1 - clip_low"""
    clip_high: float = 0.2
    """PPO clip: ratio <= 1 + clip_high"""
    dual_clip: float | None = 3.0
    """dual-clip bound c > 1 for negative advantages; None: off"""
    kl_coef: float = 0.0
    """k3 KL to the frozen initial policy (0: no reference model is kept)"""
    ent_coef: float = 0.0
    """entropy bonus coefficient"""
    ppo_epochs: int = 1
    """passes over each iteration's samples"""
    mini_batches: int = 1
    """optimizer steps per epoch (the samples are split into this many mini-batches)"""
    micro_batch: int = 8
    """samples per forward/backward (gradient accumulation inside a mini-batch)"""
    recompute_old_logprobs: bool = False
    """score old logprobs with the trainer before the update instead of using the engine's"""

    # --- eval, logging, checkpoints -----------------------------------------------------------
    eval_every: int = 0
    """evaluate every N iterations (and after the last); 0: only after the last"""
    eval_tasks: int = 4
    """tasks per eval split (a fixed seeded subset, each once, greedy)"""
    eval_splits: tuple[str, ...] = ("seen", "unseen")
    """splits to evaluate on"""
    eval_max_new_tokens: int | None = None
    """completion budget at eval; None: max_new_tokens"""
    save_every: int = 1
    """write the checkpoint every N iterations (and after the last)"""
    save_hf: bool = True
    """also export the final policy as a Hugging Face folder (RUN_DIR/model)"""
    tensorboard: bool = True
    """write TensorBoard events to RUN_DIR/tb"""

    def __post_init__(self):
        if self.algo not in ALGOS:
            raise ValueError(f"unknown algo {self.algo!r}; choose one of {sorted(ALGOS)}")
        positive = (
            "iterations",
            "tasks_per_iter",
            "group_size",
            "max_new_tokens",
            "gen_batch",
            "ppo_epochs",
            "mini_batches",
            "micro_batch",
            "eval_tasks",
            "save_every",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.algo == "grpo" and self.group_size < 2:
            raise ValueError("GRPO needs group_size >= 2 (a group of one has no advantage)")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not (0.0 <= self.clip_low < 1.0 and self.clip_high >= 0.0):
            raise ValueError("need 0 <= clip_low < 1 and clip_high >= 0")
        if self.dual_clip is not None and self.dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1 (or None), got {self.dual_clip}")
        if self.kl_coef < 0 or self.ent_coef < 0 or self.lr < 0:
            raise ValueError("kl_coef, ent_coef and lr must be >= 0")
        if self.lora_r < 0:
            raise ValueError(f"lora_r must be >= 0, got {self.lora_r}")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0, got {self.eval_every}")
        bad = [s for s in self.eval_splits if s not in SPLITS]
        if bad:
            raise ValueError(f"unknown eval splits {bad}; choose from {SPLITS}")
        if self.backend not in ("local", "subprocess", "ray"):
            raise ValueError(f"unknown backend {self.backend!r}")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1 or None, got {self.max_turns}")
        self.adam_betas = tuple(self.adam_betas)  # JSON round trips give lists
        self.eval_splits = tuple(self.eval_splits)

    # --- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown config fields {unknown}")
        return cls(**d)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path) -> TrainConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))


# --- presets ------------------------------------------------------------------------------------
def tiny() -> TrainConfig:
    """The random tiny Llama on short rollouts: seconds per iteration, for tests and smoke runs."""
    return TrainConfig(
        preset="tiny",
        model="tiny",
        iterations=2,
        threads=1,
        tasks_per_iter=2,
        group_size=2,
        max_new_tokens=16,
        max_turns=3,
        lr=1e-3,
        micro_batch=4,
        eval_tasks=2,
        eval_max_new_tokens=8,
        eval_every=0,
    )


def smollm2_cpu() -> TrainConfig:
    """SmolLM2-135M-Instruct with bf16 autocast on a short horizon: minutes on 2 CPU cores."""
    return TrainConfig(
        preset="smollm2-cpu",
        model="smollm2",
        bf16=True,
        threads=1,  # on a shared 2-core machine, 2 torch threads ran 8x slower than 1 (measured)
        iterations=4,
        tasks_per_iter=2,
        group_size=4,
        max_new_tokens=64,
        max_turns=4,
        temperature=1.0,
        lr=1e-5,
        micro_batch=4,
        eval_tasks=2,
        eval_every=0,
    )


PRESETS: dict[str, Callable[[], TrainConfig]] = {"tiny": tiny, "smollm2-cpu": smollm2_cpu}


# --- CLI ----------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> TrainConfig:
    """``--preset NAME`` (or, with ``--resume``, the run's saved config) then field overrides."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset", default=None)
    pre.add_argument("--out", default=None)
    pre.add_argument("--resume", action="store_true")
    known, _ = pre.parse_known_args(argv)
    base = TrainConfig()
    if known.resume:
        if known.out is None:
            raise SystemExit("--resume needs --out RUN_DIR")
        saved = Path(known.out) / "config.json"
        if saved.exists():
            base = TrainConfig.load(saved)
    elif known.preset is not None:
        if known.preset not in PRESETS:
            raise SystemExit(f"unknown preset {known.preset!r}; choose one of {sorted(PRESETS)}")
        base = PRESETS[known.preset]()
    try:
        import tyro
    except ImportError as e:  # pragma: no cover - tyro is in the train extra
        raise ImportError("the train CLI needs tyro: pip install 'seed-gym[train]'") from e
    cfg = tyro.cli(
        TrainConfig,
        args=list(argv or []),
        default=base,
        prog="seed-gym train",
        description=__doc__.splitlines()[0],
    )
    return cfg
