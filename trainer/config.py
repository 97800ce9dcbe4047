"""Training configuration: ``TrainConfig`` in groups (rollout, optim, opd, stage1, warmup, eval,
system), per-field help, presets, and the CLI.

``seed-gym train --env ID --algo grpo --preset NAME --out RUN_DIR [--resume] [--field value ...]``

The flags are flat (``--lr``, ``--eval-tasks``, ``--sft-epochs``): a field's flag is its name, or
the name given by ``flag(...)`` where the group already says it (``cfg.eval.tasks`` is
``--eval-tasks``). ``FLAGS`` maps every flag to its field; ``TrainConfig.replace`` and
``TrainConfig.from_dict`` take flag names, so a config is built or changed in the CLI's words.

A preset is a function returning a ``TrainConfig``; command-line flags override its fields. With
``--resume`` the run's saved ``config.json`` is the starting point instead (a preset is ignored),
so ``--resume --iterations 20`` continues the same run for longer. A ``config.json`` written
before the groups (seed-gym <= 0.3: one flat object) still loads.

Algorithms are plug-ins (``trainer/algorithms``): each checks the fields it reads in its
``check(cfg)``; an algorithm outside the package takes its options from ``--algo-arg KEY=VALUE``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import contextvars
import dataclasses
import functools
import importlib.util
import inspect
import io
import json
import math
import numbers
import re
import shutil
import sys
import textwrap
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import tyro

from seed_gym.oneline import one_line, usage_error
from seed_gym.policies import openai_url_problem
from seed_gym.registration import import_env_modules, parse_env_kwargs
from seed_gym.seeding import SEED_MAX
from seed_gym.spaces import MODALITIES
from seed_gym.splits import SPLITS
from seed_gym.trainer.algorithms import ALGORITHMS
from seed_gym.trainer.backends.models import bf16_is_fast

# algorithm name -> one-line description (the classes are in trainer/algorithms)
ENGINES = ("hf", "vllm")
BACKENDS = ("local", "subprocess", "ray")  # env pools (``make_group_pool``)
# GRPO score granularity (``advantage``)
ADVANTAGES = ("step", "trajectory")
# flags a config.json written before 0.2 lacks -> the value that keeps such a run's semantics
# (a resumed old run goes on exactly as it started)
LEGACY_DEFAULTS = {"advantage": "trajectory", "analyzer_structured": False}


def flag(name: str) -> Any:
    """The command-line name of a group field whose group already says what it is about."""
    return tyro.conf.arg(name=name)


# --- checks: every message names the flag, the value and the valid range -------------------------
# tyro builds the groups while it parses; ``parse_args`` defers their checks and runs them on the
# finished config, so a bad value is one line naming its flag, not tyro's box (``parse_args``)
_CHECKS_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("checks", default=False)


def _checking() -> bool:
    return not _CHECKS_DEFERRED.get()


def flag_of(cls: type, attr: str) -> str:
    """The command-line flag of field ``attr`` of ``cls`` (``--group-size``, ``--eval-tasks``)."""
    return "--" + _flag_names(cls)[attr].replace("_", "-")


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _need(
    obj: Any, attr: str, ok: Callable[[Any], bool], valid: str, *, optional: bool = False
) -> None:
    """``ValueError`` naming the flag, the value and ``valid`` unless ``ok(value)`` (or, with
    ``optional``, the value is None). NaN fails every comparison, so it is refused like any
    value out of range."""
    value = getattr(obj, attr)
    if value is None and optional:
        return
    try:
        fine = value is not None and bool(ok(value))
    except TypeError:  # a value of another type (the Python API takes anything)
        fine = False
    if not fine:
        valid += " or None" if optional else ""
        raise ValueError(f"{flag_of(type(obj), attr)} must be {valid}, not {_shown(value)}")


def _at_least_one(obj: Any, *names: str) -> None:
    for name in names:
        _need(obj, name, lambda v: v >= 1, ">= 1")


def _finite_at_least_zero(obj: Any, *names: str) -> None:
    for name in names:
        _need(obj, name, lambda v: 0 <= v < math.inf, ">= 0 and finite")


def _one_of(obj: Any, attr: str, choices: tuple[str, ...] | list[str]) -> None:
    _need(obj, attr, lambda v: v in choices, f"one of: {', '.join(choices)}")


@dataclass
class RolloutConfig:
    """Training rollouts: B tasks x G episodes per iteration, sampled by the engine."""

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

    def __post_init__(self):
        if not _checking():
            return
        _at_least_one(self, "tasks_per_iter", "group_size", "max_new_tokens", "gen_batch")
        _need(self, "top_p", lambda v: 0.0 < v <= 1.0, "in (0, 1]")
        _finite_at_least_zero(self, "temperature")
        _need(self, "max_turns", lambda v: v >= 1, ">= 1", optional=True)


@dataclass
class OptimConfig:
    """The GRPO update: advantages, the PPO-clip loss and its regularisers, AdamW, batching."""

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
    target_kl: float | None = None
    """stop an iteration's update early (as CleanRL's and SB3's ``target_kl``) once a mini-batch's
    approx. KL to the sampling policy exceeds this, before its step; None: every step is taken"""
    max_update_kl: float | None = None
    """after an iteration's update, its token-mean approx. KL to the sampling policy on the
    iteration's own samples; above this the update's weight change is halved (up to
    ``update_backtracks`` times), then undone: a line search, as TRPO's (``trainer/line_search``).
    seed-gym's option; None (the reference's): the update is kept whatever it did"""
    update_backtracks: int = 3
    """halvings of the update ``--max-update-kl`` tries before it undoes the update"""
    recompute_old_logprobs: bool = False
    """score old logprobs with the trainer before the update instead of using the engine's"""
    skip_saturated: bool = False
    """take no step in an iteration with no policy-gradient signal: every step-sample's advantage
    is 0 (each group all won or all lost) and no teacher advantage (OPID) adds one. Such an
    update's steps come from AdamW's momentum of earlier updates and the KL, entropy and gated-OPD
    terms alone (``train/step_norm``, docs/seed.md). seed-gym's option; the reference steps"""

    def __post_init__(self):
        self.adam_betas = tuple(self.adam_betas)  # JSON round trips give lists
        if not _checking():
            return
        _at_least_one(self, "ppo_epochs", "mini_batch_size", "micro_batch")
        _need(self, "mini_batches", lambda v: v >= 1, ">= 1", optional=True)
        _one_of(self, "advantage", ADVANTAGES)
        _need(self, "clip_low", lambda v: 0.0 <= v < 1.0, "in [0, 1)")
        _finite_at_least_zero(self, "clip_high", "lr", "weight_decay", "kl_coef", "ent_coef")
        _need(self, "dual_clip", lambda v: v > 1.0, "> 1", optional=True)
        _need(self, "target_kl", lambda v: v > 0, "> 0", optional=True)
        _need(self, "max_update_kl", lambda v: v > 0, "> 0", optional=True)
        _need(self, "update_backtracks", lambda v: v >= 0, ">= 0")
        _need(
            self,
            "adam_betas",
            lambda v: len(v) == 2 and all(0.0 <= b < 1.0 for b in v),
            "two numbers in [0, 1)",
        )


@dataclass
class OPDConfig:
    """SEED Stage 2 (and the baselines built from its parts): the analyzer, the skills, and the
    gated OPD loss or the teacher-advantage (OPID) term."""

    coef: Annotated[float, flag("opd_coef")] = 0.01
    """lambda: weight of the gated OPD loss next to the GRPO loss (seed, static-skills, opsd)"""
    beta: Annotated[float, flag("opd_beta")] = 5.0
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
    skill_control: int = 8
    """trajectories scored each iteration under another task's skill: the shuffled-skill control
    (``opd/control_gap*``) beside the skill's own effect (``opd/skill_gap*``); 0: off"""
    grad_probe: bool = True
    """measure the teacher term's gradient against the policy gradient's on one micro-batch per
    update (``opd/grad_ratio``, ``opd/grad_cosine``; two extra backward passes)"""
    skill_bank: str | None = None
    """static-skills: JSON file {task_type: skill, "*": fallback}; None: a generic built-in bank"""

    def __post_init__(self):
        if not _checking():
            return
        _at_least_one(self, "analyzer_max_new_tokens", "analyzer_budget")
        _need(self, "skill_control", lambda v: v >= 0, ">= 0")
        _finite_at_least_zero(self, "coef")
        _need(self, "beta", lambda v: 0 < v < math.inf, "> 0 and finite")
        _need(self, "teacher_advantage_clip", lambda v: v > 0, "> 0", optional=True)
        if self.positive_only and self.teacher_advantage:
            raise ValueError(
                "--positive-only shapes the OPD loss, which --teacher-advantage replaces: "
                "choose one"
            )


@dataclass
class Stage1Config:
    """SEED Stage 1, the analyzer SFT before RL (seed, skill-grpo; ``trainer/algorithms/seed/stage1.py``)."""

    skip: Annotated[bool, flag("no_sft")] = False
    """skip Stage 1 (the policy analyzes from the start without SFT)"""
    model: Annotated[str | None, flag("sft_model")] = None
    """start Stage 2 from this Stage 1 model folder (skips Stage 1); set by the run itself"""
    annotator: Annotated[str, flag("sft_annotator")] = "privileged"
    """Stage 1 annotator: privileged (offline, env solver/gold info) or openai:URL"""
    annotator_model: Annotated[str, flag("sft_annotator_model")] = "default"
    """model name sent to an openai:URL annotator"""
    tasks_per_type: Annotated[int, flag("sft_tasks_per_type")] = 30
    """Stage 1 rollouts: training tasks per task type"""
    rollouts: Annotated[int, flag("sft_rollouts")] = 8
    """Stage 1 rollouts per task (also the no-skill baseline of the acceptance filter)"""
    temperature: Annotated[float, flag("sft_temperature")] = 0.4
    """Stage 1 sampling temperature (rollouts and with-skill reruns; the reference's card games
    use 1.0)"""
    accept_filter: Annotated[bool, flag("sft_accept_filter")] = False
    """keep only skills that help on a with-skill rerun (+1 success and +0.125 success rate;
    SEED.md's filter for ALFWorld and the text envs); off: every parsed annotation is a row, as
    the reference's card-game pipeline"""
    reruns: Annotated[int, flag("sft_reruns")] = 8
    """with-skill reruns per candidate skill (with ``sft_accept_filter``)"""
    balance: Annotated[bool, flag("sft_balance")] = True
    """won and lost episodes weigh the same: the rarer outcome's rows are repeated (seeded)"""
    replay: Annotated[float, flag("sft_replay")] = 0.0
    """add this many rollout steps per analyzer row (the policy's own prompts and sampled
    responses, won and lost alike) to the Stage 1 SFT, so the policy keeps acting as it did (not
    in SEED.md: SmolLM2 fine-tuned on analyzer rows alone answered action prompts in JSON)"""
    seed: Annotated[int, flag("sft_seed")] = 0
    """Stage 1's own seed (tasks, rollouts, balance, SFT order): runs of every ``--seed`` start
    from one Stage 1 model, as from one format warm-up"""
    cache: Annotated[bool, flag("sft_cache")] = True
    """keep the Stage 1 model in ``$SEED_GYM_CACHE/models`` (keyed by the starting model, env and
    every Stage 1 setting) and reuse it; off: build it in RUN_DIR/stage1"""
    epochs: Annotated[int, flag("sft_epochs")] = 3
    """Stage 1 SFT epochs"""
    lr: Annotated[float, flag("sft_lr")] = 5e-6
    """Stage 1 SFT learning rate"""
    batch: Annotated[int, flag("sft_batch")] = 4
    """Stage 1 SFT batch size"""

    def __post_init__(self):
        if not _checking():
            return
        _at_least_one(self, "tasks_per_type", "rollouts", "reruns", "batch")
        _need(self, "epochs", lambda v: v >= 0, ">= 0")
        _finite_at_least_zero(self, "lr", "temperature", "replay")
        _need(self, "seed", lambda v: 0 <= v <= SEED_MAX, "in [0, 2**63 - 1]")
        _need(
            self,
            "annotator",
            lambda v: (
                v == "privileged"
                or (v.startswith("openai:") and openai_url_problem(v[len("openai:") :]) is None)
            ),
            "'privileged' or 'openai:URL' with an http(s) URL",
        )


@dataclass
class WarmupConfig:
    """The format warm-up: behaviour cloning of noisy-oracle episodes before RL (not in SEED.md;
    ``trainer/warmup.py``, cached)."""

    episodes: Annotated[int, flag("format_warmup_episodes")] = 0
    """format warm-up (not in SEED.md; for small models that never write the agent format):
    behaviour-clone N oracle train episodes first (trainer/warmup.py; cached); 0: off"""
    epochs: Annotated[int, flag("format_warmup_epochs")] = 1
    """format warm-up: passes over the demonstrations"""
    lr: Annotated[float, flag("format_warmup_lr")] = 1e-4
    """format warm-up: AdamW learning rate"""
    noise: Annotated[float, flag("format_warmup_noise")] = 0.3
    """format warm-up: share of demonstration steps that take a random admissible action instead
    of the oracle's (a noisy expert leaves RL room to improve)"""
    analyzer_episodes: Annotated[int, flag("format_warmup_analyzer_episodes")] = 0
    """format warm-up: also clone the analyzer's JSON answer on N demonstration episodes (half
    noisy-oracle, half random), labelled by the privileged annotator, so a small model can write
    parseable skills at all (not in SEED.md; see docs/training.md); 0: off"""

    skill_episodes: Annotated[int, flag("format_warmup_skill_episodes")] = 0
    """format warm-up: also clone N episodes whose prompts carry a privileged hindsight skill
    (placed as SEED places it) and whose actions follow it, so a small model learns to read the
    skill block its SEED teacher sees (not in SEED.md; docs/seed.md measures why); 0: off"""

    def __post_init__(self):
        if not _checking():
            return
        for name in ("episodes", "analyzer_episodes", "skill_episodes"):
            _need(self, name, lambda v: v >= 0, ">= 0")
        _at_least_one(self, "epochs")
        _need(self, "lr", lambda v: 0 < v < math.inf, "> 0 and finite")
        _need(self, "noise", lambda v: 0.0 <= v <= 1.0, "in [0, 1]")


@dataclass
class EvalConfig:
    """Evaluation on the held-out splits during and after training."""

    every: Annotated[int, flag("eval_every")] = 0
    """evaluate every N iterations (and after the last); 0: only after the last"""
    tasks: Annotated[int, flag("eval_tasks")] = 4
    """tasks per eval split (a fixed seeded subset: the same tasks at every eval)"""
    samples: Annotated[int, flag("eval_samples")] = 1
    """episodes per eval task (success is their mean); more than 1 needs eval_temperature > 0"""
    temperature: Annotated[float, flag("eval_temperature")] = 0.0
    """sampling temperature at eval; 0: greedy. A small model's greedy policy can be stuck on one
    answer while its sampled policy already wins sometimes: sampled eval with several samples per
    task shows that (the learning benchmark uses it)"""
    at_start: Annotated[bool, flag("eval_at_start")] = False
    """also evaluate the starting policy (after the format warm-up and Stage 1) as iteration 0,
    the first point of a learning curve"""
    splits: Annotated[tuple[str, ...], flag("eval_splits")] = ("seen", "unseen")
    """splits to evaluate on"""
    max_new_tokens: Annotated[int | None, flag("eval_max_new_tokens")] = None
    """completion budget at eval; None: max_new_tokens"""
    cache: Annotated[bool, flag("eval_cache")] = False
    """reuse the start eval (iteration 0) of weights already evaluated with the same settings,
    seed, thread count and library versions (``$SEED_GYM_CACHE/evals``, ``trainer/eval_cache.py``):
    runs of several algorithms from one starting model evaluate it once"""

    def __post_init__(self):
        self.splits = tuple(self.splits)
        if not _checking():
            return
        _at_least_one(self, "tasks", "samples")
        _finite_at_least_zero(self, "temperature")
        if self.samples > 1 and self.temperature == 0:
            raise ValueError(
                f"--eval-samples {self.samples} repeats the same greedy episode: set "
                "--eval-temperature > 0"
            )
        _need(self, "every", lambda v: v >= 0, ">= 0")
        _need(self, "max_new_tokens", lambda v: v >= 1, ">= 1", optional=True)
        bad = [s for s in self.splits if s not in SPLITS]
        if bad or not self.splits:
            raise ValueError(
                f"--eval-splits must be one or more of: {', '.join(SPLITS)}, not "
                f"{' '.join(map(str, self.splits)) or 'none'} (unknown eval splits {bad})"
            )


@dataclass
class SystemConfig:
    """Where and how the run executes: threads, devices, processes, the engine, checkpoints and
    logs."""

    threads: int | None = None
    """torch intra-op threads (1 is fastest for tiny models on a busy machine); None: torch default"""
    warmup_threads: int | None = None
    """torch threads while the format warm-up and SEED Stage 1 are built (one-off SFTs that 2
    threads speed up); None: as ``threads``. ``benchmarks/learning.py`` builds it with 2 and trains with 1, and so
    does ``make demo``, the benchmark's SEED seed-0 command"""
    progress: bool = True
    """progress bars: ours (tqdm) and those of transformers and the Hugging Face hub; off:
    none of them"""
    isolate_builds: bool = True
    """build the format warm-up and Stage 1 (when not cached) in a child process, so the memory
    their fine-tuning touched goes back to the system before training (a few seconds of imports)"""
    backend: str = "local"
    """env pool backend: local, subprocess or ray"""
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
    save_every: int = 1
    """write the checkpoint every N iterations (and after the last)"""
    save_hf: bool = True
    """also export the final policy as a Hugging Face folder (RUN_DIR/model)"""
    tensorboard: bool = True
    """write TensorBoard events to RUN_DIR/tb"""
    wandb: bool = False
    """also log every metrics line to Weights & Biases (the wandb extra: pip install
    'seed-gym[wandb]'); the project is $WANDB_PROJECT or seed-gym, and WANDB_MODE=offline keeps
    the run in RUN_DIR/wandb"""
    save_trajectories: bool = True
    """write RUN_DIR/trajectories/iter_*.jsonl (with skills and teacher logprobs) for the report"""

    def __post_init__(self):
        if not _checking():
            return
        _at_least_one(self, "save_every")
        _need(self, "threads", lambda v: v >= 1, ">= 1", optional=True)
        _need(self, "warmup_threads", lambda v: v >= 1, ">= 1", optional=True)
        _one_of(self, "backend", BACKENDS)
        _one_of(self, "engine", ENGINES)
        _one_of(self, "dist_rollout", ("shard", "rank0"))
        _need(
            self,
            "device",
            lambda v: re.fullmatch(r"cpu|auto|cuda(:\d+)?", v) is not None,
            "cpu, cuda, cuda:N or auto",
        )
        _need(
            self, "vllm_gpu_memory_utilization", lambda v: 0.0 < v < 1.0, "in (0, 1)", optional=True
        )
        _need(self, "gpu_memory_gb", lambda v: 0 < v < math.inf, "> 0 and finite")


@dataclass
class TrainConfig:
    """One training run: what is trained on which env (the fields here) and how (the groups)."""

    env: str = "seed_gym/Sokoban-v0"
    """env id (``seed-gym list``)"""
    imports: Annotated[tuple[str, ...], tyro.conf.arg(name="import", aliases=("--imports",))] = ()
    """modules or .py files that register extra envs (``--import docs/examples/guess_number.py``,
    as in eval and play; ``--imports`` is the old spelling)"""
    env_kwarg: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """env constructor argument KEY=VALUE, repeatable; VALUE is JSON when it parses, else a
    string (``--env-kwarg data_dir=/data/webshop``); kept in config.json for --resume"""
    modality: str | None = None
    """observation modality (text, image, text+image); None: the env's default"""
    history: int | None = None
    """past turns shown in the prompt; None: the env's agent-spec default"""
    algo: str = "grpo"
    """algorithm: grpo, seed, skill-grpo, static-skills, opsd, prompt, or one an ``--import`` file
    registers (``trainer/algorithms``)"""
    algo_arg: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """an option of the algorithm KEY=VALUE, repeatable (VALUE is JSON when it parses): how an
    algorithm outside the package takes its settings; kept in config.json for --resume"""
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
    model: str = "tiny"
    """``tiny`` (random tiny Llama), ``smollm2`` (embedded SmolLM2-135M-Instruct) or a local HF folder"""
    bf16: bool = False
    """bf16 autocast for sampling and training (weights stay fp32)"""
    lora_r: int = 0
    """LoRA rank; 0 trains every weight"""
    lora_alpha: int = 16
    """LoRA alpha (scale = alpha / r)"""

    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    opd: OPDConfig = field(default_factory=OPDConfig)
    stage1: Stage1Config = field(default_factory=Stage1Config)
    warmup: WarmupConfig = field(default_factory=WarmupConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    system: SystemConfig = field(default_factory=SystemConfig)

    @property
    def algo_kwargs(self) -> dict[str, Any]:
        """``algo_arg`` as keyword options of the algorithm (``--algo-arg KEY=VALUE``)."""
        return parse_env_kwargs(self.algo_arg)

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """``env_kwarg`` as constructor keyword arguments."""
        return parse_env_kwargs(self.env_kwarg)

    def __post_init__(self):
        """The checks that span groups; each group checks its own fields."""
        self.imports = tuple(self.imports)  # config.json stores a list
        self.env_kwarg = tuple(self.env_kwarg)
        self.algo_arg = tuple(self.algo_arg)
        if not _checking():
            return
        parse_env_kwargs(self.env_kwarg)  # a pair that is not KEY=VALUE: ValueError naming it
        try:
            parse_env_kwargs(self.algo_arg)
        except ValueError as e:
            raise ValueError(str(e).replace("--env-kwarg", "--algo-arg")) from None
        _need(
            self,
            "algo",
            lambda v: v in ALGORITHMS,
            f"one of: {', '.join(sorted(ALGORITHMS))} (or one an --import file registers)",
        )
        _at_least_one(self, "iterations")
        _need(self, "seed", lambda v: 0 <= v <= SEED_MAX, "in [0, 2**63 - 1]")
        _need(self, "lora_r", lambda v: v >= 0, ">= 0")
        _need(self, "lora_alpha", lambda v: v > 0, "> 0")
        _need(self, "history", lambda v: v >= 0, ">= 0", optional=True)
        ALGORITHMS[self.algo].check(self)  # what the algorithm reads, it checks

    # --- flags and serialisation --------------------------------------------------------------
    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with ``changes`` applied, keyed by flag name (``lr=1e-4, eval_tasks=8``) or by
        group (``optim=OptimConfig(...)``); checked like a new config."""
        return TrainConfig.from_dict({**self.to_dict(), **changes})

    def flags(self) -> dict[str, Any]:
        """Every field under its flag name (the flat form of seed-gym <= 0.3's config.json)."""
        return {
            name: getattr(getattr(self, group) if group else self, attr)
            for name, (group, attr) in FLAGS.items()
        }

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        """From ``to_dict``'s nested form, from flag names, or a mix (groups first, then flags)."""
        top: dict[str, Any] = {}
        grouped: dict[str, dict[str, Any]] = {g: {} for g in GROUPS}
        if not isinstance(d, dict):
            raise ValueError(f"a config is a JSON object of fields, not {_json_kind(d)}")
        for key, value in d.items():
            if key in GROUPS:
                value = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
                if not isinstance(value, dict):
                    raise ValueError(
                        f"config field {key!r} must be an object of fields, not {_json_kind(value)}"
                    )
                grouped[key] = {**value, **grouped[key]}
            elif key in FLAGS:
                group, attr = FLAGS[key]
                (grouped[group] if group else top)[attr] = value
            else:
                raise ValueError(f"unknown config field {key!r}")
        _check_types(cls, top, "")
        for group, values in grouped.items():
            names = {f.name for f in dataclasses.fields(GROUPS[group])}
            unknown = sorted(set(values) - names)
            if unknown:
                raise ValueError(f"unknown {group} config fields {unknown}")
            _check_types(GROUPS[group], values, group)
            top[group] = GROUPS[group](**values)
        return cls(**top)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path) -> TrainConfig:
        """A run's ``config.json`` (its ``--import`` files imported first, so the envs and
        algorithms they register are known); a flat one from before 0.2 gets ``LEGACY_DEFAULTS``."""
        d = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(d, dict):
            raise ValueError(f"a config is a JSON object of fields, not {_json_kind(d)}")
        _check_types(cls, {"imports": d.get("imports") or ()}, "")
        try:  # the saved run's envs and algorithms register before its config names them
            import_env_modules(list(d.get("imports") or []))
        except ImportError as e:  # one line naming the module (``import_env_modules``)
            raise ValueError(f"imports: {e}") from None
        if not any(isinstance(d.get(g), dict) for g in GROUPS):  # written by seed-gym <= 0.3
            d = {**LEGACY_DEFAULTS, **d}
        return cls.from_dict(d)


# --- field types: a config.json edited by hand names the field it got wrong ---------------------
def _json_kind(value: Any) -> str:
    """What ``value`` is, in JSON's words, with the value itself when short."""
    kinds = {str: "a string", dict: "an object", list: "a list", tuple: "a list"}
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    if isinstance(value, numbers.Integral):
        kind = "an integer"
    elif isinstance(value, numbers.Real):
        kind = "a number"
    else:
        kind = kinds.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list, tuple)):
        return kind
    shown = repr(value)
    return f"{kind} ({shown[:40]}{'...' if len(shown) > 40 else ''})"


def _type_name(tp: Any) -> str:
    """``tp`` (a field's annotation) in JSON's words: ``an integer or null``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_type_name(args[0]).split(' ', 1)[1]}s"
        return f"a list of {len(args)} {_type_name(args[0]).split(' ', 1)[1]}s"
    names = {int: "an integer", float: "a number", bool: "a boolean (true or false)",
             str: "a string", type(None): "null"}  # fmt: skip
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def _fits(value: Any, tp: Any) -> bool:
    """Whether ``value`` has the type of annotation ``tp`` (an int is a float; a list is a
    tuple: config.json stores tuples as lists)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(v, args[0]) for v in value)
        return len(value) == len(args) and all(
            _fits(v, a) for v, a in zip(value, args, strict=True)
        )
    return True  # a group: from_dict checks its fields


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check_types(cls: type, values: dict[str, Any], group: str) -> None:
    """``ValueError`` naming the first field of ``values`` (fields of ``cls``, in ``group``)
    whose value has the wrong type, its flag and the type it needs."""
    hints = _field_types(cls)
    for name, value in values.items():
        if name in hints and name not in GROUPS and not _fits(value, hints[name]):
            field_name = f"{group}.{name}" if group else name
            raise ValueError(
                f"config field {field_name!r} ({flag_of(cls, name)}) must be "
                f"{_type_name(hints[name])}, not {_json_kind(value)}"
            )


# group name -> its class; flag name -> (group or None for a top-level field, field name)
GROUPS: dict[str, type] = {
    "rollout": RolloutConfig,
    "optim": OptimConfig,
    "opd": OPDConfig,
    "stage1": Stage1Config,
    "warmup": WarmupConfig,
    "eval": EvalConfig,
    "system": SystemConfig,
}


@functools.cache
def _flag_names(group: type) -> dict[str, str]:
    """field name -> flag name in one group (``flag(...)`` in its annotation, else the name)."""
    hints = typing.get_type_hints(group, include_extras=True)
    names = {}
    for f in dataclasses.fields(group):
        given = [m.name for m in getattr(hints[f.name], "__metadata__", ()) if hasattr(m, "name")]
        names[f.name] = given[0] if given else f.name
    return names


FLAGS: dict[str, tuple[str | None, str]] = {
    f.name: (None, f.name) for f in dataclasses.fields(TrainConfig) if f.name not in GROUPS
}
for _group, _cls in GROUPS.items():
    FLAGS.update({flag_name: (_group, attr) for attr, flag_name in _flag_names(_cls).items()})


# --- presets ------------------------------------------------------------------------------------
def tiny() -> TrainConfig:
    """The random tiny Llama on short rollouts: seconds per iteration, for tests and smoke runs."""
    return TrainConfig(
        preset="tiny",
        model="tiny",
        iterations=2,
        rollout=RolloutConfig(tasks_per_iter=2, group_size=2, max_new_tokens=16, max_turns=3),
        optim=OptimConfig(lr=1e-3, micro_batch=4),
        # SEED: structured decoding makes the random model's analyses parse (room for 5 words
        # of byte-level tokens); Stage 1 in seconds
        opd=OPDConfig(analyzer_max_new_tokens=32, analyzer_budget=256),
        stage1=Stage1Config(tasks_per_type=1, rollouts=2, reruns=2, epochs=1, lr=1e-3),
        eval=EvalConfig(tasks=2, max_new_tokens=8, every=0),
        system=SystemConfig(threads=1, isolate_builds=False),  # the tiny model builds in seconds
    )


def smollm2_cpu() -> TrainConfig:
    """SmolLM2-135M-Instruct learning EZPoints (text) on a 2-core CPU: the configuration of the
    measured CPU learning curve (``benchmarks/learning.py --config cpu``, README) and ``make demo``.
    bf16 autocast where the CPU has native bf16 (``models.bf16_is_fast``), fp32 elsewhere
    (emulated bf16 is ~13x slower). Other envs work too (``--env``); budgets, the 4-turn limit
    included, are sized for EZPoints (Sokoban's own limit is 15 steps: ``--max-turns 15``)."""
    return TrainConfig(
        preset="smollm2-cpu",
        model="smollm2",
        env="seed_gym/EZPoints-v0",
        modality="text",
        bf16=bf16_is_fast("cpu"),
        iterations=3,
        # SmolLM2-135M never writes the agent format unaided: clone 32 noisy-oracle episodes
        # first (cached per env; the analyzer's answers are Stage 1's to teach, so GRPO starts
        # from the policy SEED's Stage 1 starts from, as in the reference). 3 epochs: after 2
        # the clone wrote "1" for "10" and won 3% of sampled seen episodes; after 3 it won 58%,
        # and 28-42% since its thoughts carry the operator's arithmetic, which then carries over
        # to the unseen pairs (docs/training.md). 32 + 8 episodes instead of 64 + 16: 114 SFT
        # steps instead of 222, 475 s instead of 1023 on 2 threads, so the demo and the
        # benchmark fit their budgets (`benchmarks/learning.py --config cpu-long` keeps 64 + 16)
        # + 16 episodes replayed with a privileged skill in every prompt: SEED's teacher is this
        # policy reading a skill block; a clone that never saw one was only distracted by it
        # (the block lowered every token by 0.31 nats, forks no more than another task's skill
        # did; docs/seed.md)
        # Noise 0.15 (the default 0.3 otherwise): at 0.3 the clone sampled "1" for "10" (the
        # noise's "1" shares the token) and won 0 of 32 sampled train episodes; at 0.15, 18 of 32
        warmup=WarmupConfig(episodes=32, epochs=3, noise=0.15, skill_episodes=16),
        # a right formula takes 4 turns (card, operator, card, "="); EZPoints' own limit is 8.
        # 4 turns leave no room for an illegal token (a 0-reward no-op), so the step-level
        # advantage charges it through the lost episode; with 6, two were free and the trained
        # policy kept appending numbers it does not hold after "4 +" on unseen {4,8}. The
        # benchmark's GRPO unseen gain: +0.26 [+0.14, +0.40] at 4 turns, +0.07 [-0.01, +0.15] at 6
        # (README, docs/training.md). 64 new tokens: the warm-up's operator step writes out the
        # sum and the product (49 tokens for {3,4})
        rollout=RolloutConfig(tasks_per_iter=4, group_size=8, max_turns=4, temperature=1.0),
        # a 135M model fully fine-tuned, lr 5e-5, 4-5 AdamW steps per iteration (32 of ~150
        # step-samples each): fast enough to see learning in 3 iterations (docs/training.md).
        # KL 0.001 to the warmed model, a tenth of the reference's 0.01 (`--kl-coef 0.01` restores
        # it; docs/seed.md, "Departures"): at 0.01 `make demo`'s SEED collapsed in iteration 3
        # (seen 0.53 -> 0.00), and its collapsing update, replayed from the same state, kept
        # winning with a tenth of the KL (23 of 32 rollouts, 0 at 0.01); rerun at 0.001 the demo
        # went 0.53 -> 0.83 seen and GRPO kept its gain (0.67 vs 0.64 at 0.01, one seed). Not 0:
        # in the one SEED run without KL the third update taught the clone to drop
        # "</think><action>" (63% invalid output at the final eval). It costs a reference forward
        # per micro-batch. Over 6 iterations (benchmarks/learning.py cpu-long-opd, 5 seeds)
        # neither value is safe at this lr: at 0.001 SEED's seeds 3 and 4 still collapsed or fell
        # once their groups saturated and GRPO's seed 2 drifted (kl_ref 0.245).
        optim=OptimConfig(lr=5e-5, mini_batch_size=32, micro_batch=8, kl_coef=0.001),
        # sampled success, 3 episodes per task (same seeds at every eval): 4-turn episodes made
        # an eval of 12 x 2 take 84-91 s at 1 thread instead of 96-114 s at 6 turns, and the
        # third sample narrows the paired interval
        eval=EvalConfig(at_start=True, tasks=12, samples=3, temperature=1.0),
        # SEED: structured analyzer answers of up to 128 tokens a field (a whole skill fits)
        opd=OPDConfig(analyzer_max_new_tokens=128, analyzer_budget=768),
        # Stage 1 as the reference's card pipeline, at CPU scale: rollouts of the warmed policy
        # at temperature 1, every privileged annotation kept, won and lost balanced; lr 1e-4 (the
        # warm-up's): at the paper's 5e-6 the 135M model does not learn the analyzer's answers
        # + one replayed rollout step per analyzer row: on analyzer rows alone the policy
        # answered its action prompts in JSON afterwards (0 of 32 sampled train episodes won,
        # from 18 of 32)
        stage1=Stage1Config(
            tasks_per_type=16, rollouts=4, temperature=1.0, epochs=3, lr=1e-4, replay=1.0
        ),
        # on a shared 2-core machine, 2 torch threads ran 8x slower than 1 (measured)
        system=SystemConfig(threads=1),
    )


def tiny_vlm() -> TrainConfig:
    """The tiny LLaVA-style model (random tiny CLIP tower + the tiny Llama) on image observations:
    the vision-language path end to end in seconds. Stage 1 is skipped (``no_sft``): its base
    rollouts are text-only."""
    cfg = tiny()
    return cfg.replace(preset="tiny-vlm", model="tiny-vlm", modality="image", no_sft=True)


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
    gives, Stage 1 with 30 tasks per type x 8 rollouts (ALFWorld and the text envs: T 0.4 and the
    8-rerun acceptance filter; the card games: T 1 and every parsed annotation), 3 SFT epochs at
    lr 5e-6. ``--dry-run`` prints what it needs."""
    env_id, model, modality, history = PAPER_ENVS[env]
    card_game = env in ("sokoban", "ezpoints")
    return TrainConfig(
        preset=f"paper-{env}",
        env=env_id,
        model=model,
        modality=modality,
        history=history,
        algo="seed",
        bf16=True,
        iterations=150,
        rollout=RolloutConfig(
            tasks_per_iter=16, group_size=8, max_new_tokens=512, temperature=1.0, gen_batch=256
        ),
        optim=OptimConfig(
            lr=1e-6, kl_coef=0.01, ent_coef=0.001, mini_batch_size=256, micro_batch=8
        ),
        opd=OPDConfig(coef=0.01, beta=5.0, analyzer_max_new_tokens=512),
        # the card games (reference): temperature 1, every parsed annotation kept; ALFWorld and
        # the text envs: temperature 0.4 and the with-skill rerun filter (SEED.md Stage 1)
        stage1=Stage1Config(
            tasks_per_type=30,
            rollouts=8,
            temperature=1.0 if card_game else 0.4,
            accept_filter=not card_game,
            reruns=8,
            epochs=3,
            lr=5e-6,
        ),
        # the reference validates with sampling at 0.4
        eval=EvalConfig(every=5, tasks=128, temperature=0.4),
        system=SystemConfig(
            device="auto", engine="vllm", fsdp=True, gradient_checkpointing=True, save_every=5
        ),
    )


PRESETS: dict[str, Callable[[], TrainConfig]] = {"tiny": tiny, "smollm2-cpu": smollm2_cpu}
PRESETS["tiny-vlm"] = tiny_vlm
for _env in PAPER_ENVS:
    PRESETS[f"paper-{_env}"] = functools.partial(paper, _env)


# --- CLI ----------------------------------------------------------------------------------------
PROG = "seed-gym train"


def parse_args(argv: list[str] | None) -> TrainConfig:
    """``--preset NAME`` (or, with ``--resume``, the run's saved config) then field overrides.

    A bad flag or value (out of range, unknown, of the wrong type; an ``--import`` that fails;
    an unknown preset) ends the command with one line naming the flag, the value and the valid
    range, exit status 2 (``seed_gym.oneline.usage_error``). A run folder that ``--resume``
    cannot use (no ``config.json``, or one that does not hold a valid config) ends it with one
    line naming the file, exit status 1."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset", default=None)
    pre.add_argument("--out", default=None)
    pre.add_argument("--resume", action="store_true")
    pre.add_argument("--import", "--imports", dest="imports", action="append", default=[])
    known, _ = pre.parse_known_args(argv)
    # user envs and algorithms register before the config names them
    try:
        import_env_modules(list(known.imports))
    except ImportError as e:  # one line naming the module (``import_env_modules``)
        usage_error(PROG, e)
    base = TrainConfig()
    if known.resume:
        if known.out is None:
            usage_error(PROG, "--resume needs --out RUN_DIR")
        base = _saved_config(Path(known.out) / "config.json")
    elif known.preset is not None:
        if known.preset not in PRESETS:
            usage_error(
                PROG, f"--preset must be one of: {', '.join(PRESETS)}, not {known.preset!r}"
            )
        base = PRESETS[known.preset]()
    argv = [_NEGATED_ALIASES.get(a, a) for a in argv or []]  # --sft: --no-no-sft
    if {"-h", "--help"} & set(argv):
        print(help_text(base, preset=None if known.resume else known.preset))
        raise SystemExit(0)
    token = _CHECKS_DEFERRED.set(True)  # tyro's box would wrap our messages: checked below
    try:
        parsed = _tyro_cli(base, argv)
    finally:
        _CHECKS_DEFERRED.reset(token)
    try:
        cfg = TrainConfig.from_dict(parsed.to_dict())
    except (ValueError, TypeError) as e:
        usage_error(PROG, e)
    if cfg.system.wandb and importlib.util.find_spec("wandb") is None:
        usage_error(PROG, "--wandb needs the wandb package: pip install 'seed-gym[wandb]'")
    return cfg


def _saved_config(saved: Path) -> TrainConfig:
    """The config ``--resume`` starts from; one line naming the file (exit 1) when it cannot."""
    if not saved.is_file():
        raise SystemExit(f"{PROG}: --resume: {saved} does not exist (no run there)")
    try:
        return TrainConfig.load(saved)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise SystemExit(f"{PROG}: {saved} is not valid JSON ({one_line(e)[:200]})") from None
    except (ValueError, TypeError, OSError) as e:
        raise SystemExit(f"{PROG}: {saved}: {one_line(e)}") from None


def _tyro_cli(base: TrainConfig, argv: list[str]) -> TrainConfig:
    """``tyro.cli`` on the flat flags, its parse errors (a value of the wrong type, an unknown
    flag) as one line instead of its box (help still goes to stdout)."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            cfg = tyro.cli(
                tyro.conf.OmitArgPrefixes[TrainConfig],  # flat flags: --lr, not --optim.lr
                args=argv,
                default=base,
                prog=PROG,
                description="Train a policy on a registered env: GRPO, SEED and the baselines.",
            )
    except SystemExit as e:
        if e.code in (0, None):  # --help
            sys.stderr.write(captured.getvalue())
            raise
        usage_error(PROG, f"{_box_text(captured.getvalue())} (see {PROG} --help)")
    sys.stderr.write(captured.getvalue())  # tyro's warnings, if any
    return cfg


def _box_text(text: str) -> str:
    """The message of tyro's error box: the rows above its first rule, on one line."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # colours, where tyro forces them
    rows: list[str] = []
    title = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("\u256d"):  # the top border holds the title
            title = line.strip("\u256d\u256e\u2500 ")
            continue
        body = line.strip("\u2502 ")
        if not body or set(body) <= set("\u2500\u2570\u256f"):  # a rule or the bottom border
            if rows:
                break
            continue
        rows.append(body)
    message = re.sub(r"^Error parsing ", "", one_line(" ".join(rows)))
    return message or title or one_line(text) or "invalid arguments"


# --- seed-gym train --help: one line per flag, then the presets and algorithms ------------------
def _field_docs(cls: type) -> dict[str, str]:
    """field -> its docstring (the string below it in the class body), as tyro reads them."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _plain(text: str) -> str:
    """Help text without RST markup (``x`` -> x)."""
    return text.replace("``", "")


def _first_sentence(text: str) -> str:
    """Up to the first sentence end (the rest is in the field's docstring and the docs)."""
    text = _plain(text)
    for m in re.finditer(r"(?<=[a-z0-9)\]])\. (?=[A-Z(])", text):
        if not re.search(r"\b(approx|e\.g|i\.e|vs|etc)$", text[: m.start()]):
            return text[: m.start()]
    return text.rstrip(".")


def _asides(text: str) -> list[tuple[int, int]]:
    """Spans of the parenthesised asides `` (...)`` outside any other parentheses."""
    spans, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0 and i > 1 and text[i - 1] == " " and text[i - 2] not in "*+-/=<>":
                start = i - 1
            elif depth == 0:
                start = -1  # a call or an operand: ceil(N / k), w * (a - b) are no asides
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0 and start >= 0:
                spans.append((start, i + 1))
    return spans


def _short(text: str, limit: int) -> str:
    """The first sentence of ``text`` within ``limit`` characters: its longest asides in
    parentheses dropped first, then cut at the last clause break (``;``, ``,``)."""
    text = _first_sentence(text)
    while len(text) > limit and _asides(text):
        a, b = max(_asides(text), key=lambda span: span[1] - span[0])
        text = text[:a] + text[b:]
    if len(text) <= limit:
        return text
    depth, cut = 0, 0
    for i, ch in enumerate(text[: limit - 4]):  # room for " ..."
        if depth == 0 and text[i : i + 2] in ("; ", ", ") and i >= 12:
            cut = i
        depth += {"(": 1, ")": -1}.get(ch, 0)
    if not cut:
        cut = text.rfind(" ", 0, limit - 4)
    return text[:cut].rstrip(":;, ") + " ..."


_CHOICES: dict[str, Callable[[], Any]] = {
    "modality": lambda: MODALITIES,
    "engine": lambda: ENGINES,
    "backend": lambda: BACKENDS,
    "advantage": lambda: ADVANTAGES,
    "dist_rollout": lambda: ("shard", "rank0"),
}
_METAVARS = {int: "INT", float: "FLOAT", str: "STR"}
# what a flag does where its field's docstring says what the field records
_HELP = {"preset": "start from this preset (presets below); flags override its fields"}
_NAMED = {"algo": "NAME", "preset": "NAME", "env": "ID", "out": "RUN_DIR", "model": "NAME|PATH"}


def _metavar(name: str, tp: Any) -> str:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    optional = len(args) < len(typing.get_args(tp))
    if name in _NAMED:
        word = _NAMED[name]
    elif name in _CHOICES:
        word = "{" + ",".join(_CHOICES[name]()) + "}"
    elif name in ("env_kwarg", "algo_arg"):
        return "KEY=VALUE"
    elif typing.get_origin(tp) is tuple:
        inner = typing.get_args(tp)
        if len(inner) == 2 and inner[1] is Ellipsis:
            return f"{_METAVARS.get(inner[0], 'STR')} [...]"
        return " ".join(_METAVARS.get(a, "STR") for a in inner)
    else:
        word = _METAVARS.get(args[0] if optional else tp, "VALUE")
    return f"{word}|None" if optional else word


def _shown_default(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) or "none"
    return "None" if value is None else str(value)


def _negated(flag_name: str) -> bool:
    """A boolean field whose flag already says no (``no_sft``)."""
    return flag_name.startswith("no_") and flag_name[3:] not in FLAGS


def _flag_line(cls: type, attr: str, value: Any, width: int) -> str:
    name = _flag_names(cls)[attr]
    tp = _field_types(cls)[attr]
    dashed = "--" + name.replace("_", "-")
    if name == "imports":
        left = "--import FILE"
    elif tp is bool:
        left = (
            f"{dashed}, --{name[3:].replace('_', '-')}"
            if _negated(name)
            else (f"{dashed}, --no-{name.replace('_', '-')}")
        )
    else:
        left = f"{dashed} {_metavar(name, tp)}"
    pad = 32
    default = f" (default {_shown_default(value)})"
    doc = _HELP.get(name) or _field_docs(cls).get(attr, "")
    text = _short(doc, width - pad - len(default)) + default
    head = f"  {left}"
    if len(head) >= pad:
        head, lines = head + "\n", textwrap.wrap(text, width - pad)
        return head + "\n".join(" " * pad + ln for ln in lines)
    lines = textwrap.wrap(text, width - pad)
    return "\n".join((head.ljust(pad) if i == 0 else " " * pad) + ln for i, ln in enumerate(lines))


def _preset_lines() -> list[str]:
    """One line per preset (presets built by one function share it: ``paper-*``)."""
    by_doc: dict[str, list[str]] = {}
    for name, fn in PRESETS.items():
        doc = (getattr(fn, "func", fn).__doc__ or "").strip()
        by_doc.setdefault(_short(" ".join(doc.split()), 150), []).append(name)
    return [
        f"{', '.join(names)}: {doc}" if doc else ", ".join(names) for doc, names in by_doc.items()
    ]


def help_text(base: TrainConfig, *, preset: str | None = None, width: int | None = None) -> str:
    """``seed-gym train --help``: usage, every flag on its own line with its first sentence and
    its default (``preset``'s when one is given), then the presets and the algorithms, both read
    from their registries (algorithms an ``--import`` file registers included)."""
    width = width or max(80, min(110, shutil.get_terminal_size((100, 24)).columns))
    wrap = functools.partial(textwrap.fill, width=width, subsequent_indent="    ")
    out = [
        f"usage: {PROG} [--preset NAME] [--algo NAME] [--env ID] [--out RUN_DIR] [--resume] "
        "[--FLAG VALUE ...]",
        "",
        textwrap.fill(
            "Train a policy on a registered env: GRPO, SEED and the baselines. A preset sets "
            "every field; flags override it; --resume starts from the run's saved config "
            "instead. Each flag's first sentence is shown; the field docstrings in "
            "trainer/config.py and docs/training.md say more.",
            width,
        ),
        "",
        "options" + (f" (defaults: preset {preset})" if preset else "") + ":",
        "  -h, --help                    this help",
    ]
    groups: list[tuple[str, type, Any]] = [("", TrainConfig, base)]
    groups += [(g, cls, getattr(base, g)) for g, cls in GROUPS.items()]
    for group, cls, obj in groups:
        if group:
            out += ["", wrap(f"{group}: {_short(' '.join((cls.__doc__ or '').split()), 150)}")]
        for f in dataclasses.fields(cls):
            if f.name not in GROUPS:
                out.append(_flag_line(cls, f.name, getattr(obj, f.name), width))
    out += ["", "presets (--preset NAME):"]
    out += [wrap(f"  {line}") for line in _preset_lines()]
    out += ["", "algorithms (--algo NAME; `seed-gym list --algos`):"]
    names = sorted(ALGORITHMS)
    pad = max(map(len, names)) + 4
    out += [
        textwrap.fill(
            f"  {n.ljust(pad)}{_plain(getattr(ALGORITHMS[n], 'description', '') or '')}",
            width=width,
            subsequent_indent=" " * (pad + 2),
        )
        for n in names
    ]
    out += [
        "",
        "examples:",
        f"  {PROG} --preset tiny --env seed_gym/EZPoints-v0 --modality text --out runs/tiny",
        f"  {PROG} --algo seed --preset smollm2-cpu --out runs/demo",
        f"  {PROG} --out runs/demo --resume --iterations 8",
    ]
    return "\n".join(out)


# ``--sft`` for ``--no-no-sft``: a field named for its negation gets a plain opposite
_NEGATED_ALIASES = {
    "--" + name[3:].replace("_", "-"): "--no-" + name.replace("_", "-")
    for group in GROUPS.values()
    for attr, name in _flag_names(group).items()
    if _field_types(group)[attr] is bool and _negated(name)
}
