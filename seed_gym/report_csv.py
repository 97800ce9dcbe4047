"""``seed-gym report RUN_DIR ... --csv FILE``: the report's numbers as one flat table.

One row per (run, split, iteration): a training run gives a ``train`` row for each iteration's
rollouts and a ``seen`` / ``unseen`` row for each eval; an eval folder gives one row (its split,
no iteration). Columns (``COLUMNS``), empty where a run does not have the value::

    run, kind, algo, seed, env, model, split, iteration, env_steps, episodes, success, ci_lo,
    ci_hi, success_macro, return, episode_len, invalid_ratio, path

``success`` has its 95% Wilson interval (``ci_lo``, ``ci_hi``; ``stats.wilson_interval``, as
the CLI and the HTML report); ``env_steps`` is cumulative. Read it with
``pandas.read_csv(FILE)``.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_gym import stats

COLUMNS = (
    "run",
    "kind",
    "algo",
    "seed",
    "env",
    "model",
    "split",
    "iteration",
    "env_steps",
    "episodes",
    "success",
    "ci_lo",
    "ci_hi",
    "success_macro",
    "return",
    "episode_len",
    "invalid_ratio",
    "path",
)
SPLIT_PREFIXES = (("train", "rollout/"), ("seen", "eval/seen/"), ("unseen", "eval/unseen/"))


def _interval(success: float, n: float | None) -> tuple[float | None, float | None]:
    if not n:
        return None, None
    return stats.wilson_interval(round(success * n), n)


def train_rows(run: Any, steps: Sequence[float]) -> list[dict[str, Any]]:
    """A training run's rows: each metrics line holds up to one row per split."""
    base = {"run": run.label, "kind": "train", "algo": run.method, "seed": run.seed,
            "env": run.env, "model": run.config.get("model"), "path": str(run.path)}  # fmt: skip
    rows = []
    for m, cum_steps in zip(run.metrics, steps, strict=True):
        for split, prefix in SPLIT_PREFIXES:
            if m.get(f"{prefix}success") is None:
                continue
            success, n = float(m[f"{prefix}success"]), m.get(f"{prefix}episodes")
            lo, hi = _interval(success, n)
            rows.append(
                {
                    **base,
                    "split": split,
                    "iteration": m.get("iteration"),
                    "env_steps": cum_steps,
                    "episodes": n,
                    "success": success,
                    "ci_lo": lo,
                    "ci_hi": hi,
                    "success_macro": m.get(f"{prefix}success_macro"),
                    "return": m.get(f"{prefix}return"),
                    "episode_len": m.get(f"{prefix}episode_len"),
                    "invalid_ratio": m.get(f"{prefix}invalid_ratio"),
                }
            )
    return rows


def eval_row(run: Any, interval: Sequence[float]) -> dict[str, Any]:
    """An eval folder's row (``results.json``)."""
    r = run.results or {}
    return {"run": run.label, "kind": "eval", "algo": run.method, "seed": run.seed,
            "env": run.env, "model": (r.get("policy_info") or {}).get("model"),
            "split": r.get("split"), "iteration": None, "env_steps": None,
            "episodes": r.get("episodes"), "success": r.get("success_rate"),
            "ci_lo": interval[0], "ci_hi": interval[1],
            "success_macro": r.get("macro_success_rate"), "return": r.get("mean_return"),
            "episode_len": r.get("mean_steps"), "invalid_ratio": r.get("invalid_action_rate"),
            "path": str(run.path)}  # fmt: skip


def write_csv(rows: list[dict[str, Any]], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in COLUMNS})
    return path
