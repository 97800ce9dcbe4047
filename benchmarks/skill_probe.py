"""Skill probe: does a hindsight skill move the teacher the right way? Measured on one batch of
rollouts, no RL.

    python benchmarks/skill_probe.py --out runs/skill-probe                    # smollm2-cpu, 16 x 8
    python benchmarks/skill_probe.py --preset tiny --tasks 2 --group 4 --out /tmp/probe   # seconds

It starts a SEED run exactly as ``seed-gym train --algo seed`` does (format warm-up and Stage 1,
both cached), rolls out ``--tasks`` training tasks x ``--group`` episodes with the Stage 1 policy,
lets the policy analyze every episode (``Algorithm.skills``), and rescores every step under pi_old
with the trajectory's own skill and, for every trajectory, with the skill of another task (the
shuffled control, ``skill_effect.control_skills``). It reports:

- the analyzer's parse rate and the kinds of its skills: the share of lost episodes' skills that
  are avoidance rules and of won episodes' that are workflows (``analyzer.skill_kind``);
- the skill's effect on the teacher, ``teacher - sampling logprob`` on the same tokens, as a
  token mean over forks (sampling NLL > 0.1) of won and of lost episodes, own skill against the
  shuffled control, with 95% intervals from a bootstrap over task groups (``skill_effect``).

A useful skill gives ``gap_fork_won > 0``, ``gap_fork_lost < 0``, and larger magnitudes than the
control's. Writes ``OUT/probe.json`` and ``OUT/skills/iter_000000.jsonl`` (every skill with its
trajectory's outcome, kind and fork gap). Extra ``seed-gym train`` flags pass through.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.registration import agent_spec, task_ids
from seed_gym.seeding import derive_seed
from seed_gym.stats import bootstrap_ci
from seed_gym.trainer.algorithms.seed.analyzer import skill_kind
from seed_gym.trainer.algorithms.seed.skill_effect import gap_sums
from seed_gym.trainer.algorithms.seed.skill_log import SkillLog, skill_records
from seed_gym.trainer.collect import SamplingParams, collect
from seed_gym.trainer.config import parse_args
from seed_gym.trainer.run_setup import start_run
from seed_gym.trainer.train import ENV_SEEDS, SAMPLING, task_batch
from seed_gym.wrappers.pool import make_group_pool


def group_sums(trajs: list, teacher: list, keep: list[int]) -> dict[str, dict[str, np.ndarray]]:
    """Per task group and outcome: fork-gap sums and token counts of the trajectories ``keep``."""
    groups = sorted({trajs[i].group_id for i in keep})
    out = {o: {"sum": np.zeros(len(groups)), "n": np.zeros(len(groups))} for o in ("won", "lost")}
    for i, per_step in zip(keep, teacher, strict=True):
        g = groups.index(trajs[i].group_id)
        total, n = gap_sums(trajs[i], per_step)["_fork"]
        side = out["won" if trajs[i].won else "lost"]
        side["sum"][g] += total
        side["n"][g] += n
    return out


def mean_ci(side: dict[str, np.ndarray]) -> dict[str, Any]:
    """Token mean of the fork gap with a bootstrap 95% interval over task groups."""
    s, n = side["sum"], side["n"]
    if n.sum() == 0:
        return {"mean": None, "ci95": None, "tokens": 0}

    def stat(idx: np.ndarray) -> float:
        return float(s[idx].sum() / max(1.0, n[idx].sum()))

    return {"mean": float(s.sum() / n.sum()), "ci95": list(bootstrap_ci(stat, len(s))),
            "tokens": int(n.sum())}  # fmt: skip


def probe(argv: list[str]) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="smollm2-cpu")
    p.add_argument("--tasks", type=int, default=16, help="training tasks (B)")
    p.add_argument("--group", type=int, default=8, help="episodes per task (G)")
    p.add_argument("--out", required=True)
    args, extra = p.parse_known_args(argv)
    n = args.tasks * args.group
    cfg = parse_args(["--algo", "seed", "--preset", args.preset, "--out", args.out,
                      "--tasks-per-iter", str(args.tasks), "--group-size", str(args.group),
                      "--skill-control", str(n), "--no-tensorboard", *extra])  # fmt: skip
    t0 = time.perf_counter()
    run = start_run(cfg)
    cfg = run.cfg  # with the Stage 1 model it starts from
    times = {"setup": time.perf_counter() - t0}

    t0 = time.perf_counter()
    train_tasks = task_ids(cfg.env, "train", **cfg.env_kwargs)
    tasks = task_batch(train_tasks, cfg.seed, 0, args.tasks)
    pool = make_group_pool(cfg.env, tasks, args.group, split="train", modality=cfg.modality,
                           history=cfg.history, env_kwargs=cfg.env_kwargs)  # fmt: skip
    try:
        trajs = collect(
            pool, run.engine, tasks,
            [derive_seed(cfg.seed, ENV_SEEDS, 0, b) % 2**31 for b in range(args.tasks)],
            sampling=SamplingParams(cfg.rollout.max_new_tokens, cfg.rollout.temperature,
                                    cfg.rollout.top_p),
            seed=derive_seed(cfg.seed, SAMPLING, 0), prefix="probe-",
            max_turns=cfg.rollout.max_turns, progress=cfg.system.progress,
        )  # fmt: skip
    finally:
        pool.close()
    times["rollout"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    stats: dict[str, float] = {}
    failures: dict[str, dict] = {}
    skills = run.algorithm.skills(trajs, stats, failures)
    times["analyze"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    spec = agent_spec(cfg.env)
    scored = run.algorithm.teacher(run.policy, spec, trajs, skills, 0)
    times["rescore"] = time.perf_counter() - t0
    idx = scored.extra["control_idx"]
    own = group_sums(trajs, [scored.per_step[i] for i in idx], idx)
    shuffled = group_sums(trajs, scored.extra["control"], idx)
    teacher, gaps, metrics = scored.per_step, scored.gaps, scored.metrics

    records = skill_records(trajs, skills, iteration=0, gaps=gaps, failures=failures)
    for rec, traj, per_step in zip(records, trajs, teacher, strict=True):
        rec["kind"] = skill_kind(rec["skill"]) if rec["skill"] else None
        total, k = gap_sums(traj, per_step)["_fork"] if rec["skill"] else (0.0, 0)
        rec["fork_gap"] = total / k if k else None
    SkillLog(args.out).write(0, records)
    result = {
        "config": {
            "preset": args.preset,
            "env": cfg.env,
            "tasks": args.tasks,
            "group": args.group,
            "seed": cfg.seed,
            "model": cfg.stage1.model,
        },  # fmt: skip
        "rollout_success": float(np.mean([t.won for t in trajs])),
        "analyzer": stats,
        "metrics": metrics,
        "fork_gap": {
            f"{which}_{o}": mean_ci(sums[o])
            for which, sums in (("own", own), ("control", shuffled))
            for o in ("won", "lost")
        },
        "times": times,
    }
    (Path(args.out) / "probe.json").write_text(json.dumps(result, indent=1))
    return result


def print_result(r: dict[str, Any]) -> None:
    a = r["analyzer"]
    print(f"\n{r['config']}\nrollout success {r['rollout_success']:.3f}; analyzer parse rate "
          f"{a.get('analyzer/parse_rate', 0):.2f}, lost skills that are avoidance rules "
          f"{a.get('analyzer/avoidance_share_lost', float('nan')):.2f}, won skills that are "
          f"workflows {a.get('analyzer/workflow_share_won', float('nan')):.2f}")  # fmt: skip
    print("fork gap (teacher - sampling logprob, nats/token, 95% CI over task groups):")
    for key, v in r["fork_gap"].items():
        if v["mean"] is None:
            print(f"  {key:13s} -")
            continue
        lo, hi = v["ci95"]
        print(f"  {key:13s} {v['mean']:+.4f} [{lo:+.4f}, {hi:+.4f}]  ({v['tokens']} tokens)")
    print("times (s): " + ", ".join(f"{k} {v:.0f}" for k, v in r["times"].items()))


if __name__ == "__main__":
    print_result(probe(sys.argv[1:]))
