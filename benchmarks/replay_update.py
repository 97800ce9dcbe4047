"""Replay one update of a finished training run under variants of its loss or optimizer.

    python benchmarks/replay_update.py runs/long-kl001/runs/seed-kl001-s4 --update 4 \\
        --variant base= --variant no-opd="--opd-coef 0" --variant one-step="--mini-batch-size 4096" \\
        --after 1 --jobs 2 --out runs/replay-s4

Which term of an update made a run collapse, and does a remedy keep it from collapsing? A run's
update K depends on everything before it, so the replay rebuilds that state once and branches:

1. **prefix**: the run's saved ``config.json`` with ``iterations = K - 1``, trained from scratch
   into ``OUT/prefix``. On the machine and thread count of the original it is the original's first
   K - 1 iterations bit for bit: rollouts, samples and mini-batch shuffles are seeded by (seed,
   iteration), the lr is constant, and an eval draws from none of training's streams (the prefix
   evaluates once more, at its last iteration: minutes, not a change).
2. **variants**: ``OUT/prefix`` copied to ``OUT/<name>`` and resumed to iteration ``K + after`` with
   the variant's flags (``seed-gym train --resume --iterations K+after FLAGS``; optimizer flags
   such as ``--lr 0`` or ``--adam-betas 0 0.999`` apply to the branch: a resume takes them from
   the flags, not the checkpoint, since 0.4.0). Iteration K samples
   the same episodes as the original (the policy is the same until its update); its update is the
   variant's. ``base=`` (no flags) replays the original: the table says whether it reproduced the
   original's update K to the last digit, the check that the branches compare what they claim to.
3. **table** (printed, and ``OUT/replay.json``): per variant, update K's grad norm, ``approx_kl``,
   ``kl_ref`` (and SEED's ``opd/grad_ratio``), rollout success of iterations K+1..K+after (what
   the update did to the policy that samples next) and the seen / unseen success of the eval at the
   end (95 % Wilson intervals). One replay per variant: a finding to test on more seeds.

It was first done by hand for ``make demo``'s collapse (docs/benchmarks.md); this script is that
procedure for any run, env or algorithm.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run_jobs: the benchmarks' job runner
from learning import run_jobs  # noqa: E402

from seed_gym.stats import wilson_interval  # noqa: E402
from seed_gym.trainer.config import TrainConfig  # noqa: E402
from seed_gym.trainer.run_state import metric_lines  # noqa: E402

TRAIN = [sys.executable, "-m", "seed_gym.cli", "train"]
# update K's metrics shown per variant, and compared with the original's for ``base``
UPDATE_KEYS = ("train/grad_norm", "train/approx_kl", "train/kl_ref", "train/loss", "opd/grad_ratio",
               "train/update_kl", "train/update_scale", "train/update_kl_kept")  # fmt: skip
# keys that decide whether the base replay is the original update (same samples, same result)
SAME_KEYS = ("rollout/success", "train/samples", "train/grad_norm", "train/approx_kl", "train/loss")


def parse_variant(text: str) -> tuple[str, list[str]]:
    """``name=flags`` -> (name, argv); the flags are split like a shell's (``--lr 1e-5``)."""
    name, sep, flags = text.partition("=")
    if not sep or not name or "/" in name or name == "prefix":
        raise SystemExit(f"--variant must be NAME=FLAGS (NAME not 'prefix'), not {text!r}")
    return name, shlex.split(flags)


def iteration_lines(run_dir: Path) -> dict[int, dict[str, Any]]:
    """iteration -> its metrics (the last line when a resume logged it twice; {} without a log)."""
    return {it: json.loads(line) for line, it in metric_lines(run_dir / "metrics.jsonl")}


def build_prefix(run_dir: Path, update: int, out: Path) -> list[tuple[Path, list[str]]]:
    """The command that trains ``run_dir``'s first ``update - 1`` iterations into ``out/prefix``
    (none when it is already there)."""
    prefix = out / "prefix"
    cfg = TrainConfig.load(run_dir / "config.json")
    if not 1 <= update <= cfg.iterations:
        raise SystemExit(f"--update must be in 1..{cfg.iterations} (the run's iterations)")
    if update > 1 and (update - 1) in iteration_lines(prefix):
        print(f"[skip] prefix: iteration {update - 1} is there", flush=True)
        return []
    prefix.mkdir(parents=True, exist_ok=True)
    # update 1 has nothing before it: the prefix is the run's config alone, and every variant
    # starts the run from iteration 0 (``--resume`` into a folder without a checkpoint)
    cfg = cfg.replace(iterations=max(update - 1, 1), out=str(prefix), resume=False)
    cfg.save(prefix / "config.json")
    return [] if update == 1 else [(prefix, [*TRAIN, "--out", str(prefix), "--resume"])]


def variant_commands(
    out: Path, update: int, after: int, variants: dict[str, list[str]]
) -> list[tuple[Path, list[str]]]:
    """Per variant not yet finished: copy the prefix and resume it with the variant's flags."""
    todo = []
    last = update + after
    for name, flags in variants.items():
        run = out / name
        if last in iteration_lines(run):
            print(f"[skip] {name}: iteration {last} is there", flush=True)
            continue
        if run.exists():
            shutil.rmtree(run)  # a half-run variant starts again from the prefix
        shutil.copytree(out / "prefix", run, ignore=shutil.ignore_patterns(".lock", "train.log"))
        # --out overrides the copied config's out (the prefix's) when the branch resumes
        argv = ["--out", str(run), "--resume", "--iterations", str(last), *flags]
        todo.append((run, [*TRAIN, *argv]))
    return todo


def summarize(
    run_dir: Path, out: Path, update: int, after: int, variants: dict[str, list[str]]
) -> dict[str, Any]:
    """Per variant: update K's metrics, the rollout success after it, the final eval."""
    original = iteration_lines(run_dir).get(update, {})
    rows: dict[str, Any] = {}
    for name, flags in variants.items():
        lines = iteration_lines(out / name)
        at_update = lines.get(update, {})
        last = lines.get(update + after, {})
        row: dict[str, Any] = {
            "flags": flags,
            "update": {k: at_update.get(k) for k in UPDATE_KEYS if k in at_update},
            "rollout_after": [
                lines.get(update + i, {}).get("rollout/success") for i in range(1, after + 1)
            ],  # fmt: skip
        }
        for split in ("seen", "unseen"):
            p, n = last.get(f"eval/{split}/success"), last.get(f"eval/{split}/episodes")
            if p is not None and n:
                row[split] = {"success": p, "n": n, "ci95": list(wilson_interval(p * n, n))}
        if not flags:
            row["reproduces_original"] = bool(original) and all(
                at_update.get(k) == original.get(k) for k in SAME_KEYS
            )
        rows[name] = row
    return {
        "run": str(run_dir),
        "update": update,
        "after": after,
        "original_update": {k: original.get(k) for k in UPDATE_KEYS if k in original},
        "variants": rows,
    }


def kept_cell(update: dict[str, Any]) -> str:
    """What ``--max-update-kl``'s line search kept of the update: "1/8 (0.0068)" (the fraction
    and its KL to the sampling policy), "undone (0.0836)" (the whole update's KL), "-" without."""
    scale = update.get("train/update_scale")
    if scale is None:
        return "-"
    if scale == 0:
        return f"undone ({update['train/update_kl']:.3g})"
    frac = "all" if scale == 1 else f"1/{round(1 / scale)}"
    return f"{frac} ({update['train/update_kl_kept']:.3g})"


def print_table(res: dict[str, Any]) -> None:
    k, after = res["update"], res["after"]
    after_text = f"rollouts of iterations {k + 1}..{k + after}, " if after else ""
    print(f"\nupdate {k} of {res['run']} replayed; {after_text}eval at iteration {k + after} "
          "(95 % Wilson)")  # fmt: skip
    orig = res["original_update"]
    print(f"  original: grad norm {orig.get('train/grad_norm', float('nan')):.4g}, approx_kl "
          f"{orig.get('train/approx_kl', float('nan')):.3g}")  # fmt: skip
    print("| variant | flags | grad norm | approx_kl | kl_ref | kept (its KL) | rollouts after | seen "
          "| unseen |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in res["variants"].items():
        u = r["update"]
        cells = [
            name + (" (= original)" if r.get("reproduces_original") else
                    " (differs from the original!)" if "reproduces_original" in r else ""),
            " ".join(r["flags"]) or "-",
            *(f"{u[key]:.4g}" if u.get(key) is not None else "-"
              for key in ("train/grad_norm", "train/approx_kl", "train/kl_ref")),
            kept_cell(u),
            " ".join(f"{x:.2f}" if x is not None else "-" for x in r["rollout_after"]) or "-",
        ]  # fmt: skip
        for split in ("seen", "unseen"):
            s = r.get(split)
            cells.append(
                f"{s['success']:.3f} [{s['ci95'][0]:.2f}, {s['ci95'][1]:.2f}]" if s else "-"
            )
        print("| " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="a finished run folder (config.json, metrics.jsonl)")
    p.add_argument("--update", type=int, required=True, help="the iteration whose update to replay")
    p.add_argument("--variant", action="append", required=True, metavar="NAME=FLAGS",
                   help="a branch: train flags for the replayed update on (repeatable; "
                        "'base=' replays the original)")  # fmt: skip
    p.add_argument("--after", type=int, default=1,
                   help="iterations each variant runs after the update (their rollouts show "
                        "what it did; default 1)")  # fmt: skip
    p.add_argument("--jobs", type=int, default=1, help="variants side by side (1 thread each)")
    p.add_argument("--out", type=Path, required=True, help="folder for the prefix and variants")
    args = p.parse_args(argv)
    if not (args.run / "config.json").is_file():
        raise SystemExit(f"{args.run} has no config.json: not a training run folder")
    if args.after < 0 or args.jobs < 1:
        raise SystemExit("--after must be >= 0 and --jobs >= 1")
    variants = dict(parse_variant(v) for v in args.variant)
    args.out.mkdir(parents=True, exist_ok=True)
    run_jobs(build_prefix(args.run, args.update, args.out), 1)
    run_jobs(variant_commands(args.out, args.update, args.after, variants), args.jobs)
    res = summarize(args.run, args.out, args.update, args.after, variants)
    (args.out / "replay.json").write_text(json.dumps(res, indent=2) + "\n")
    print_table(res)
    print(f"\nwrote {args.out / 'replay.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
