"""Format warm-up: behaviour cloning on oracle demonstrations before RL (optional, off by default).

Why: SmolLM2-135M-Instruct, the model that runs on a CPU, never writes the agent format
(``<think>…</think><action>…</action>``): every completion is invalid, every episode of a GRPO
group gets the same return, and RL has no signal. SEED.md's setup needs no such step (its 3B model
follows the format from the prompt alone), so this is a departure, made only to give small models
something to learn from. It is off unless ``--format-warmup-episodes N`` is set.

What it does:
1. ``demonstrations`` plays the env's oracle (``env.unwrapped.oracle_action()``) through the agent
   env (``seed_gym.make_agent_env``, the same prompts the policy reads) and records one row per
   step: ``{"messages": prompt chat, "completion": <think>…</think> + action}``. The reasoning is
   short and generic: it restates what the observation shows (positions on the Sokoban grid, the
   card values in EZPoints, the task in ALFWorld/WebShop, the query in SearchQA) and names the
   action; it never reveals privileged information beyond the action itself. A fraction
   ``noise`` of steps takes (and records) a random admissible action instead, so the cloned policy
   is a noisy expert and RL has room to improve. Every completion is stepped through the agent env,
   so a row exists only if the env's own parser accepted it.
   ``analyzer_demonstrations`` (optional, ``analyzer_episodes``) adds rows for SEED's analyzer:
   the analyzer prompt of a played episode (half noisy-oracle, half random: successes and
   failures) -> the privileged annotator's skill JSON. SmolLM2 never answers the analyzer prompt
   in JSON unaided, so without them no skill parses and SEED reduces to GRPO. This is Stage 1's
   SFT data without its rerun filter (which a policy that never wins cannot pass).
   ``skill_demonstrations`` (optional, ``skill_episodes``) adds rows whose prompts carry a
   privileged hindsight skill, placed as SEED places it, and whose actions follow it: SEED's
   teacher is the policy reading a skill block, which a clone that never saw one only misreads.
2. ``format_warmup`` fine-tunes on the rows with the loss on completion tokens only (the answer-only
   SFT of ``trainer/algorithms/seed/stage1.py``).
3. ``build_warmup_model`` caches the warmed model as a Hugging Face folder under
   ``seed_gym.data.cache_dir("models", ...)``, keyed by env, base model, every setting and the
   transformers version; ``seed-gym train`` loads it in place of the base model.

    python -m seed_gym.trainer.warmup --env seed_gym/Sokoban-v0 --episodes 16   # prints the folder
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import seed_gym
from seed_gym.registration import parse_env_kwargs
from seed_gym.trainer.algorithms.seed.analyzer import (
    ANALYZER_PROMPT_VERSION,
    analyzer_kwargs,
    analyzer_messages,
)
from seed_gym.trainer.algorithms.seed.annotators import PrivilegedAnnotator
from seed_gym.trainer.backends.models import autocast, bf16_is_fast, load_policy, save_policy
from seed_gym.trainer.model_cache import base_key, here, model_cache_dir, publish, staging_dir
from seed_gym.trainer.trajectory import StepSample, Trajectory
from seed_gym.wrappers.skill import insert_skill
from seed_gym.wrappers.spec import DemoStep, next_action

# bump when demonstrations or training change, so old cached models are not reused; it is also
# part of the demonstrations' random stream, so a bump redraws them (tests pin outcomes per env)
WARMUP_VERSION = 5  # 3: analyzer prompts state the outcome in words and the env return; 4: the
# EZPoints reward change (0.2.0) changed the noisy demonstrations under the same key, and SFT
# micro-batches are grouped by prompt (sft.micro_batches); 5: EZPoints' demonstrations write out the
# sum and the product before the operator (templates/ezpoints.reasoning)


# --- demonstrations -----------------------------------------------------------------------------
@dataclass
class Episode:
    """One played demonstration: its SFT rows (one per step) and the same steps as a
    ``Trajectory`` whose ``privileged`` is the env's ``privileged_info()`` at reset."""

    rows: list[dict[str, Any]]
    trajectory: Trajectory


def _play(
    env: Any,
    rng: np.random.Generator,
    env_id: str,
    task_id: str,
    e: int,
    noise: float,
    max_steps: int | None,
    *,
    env_seed: int | None = None,
    skill: str | None = None,
    script: list[str] | None = None,
) -> Episode:
    """One noisy-oracle episode of ``task_id`` through the agent env ``env``. ``env_seed``
    replays a given start; ``script`` takes these actions first (then the oracle's), without
    noise; ``skill`` is placed in every recorded prompt as SEED places it (``insert_skill``)."""
    spec = env.agent_spec
    env_seed = int(rng.integers(2**31)) if env_seed is None else env_seed
    obs, info = env.reset(seed=env_seed, options={"task_id": task_id})
    traj = Trajectory(
        traj_id=f"warmup-{e}",
        group_id=f"warmup-{e}",
        task_id=task_id,
        task_type=str(info.get("task_type", "")),
        task=str(info.get("task", "")),
        seed=env_seed,
        privileged=dict(env.unwrapped.privileged_info()),
    )
    rows: list[dict[str, Any]] = []
    for t in range(max_steps or 10**9):
        if obs.get("images"):
            raise ValueError(
                f"the format warm-up is text-only; {env_id} gave images: pass modality='text'"
            )
        if not env.unwrapped.oracle_can_win():
            break  # a Sokoban box stuck after a random push: the oracle would only flail
        source = "oracle" if skill is None else "skill"
        action = env.unwrapped.oracle_action()
        if script is not None and t < len(script):
            action = script[t]
        elif noise and rng.random() < noise:
            source = "noise"
            action = env.unwrapped.sample_action(rng, info.get("admissible_actions"))
        anchor = str(info["anchor"])
        completion = spec.demo_completion(DemoStep(anchor, str(info["task"]), action, info))
        if source == "noise" and not spec.parse(completion).valid:
            # a junk random action (SearchQA's sampler writes some): the oracle instead
            source, action = "oracle", env.unwrapped.oracle_action()
            completion = spec.demo_completion(DemoStep(anchor, str(info["task"]), action, info))
        messages = [dict(m) for m in obs["messages"]]
        if skill is not None:
            messages = insert_skill(messages, skill, spec.task_markers, spec.fallback_marker)
        obs, reward, terminated, truncated, info = env.step(completion)
        if not info["format_valid"]:
            raise ValueError(
                f"{env_id}: the warm-up completion {completion!r} does not parse under the "
                "env's agent spec"
            )
        rows.append(
            {
                "messages": messages,
                "completion": completion,
                "provenance": {
                    "env_id": env_id,
                    "task_id": task_id,
                    "episode": e,
                    "step": t + 1,
                    "source": source,
                },
            }
        )
        traj.steps.append(
            StepSample(
                messages=messages,
                prompt_ids=[],
                response_ids=[],
                old_logprobs=[],
                response_text=completion,
                observation=anchor,
                action=info.get("parsed_action"),
                valid=True,
                reward=float(reward),
            )
        )
        traj.won = bool(info.get("won", False))
        if terminated or truncated:
            traj.truncated = bool(truncated and not terminated)
            break
    return Episode(rows, traj)


def play_demonstrations(
    env_id: str,
    split: str = "train",
    n_episodes: int = 16,
    seed: int = 0,
    history: int | None = None,
    modality: str | None = "text",
    *,
    noise: float | list[float] = 0.0,
    max_steps: int | None = None,
    stream: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> list[Episode]:
    """``n_episodes`` noisy-oracle episodes on a seeded subset of ``split``'s tasks (cycled if the
    split is smaller). ``noise`` is the share of steps that take a random admissible action (a list:
    episode ``e`` uses ``noise[e % len(noise)]``); ``stream`` picks an independent random stream."""
    levels = noise if isinstance(noise, list) else [noise]
    if not levels or not all(0.0 <= x <= 1.0 for x in levels):
        raise ValueError(f"noise must be in [0, 1], got {noise}")
    if n_episodes < 0:
        raise ValueError(f"n_episodes must be >= 0, got {n_episodes}")
    key = [int(seed), WARMUP_VERSION] + ([stream] if stream else [])
    rng = np.random.default_rng(np.random.SeedSequence(key))
    env = seed_gym.make_agent_env(
        env_id, split=split, modality=modality, history=history, **(env_kwargs or {})
    )
    if seed_gym.agent_spec(env_id).reasoning is next_action:
        warnings.warn(
            f"{env_id} has no AgentSpec.reasoning: its demonstrations show 'Next I <action>.' as "
            "their reasoning (docs/adding_an_env.md, section 5)",
            stacklevel=2,
        )
    try:
        ids = list(env.unwrapped.manifest(split).task_ids)
        order = [ids[int(i)] for i in rng.permutation(len(ids))]
        return [
            _play(env, rng, env_id, order[e % len(order)], e, levels[e % len(levels)], max_steps)
            for e in range(n_episodes)
        ]
    finally:
        env.close()


def demonstrations(
    env_id: str,
    split: str = "train",
    n_episodes: int = 16,
    seed: int = 0,
    history: int | None = None,
    modality: str | None = "text",
    *,
    noise: float = 0.0,
    max_steps: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Oracle (plus ``noise`` random admissible actions) episodes as SFT rows.

    A random step records the random action (the cloned policy imitates a noisy expert). Each
    completion is stepped through the agent env; one its parser rejects raises, since a formatter
    that writes invalid output would teach the wrong format. Rows: ``{"messages", "completion",
    "provenance": {env_id, task_id, step, source: oracle|noise}}``.
    """
    episodes = play_demonstrations(
        env_id, split, n_episodes, seed, history, modality, noise=noise, max_steps=max_steps,
        env_kwargs=env_kwargs,
    )  # fmt: skip
    return [row for ep in episodes for row in ep.rows]


def analyzer_demonstrations(
    env_id: str,
    split: str = "train",
    n_episodes: int = 8,
    seed: int = 0,
    history: int | None = None,
    modality: str | None = "text",
    *,
    noise: float = 0.3,
    analyzer_kwargs: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Analyzer rows {analyzer prompt of a demonstration episode -> the privileged annotator's
    skill JSON}, so a small model learns to answer the analyzer prompt in JSON at all.

    Half the episodes are played with ``noise`` (mostly successes: workflow skills), half with
    random actions only (failures: avoidance skills), on a random stream of their own.
    ``analyzer_kwargs`` (``max_prompt_tokens``, ``count_tokens``) must be the trainer's, so the
    prompts look exactly like Stage 2's (``analyzer.analyzer_kwargs``)."""
    episodes = play_demonstrations(
        env_id, split, n_episodes, seed, history, modality, noise=[noise, 1.0], stream=1,
        env_kwargs=env_kwargs,
    )  # fmt: skip
    annotator = PrivilegedAnnotator(env_id)
    rows = []
    for ep in episodes:
        skill = annotator.annotate_one(ep.trajectory, ep.trajectory.privileged or {})
        if skill is None:
            continue
        traj = ep.trajectory
        rows.append(
            {
                "messages": analyzer_messages(traj, **(analyzer_kwargs or {})),
                "completion": skill.to_json(),
                "provenance": {
                    "env_id": env_id,
                    "task_id": traj.task_id,
                    "episode": traj.traj_id,
                    "source": "analyzer",
                    "won": traj.won,
                },
            }
        )
    return rows


def skill_demonstrations(
    env_id: str,
    split: str = "train",
    n_episodes: int = 8,
    seed: int = 0,
    history: int | None = None,
    modality: str | None = "text",
    *,
    noise: float = 0.3,
    env_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Rows whose prompts carry a hindsight skill and whose completions follow it, so a small
    model learns to read the Episode-Level Skill block SEED's teacher sees (not in SEED.md: its
    3B model reads instructions unaided; docs/seed.md measures a clone that never saw a skill).

    Each episode: a played episode of a training task (half noisy-oracle, half random: won and
    lost) is annotated by the privileged annotator (a workflow for a win, an avoidance rule that
    names the solution for a loss); the task is then replayed from the same start with that skill
    in every prompt, repeating the won episode's actions or, after a loss, the oracle's."""
    sources = play_demonstrations(
        env_id, split, n_episodes, seed, history, modality, noise=[noise, 1.0], stream=2,
        env_kwargs=env_kwargs,
    )  # fmt: skip
    annotator = PrivilegedAnnotator(env_id)
    env = seed_gym.make_agent_env(
        env_id, split=split, modality=modality, history=history, **(env_kwargs or {})
    )
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), WARMUP_VERSION, 3]))
    rows: list[dict[str, Any]] = []
    try:
        for e, ep in enumerate(sources):
            traj = ep.trajectory
            skill = annotator.annotate_one(traj, traj.privileged or {})
            if skill is None:
                continue
            script = [s.action for s in traj.steps if s.action is not None] if traj.won else None
            replay = _play(env, rng, env_id, traj.task_id, e, 0.0, None, env_seed=traj.seed,
                           skill=skill.skill, script=script)  # fmt: skip
            for row in replay.rows:
                row["provenance"]["won"] = replay.trajectory.won
            rows += replay.rows
    finally:
        env.close()
    return rows


# --- training -----------------------------------------------------------------------------------
def format_warmup(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    *,
    epochs: int = 1,
    lr: float = 1e-4,
    micro_batch: int = 4,
    seed: int = 0,
    bf16: bool = False,
    val_fraction: float = 0.1,
    max_length: int = 4096,
    progress: bool = False,
) -> dict[str, float]:
    """Fine-tune ``model`` in place on ``rows`` (answer-only loss: completion tokens and eos), one
    AdamW step per ``micro_batch`` rows; ``val_fraction`` of the rows are held out to report the
    completion loss before and after. Returns the statistics."""
    from seed_gym.trainer.algorithms.seed.stage1 import (
        sft_train,  # torch; warmup imports without it
    )

    region = autocast(bf16, next(model.parameters()).device.type, across_steps=True)
    t0 = time.perf_counter()
    with region:
        result = sft_train(
            model,
            tokenizer,
            rows,
            epochs=epochs,
            lr=lr,
            batch_size=micro_batch,
            val_fraction=val_fraction,
            max_length=max_length,
            seed=seed,
            progress="format warm-up" if progress else None,
        )
    stats: dict[str, float] = {
        "rows": float(len(rows)),
        "train_rows": float(result.n_train),
        "val_rows": float(result.n_val),
        "skipped_rows": float(result.skipped),
        "steps": float(len(result.train_losses)),
        "seconds": time.perf_counter() - t0,
    }
    if result.epoch_losses:
        stats["train_loss_first_epoch"] = result.epoch_losses[0]
        stats["train_loss_last_epoch"] = result.epoch_losses[-1]
    if result.val_losses:
        stats["val_loss_before"] = result.val_losses[0]
        stats["val_loss_after"] = result.val_losses[-1]
    return stats


# --- the cached warmed model --------------------------------------------------------------------
@dataclass(frozen=True)
class WarmupSettings:
    """Everything the warmed weights depend on (with env, base and transformers version)."""

    episodes: int = 16
    epochs: int = 1
    lr: float = 1e-4
    noise: float = 0.3
    micro_batch: int = 4
    seed: int = 0
    split: str = "train"
    modality: str | None = "text"
    history: int | None = None
    bf16: bool = True
    max_length: int = 4096
    analyzer_episodes: int = 0  # analyzer rows (analyzer_demonstrations); 0: none
    skill_episodes: int = 0  # skill-following rows (skill_demonstrations); 0: none
    analyzer_budget: int | None = None  # the trainer's analyzer prompt budget (tokens; None: all)
    env_kwargs: tuple[str, ...] = ()  # the env's --env-kwarg pairs (KEY=VALUE)

    def __post_init__(self):
        if self.episodes < 1 or self.epochs < 1 or self.micro_batch < 1:
            raise ValueError("warm-up episodes, epochs and micro_batch must be >= 1")
        if self.analyzer_episodes < 0 or self.skill_episodes < 0:
            raise ValueError("analyzer_episodes and skill_episodes must be >= 0")
        if self.lr <= 0:
            raise ValueError(f"warm-up lr must be > 0, got {self.lr}")
        if not 0.0 <= self.noise <= 1.0:
            raise ValueError(f"warm-up noise must be in [0, 1], got {self.noise}")


def warmup_dir(env_id: str, base: str, settings: WarmupSettings) -> Path:
    """The cache folder of one (env, base, settings, transformers version) combination. A base
    given as a path is keyed by its resolved path (rebuild with ``force`` after changing it)."""
    key = {
        "env": env_id,
        "base": base_key(base),
        # fields added later are left out at their default: older keys stay what they were
        "settings": {
            k: v
            for k, v in asdict(settings).items()
            if v or k not in ("env_kwargs", "skill_episodes")
        },
        "version": WARMUP_VERSION,
    }
    if settings.analyzer_episodes:  # the analyzer rows' prompt asks by outcome since 0.4
        key["analyzer_prompt"] = ANALYZER_PROMPT_VERSION
    return model_cache_dir("warmup", env_id, base, key)


def build_warmup_model(
    env_id: str,
    base: str = "smollm2",
    settings: WarmupSettings | None = None,
    *,
    force: bool = False,
    threads: int | None = None,
    progress: bool = True,
    **overrides: Any,
) -> Path:
    """The warmed model's HF folder: built once (demonstrations -> ``format_warmup`` -> save),
    then reused. ``overrides`` replace fields of ``settings`` (``episodes=24, noise=0.3``).
    ``warmup.json`` in the folder records the settings, the demonstration counts and the losses.
    ``threads``: torch threads while it is built; the caller's count is restored after."""
    import torch

    settings = WarmupSettings(**{**asdict(settings or WarmupSettings()), **overrides})
    out = warmup_dir(env_id, base, settings)
    if (out / "config.json").exists() and (out / "warmup.json").exists() and not force:
        return out
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        _build(env_id, base, settings, out, progress)
    finally:  # the caller's thread count (a run trains on its own after the warm-up)
        torch.set_num_threads(before)
    return out


def _build(env_id: str, base: str, settings: WarmupSettings, out: Path, progress: bool) -> None:
    """Demonstrations, SFT, save into ``out`` (atomically: a temp folder renamed at the end)."""
    import torch

    t0 = time.perf_counter()
    rows = demonstrations(
        env_id,
        settings.split,
        settings.episodes,
        settings.seed,
        settings.history,
        settings.modality,
        noise=settings.noise,
        env_kwargs=parse_env_kwargs(settings.env_kwargs),
    )
    policy = load_policy(base, seed=settings.seed)
    if settings.analyzer_episodes:
        rows += analyzer_demonstrations(
            env_id,
            settings.split,
            settings.analyzer_episodes,
            settings.seed,
            settings.history,
            settings.modality,
            noise=settings.noise,
            # the trainer's truncation: the rows look exactly like Stage 2's analyzer prompts
            analyzer_kwargs=analyzer_kwargs(settings.analyzer_budget, policy.tokenizer),
            env_kwargs=parse_env_kwargs(settings.env_kwargs),
        )
    if settings.skill_episodes:
        rows += skill_demonstrations(
            env_id,
            settings.split,
            settings.skill_episodes,
            settings.seed,
            settings.history,
            settings.modality,
            noise=settings.noise,
            env_kwargs=parse_env_kwargs(settings.env_kwargs),
        )
    demo_seconds = time.perf_counter() - t0
    if progress:
        print(f"warm-up: {len(rows)} demonstration rows from {env_id}", file=sys.stderr)
    stats = format_warmup(
        policy.model,
        policy.tokenizer,
        rows,
        epochs=settings.epochs,
        lr=settings.lr,
        micro_batch=settings.micro_batch,
        seed=settings.seed,
        bf16=settings.bf16,
        max_length=settings.max_length,
        progress=progress,
    )
    policy.model.eval()
    tmp = staging_dir(out)
    save_policy(policy, tmp)
    # what later runs load must be exactly what was trained (checked: a second load is ~1 s)
    reloaded = load_policy(str(tmp)).model.state_dict()
    trained = policy.model.state_dict()
    bad = [k for k, v in trained.items() if k not in reloaded or not torch.equal(v, reloaded[k])]
    if bad:
        raise RuntimeError(f"the saved warm-up model differs from the trained one in {bad[:3]}")
    del reloaded
    sources = [r["provenance"]["source"] for r in rows]
    record = {
        "env_id": env_id,
        "base": base,
        "settings": asdict(settings),
        "version": WARMUP_VERSION,
        "episodes_recorded": len({r["provenance"]["episode"] for r in rows}),
        "oracle_rows": sources.count("oracle"),
        "noise_rows": sources.count("noise"),
        "analyzer_rows": sources.count("analyzer"),
        "skill_rows": sources.count("skill"),
        "demo_seconds": demo_seconds,
        "stats": stats,
        "example_completion": rows[0]["completion"] if rows else None,
    }
    (tmp / "warmup.json").write_text(json.dumps(record, indent=1, sort_keys=True))
    publish(tmp, out)  # a killed build never leaves a half-written model behind


def warmup_for_config(cfg: Any, threads: int | None = None, *, build: Any = here) -> Path:
    """The warmed model for a ``TrainConfig`` with ``warmup.episodes > 0``
    (``--format-warmup-episodes``). The warm-up has its own seed (0), so every run seed of a
    benchmark starts from the same warmed model. ``threads``: torch threads while it is built;
    ``build``: how a missing model is built (``model_cache.in_child``: in a child process)."""
    settings = WarmupSettings(
        **asdict(cfg.warmup),  # episodes, epochs, lr, noise, analyzer_episodes
        modality=cfg.modality or "text",
        history=cfg.history,
        bf16=cfg.bf16,
        analyzer_budget=cfg.opd.analyzer_budget if cfg.warmup.analyzer_episodes else None,
        env_kwargs=tuple(cfg.env_kwarg),
    )
    out = warmup_dir(cfg.env, cfg.model, settings)
    if (out / "config.json").exists() and (out / "warmup.json").exists():
        return out
    return build(build_warmup_model, cfg.env, cfg.model, settings, threads=threads,
                 progress=cfg.system.progress)  # fmt: skip


# --- CLI ----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    from seed_gym.trainer.config import OPDConfig  # tyro (config), for this CLI only

    d = WarmupSettings()
    p = argparse.ArgumentParser(
        prog="python -m seed_gym.trainer.warmup",
        description="Build (or find) the format-warmed model of an env; print its folder.",
    )
    p.add_argument("--env", required=True)
    p.add_argument("--base", default="smollm2", help="smollm2, tiny or a local HF folder")
    p.add_argument("--episodes", type=int, default=d.episodes)
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--noise", type=float, default=d.noise, help="share of random actions")
    p.add_argument(
        "--analyzer-episodes",
        type=int,
        default=d.analyzer_episodes,
        help="episodes whose analyzer answer (privileged skill JSON) is cloned too",
    )
    p.add_argument(
        "--analyzer-budget",
        type=int,
        default=OPDConfig().analyzer_budget,
        help="analyzer prompt budget in tokens (use the trainer's --analyzer-budget)",
    )
    p.add_argument(
        "--skill-episodes",
        type=int,
        default=d.skill_episodes,
        help="episodes replayed with a privileged skill in every prompt (skill-following rows)",
    )
    p.add_argument("--micro-batch", type=int, default=d.micro_batch)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--modality", default=d.modality)
    p.add_argument("--history", type=int, default=None)
    p.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bf16 autocast (default: where the CPU has native bf16, see models.bf16_is_fast)",
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    a = p.parse_args(argv)
    settings = WarmupSettings(
        episodes=a.episodes,
        epochs=a.epochs,
        lr=a.lr,
        noise=a.noise,
        micro_batch=a.micro_batch,
        seed=a.seed,
        modality=a.modality,
        history=a.history,
        bf16=bf16_is_fast("cpu") if a.bf16 is None else a.bf16,
        analyzer_episodes=a.analyzer_episodes,
        analyzer_budget=a.analyzer_budget if a.analyzer_episodes else None,
        skill_episodes=a.skill_episodes,
    )
    out = build_warmup_model(a.env, a.base, settings, force=a.force, threads=a.threads)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
