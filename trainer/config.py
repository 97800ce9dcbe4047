"""Training configuration: one flat dataclass with per-field help, presets, and the CLI.

``seed-gym train --env ID --algo grpo --preset NAME --out RUN_DIR [--resume] [--field value ...]``

A preset is a function returning a ``TrainConfig``; command-line flags override its fields. With
``--resume`` the run's saved ``config.json`` is the starting point instead (a preset is ignored),
so ``--resume --iterations 20`` continues the same run for longer.

New algorithms are a class in ``algorithms.py`` (named there) and add their fields in their own
section here.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from seed_gym.registration import parse_env_kwargs
from seed_gym.splits import SPLITS
from seed_gym.trainer.algorithms import ALGORITHMS

# algorithm name -> one-line description (the classes are in algorithms.py)
ALGOS: dict[str, str] = {name: cls.description for name, cls in ALGORITHMS.items()}
ENGINES = ("hf", "vllm")
# GRPO score granularity (``advantage``)
ADVANTAGES = ("step", "trajectory")
# fields a config.json written before 0.2 lacks -> the value that keeps such a run's semantics
# (a resumed old run goes on exactly as it started)
LEGACY_DEFAULTS = {"advantage": "trajectory", "analyzer_structured": False}


@dataclass
class TrainConfig:
    # --- run ----------------------------------------------------------------------------------
    env: str = "seed_gym/Sokoban-v0"
    """env id (``seed-gym list``)"""
    imports: Annotated[tuple[str, ...], tyro.conf.arg(name="import", aliases=("--imports",))] = ()
    """modules or .py files that register extra envs (``--import docs/examples/guess_number.py``,
    as in eval and play; ``--imports`` is the old spelling)"""
    env_kwarg: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """env constructor argument KEY=VALUE, repeatable; VALUE is JSON when it parses, else a
    string (``--env-kwarg data_dir=/data/webshop``); kept in config.json for --resume"""
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
    format_warmup_epochs: int = 1
    """format warm-up: passes over the demonstrations"""
    format_warmup_lr: float = 1e-4
    """format warm-up: AdamW learning rate"""
    format_warmup_noise: float = 0.3
    """format warm-up: share of demonstration steps that take a random admissible action instead
    of the oracle's (a noisy expert leaves RL room to improve)"""
    format_warmup_analyzer_episodes: int = 0
    """format warm-up: also clone the analyzer's JSON answer on N demonstration episodes (half
    noisy-oracle, half random), labelled by the privileged annotator, so a small model can write
    parseable skills at all (not in SEED.md; see docs/training.md); 0: off"""

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
    weight_decay: float = 0.01
    """AdamW weight decay (the reference's 0.01)"""
    adam_betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas"""
    max_grad_norm: float = 1.0
    """gradient clipping by global norm (<= 0: off)"""
    advantage: str = "step"
    """GRPO scores: ``step`` (the reference's default: every step-sample scores its episode's env
    return minus its own format penalty; mean and std over all step-samples of the group) or
    ``trajectory`` (one return per trajectory, penalties included, normalised over the G
    trajectories and broadcast to every step; seed-gym before 0.2)"""
    std_normalize: bool = True
    """divide group-centered scores by the group std; False: mean-only advantages"""
    clip_low: float = 0.2
    """PPO clip: ratio >= 1 - clip_low"""
    clip_high: float = 0.2
    """PPO clip: ratio <= 1 + clip_high"""
    dual_clip: float | None = 3.0
    """dual-clip bound c > 1 for negative advantages; None: off"""
    kl_coef: float = 0.01
    """k3 KL to the frozen initial policy, value clamped to [-10, 10] as verl (the reference's
    0.01; 0: off, and no reference model is kept)"""
    ent_coef: float = 0.001
    """entropy bonus coefficient (the reference's 0.001)"""
    ppo_epochs: int = 1
    """passes over each iteration's samples"""
    mini_batch_size: int = 256
    """step-samples per optimizer step (the reference's ``ppo_mini_batch_size``): an iteration's N
    samples are shuffled and split into ceil(N / mini_batch_size) near-equal mini-batches, one
    AdamW step each"""
    mini_batches: int | None = None
    """exactly this many optimizer steps per epoch instead (overrides mini_batch_size; runs saved
    before 0.2 carry mini_batches=1)"""
    micro_batch: int = 8
    """samples per forward/backward (gradient accumulation inside a mini-batch)"""
    recompute_old_logprobs: bool = False
    """score old logprobs with the trainer before the update instead of using the engine's"""

    # --- SEED (Stage 2): analyze -> skills -> rescore -> gated OPD ---------------------------
    opd_coef: float = 0.01
    """lambda: weight of the gated OPD loss next to the GRPO loss (seed, static-skills, opsd)"""
    opd_beta: float = 5.0
    """beta: gate = sigmoid(beta * (teacher_lp - lp))"""
    positive_only: bool = False
    """OPD loss only on tokens where the skill context raises the token (gap > 0)"""
    teacher_advantage: bool = False
    """OPID mode: add w * (teacher_lp - old_lp) to the token advantage instead of the OPD loss"""
    teacher_advantage_coef: float = 1.0
    """w of the teacher-advantage mode"""
    teacher_advantage_clip: float | None = None
    """bound |teacher_lp - old_lp| of the teacher-advantage term; None: unbounded"""
    analyzer_max_new_tokens: int = 256
    """analyzer answer budget: tokens per field under structured decoding, else for the whole
    JSON answer with episode_summary and episode_skill"""
    analyzer_structured: bool = True
    """decode the analyzer's answer under its JSON schema (vLLM structured outputs; on the HF
    engine a field-by-field prefill of the JSON with a stop at each closing quote and a loop
    guard); False: free generation parsed leniently, as SEED.md describes"""
    analyzer_budget: int = 3072
    """analyzer prompt budget in tokens; longer trajectories are truncated (task, end, decisive steps)"""
    analyzer_retry: bool = True
    """retry a failed analysis once, quoting the parse error"""
    skill_bank: str | None = None
    """static-skills: JSON file {task_type: skill, "*": fallback}; None: a generic built-in bank"""
    save_trajectories: bool = True
    """write RUN_DIR/trajectories/iter_*.jsonl (with skills and teacher logprobs) for the report"""

    # --- SEED Stage 1: analyzer SFT before RL (seed, skill-grpo) -----------------------------
    no_sft: bool = False
    """skip Stage 1 (the policy analyzes from the start without SFT)"""
    sft_model: str | None = None
    """start Stage 2 from this Stage 1 model folder (skips Stage 1); set by the run itself"""
    sft_annotator: str = "privileged"
    """Stage 1 annotator: privileged (offline, env solver/gold info) or openai:URL"""
    sft_annotator_model: str = "default"
    """model name sent to an openai:URL annotator"""
    sft_tasks_per_type: int = 30
    """Stage 1 base rollouts: training tasks per task type"""
    sft_rollouts: int = 8
    """Stage 1 base rollouts per task (also the no-skill baseline of the acceptance rule)"""
    sft_temperature: float = 0.4
    """Stage 1 sampling temperature (base rollouts and with-skill reruns)"""
    sft_reruns: int = 8
    """with-skill reruns per candidate skill (accept: +1 success and +0.125 success rate)"""
    sft_epochs: int = 3
    """Stage 1 SFT epochs"""
    sft_lr: float = 5e-6
    """Stage 1 SFT learning rate"""
    sft_batch: int = 4
    """Stage 1 SFT batch size"""

    # --- devices and processes (torchrun) ----------------------------------------------------
    device: str = "cpu"
    """where the policy lives: cpu, cuda, cuda:N, or auto (this rank's GPU if CUDA is there)"""
    dist_rollout: str = "shard"
    """under torchrun: shard (each rank collects its share of the B tasks) or rank0 (rank 0
    collects all of them: the same episodes as one process)"""
    fsdp: bool = False
    """shard parameters, gradients and AdamW state over the ranks with PyTorch FSDP2
    (``fully_shard`` per decoder layer and the root; docs/scaling.md); off: a full copy per rank"""
    gradient_checkpointing: bool = False
    """recompute each decoder layer's activations in the backward pass (less memory, ~30 % more
    compute); turns off the shared-prefix forward in the update"""
    engine: str = "hf"
    """rollout engine: hf (the policy itself, batched; any device) or vllm (a vLLM engine beside
    the trainer on the same GPU, weights synced after every update; the vllm extra)"""
    vllm_gpu_memory_utilization: float | None = None
    """vLLM's share of the GPU; None: from the memory plan (``--dry-run`` prints it)"""
    vllm_sleep: bool = True
    """put vLLM to sleep (KV cache and weights released) during the update, wake it for rollouts"""
    gpu_memory_gb: float = 80.0
    """memory of one GPU, for the ``--dry-run`` plan and vLLM's share"""
    dry_run: bool = False
    """build everything but the weights and print the plan: splits, tokens per iteration, memory
    per GPU on 1, 2, 4 and 8 GPUs; exit 2 when the job's world size does not fit"""

    # --- eval, logging, checkpoints -----------------------------------------------------------
    eval_every: int = 0
    """evaluate every N iterations (and after the last); 0: only after the last"""
    eval_tasks: int = 4
    """tasks per eval split (a fixed seeded subset: the same tasks at every eval)"""
    eval_samples: int = 1
    """episodes per eval task (success is their mean); more than 1 needs eval_temperature > 0"""
    eval_temperature: float = 0.0
    """sampling temperature at eval; 0: greedy. A small model's greedy policy can be stuck on one
    answer while its sampled policy already wins sometimes: sampled eval with several samples per
    task shows that (the learning benchmark uses it)"""
    eval_at_start: bool = False
    """also evaluate the starting policy (after the format warm-up and Stage 1) as iteration 0,
    the first point of a learning curve"""
    eval_splits: tuple[str, ...] = ("seen", "unseen")
    """splits to evaluate on"""
    eval_max_new_tokens: int | None = None
    """completion budget at eval; None: max_new_tokens"""
    eval_cache: bool = False
    """reuse the start eval (iteration 0) of weights already evaluated with the same settings,
    seed, thread count and library versions (``$SEED_GYM_CACHE/evals``, ``trainer/eval_cache.py``):
    runs of several algorithms from one starting model evaluate it once"""
    save_every: int = 1
    """write the checkpoint every N iterations (and after the last)"""
    save_hf: bool = True
    """also export the final policy as a Hugging Face folder (RUN_DIR/model)"""
    tensorboard: bool = True
    """write TensorBoard events to RUN_DIR/tb"""

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """``env_kwarg`` as constructor keyword arguments."""
        return parse_env_kwargs(self.env_kwarg)

    def __post_init__(self):
        self.imports = tuple(self.imports)  # config.json stores a list
        self.env_kwarg = tuple(self.env_kwarg)
        parse_env_kwargs(self.env_kwarg)  # a pair that is not KEY=VALUE: ValueError naming it
        if self.algo not in ALGOS:
            raise ValueError(f"unknown algo {self.algo!r}; choose one of {sorted(ALGOS)}")
        positive = (
            "iterations",
            "tasks_per_iter",
            "group_size",
            "max_new_tokens",
            "gen_batch",
            "ppo_epochs",
            "mini_batch_size",
            "micro_batch",
            "eval_tasks",
            "eval_samples",
            "save_every",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.mini_batches is not None and self.mini_batches < 1:
            raise ValueError(f"mini_batches must be >= 1 or None, got {self.mini_batches}")
        if self.advantage not in ADVANTAGES:
            raise ValueError(f"advantage must be one of {ADVANTAGES}, got {self.advantage!r}")
        algorithm = ALGORITHMS[self.algo]
        if algorithm.trains and self.group_size < 2:
            raise ValueError("GRPO needs group_size >= 2 (a group of one has no advantage)")
        if self.opd_coef < 0 or self.opd_beta <= 0:
            raise ValueError("need opd_coef >= 0 and opd_beta > 0")
        if self.positive_only and self.teacher_advantage:
            raise ValueError("positive_only shapes the OPD loss, which teacher_advantage replaces")
        if (self.positive_only or self.teacher_advantage) and not algorithm.distills:
            teachers = sorted(n for n, c in ALGORITHMS.items() if c.distills)
            raise ValueError(
                f"positive_only / teacher_advantage need a teacher: algo in {teachers}"
            )
        if self.teacher_advantage_clip is not None and self.teacher_advantage_clip <= 0:
            raise ValueError("teacher_advantage_clip must be > 0 (or None)")
        for name in ("analyzer_max_new_tokens", "analyzer_budget", "sft_tasks_per_type"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("sft_rollouts", "sft_reruns", "sft_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.sft_epochs < 0 or self.sft_lr < 0 or self.sft_temperature < 0:
            raise ValueError("sft_epochs, sft_lr and sft_temperature must be >= 0")
        if self.sft_annotator != "privileged" and not self.sft_annotator.startswith("openai:"):
            raise ValueError(
                f"sft_annotator must be 'privileged' or 'openai:URL', not {self.sft_annotator!r}"
            )
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
        if self.eval_temperature < 0:
            raise ValueError(f"eval_temperature must be >= 0, got {self.eval_temperature}")
        if self.eval_samples > 1 and self.eval_temperature == 0:
            raise ValueError(
                "eval_samples > 1 repeats the same greedy episode: set eval_temperature"
            )
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0, got {self.eval_every}")
        bad = [s for s in self.eval_splits if s not in SPLITS]
        if bad:
            raise ValueError(f"unknown eval splits {bad}; choose from {SPLITS}")
        if self.backend not in ("local", "subprocess", "ray"):
            raise ValueError(f"unknown backend {self.backend!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.vllm_gpu_memory_utilization is not None and not (
            0.0 < self.vllm_gpu_memory_utilization < 1.0
        ):
            raise ValueError("vllm_gpu_memory_utilization must be in (0, 1)")
        if self.dist_rollout not in ("shard", "rank0"):
            raise ValueError(f"dist_rollout must be shard or rank0, got {self.dist_rollout!r}")
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
        return cls(**{**LEGACY_DEFAULTS, **d})

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
        # SEED: a random model writes no JSON, so keep the analyzer short; Stage 1 in seconds
        analyzer_max_new_tokens=16,
        analyzer_budget=256,
        sft_tasks_per_type=1,
        sft_rollouts=2,
        sft_reruns=2,
        sft_epochs=1,
        sft_lr=1e-3,
    )


def smollm2_cpu() -> TrainConfig:
    """SmolLM2-135M-Instruct learning EZPoints (text) on a 2-core CPU: the configuration of the
    measured CPU learning curve (``benchmarks/learning.py --config cpu``, README) and ``make demo``.
    bf16 autocast where the CPU has native bf16 (``models.bf16_is_fast``), fp32 elsewhere
    (emulated bf16 is ~13x slower). Other envs work too (``--env``); budgets are sized for EZPoints."""
    from seed_gym.trainer.models import bf16_is_fast

    return TrainConfig(
        preset="smollm2-cpu",
        model="smollm2",
        env="seed_gym/EZPoints-v0",
        modality="text",
        # SmolLM2-135M never writes the agent format (nor the analyzer's JSON) unaided: clone 64
        # noisy-oracle episodes and 16 analyzer answers first (cached per env; 20 min on 2
        # cores). 3 epochs: after 2 the clone wrote "1" for "10" and won 3% of sampled seen
        # episodes; after 3 it wins ~60% (docs/training.md, "The clone's quality is fragile")
        format_warmup_episodes=64,
        format_warmup_epochs=3,
        format_warmup_analyzer_episodes=16,
        bf16=bf16_is_fast("cpu"),
        threads=1,  # on a shared 2-core machine, 2 torch threads ran 8x slower than 1 (measured)
        iterations=3,
        tasks_per_iter=4,
        group_size=8,
        max_new_tokens=48,
        max_turns=6,  # a right formula takes 4 turns; EZPoints' own limit is 8
        temperature=1.0,
        # a 135M model fully fine-tuned, lr 5e-5, 4-5 AdamW steps per iteration (32 of ~150
        # step-samples each): fast enough to see learning in 3 iterations (docs/training.md)
        lr=5e-5,
        mini_batch_size=32,
        micro_batch=8,
        # KL 0.01 to the warmed model, the reference's default, stays on: in the one run without
        # it (SEED), the third update taught the clone to drop "</think><action>" (63% invalid
        # output at the final eval), while GRPO with it went 19% -> 80% seen. It costs a
        # reference forward per micro-batch.
        eval_at_start=True,
        eval_tasks=12,
        eval_samples=3,
        eval_temperature=1.0,  # sampled success, 3 episodes per task (same seeds at every eval)
        # SEED: structured analyzer answers of up to 48 tokens a field; a small Stage 1
        analyzer_max_new_tokens=48,
        analyzer_budget=768,
        sft_tasks_per_type=1,
        sft_rollouts=4,
        sft_reruns=4,
        sft_epochs=3,
        sft_lr=5e-6,
    )


def tiny_vlm() -> TrainConfig:
    """The tiny LLaVA-style model (random tiny CLIP tower + the tiny Llama) on image observations:
    the vision-language path end to end in seconds. Stage 1 is skipped (``no_sft``): its base
    rollouts are text-only."""
    return dataclasses.replace(
        tiny(), preset="tiny-vlm", model="tiny-vlm", modality="image", no_sft=True
    )


# --- the paper's runs (SEED.md; the reference's verl-agent scripts) ------------------------------
# env -> (model, modality, turn limit: the env's own step limit, history window)
PAPER_ENVS: dict[str, tuple[str, str, str | None, int | None]] = {
    # SEED.md Stage 1: history 5 on ALFWorld; the env stops at 50 steps
    "alfworld": ("seed_gym/ALFWorld-v0", "Qwen/Qwen2.5-3B-Instruct", "text", 5),
    "webshop": ("seed_gym/WebShop-v0", "Qwen/Qwen2.5-3B-Instruct", "text", None),
    "search": ("seed_gym/SearchQA-v0", "Qwen/Qwen2.5-3B-Instruct", "text", None),
    # the vision results of SEED.md: Qwen2.5-VL-3B on pictures of the games
    "sokoban": ("seed_gym/Sokoban-v0", "Qwen/Qwen2.5-VL-3B-Instruct", "image", None),
    "ezpoints": ("seed_gym/EZPoints-v0", "Qwen/Qwen2.5-VL-3B-Instruct", "image", None),
}


def paper(env: str) -> TrainConfig:
    """SEED.md's setup for one env: a 3B policy (a Hugging Face id or a local folder:
    ``--model PATH``), vLLM rollouts, 16 tasks x 8 per iteration, 512-token responses, lr 1e-6,
    KL 0.01 (k3), entropy 0.001, lambda 0.01, beta 5, PPO clip 0.2 with dual clip 3, one epoch in
    mini-batches of 256 step-samples, FSDP2 with gradient checkpointing on the GPUs torchrun
    gives, Stage 1 with 30 tasks per type x 8 rollouts at T 0.4 and 8 reruns, 3 SFT epochs at
    lr 5e-6. ``--dry-run`` prints what it needs."""
    env_id, model, modality, history = PAPER_ENVS[env]
    return TrainConfig(
        preset=f"paper-{env}",
        env=env_id,
        model=model,
        modality=modality,
        history=history,
        algo="seed",
        device="auto",
        bf16=True,
        engine="vllm",
        fsdp=True,
        gradient_checkpointing=True,
        iterations=150,
        tasks_per_iter=16,
        group_size=8,
        max_new_tokens=512,
        temperature=1.0,
        lr=1e-6,
        kl_coef=0.01,
        ent_coef=0.001,
        opd_coef=0.01,
        opd_beta=5.0,
        mini_batch_size=256,
        micro_batch=8,
        gen_batch=256,
        analyzer_max_new_tokens=512,
        sft_tasks_per_type=30,
        sft_rollouts=8,
        sft_temperature=0.4,
        sft_reruns=8,
        sft_epochs=3,
        sft_lr=5e-6,
        eval_every=5,
        eval_tasks=128,
        eval_temperature=0.4,  # the reference validates with sampling at 0.4
        save_every=5,
    )


PRESETS: dict[str, Callable[[], TrainConfig]] = {"tiny": tiny, "smollm2-cpu": smollm2_cpu}
PRESETS["tiny-vlm"] = tiny_vlm
for _env in PAPER_ENVS:
    PRESETS[f"paper-{_env}"] = functools.partial(paper, _env)


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
            raise SystemExit("seed-gym train: --resume needs --out RUN_DIR")
        saved = Path(known.out) / "config.json"
        if not saved.is_file():
            raise SystemExit(f"seed-gym train: --resume: {saved} does not exist (no run there)")
        try:
            base = TrainConfig.load(saved)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise SystemExit(f"seed-gym train: {saved} is not valid JSON ({e})") from None
        except (ValueError, TypeError) as e:
            raise SystemExit(f"seed-gym train: {saved}: {e}") from None
    elif known.preset is not None:
        if known.preset not in PRESETS:
            raise SystemExit(f"unknown preset {known.preset!r}; choose one of {sorted(PRESETS)}")
        base = PRESETS[known.preset]()
    cfg = tyro.cli(
        TrainConfig,
        args=list(argv or []),
        default=base,
        prog="seed-gym train",
        description=__doc__.splitlines()[0],
    )
    return cfg
