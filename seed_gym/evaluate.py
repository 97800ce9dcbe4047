"""``seed-gym eval``: run a policy over a split manifest and write ``results.json`` + episodes.

Every task of the split is visited exactly once, in manifest order. ``--episodes N`` caps the run
at a *seeded subset* of N tasks (drawn without replacement by ``SplitManifest.iterate(N, seed)``,
kept in manifest order), so the same ``--seed`` always picks the same tasks. Episode i of task t
is reset with ``seed + position of t in the manifest``: a task gets the same episode seed in a
subset run and a full run, so two result files can be paired task by task.

``DIR/episodes.jsonl`` holds one line per episode, written as it finishes; ``DIR/results.json``
the summary: success rate with a 95% Wilson score interval, mean return and steps, the
invalid-action rate (invalid steps / all steps), success per task type and its macro average,
and the mean of every numeric namespaced info key at episode end (``webshop.score``,
``search.em``, ``search.f1``, ...).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (sound at 0/n and n/n, unlike the
    normal approximation)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # exact ends at 0/n and n/n, where the float formula leaves ~1e-17 of rounding noise
    lo = 0.0 if successes == 0 else max(0.0, center - half)
    hi = 1.0 if successes == n else min(1.0, center + half)
    return (lo, hi)


def import_env_modules(modules: list[str]) -> None:
    """Import user modules (names or ``.py`` paths) so their ``seed_gym.register`` calls run."""
    for spec in modules:
        path = Path(spec)
        if spec.endswith(".py") or path.is_file():
            if not path.is_file():
                raise FileNotFoundError(f"--import {spec}: no such file")
            # by module name from its folder, so its envs pickle into subprocess workers
            sys.path.insert(0, str(path.resolve().parent))
            importlib.import_module(path.stem)
        else:
            importlib.import_module(spec)


def _numeric_extras(info: dict[str, Any]) -> dict[str, float]:
    """Namespaced (``env.key``) numeric info values, bools as 0/1."""
    out = {}
    for key, value in info.items():
        if "." in key and isinstance(value, (bool, int, float, np.number)):
            value = float(value)
            if math.isfinite(value):
                out[key] = value
    return out


def run_episode(env, policy, *, task_id: str, seed: int) -> dict[str, Any]:
    """One episode of ``policy`` on ``env`` pinned to ``task_id``; its per-episode record."""
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    policy.reset(env, seed=seed)
    total, steps, invalid, actions = 0.0, 0, 0, []
    terminated = truncated = False
    while not (terminated or truncated):
        action = policy.act(env, obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        steps += 1
        invalid += not info.get("action_is_valid", True)
        actions.append(info.get("parsed_action", action) if policy.acts_on == "agent" else action)
    return {
        "task_id": task_id,
        "task_type": info.get("task_type", ""),
        "seed": seed,
        "won": bool(info.get("won", False)),
        "return": total,
        "steps": steps,
        "invalid_steps": invalid,
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "extras": _numeric_extras(info),
        "actions": actions,
    }


def summarize(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The statistics of ``results.json`` from per-episode records."""
    n = len(episodes)
    wins = sum(e["won"] for e in episodes)
    steps = sum(e["steps"] for e in episodes)
    by_type: dict[str, list[bool]] = defaultdict(list)
    for e in episodes:
        by_type[e["task_type"]].append(e["won"])
    per_type = {
        t: {
            "episodes": len(w),
            "success_rate": sum(w) / len(w),
            "success_ci95": list(wilson_interval(sum(w), len(w))),
        }
        for t, w in sorted(by_type.items())
    }
    extras: dict[str, list[float]] = defaultdict(list)
    for e in episodes:
        for key, value in e["extras"].items():
            extras[key].append(value)
    return {
        "episodes": n,
        "success_rate": wins / n if n else 0.0,
        "success_ci95": list(wilson_interval(wins, n)),
        "ci_method": "wilson",
        "mean_return": float(np.mean([e["return"] for e in episodes])) if n else 0.0,
        "mean_steps": steps / n if n else 0.0,
        "invalid_action_rate": sum(e["invalid_steps"] for e in episodes) / steps if steps else 0.0,
        "per_task_type": per_type,
        "macro_success_rate": float(np.mean([v["success_rate"] for v in per_type.values()]))
        if per_type
        else 0.0,
        "extras": {k: float(np.mean(v)) for k, v in sorted(extras.items())},
        "extras_episodes": {k: len(v) for k, v in sorted(extras.items())},
    }


def evaluate(
    env_id: str,
    split: str,
    policy_spec: str,
    *,
    episodes: int | None = None,
    seed: int = 0,
    out: str | Path | None = None,
    modality: str | None = None,
    max_steps: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run ``policy_spec`` on the split's tasks; write ``out/results.json`` and
    ``out/episodes.jsonl`` when ``out`` is given. Returns the results dict."""
    from tqdm.auto import tqdm

    import seed_gym
    from seed_gym.policies import make_policy

    policy = make_policy(policy_spec)
    kwargs: dict[str, Any] = {"split": split, "modality": modality}
    if max_steps is not None:
        kwargs["max_episode_steps"] = max_steps
    make = seed_gym.make_agent_env if policy.acts_on == "agent" else seed_gym.make
    env = make(env_id, **kwargs)
    manifest = env.unwrapped.manifest(split)
    position = {t: i for i, t in enumerate(manifest.task_ids)}
    tasks = list(manifest.iterate(limit=episodes, seed=seed))

    out_dir = Path(out) if out is not None else None
    log = None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        log = open(out_dir / "episodes.jsonl", "w", encoding="utf-8")  # noqa: SIM115
    records = []
    bar = tqdm(tasks, desc=f"{env_id} {split} {policy_spec}", unit="ep", disable=not progress)
    try:
        for task_id in bar:
            record = run_episode(env, policy, task_id=task_id, seed=seed + position[task_id])
            record["index"] = len(records)
            records.append(record)
            if log is not None:
                log.write(json.dumps(record, ensure_ascii=False) + "\n")
                log.flush()
            rate = sum(r["won"] for r in records) / len(records)
            bar.set_postfix(success=f"{rate:.3f}", refresh=False)
    finally:
        bar.close()
        if log is not None:
            log.close()
        env.close()
        policy.close()

    results = {
        "env_id": env_id,
        "split": split,
        "manifest_sha256": manifest.hash,
        "manifest_tasks": len(manifest),
        "subset": None if len(tasks) == len(manifest) else {"n": len(tasks), "seed": seed},
        "policy": policy_spec,
        "seed": seed,
        "modality": env.unwrapped.modality,
        "max_steps": max_steps,
        "seed_gym_version": seed_gym.__version__,
        **summarize(records),
    }
    if out_dir is not None:
        (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="seed-gym eval", description="Evaluate a policy on every task of a split."
    )
    p.add_argument("--env", required=True, help="env id, e.g. seed_gym/Sokoban-v0")
    p.add_argument("--split", default="seen", help="train | seen | unseen (default: seen)")
    p.add_argument(
        "--policy", default="random", help="random | oracle | KIND:ARG (default: random)"
    )
    p.add_argument("--episodes", type=int, default=None, help="cap: a seeded subset of N tasks")
    p.add_argument("--seed", type=int, default=0, help="subset draw and episode seeds (default 0)")
    p.add_argument("--out", default=None, help="folder for results.json and episodes.jsonl")
    p.add_argument("--modality", default=None, help="text | image | text+image (env default)")
    p.add_argument("--max-steps", type=int, default=None, help="override the step limit")
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="module or .py file that registers extra envs (repeatable)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.episodes is not None and args.episodes < 1:
        raise SystemExit("seed-gym eval: --episodes must be >= 1")
    import_env_modules(args.imports)
    results = evaluate(
        args.env,
        args.split,
        args.policy,
        episodes=args.episodes,
        seed=args.seed,
        out=args.out,
        modality=args.modality,
        max_steps=args.max_steps,
        progress=not args.no_progress,
    )
    lo, hi = results["success_ci95"]
    print(
        f"{results['env_id']} {results['split']} policy={results['policy']} "
        f"episodes={results['episodes']} success={results['success_rate']:.3f} "
        f"[{lo:.3f}, {hi:.3f}] return={results['mean_return']:.3f} "
        f"steps={results['mean_steps']:.2f} invalid={results['invalid_action_rate']:.3f}"
    )
    if args.out:
        print(f"wrote {Path(args.out) / 'results.json'} and episodes.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
