"""Multi-turn group rollouts: B tasks × G copies stepped together until every episode ends.

One call of ``collect`` runs one batch of episodes on an ``EnvPool`` laid out by
``make_group_pool`` (env ``b*G + g`` is copy g of task b). Every copy of task b is reset with the
same task id and env seed, so the G episodes of a group start identically and differ only by what
the policy samples. Each turn, the chat messages of every live episode go to the rollout engine in
one batch; each completion (text) steps its env. The per-step record keeps the prompt messages and
ids, the response ids and logprobs *as sampled*, the parsed action, validity and reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from seed_gym.seeding import derive_seed
from seed_gym.trainer.backends.engines import RolloutEngine
from seed_gym.trainer.trajectory import StepSample, Trajectory
from seed_gym.wrappers.skill import DEFAULT_FALLBACK_MARKER, DEFAULT_TASK_MARKERS, insert_skill


@dataclass
class SamplingParams:
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0


def collect(
    pool,
    engine: RolloutEngine,
    task_ids: Sequence[str],
    env_seeds: Sequence[int],
    *,
    sampling: SamplingParams,
    seed: int,
    stop: Sequence[str] | None = None,
    prefix: str = "",
    max_turns: int | None = None,
    progress: bool = False,
    skills: Sequence[str | None] | None = None,
    privileged: bool = False,
) -> list[Trajectory]:
    """Run ``len(task_ids)`` groups of ``pool.group_size`` episodes to the end.

    Args:
        pool: an ``EnvPool`` of ``len(task_ids) * G`` agent envs (``make_group_pool``).
        engine: samples completions (``RolloutEngine``).
        task_ids: the task of each group (overrides the tasks the pool was built with).
        env_seeds: the env seed of each group (all its copies share it).
        sampling: max new tokens, temperature (<= 0: greedy) and top-p.
        seed: sampling seed of this collection (turn t samples with ``derive_seed(seed, t)``).
        stop: stop strings (default: the pool's ``agent_spec.stop``).
        prefix: prepended to trajectory and group ids ("it3-" gives "it3-b1-g5").
        max_turns: a safety cap; envs carry their own step limit, so this rarely binds (an episode
            cut by it is marked ``truncated``).
        progress: show a tqdm bar over turns.
        skills: per group, a skill inserted into every actor prompt of its episodes
            (``wrappers.skill.insert_skill`` at the spec's markers; None: no skill). The stored
            ``messages`` and ``prompt_ids`` are the prompts with the skill (skill-grpo, Stage 1).
        privileged: store ``privileged_info()`` of the raw env, taken right after reset (once per
            group: its copies share task and seed), on ``Trajectory.privileged``.

    Returns the B·G trajectories in pool order (group b's copies are consecutive).
    """
    g_size = int(getattr(pool, "group_size", 1))
    n_groups = len(task_ids)
    if len(env_seeds) != n_groups:
        raise ValueError(f"{n_groups} tasks but {len(env_seeds)} env seeds")
    if n_groups * g_size != len(pool):
        raise ValueError(f"the pool holds {len(pool)} envs, not {n_groups} tasks × {g_size} copies")
    spec = getattr(pool, "agent_spec", None)
    if stop is None:
        stop = tuple(spec.stop) if spec is not None else ()
    if skills is not None and len(skills) != n_groups:
        raise ValueError(f"{n_groups} tasks but {len(skills)} skills")

    trajs, obs, infos = _reset_groups(
        pool, task_ids, env_seeds, g_size, prefix=prefix, skills=skills, privileged=privileged
    )
    live = list(range(len(pool)))
    bar = tqdm(desc="rollout turns", unit="turn", leave=False, disable=not progress)
    turn = 0
    try:
        while live:
            if max_turns is not None and turn >= max_turns:
                for i in live:
                    trajs[i].truncated = True
                break
            prompts = [obs[i]["messages"] for i in live]
            if skills is not None:
                prompts = [
                    _with_skill(m, trajs[i].actor_skill, spec)
                    for m, i in zip(prompts, live, strict=True)
                ]
            gens = engine.generate(
                prompts,
                max_new_tokens=sampling.max_new_tokens,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                stop=stop,
                seed=derive_seed(seed, turn),
                **_image_kwargs(engine, [obs[i] for i in live]),
            )
            results = pool.step(live, [g.text for g in gens])
            still: list[int] = []
            for i, msgs, gen, (o, reward, term, trunc, info) in zip(
                live, prompts, gens, results, strict=True
            ):
                _record_turn(trajs[i], msgs, gen, infos[i], obs[i], float(reward), info, spec)
                obs[i], infos[i] = o, info
                if term or trunc:
                    trajs[i].truncated = bool(trunc and not term)
                else:
                    still.append(i)
            live = still
            turn += 1
            bar.update(1)
            bar.set_postfix(live=len(live))
    finally:
        bar.close()
    return trajs


def _reset_groups(
    pool: Any,
    task_ids: Sequence[str],
    env_seeds: Sequence[int],
    g_size: int,
    *,
    prefix: str,
    skills: Sequence[str | None] | None,
    privileged: bool,
) -> tuple[list[Trajectory], list[Any], list[dict]]:
    """Reset every env of the pool on its group's task and seed: one empty ``Trajectory`` per env
    (ids ``{prefix}b{b}-g{g}``), with the observations and infos of the reset."""
    seeds = [int(env_seeds[i // g_size]) for i in range(len(pool))]
    options = [{"task_id": task_ids[i // g_size]} for i in range(len(pool))]
    trajs: list[Trajectory] = []
    obs: list[Any] = []
    infos: list[dict] = []
    for i, (o, info) in enumerate(pool.reset(seeds, options)):
        b, g = divmod(i, g_size)
        trajs.append(
            Trajectory(
                traj_id=f"{prefix}b{b}-g{g}",
                group_id=f"{prefix}b{b}",
                task_id=str(info.get("task_id", task_ids[b])),
                task_type=str(info.get("task_type", "")),
                task=str(info.get("task", "")),
                seed=seeds[i],
            )
        )
        obs.append(o)
        infos.append(info)
        if skills is not None:
            trajs[-1].actor_skill = skills[b]
        if privileged:
            # the solver describes the *current* state: take it now, at the episode start
            trajs[-1].privileged = (
                dict(pool.call(i, "privileged_info")) if g == 0 else trajs[-1 - g].privileged
            )
    return trajs, obs, infos


def _record_turn(
    traj: Trajectory,
    messages: list[dict[str, Any]],
    gen: Any,
    before: dict[str, Any],
    obs: dict[str, Any],
    reward: float,
    info: dict[str, Any],
    spec: Any,
) -> None:
    """Append one turn to ``traj`` (the prompt, the sampled tokens and their logprobs, what the
    env made of them) and update the episode's outcome (won, env score, pool error).
    ``before``/``obs``: the info and observation the prompt was built from."""
    traj.steps.append(
        StepSample(
            messages=messages,
            prompt_ids=list(gen.prompt_ids),
            response_ids=list(gen.ids),
            old_logprobs=list(gen.logprobs),
            response_text=gen.text,
            observation=str(before.get("anchor", "")),
            action=info.get("parsed_action"),
            valid=bool(info.get("format_valid", info.get("action_is_valid", True))),
            reward=reward,
            images=list(obs.get("images") or []),
            penalty=float(info.get("format_penalty", 0.0)),
        )
    )
    traj.won = bool(info.get("won", False))
    score_key = getattr(spec, "score_key", None)
    if score_key and info.get(score_key) is not None:
        traj.score = float(info[score_key])
    if "pool.error" in info:
        traj.error = str(info["pool.error"])


def _with_skill(
    messages: list[dict[str, Any]], skill: str | None, spec: Any
) -> list[dict[str, Any]]:
    """The actor prompt with the Episode-Level Skill block (SEED.md's block and placement)."""
    if not skill:
        return messages
    return insert_skill(
        messages,
        skill,
        getattr(spec, "task_markers", DEFAULT_TASK_MARKERS),
        getattr(spec, "fallback_marker", DEFAULT_FALLBACK_MARKER),
    )


def _image_kwargs(engine: Any, observations: list[Any]) -> dict[str, Any]:
    """``images=`` for an engine with a VLM processor when an observation carries pictures.
    Other engines get the text alone, ``<image>`` placeholders included, as always."""
    if getattr(engine, "processor", None) is None:
        return {}
    images = [list(o.get("images") or []) for o in observations]
    return {"images": images} if any(images) else {}


# --- summaries ----------------------------------------------------------------------------------
def rollout_metrics(trajs: Sequence[Trajectory], prefix: str = "") -> dict[str, float]:
    """Success (micro and macro over task types), return, invalid ratio, length, response tokens."""
    if not trajs:
        return {}
    won = np.array([t.won for t in trajs], dtype=float)
    steps = [s for t in trajs for s in t.steps]
    out = {
        f"{prefix}success": float(won.mean()),
        f"{prefix}return": float(np.mean([t.episode_return for t in trajs])),
        f"{prefix}episode_len": float(np.mean([len(t.steps) for t in trajs])),
        f"{prefix}invalid_ratio": float(np.mean([not s.valid for s in steps])) if steps else 0.0,
        f"{prefix}response_tokens": float(np.mean([len(s.response_ids) for s in steps]))
        if steps
        else 0.0,
        f"{prefix}episodes": float(len(trajs)),
    }
    types = sorted({t.task_type for t in trajs})
    if len(types) > 1:
        per_type = {k: float(np.mean([t.won for t in trajs if t.task_type == k])) for k in types}
        out[f"{prefix}success_macro"] = float(np.mean(list(per_type.values())))
        for k, v in per_type.items():
            out[f"{prefix}success/{k}"] = v
    scores = [t.score for t in trajs if t.score is not None]
    if scores:
        out[f"{prefix}score"] = float(np.mean(scores))
    return out
