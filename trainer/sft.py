"""``seed-gym sft``: SEED Stage 1 on its own (``train --algo seed`` runs it first by itself).

seed-gym sft --env seed_gym/EZPoints-v0 --preset smollm2-cpu --out runs/stage1
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from seed_gym.trainer.algorithms.seed.stage1 import run_stage1
from seed_gym.trainer.config import PRESETS, TrainConfig


def main(argv: list[str] | None = None) -> int:
    """``seed-gym sft``: SEED Stage 1 on its own (the trainer runs it before ``--algo seed``)."""
    p = argparse.ArgumentParser(
        prog="seed-gym sft",
        description="SEED Stage 1: base rollouts -> annotate -> keep skills that help on a "
        "with-skill rerun -> SFT the policy as analyzer; writes the dataset (JSONL with "
        "provenance), stage1.json and the SFT'd model folder under --out",
    )
    p.add_argument("--env", default="seed_gym/Sokoban-v0")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--preset", default=None, choices=sorted(PRESETS), help="base settings")
    p.add_argument("--model", default=None, help="tiny, smollm2 or a local HF folder")
    p.add_argument(
        "--annotator",
        default=None,
        help="privileged (default: skills from env solver/gold info, offline) or openai:URL",
    )
    p.add_argument("--annotator-model", default=None, help="model name for openai:URL")
    fields = {
        "tasks_per_type": int,
        "rollouts": int,
        "temperature": float,
        "reruns": int,
        "epochs": int,
        "lr": float,
        "batch": int,
    }
    for name, typ in fields.items():
        flag = name.replace("_", "-")
        p.add_argument(f"--{flag}", type=typ, default=None, help=f"as the trainer's --sft-{flag}")
    for name, typ in (
        ("max_new_tokens", int),
        ("max_turns", int),
        ("history", int),
        ("analyzer_budget", int),
        ("seed", int),
        ("threads", int),
    ):
        p.add_argument("--" + name.replace("_", "-"), type=typ, default=None)
    p.add_argument("--bf16", action="store_true", default=None)
    p.add_argument("--no-progress", dest="progress", action="store_false", default=None)
    args = p.parse_args(argv)
    base = PRESETS[args.preset]() if args.preset else TrainConfig()
    stage1 = {n: getattr(args, n) for n in ("annotator", "annotator_model", *fields)}
    over: dict[str, Any] = {"env": args.env, "out": args.out}
    over["stage1"] = replace(base.stage1, **{n: v for n, v in stage1.items() if v is not None})
    for name in (
        "model",
        "max_new_tokens",
        "max_turns",
        "history",
        "analyzer_budget",
        "seed",
        "threads",
        "bf16",
        "progress",
    ):
        if getattr(args, name) is not None:
            over[name] = getattr(args, name)
    cfg = base.replace(**over)
    meta = run_stage1(cfg, args.out)
    m = meta["metrics"]
    print(
        f"stage 1: {int(m['stage1/trajectories'])} trajectories, base success "
        f"{m['stage1/base_success']:.3f}, {int(m['stage1/rows'])} accepted rows; "
        f"dataset {meta['dataset']}, model {meta['model']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
