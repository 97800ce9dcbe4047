"""Learning benchmark: SEED vs GRPO on the same env, seeds and budget; success vs env steps.

    python benchmarks/learning.py --config cpu --out runs/learning-cpu      # ~65 min, 2 cores
    python benchmarks/learning.py --config cpu-6turns --out runs/learning-cpu-6turns  # ~81 min
    python benchmarks/learning.py --config cpu-long --out runs/learning-cpu-long   # ~109 min
    python benchmarks/learning.py --config gpu --out runs/learning-gpu      # larger runs
    python benchmarks/learning.py --smoke --out /tmp/lb                     # 2 iterations, tiny

For every (algorithm, seed) it runs ``seed-gym train`` in a subprocess (``--jobs`` of them side by
side, each with its own model and 1 torch thread) into ``OUT/runs/<algo>-s<seed>``; a finished run is skipped when the benchmark is
rerun, so an interrupted benchmark continues where it stopped. Every run of a configuration shares
env, model, budget (iterations x tasks per iteration x group size) and eval tasks; only ``--algo``
differs, and runs with the same seed see the same training tasks in the same order.

Analysis (``OUT/learning.json``, printed as a table):
- per algorithm and split (seen, unseen): success vs cumulative env steps at each eval, per seed and
  as the mean over seeds;
- the **paired difference at equal steps**: each run's eval curve is interpolated linearly in env
  steps onto a common grid (the mean env steps of each eval, inside the range every run covers);
  at each grid point the difference B - A is taken per seed (runs with the same seed are paired)
  and averaged, with a seeded bootstrap 95% interval over seeds (with 3 seeds the interval is
  coarse: report it, do not over-read it);
- plots: ``OUT/learning.svg`` (seen and unseen curves) and ``OUT/report.html`` (the full
  ``seed-gym report`` of all runs: curves, table, trajectories when the runs wrote them).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.evaluate import machine_info
from seed_gym.report import SPLITS, aggregate, curve_points, load_run, svg_chart, write_report
from seed_gym.stats import bootstrap_ci, paired_difference

# benchmark algorithm names that are a ``seed-gym train`` algorithm with flags (a run folder is
# named by the benchmark name)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "seed-opid": ("seed", ["--teacher-advantage"]),  # the reference's teacher-advantage mode
    "seed-nosft": ("seed", ["--no-sft"]),
    "grpo-targetkl": ("grpo", ["--target-kl", "0.02"]),
    "seed-targetkl": ("seed", ["--target-kl", "0.02"]),
    # a tenth of the reference's KL: the demo's collapsing update replayed and rerun without the
    # collapse (docs/benchmarks.md); both algorithms, so the pair differs in OPD alone. The
    # smollm2-cpu preset's own KL since 0.4.0; the names stay for the runs made with them
    "grpo-kl001": ("grpo", ["--kl-coef", "0.001"]),
    "seed-kl001": ("seed", ["--kl-coef", "0.001"]),
    # the reference's KL (0.01), the smollm2-cpu preset's before 0.4.0
    "grpo-kl01": ("grpo", ["--kl-coef", "0.01"]),
    "seed-kl01": ("seed", ["--kl-coef", "0.01"]),
    # no optimizer step in an iteration whose groups all saturated: AdamW's momentum alone moved
    # the policy there (docs/benchmarks.md, "The momentum is the cause"). Differs from the
    # kl001 pair only from a run's first saturated update on
    "grpo-skipsat": ("grpo", ["--kl-coef", "0.001", "--skip-saturated"]),
    "seed-skipsat": ("seed", ["--kl-coef", "0.001", "--skip-saturated"]),
    # and an early stop within an update once a mini-batch's KL to the sampling policy passes 0.02:
    # the replayed seed 4 fell in its next, unsaturated update without it (same section)
    "grpo-skiptkl": ("grpo", ["--kl-coef", "0.001", "--skip-saturated", "--target-kl", "0.02"]),
    "seed-skiptkl": ("seed", ["--kl-coef", "0.001", "--skip-saturated", "--target-kl", "0.02"]),
    # a line search on the whole update: halved, then undone, while its KL to the sampling policy
    # on its own samples is above 0.02 (the early stop above reads the KL before each step and
    # never saw the step that broke GRPO seed 1; docs/benchmarks.md, "The line search")
    "grpo-linesearch": ("grpo", ["--kl-coef", "0.001", "--max-update-kl", "0.02"]),
    "seed-linesearch": ("seed", ["--kl-coef", "0.001", "--max-update-kl", "0.02"]),
}


def algo_argv(name: str) -> list[str]:
    """``--algo`` and the flags of a benchmark algorithm name (``seed-opid``, or a plain one)."""
    algo, flags = VARIANTS.get(name, (name, []))
    return ["--algo", algo, *flags]


# train flags per configuration (``seed-gym train`` field names); ``--algo``, ``--seed`` and
# ``--out`` are added per run
CONFIGS: dict[str, dict[str, Any]] = {
    # The measured CPU learning curve (README): the smollm2-cpu preset as it is (SmolLM2-135M,
    # format warm-up of 32 episodes with 8 analyzer rows, EZPoints text with a 4-turn limit,
    # 3 iterations of 4 tasks x 8, sampled eval of 12 tasks x 3 on seen and unseen at the start
    # and the end), 3 seeds, 2 runs side by side with one torch thread each; the shared warm-up is
    # built first with both cores.
    "cpu": {
        "preset": "smollm2-cpu",
        "eval-cache": True,  # GRPO and SEED of one seed start from the same weights: one start eval
        "seeds": [0, 1, 2],
        "jobs": 2,
    },
    # the earlier measured configurations (README): the preset at commit 9c5f21e (6 turns, 2 eval
    # samples per task; 81 min, no unseen gain) and at 09f7b40 (6 turns and twice the warm-up,
    # 64 + 16 analyzer episodes, 3 eval samples; 109 min, unseen gains excluding 0)
    "cpu-6turns": {
        "preset": "smollm2-cpu",
        "max-turns": 6,
        "eval-samples": 2,
        "eval-cache": True,
        "seeds": [0, 1, 2],
        "jobs": 2,
    },
    "cpu-long": {
        "preset": "smollm2-cpu",
        "max-turns": 6,
        "format-warmup-episodes": 64,
        "format-warmup-analyzer-episodes": 16,
        "eval-samples": 3,
        "eval-cache": True,
        "seeds": [0, 1, 2],
        "jobs": 2,
    },
    # long enough for OPD to act (issue 26): SEED, its teacher-advantage (OPID) mode and GRPO,
    # 5 seeds, 6 iterations (twice the demo's; one iteration took the seen success from 0.08 to
    # 0.28 and from 0.17 to 0.56, so groups saturate within it), seen and unseen evaluated at
    # the start and every 3 iterations; 2 runs side by side on 1 thread each (~5 h)
    "cpu-long-opd": {
        "preset": "smollm2-cpu",
        "iterations": 6,
        "eval-every": 3,
        "eval-cache": True,
        "seeds": [0, 1, 2, 3, 4],
        "algos": ["grpo", "seed", "seed-opid"],
        "jobs": 2,
    },
    # larger runs for a machine with an accelerator or many cores
    "gpu": {
        "preset": "smollm2-cpu",
        "env": "seed_gym/EZPoints-v0",
        "modality": "text",
        "iterations": 100,
        "tasks-per-iter": 8,
        "group-size": 8,
        "max-new-tokens": 128,
        "max-turns": 8,
        "gen-batch": 64,
        "micro-batch": 16,
        "eval-at-start": True,
        "eval-every": 10,
        "eval-tasks": 64,
        "eval-samples": 4,
        "eval-temperature": 1.0,
        "seeds": [0, 1, 2, 3, 4],
    },
    # the CI version: the random tiny model, 2 iterations
    "smoke": {
        "preset": "tiny",
        "env": "seed_gym/EZPoints-v0",
        "modality": "text",
        "iterations": 2,
        "tasks-per-iter": 2,
        "group-size": 2,
        "max-new-tokens": 8,
        "max-turns": 2,
        "eval-at-start": True,
        "eval-every": 1,
        "eval-tasks": 2,
        "eval-samples": 2,
        "eval-temperature": 1.0,
        "eval-cache": True,
        "threads": 1,
        "seeds": [0, 1, 2],
        "jobs": 2,
    },
}


def train_argv(config: dict[str, Any], algo: str, seed: int, out: Path) -> list[str]:
    argv = [*algo_argv(algo), "--seed", str(seed), "--out", str(out), "--no-progress"]
    argv += ["--no-tensorboard", "--no-save-hf"]
    for key, value in config.items():
        if key in ("seeds", "jobs", "algos"):
            continue
        if isinstance(value, bool):  # tyro's flag pair: --eval-at-start / --no-eval-at-start
            argv.append(f"--{key}" if value else f"--no-{key}")
        else:
            argv += [f"--{key}", str(value)]
    return argv


def finished(run_dir: Path, iterations: int, algo: str) -> bool:
    """The run's metrics reach its last iteration (the prompt baseline logs iteration 0 only)."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return False
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    last = max((m["iteration"] for m in lines), default=-1)
    return last >= (0 if algo_argv(algo)[1] == "prompt" else iterations)


def run_config(config: dict[str, Any], algo: str, seed: int, extra: list[str]) -> Any:
    """The ``TrainConfig`` one run of the benchmark trains with (preset, config and extra flags)."""
    from seed_gym.trainer.config import parse_args

    return parse_args(train_argv(config, algo, seed, Path("unused")) + extra)


# the warm-up and (for SEED and skill-grpo) Stage 1 of one run's config, built in a child
# process (see prepare)
_PREPARE = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from seed_gym.trainer.algorithms import make_algorithm\n"
    "from seed_gym.trainer.config import parse_args\n"
    "from seed_gym.trainer.warmup import warmup_for_config\n"
    "cfg = parse_args(json.loads(sys.argv[1]))\n"
    "base = str(warmup_for_config(cfg, threads=int(sys.argv[2]))) if cfg.warmup.episodes else cfg.model\n"
    "cfg = cfg.replace(warmup_threads=int(sys.argv[2]))\n"
    "start = make_algorithm(cfg).start_model(cfg, base, Path(sys.argv[3]), 'cpu', lambda f, *a, **k: f(*a, **k))\n"
    "if start:\n"
    "    print(start)\n"
    "print(base)\n"
)


def prepare(
    config: dict[str, Any], algos: list[str], seed: int, extra: list[str], threads: int, out: Path
) -> None:
    """Build the shared format-warmed model and Stage 1 model once, with ``threads`` torch threads,
    before runs start side by side (every run loads them from the cache; two runs building one
    at once would only waste the time). They are built in a child process: built in this one,
    the SFT's freed memory stayed with the benchmark (9.6 GB resident) while the runs trained
    beside it, and on a 23 GB machine the kernel's OOM killer ended the benchmark."""
    needs_stage1 = [a for a in algos if _self_analyzes(a)]
    for algo in needs_stage1[:1] or algos[:1]:
        if run_config(config, algo, seed, extra).warmup.episodes == 0 and not needs_stage1:
            return
        argv = train_argv(config, algo, seed, Path("unused")) + extra
        t0 = time.perf_counter()
        record = out / "prepare"
        child = [sys.executable, "-c", _PREPARE, json.dumps(argv), str(threads), str(record)]
        printed = subprocess.run(child, check=True, stdout=subprocess.PIPE, text=True).stdout
        for path in printed.strip().splitlines()[-2:]:
            print(f"[prepared] {path} ({time.perf_counter() - t0:.0f} s)", flush=True)


def _self_analyzes(name: str) -> bool:
    """Whether the algorithm builds its own start (SEED's Stage 1), which ``prepare`` builds once."""
    from seed_gym.trainer.algorithms import ALGORITHMS, Algorithm

    algo_flags = algo_argv(name)
    cls = ALGORITHMS[algo_flags[1]]
    return cls.start_model is not Algorithm.start_model and "--no-sft" not in algo_flags


def run_order(algos: list[str], seeds: list[int], *, cached_start: bool) -> list[tuple[str, int]]:
    """The order runs start in: seed by seed, so an interrupted benchmark leaves whole seeds.
    With the eval cache (``cached_start``) the algorithms go in the given order: a run that
    starts from the same weights as an earlier one of its seed (``seed-opid`` after ``seed``:
    one Stage 1 model) reads its start eval instead of playing it again. Without it the
    compared algorithms (SEED: analysis, rescoring) take longest and go first, so the job slots
    finish close together."""
    if cached_start:
        return [(a, s) for s in seeds for a in algos]
    return [(a, s) for s in seeds for a in reversed(algos)]


def run_all(
    config: dict[str, Any],
    algos: list[str],
    seeds: list[int],
    out: Path,
    extra: list[str],
    jobs: int = 1,
) -> dict[str, float]:
    """Train every (algo, seed) not already finished, ``jobs`` at a time; returns wall seconds per
    run. Each run is its own ``seed-gym train`` process with one torch thread (the config's
    ``threads``), so ``jobs`` up to the core count run side by side without contending for cores."""
    todo = []
    for algo, seed in run_order(algos, seeds, cached_start=bool(config.get("eval-cache"))):
        run_dir = out / "runs" / f"{algo}-s{seed}"
        if finished(run_dir, run_config(config, algo, seed, extra).iterations, algo):
            print(f"[skip] {run_dir.name}: finished", flush=True)
            continue
        resume = ["--resume"] if (run_dir / "checkpoint.pt").exists() else []
        cmd = [sys.executable, "-m", "seed_gym.cli", "train"]
        todo.append((run_dir, cmd + train_argv(config, algo, seed, run_dir) + resume + extra))
    if todo and jobs > 1:
        prepare(config, algos, seeds[0], extra, threads=jobs, out=out)
    return run_jobs(todo, jobs)


def run_jobs(todo: list[tuple[Path, list[str]]], jobs: int) -> dict[str, float]:
    """Run the commands ``(run_dir, argv)`` ``jobs`` at a time, each one's output appended to
    ``run_dir/train.log``; returns wall seconds per run folder name. A failed command is
    reported when it ends (with its log's tail) and the others go on: one run killed for memory
    must not stall a benchmark of hours. If any failed, the benchmark ends with their list once
    the rest are done; rerunning the command resumes them (finished runs are skipped)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    todo = list(todo)
    times: dict[str, float] = {}
    running: list[tuple[Path, subprocess.Popen, float, Any]] = []
    failed: list[str] = []
    while todo or running:
        while todo and len(running) < jobs:
            run_dir, cmd = todo.pop(0)
            run_dir.mkdir(parents=True, exist_ok=True)
            log = (run_dir / "train.log").open("a")  # a resumed run's log follows the first part
            print(f"[run] {run_dir.name}: {' '.join(cmd[3:])}", flush=True)
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
            running.append((run_dir, proc, time.perf_counter(), log))
        time.sleep(0.5)
        for item in list(running):
            run_dir, proc, t0, log = item
            if proc.poll() is None:
                continue
            running.remove(item)
            log.close()
            times[run_dir.name] = time.perf_counter() - t0
            if proc.returncode == 0:
                print(f"[done] {run_dir.name} in {times[run_dir.name]:.0f} s", flush=True)
                continue
            why = f"exit {proc.returncode}"
            if proc.returncode == -signal.SIGKILL:
                why += ": killed (SIGKILL; the kernel's OOM killer when memory ran out?)"
            tail = (run_dir / "train.log").read_text(errors="replace")[-3000:]
            print(f"[failed] {run_dir.name} ({why}):\n{tail}", flush=True)
            failed.append(f"{run_dir.name} ({why})")
    if failed:
        raise SystemExit(
            f"seed-gym train failed for {', '.join(failed)}; the same command resumes them "
            "(finished runs are skipped)"
        )
    return times


# --- analysis --------------------------------------------------------------------------------------
def interpolate(points: list[tuple[int, float, float]], xs: np.ndarray) -> np.ndarray:
    """Success at env steps ``xs`` by linear interpolation of (steps, success) points."""
    px = np.array([p[1] for p in points], dtype=float)
    py = np.array([p[2] for p in points], dtype=float)
    return np.interp(xs, px, py)


def eval_episodes(run_dir: Path, split: str) -> dict[int, list[dict[str, Any]]]:
    """iteration -> the episodes of that eval (``RUN_DIR/evals/iter_NNNN-SPLIT.jsonl``)."""
    out = {}
    for path in sorted((run_dir / "evals").glob(f"iter_*-{split}.jsonl")):
        iteration = int(path.name[len("iter_") :].split("-")[0])
        out[iteration] = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return out


def task_success(episodes: list[dict[str, Any]]) -> dict[str, float]:
    """task id -> mean success over its eval samples."""
    by_task: dict[str, list[float]] = {}
    for e in episodes:
        by_task.setdefault(e["task_id"], []).append(float(e["won"]))
    return {t: float(np.mean(v)) for t, v in by_task.items()}


def paired_table(out: Path, algos: list[str], seeds: list[int]) -> dict[str, Any]:
    """Success at the first and last eval of every run, paired by (seed, eval task): the unit of
    resampling is that pair (a task's samples are correlated), as ``seed-gym compare`` does.

    - ``gain``: last minus first eval of the same run (same tasks, env seeds and sampling seeds),
      per algorithm, with its paired bootstrap 95% interval (``stats.paired_difference``);
    - ``vs``: each algorithm minus the first one at the last eval (runs of one seed share tasks).
    """
    table: dict[str, Any] = {"gain": {}, "vs": {}}
    for split in ("seen", "unseen"):
        last_by: dict[str, dict[tuple[int, str], float]] = {}
        for algo in algos:
            first, last, per_seed = {}, {}, {}
            for seed in seeds:
                evals = eval_episodes(out / "runs" / f"{algo}-s{seed}", split)
                if len(evals) < 2:
                    continue
                f, la = task_success(evals[min(evals)]), task_success(evals[max(evals)])
                tasks = sorted(set(f) & set(la))
                first.update({(seed, t): f[t] for t in tasks})
                last.update({(seed, t): la[t] for t in tasks})
                per_seed[str(seed)] = float(np.mean([la[t] - f[t] for t in tasks]))
            if not first:
                continue
            keys = sorted(first)
            d = paired_difference([first[k] for k in keys], [last[k] for k in keys])
            table["gain"].setdefault(split, {})[algo] = {
                "first": d["mean_a"],
                "last": d["mean_b"],
                "gain": d["diff"],
                "ci95": d["ci95"],
                "per_seed": per_seed,
                "tasks": d["n"],
            }
            last_by[algo] = last
        base = last_by.get(algos[0], {})
        for algo in algos[1:]:
            keys = sorted(set(base) & set(last_by.get(algo, {})))
            if keys:
                d = paired_difference([base[k] for k in keys], [last_by[algo][k] for k in keys])
                table["vs"].setdefault(split, {})[f"{algo} - {algos[0]}"] = {
                    "diff": d["diff"],
                    "ci95": d["ci95"],
                }
    return table


def analyze(out: Path, algos: list[str], seeds: list[int]) -> dict[str, Any]:
    runs = {
        (algo, seed): load_run(out / "runs" / f"{algo}-s{seed}") for algo in algos for seed in seeds
    }
    result: dict[str, Any] = {"algos": algos, "seeds": seeds, "curves": {}, "paired": {}}
    for split in SPLITS:
        result["curves"][split] = {
            algo: {
                "mean": aggregate([runs[(algo, s)] for s in seeds], split),
                "per_seed": {str(s): curve_points(runs[(algo, s)], split) for s in seeds},
            }
            for algo in algos
        }
    # paired differences of every algorithm against the first one (the baseline)
    base = algos[0]
    for split in ("seen", "unseen"):
        curves = {k: curve_points(r, split) for k, r in runs.items()}
        trained = [k for k in runs if k[0] != "prompt"]
        if any(not curves[k] for k in runs):
            continue
        lo = max(curves[k][0][1] for k in trained) if trained else 0.0
        hi = min(curves[k][-1][1] for k in trained) if trained else 0.0
        grid_src = aggregate([runs[k] for k in trained] or list(runs.values()), split)
        # the mean steps of each eval inside the common range, and its end (where every run is)
        grid = np.array(sorted({p["x"] for p in grid_src if lo <= p["x"] <= hi} | {hi}))
        for algo in algos[1:]:
            rows = []
            for x in grid:
                d = np.array(
                    [
                        float(interpolate(curves[(algo, s)], np.array([x]))[0])
                        - float(interpolate(curves[(base, s)], np.array([x]))[0])
                        for s in seeds
                    ]
                )
                rows.append(
                    {
                        "env_steps": float(x),
                        "diff": float(d.mean()),
                        "ci95": list(bootstrap_ci(lambda idx, d=d: float(d[idx].mean()), len(d))),
                        "per_seed": d.tolist(),
                    }
                )
            result["paired"].setdefault(split, {})[f"{algo} - {base}"] = rows
    result["table"] = paired_table(out, algos, seeds)
    result["steps_to_base_final"] = steps_to_base_final(runs, algos, seeds)
    result["instruments"] = instrument_means(runs, algos, seeds)
    result["saturated"] = saturated_updates(runs, algos, seeds)
    return result


def first_reach(points: list[tuple[int, float, float]], target: float) -> float | None:
    """The env steps at which a success curve first reaches ``target`` (linear between evals;
    the first point counts), or None when it never does."""
    for (_, x0, y0), (_, x1, y1) in zip(points, points[1:], strict=False):
        if y0 >= target:
            return x0
        if y1 >= target:
            return x0 + (x1 - x0) * (target - y0) / (y1 - y0)
    return points[-1][1] if points and points[-1][2] >= target else None


def steps_to_base_final(runs: dict, algos: list[str], seeds: list[int]) -> dict[str, Any]:
    """Per split: the baseline's final success (mean over seeds) and, per algorithm, the env
    steps each seed's curve needs to reach it, as a share of the baseline's own final env steps
    (the paper: SEED at 60 % of GRPO's data beats GRPO's final). A seed that never reaches it
    counts as None; ``mean_ratio`` averages the seeds that did and says how many."""
    base, out = algos[0], {}
    for split in SPLITS:
        finals = [curve_points(runs[(base, s)], split) for s in seeds]
        if not all(finals):
            continue
        target = float(np.mean([c[-1][2] for c in finals]))
        budget = float(np.mean([c[-1][1] for c in finals]))
        out[split] = {"target": target, "base_env_steps": budget}
        for algo in algos:
            reach = [first_reach(curve_points(runs[(algo, s)], split), target) for s in seeds]
            ratios = [r / budget for r in reach if r is not None]
            out[split][algo] = {
                "env_steps": reach,
                "mean_ratio": float(np.mean(ratios)) if ratios else None,
                "reached": f"{len(ratios)}/{len(seeds)}",
            }
    return out


INSTRUMENTS = (
    "analyzer/parse_rate", "analyzer/avoidance_share_lost", "analyzer/workflow_share_won",
    "opd/skill_gap_fork_won", "opd/skill_gap_fork_lost", "opd/control_gap_fork_won",
    "opd/control_gap_fork_lost", "opd/skill_gap", "opd/active_ratio", "opd/grad_ratio",
    "opd/grad_cosine", "train/kl_ref", "rollout/success",
)  # fmt: skip


def instrument_means(runs: dict, algos: list[str], seeds: list[int]) -> dict[str, Any]:
    """Per algorithm: each instrument's mean over every iteration of every seed (and the
    per-seed means), from the runs' metrics (SEED's instruments, docs/seed.md)."""
    out: dict[str, Any] = {}
    for algo in algos:
        for key in INSTRUMENTS:
            per_seed = {}
            for s in seeds:
                values = [m[key] for m in runs[(algo, s)].metrics if m.get(key) is not None]
                if values:
                    per_seed[str(s)] = float(np.mean(values))
            if per_seed:
                out.setdefault(algo, {})[key] = {
                    "mean": float(np.mean(list(per_seed.values()))),
                    "per_seed": per_seed,
                }
    return out


SATURATED = 1e-3  # mean |advantage| below this: every group of the iteration all won or all lost


def saturated_updates(runs: dict, algos: list[str], seeds: list[int]) -> dict[str, Any]:
    """Per algorithm: the updates whose groups had all saturated (mean |GRPO advantage| under
    ``SATURATED``: no policy-gradient signal, so what moves the policy is AdamW's momentum from
    earlier updates and the KL, entropy and OPD terms), and the next iteration's rollouts:
    success after minus success at the saturated iteration, and ``train/kl_ref`` then."""
    out: dict[str, Any] = {}
    for algo in algos:
        updates, events = 0, []
        for s in seeds:
            lines = sorted(
                (m for m in runs[(algo, s)].metrics if "train/adv_abs_mean" in m),
                key=lambda m: m["iteration"],
            )
            updates += len(lines)
            for i, m in enumerate(lines):
                if m["train/adv_abs_mean"] >= SATURATED:
                    continue
                after = lines[i + 1] if i + 1 < len(lines) else None
                events.append({
                    "seed": s,
                    "iteration": m["iteration"],
                    "success": m.get("rollout/success"),
                    "next_success": after.get("rollout/success") if after else None,
                    "next_kl_ref": after.get("train/kl_ref") if after else None,
                })  # fmt: skip
        changes = [
            e["next_success"] - e["success"] for e in events if e["next_success"] is not None
        ]
        out[algo] = {
            "updates": updates,
            "saturated": len(events),
            "events": events,
            "mean_next_change": float(np.mean(changes)) if changes else None,
        }
    return out


def table_markdown(res: dict[str, Any]) -> str:
    """The result table (the README shows it): sampled success at the first and last eval,
    the paired gain with its 95% interval, per split and algorithm."""
    lines = [
        "| split | algorithm | first eval | last eval | gain, 95% CI (paired by seed x task) "
        "| gain per seed |",
        "|---|---|---|---|---|---|",
    ]
    for split, per_algo in res["table"]["gain"].items():
        for algo, r in per_algo.items():
            lo, hi = r["ci95"]
            seeds = " ".join(f"{v:+.2f}" for v in r["per_seed"].values())
            lines.append(
                f"| {split} | {algo} | {r['first']:.3f} | {r['last']:.3f} | "
                f"{r['gain']:+.3f} [{lo:+.3f}, {hi:+.3f}] | {seeds} |"
            )
    for split, pairs in res["table"]["vs"].items():
        for name, r in pairs.items():
            lo, hi = r["ci95"]
            lines.append(
                f"| {split} | {name} (last eval) | | | {r['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] | |"
            )
    return "\n".join(lines)


def print_summary(res: dict[str, Any]) -> None:
    print("\n" + table_markdown(res))
    for split, r in res.get("steps_to_base_final", {}).items():
        print(f"\n{split}: env steps to reach {res['algos'][0]}'s final success {r['target']:.3f} "
              f"(share of its {r['base_env_steps']:.0f} steps):")  # fmt: skip
        for algo in res["algos"]:
            ratio = r[algo]["mean_ratio"]
            shown = f"{ratio:.2f}" if ratio is not None else "never"
            print(f"  {algo:>14s} {shown} (seeds that reach it: {r[algo]['reached']})")
    if res.get("instruments"):
        print("\ninstruments (mean over iterations and seeds):")
        for algo, values in res["instruments"].items():
            cells = ", ".join(f"{k.split('/')[-1]} {v['mean']:+.4f}" for k, v in values.items())
            print(f"  {algo}: {cells}")
    if res.get("saturated"):
        print(
            "\nsaturated updates (every group all won or all lost; next rollouts' success change):"
        )
        for algo, r in res["saturated"].items():
            cells = ", ".join(
                f"s{e['seed']} it{e['iteration']} "
                + (f"{e['next_success'] - e['success']:+.2f}" if e["next_success"] is not None
                   else "(last)")
                for e in r["events"]
            )  # fmt: skip
            print(f"  {algo}: {r['saturated']} of {r['updates']}" + (f": {cells}" if cells else ""))
    algos = res["algos"]
    print(f"\nsuccess at the last eval (mean over seeds {res['seeds']}):")
    print(f"{'split':8s} " + " ".join(f"{a:>16s}" for a in algos))
    for split in SPLITS:
        cells = []
        for a in algos:
            mean = res["curves"][split][a]["mean"]
            cells.append(f"{mean[-1]['y']:.3f} @{mean[-1]['x']:>6.0f}" if mean else f"{'-':>16s}")
        print(f"{split:8s} " + " ".join(f"{c:>16s}" for c in cells))
    for split, pairs in res["paired"].items():
        for name, rows in pairs.items():
            print(f"\npaired difference {name} on {split} (per seed, interpolated at equal steps):")
            for r in rows:
                lo, hi = r["ci95"]
                seeds = " ".join(f"{d:+.3f}" for d in r["per_seed"])
                print(
                    f"  {r['env_steps']:>8.0f} steps  {r['diff']:+.3f}  95% CI [{lo:+.3f}, {hi:+.3f}]"
                    f"  seeds: {seeds}"
                )


def write_plot(res: dict[str, Any], path: Path, env: str) -> None:
    charts = [
        svg_chart(
            {
                a: res["curves"][split][a]["mean"]
                for a in res["algos"]
                if res["curves"][split][a]["mean"]
            },
            title=f"{env} {split}",
            env=env,
            split=split,
        )
        for split in SPLITS
    ]
    width = 440 * len(charts)
    inner = "".join(f'<g transform="translate({440 * i},0)">{c}</g>' for i, c in enumerate(charts))
    path.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="280">'
        "<style>.frame{fill:#fff;stroke:#999}.grid{stroke:#eee}.tick{font:10px sans-serif}"
        ".axis,.legend{font:11px sans-serif}.title{font:600 13px sans-serif}</style>"
        f"{inner}</svg>\n"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="cpu")
    p.add_argument("--smoke", action="store_true", help="the 2-iteration tiny version (CI)")
    p.add_argument(
        "--algos",
        default=None,
        help="comma list; the first is the baseline; a variant name (seed-opid, ...) is an "
        "algorithm with flags (VARIANTS). Default: the config's, else grpo,seed",
    )
    p.add_argument("--seeds", default=None, help="comma list (default: the config's)")
    p.add_argument("--out", required=True, help="output folder (runs/, learning.json, plots)")
    p.add_argument(
        "--train-arg",
        action="append",
        default=[],
        help="extra flag for every seed-gym train call, e.g. --train-arg=--lr=3e-5 (repeatable)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="training runs side by side (default: the config's; each uses 1 torch thread)",
    )
    p.add_argument("--analyze-only", action="store_true", help="no training: re-read the runs")
    args = p.parse_args(argv)
    config = dict(CONFIGS["smoke" if args.smoke else args.config])
    algos = args.algos.split(",") if args.algos else list(config.get("algos", ["grpo", "seed"]))
    algos = [a for a in algos if a]
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else list(config["seeds"])
    if len(algos) < 2:
        raise SystemExit("--algos needs at least two algorithms to compare")
    from seed_gym.trainer.algorithms import ALGORITHMS as ALGOS

    unknown = [a for a in algos if algo_argv(a)[1] not in ALGOS]
    if unknown:
        raise SystemExit(
            f"seed-gym train does not know {unknown} (it accepts {sorted(ALGOS)} and the "
            f"variants {sorted(VARIANTS)}); pass --algos with those"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "benchmark_config.json").write_text(
        json.dumps(
            {"config": config, "algos": algos, "seeds": seeds, "extra": args.train_arg}, indent=2
        )
    )
    jobs = args.jobs or int(config.get("jobs", 1))
    if jobs < 1:
        raise SystemExit("--jobs must be >= 1")
    times = {} if args.analyze_only else run_all(config, algos, seeds, out, args.train_arg, jobs)
    res = analyze(out, algos, seeds)
    res["config"] = config
    res["wall_seconds"] = times
    if not args.analyze_only:  # where the runs trained; a re-analysis elsewhere says nothing
        res["machine"] = machine_info()
    (out / "learning.json").write_text(json.dumps(res, indent=2) + "\n")
    env = run_config(config, algos[0], seeds[0], args.train_arg).env
    res["env"] = env
    write_plot(res, out / "learning.svg", env)
    (out / "learning.md").write_text(table_markdown(res) + "\n")
    write_report([out / "runs"], out / "report.html", title=f"learning: {' vs '.join(algos)}")
    print_summary(res)
    print(
        f"\nwrote {out / 'learning.json'}, {out / 'learning.md'}, {out / 'learning.svg'} and "
        f"{out / 'report.html'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
