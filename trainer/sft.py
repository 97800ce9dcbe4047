"""``seed-gym sft``: SEED Stage 1 on its own (``train --algo seed`` runs it first by itself).

seed-gym sft --env seed_gym/EZPoints-v0 --preset smollm2-cpu --out runs/stage1

Failing safe, as ``train``: a bad flag or value, env or model is one line naming it, exit status
2, before anything is written; an ``--out`` another ``sft`` is writing is one line, exit status 1
(one writer per folder: ``OUT/.lock``, ``seed_gym.folder_lock``).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from seed_gym.folder_lock import FolderLockedError, folder_lock
from seed_gym.oneline import OneLineParser, one_line, usage_error
from seed_gym.spaces import MODALITIES
from seed_gym.trainer.algorithms.seed.stage1 import run_stage1
from seed_gym.trainer.config import PRESETS, TrainConfig
from seed_gym.trainer.run_setup import run_problem
from seed_gym.trainer.run_state import quiet_progress_bars

PROG = "seed-gym sft"


def main(argv: list[str] | None = None) -> int:
    """``seed-gym sft``: SEED Stage 1 on its own (the trainer runs it before ``--algo seed``)."""
    p = OneLineParser(
        prog=PROG,
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
    p.add_argument("--modality", default=None, choices=MODALITIES, help="default: the env's")
    p.add_argument(
        "--env-kwarg",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="env constructor argument, as the trainer's (repeatable)",
    )
    p.add_argument("--bf16", action="store_true", default=None)
    p.add_argument("--no-progress", dest="progress", action="store_false", default=None)
    args = p.parse_args(argv)
    base = PRESETS[args.preset]() if args.preset else TrainConfig()
    stage1 = {n: getattr(args, n) for n in ("annotator", "annotator_model", *fields)}
    over: dict[str, Any] = {"env": args.env, "out": args.out}
    for name in (
        "model",
        "max_new_tokens",
        "max_turns",
        "history",
        "analyzer_budget",
        "seed",
        "threads",
        "modality",
        "bf16",
        "progress",
    ):
        if getattr(args, name) is not None:
            over[name] = getattr(args, name)
    if args.env_kwarg:
        over["env_kwarg"] = tuple(args.env_kwarg)
    try:
        over["stage1"] = replace(base.stage1, **{n: v for n, v in stage1.items() if v is not None})
        cfg = base.replace(**over)
    except (ValueError, TypeError) as e:  # the config names the trainer's --sft-X: here --X
        usage_error(PROG, str(e).replace("--sft-", "--"))
    # --out, the env, the model and what it can see: before anything is written (Stage 1 samples
    # with the HF engine on the CPU, whatever the preset's --engine and --device)
    if not cfg.system.progress:
        quiet_progress_bars()  # transformers' and the hub's bars too, as train
    problem = run_problem(cfg, system=False)
    if problem is not None:
        usage_error(PROG, problem)
    try:
        with folder_lock(args.out, holder=PROG):
            meta = run_stage1(cfg, args.out)
    except FolderLockedError as e:
        print(f"{PROG}: {one_line(e)}", file=sys.stderr)
        return 1
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
