"""SEED overhead: wall time of SEED iterations vs GRPO iterations on the same batch, by phase.

    python benchmarks/bench_seed_overhead.py                          # tiny model, seconds
    python benchmarks/bench_seed_overhead.py --model smollm2 --threads 1   # SmolLM2-135M, minutes

Both algorithms run through the real training loop (``seed_gym.trainer.train.train``) from the same
initial weights with the same seed, so the first iteration's rollouts are the same episodes (same
tasks, env seeds and sampling streams; checked below). ``seed`` runs without Stage 1 (``--no-sft``)
so the starting policies match; it adds the analyze phase (the policy, greedy, writes one JSON
skill per trajectory) and the rescore phase (one forward pass per step-sample with the skill in the
prompt), and its update computes the OPD term. Phases are the trainer's ``time/*`` metrics, averaged
over ``--iterations`` (after the first, rollouts differ because the policies do). Eval and
checkpoint time are left out. One model in memory at a time (the runs are sequential).

A policy whose analyses fail to parse gives rescoring nothing to do, which understates the cost
when skills do parse; ``static-skills`` (a skill for every trajectory, no analyzer) is therefore
run as a third column by default: its rescore and OPD cost is what ``seed`` pays at parse rate 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

PHASES = ("rollout", "analyze", "rescore", "update", "sync")


def run(algo: str, args: argparse.Namespace, out: Path) -> list[dict]:
    from seed_gym.trainer.config import PRESETS, TrainConfig
    from seed_gym.trainer.train import train

    preset = "tiny" if args.model == "tiny" else "smollm2-cpu"
    base = PRESETS[preset]().to_dict()
    base.update(
        env=args.env,
        algo=algo,
        out=str(out / algo),
        seed=args.seed,
        iterations=args.iterations,
        progress=False,
        tensorboard=False,
        save_hf=False,
        save_trajectories=False,
        eval_splits=(),
        no_sft=algo == "seed",
    )
    if args.model not in ("tiny", "smollm2"):
        base["model"] = args.model
    for key in ("threads", "tasks_per_iter", "group_size", "max_new_tokens", "max_turns"):
        if getattr(args, key) is not None:
            base[key] = getattr(args, key)
    if args.analyzer_max_new_tokens is not None:
        base["analyzer_max_new_tokens"] = args.analyzer_max_new_tokens
    train(TrainConfig.from_dict(base))
    lines = (out / algo / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def mean_phase(lines: list[dict], phase: str) -> float:
    return sum(m.get(f"time/{phase}", 0.0) for m in lines) / len(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="tiny", help="tiny, smollm2 or a local HF folder")
    p.add_argument("--env", default="seed_gym/Sokoban-v0")
    p.add_argument("--iterations", type=int, default=None, help="default: 3 tiny, 1 otherwise")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--tasks-per-iter", type=int, default=None)
    p.add_argument("--group-size", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int, default=None)
    p.add_argument("--max-turns", type=int, default=None)
    p.add_argument("--analyzer-max-new-tokens", type=int, default=None)
    p.add_argument(
        "--algos", default="grpo,seed,static-skills", help="grpo first, then the algos to compare"
    )
    p.add_argument("--out", default=None, help="keep the two runs here (default: a temp dir)")
    args = p.parse_args(argv)
    if args.iterations is None:
        args.iterations = 3 if args.model == "tiny" else 1

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        algos = args.algos.split(",")
        if algos[0] != "grpo":
            raise SystemExit("--algos must start with grpo (the baseline)")
        runs = {a: run(a, args, out) for a in algos}
    grpo = runs["grpo"]

    same = all(
        grpo[0][k] == r[0][k]
        for r in runs.values()
        for k in ("rollout/return", "rollout/env_steps", "train/response_tokens")
    )
    print(
        f"SEED vs GRPO iteration wall time — model {args.model}, env {args.env}, "
        f"{int(grpo[0]['rollout/episodes'])} episodes, {int(grpo[0]['train/samples'])} step-samples, "
        f"{int(grpo[0]['train/response_tokens'])} response tokens per iteration (first iteration); "
        f"mean over {args.iterations} iteration(s); same first batch: {same}"
    )
    others = [a for a in runs if a != "grpo"]
    head = f"{'phase':<10}{'grpo s':>10}"
    for a in others:
        head += f"{a + ' s':>16}{a + '/grpo':>20}"
    print(head)
    totals = {a: sum(mean_phase(r, ph) for ph in PHASES) for a, r in runs.items()}
    for ph in (*PHASES, "total"):
        g = totals["grpo"] if ph == "total" else mean_phase(grpo, ph)
        line = f"{ph:<10}{g:>10.3f}"
        for a in others:
            v = totals[a] if ph == "total" else mean_phase(runs[a], ph)
            ratio = f"{v / g:.2f}x" if g > 0 else "—"
            line += f"{v:>16.3f}{ratio:>20}"
        print(line)
    for a in others:
        r = runs[a]
        parse = sum(m.get("analyzer/parse_rate", 1.0) for m in r) / len(r)
        tokens = sum(m.get("opd/teacher_tokens", 0.0) for m in r) / len(r)
        print(f"{a}: skill rate {parse:.2f}, teacher tokens per optimizer step {tokens:.0f}")
    if not same:
        print("warning: the first batches differ (nondeterministic kernels?)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
