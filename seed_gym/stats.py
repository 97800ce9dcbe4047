"""Statistics of evaluation results: per-task aggregation, avg@k / pass@k, bootstrap intervals, and
the paired comparison behind ``seed-gym compare A/results.json B/results.json``.

The unit of resampling is the **task**: with k samples per task the k episodes of a task are
correlated (same task, same env seed), so every bootstrap draws whole tasks with replacement (a
cluster bootstrap) and recomputes the statistic from their episodes. Intervals are percentile
intervals from ``n_boot`` draws of a ``numpy`` generator seeded with ``seed``: the same inputs and
seed give the same interval, byte for byte. One run's success rate is shown with the Wilson
interval instead (``wilson_interval``), everywhere: a percentile bootstrap has zero width at 0/n
and n/n.

Definitions (n_t samples of task t, c_t of them won, T tasks, K task types):
- ``success`` (micro, = avg@k): successes / episodes.
- ``macro_success``: the mean over task types of each type's success.
- ``pass@j`` (j <= min n_t): mean over tasks of the unbiased estimator
  ``1 - C(n_t - c_t, j) / C(n_t, j)`` (Chen et al., 2021), the chance that at least one of j
  samples drawn without replacement from the task's n_t samples succeeds.
- ``invalid_rate``: invalid steps / all steps (a ratio of sums, so long episodes weigh more).
- ``return``, ``steps`` and every numeric namespaced extra (``search.em``, ``search.f1``,
  ``webshop.score``): means over episodes that report them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.jsonl import read_json_object
from seed_gym.oneline import usage_error

N_BOOT = 2000
ALPHA = 0.05
Z95 = 1.959963984540054  # two-sided 95% normal quantile


# --- one run's success -----------------------------------------------------------------------------
def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion: the one interval for one run's
    success rate (``results.json``'s ``success_ci95``, the CLI line, the HTML report). Sound at
    0/n and n/n (5/5 gives [0.566, 1]), where the normal approximation and a percentile bootstrap
    collapse to zero width; differences between runs use ``paired_difference``."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # exact ends at 0/n and n/n, where the float formula leaves ~1e-17 of rounding noise
    lo = 0.0 if successes <= 0 else max(0.0, center - half)
    hi = 1.0 if successes >= n else min(1.0, center + half)
    return (lo, hi)


# --- per task ------------------------------------------------------------------------------------
def per_task(episodes: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Episodes grouped by task (first-seen order): sample count, successes and per-metric sums.

    Each value: ``type``, ``seed`` (env seed), ``n``, ``successes``, ``return`` (sum),
    ``steps`` (sum), ``invalid_steps`` (sum), ``extras`` ({key: [sum, count]}).
    """
    out: dict[str, dict[str, Any]] = {}
    for e in episodes:
        t = out.setdefault(
            e["task_id"],
            {
                "type": e.get("task_type", ""),
                "seed": e.get("seed"),
                "n": 0,
                "successes": 0,
                "return": 0.0,
                "steps": 0,
                "invalid_steps": 0,
                "extras": {},
            },
        )
        t["n"] += 1
        t["successes"] += int(bool(e["won"]))
        t["return"] += float(e["return"])
        t["steps"] += int(e["steps"])
        t["invalid_steps"] += int(e["invalid_steps"])
        for key, value in (e.get("extras") or {}).items():
            s = t["extras"].setdefault(key, [0.0, 0])
            s[0] += float(value)
            s[1] += 1
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with ``c`` of ``n`` samples correct (needs ``k <= n``).

    ``1 - C(n-c, k) / C(n, k)`` computed as a product, which never overflows.
    """
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n, got k={k}, n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def k_values(k: int) -> list[int]:
    """The j of the reported pass@j: powers of two below ``k``, and ``k``."""
    out = [j for j in (1, 2, 4, 8, 16, 32, 64, 128) if j < k]
    return [*out, k]


# --- arrays for fast resampling -------------------------------------------------------------------
class TaskTable:
    """Per-task columns as arrays (T tasks), so a bootstrap draw is an index array."""

    def __init__(self, tasks: dict[str, dict[str, Any]]):
        self.ids = list(tasks)
        rows = list(tasks.values())
        self.types = [r["type"] for r in rows]
        self.n = np.array([r["n"] for r in rows], dtype=float)  # [T]
        self.c = np.array([r["successes"] for r in rows], dtype=float)  # [T]
        self.ret = np.array([r["return"] for r in rows], dtype=float)  # [T] sums
        self.steps = np.array([r["steps"] for r in rows], dtype=float)  # [T] sums
        self.invalid = np.array([r["invalid_steps"] for r in rows], dtype=float)  # [T] sums
        keys = sorted({k for r in rows for k in r["extras"]})
        self.extras = {
            k: (
                np.array([r["extras"].get(k, [0.0, 0])[0] for r in rows], dtype=float),
                np.array([r["extras"].get(k, [0.0, 0])[1] for r in rows], dtype=float),
            )
            for k in keys
        }
        type_names = sorted(set(self.types))
        self.type_index = np.array([type_names.index(t) for t in self.types])  # [T]
        self.type_names = type_names
        self.min_n = int(self.n.min()) if len(rows) else 0

    def __len__(self) -> int:
        return len(self.ids)

    # each statistic takes an index array into the tasks (a bootstrap draw, or all of them)
    def success(self, idx: np.ndarray) -> float:
        return _ratio(self.c[idx].sum(), self.n[idx].sum())

    def macro_success(self, idx: np.ndarray) -> float:
        types = self.type_index[idx]
        c = np.bincount(types, weights=self.c[idx], minlength=len(self.type_names))
        n = np.bincount(types, weights=self.n[idx], minlength=len(self.type_names))
        present = n > 0
        return float(np.mean(c[present] / n[present])) if present.any() else 0.0

    def mean_return(self, idx: np.ndarray) -> float:
        return _ratio(self.ret[idx].sum(), self.n[idx].sum())

    def mean_steps(self, idx: np.ndarray) -> float:
        return _ratio(self.steps[idx].sum(), self.n[idx].sum())

    def invalid_rate(self, idx: np.ndarray) -> float:
        return _ratio(self.invalid[idx].sum(), self.steps[idx].sum())

    def extra(self, key: str) -> Callable[[np.ndarray], float]:
        sums, counts = self.extras[key]
        return lambda idx: _ratio(sums[idx].sum(), counts[idx].sum())

    def pass_at(self, j: int) -> Callable[[np.ndarray], float]:
        per = np.array([pass_at_k(int(n), int(c), j) for n, c in zip(self.n, self.c, strict=True)])
        return lambda idx: float(per[idx].mean()) if len(idx) else 0.0

    def statistics(self) -> dict[str, Callable[[np.ndarray], float]]:
        """Every reported statistic by name."""
        stats: dict[str, Callable[[np.ndarray], float]] = {
            "success": self.success,
            "macro_success": self.macro_success,
            "return": self.mean_return,
            "steps": self.mean_steps,
            "invalid_rate": self.invalid_rate,
        }
        if self.min_n > 1:
            for j in k_values(self.min_n):
                stats[f"pass@{j}"] = self.pass_at(j)
        for key in self.extras:
            stats[key] = self.extra(key)
        return stats


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den else 0.0


def bootstrap_ci(
    stat: Callable[[np.ndarray], float],
    n_items: int,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    alpha: float = ALPHA,
) -> tuple[float, float]:
    """Percentile interval of ``stat(idx)`` over ``n_boot`` resamples of ``n_items`` items drawn
    with replacement from a generator seeded with ``seed``."""
    if n_items == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(n_boot, n_items))  # [n_boot, T]
    values = np.array([stat(d) for d in draws])  # [n_boot]
    lo, hi = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))


def summarize_tasks(
    tasks: dict[str, dict[str, Any]], *, n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any]:
    """Point estimates and cluster-bootstrap 95% intervals of every statistic.

    Returns ``{"metrics": {name: value}, "ci95": {name: [lo, hi]}, "n_boot", "ci_seed",
    "k_min", "k_max"}``.
    """
    table = TaskTable(tasks)
    everything = np.arange(len(table))
    metrics, ci = {}, {}
    for name, fn in table.statistics().items():
        metrics[name] = fn(everything)
        ci[name] = list(bootstrap_ci(fn, len(table), n_boot=n_boot, seed=seed))
    return {
        "metrics": metrics,
        "ci95": ci,
        "ci_method": "percentile cluster bootstrap over tasks",
        "n_boot": n_boot,
        "ci_seed": seed,
        "k_min": table.min_n,
        "k_max": int(table.n.max()) if len(table) else 0,
    }


def compact_per_task(tasks: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The per-task table stored in ``results.json`` (what ``compare`` pairs on): means per
    task plus the counts pass@k needs."""
    out = {}
    for tid, t in tasks.items():
        n = t["n"]
        out[tid] = {
            "type": t["type"],
            "seed": t["seed"],
            "n": n,
            "successes": t["successes"],
            "success": t["successes"] / n,
            "return": t["return"] / n,
            "steps": t["steps"] / n,
            "invalid_steps": t["invalid_steps"],
            "total_steps": t["steps"],
            **{k: s / c for k, (s, c) in sorted(t["extras"].items()) if c},
        }
    return out


# --- paired comparison ------------------------------------------------------------------------------
class MismatchError(ValueError):
    """Two result files that cannot be paired."""


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """Mean of ``b - a`` over paired items with a paired (resample-the-pairs) bootstrap interval."""
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"paired samples differ in length: {a_arr.shape} vs {b_arr.shape}")
    d = b_arr - a_arr  # [T]
    lo, hi = bootstrap_ci(
        lambda idx: float(d[idx].mean()), len(d), n_boot=n_boot, seed=seed, alpha=alpha
    )
    return {
        "n": int(len(d)),
        "mean_a": float(a_arr.mean()) if len(d) else 0.0,
        "mean_b": float(b_arr.mean()) if len(d) else 0.0,
        "diff": float(d.mean()) if len(d) else 0.0,
        "ci95": [lo, hi],
        "b_better": int((d > 0).sum()),
        "a_better": int((d < 0).sum()),
        "ties": int((d == 0).sum()),
    }


def compare_results(
    a: dict[str, Any],
    b: dict[str, Any],
    *,
    metric: str = "success",
    common_tasks: bool = False,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict[str, Any]:
    """Pair two ``results.json`` dicts task by task on ``metric`` (a per-task mean).

    Raises ``MismatchError`` when they are not results of the same env, split and manifest, when
    their task sets differ (unless ``common_tasks``: pair on the intersection), or when a shared
    task was played from a different env seed (a different episode).
    """
    for key in ("env_id", "split", "manifest_sha256"):
        if a.get(key) != b.get(key):
            raise MismatchError(
                f"cannot pair results: {key} differs ({a.get(key)!r} vs {b.get(key)!r}); a paired "
                "comparison needs both runs on the same env, split and task manifest"
            )
    ta, tb = a.get("per_task"), b.get("per_task")
    if not ta or not tb:
        raise MismatchError(
            "a results.json without per_task (written by an older seed-gym eval) cannot be paired"
        )
    for name, tasks in (("A", ta), ("B", tb)):
        if not isinstance(tasks, dict) or not all(isinstance(v, dict) for v in tasks.values()):
            raise MismatchError(f"{name}'s per_task is not an object of per-task objects")
    shared = [t for t in ta if t in tb]
    if set(ta) != set(tb) and not common_tasks:
        raise MismatchError(
            f"cannot pair results: the task sets differ (A has {len(ta)}, B has {len(tb)}, "
            f"{len(shared)} shared); rerun both on the same tasks (same --episodes and --seed) "
            "or pass --common-tasks to pair on the shared ones"
        )
    if not shared:
        raise MismatchError("cannot pair results: no task is in both files")
    seeds = [t for t in shared if ta[t].get("seed") != tb[t].get("seed")]
    if seeds:
        raise MismatchError(
            f"cannot pair results: {len(seeds)} tasks were played from different env seeds "
            f"(e.g. {seeds[0]!r}: {ta[seeds[0]].get('seed')} vs {tb[seeds[0]].get('seed')}); "
            "use the same eval --seed"
        )
    missing = [t for t in shared if metric not in ta[t] or metric not in tb[t]]
    if missing:
        raise MismatchError(f"metric {metric!r} is missing for {len(missing)} tasks")
    result = paired_difference(
        [ta[t][metric] for t in shared], [tb[t][metric] for t in shared], n_boot=n_boot, seed=seed
    )
    return {
        "metric": metric,
        "env_id": a["env_id"],
        "split": a["split"],
        "a": a.get("policy", "A"),
        "b": b.get("policy", "B"),
        "n_boot": n_boot,
        "ci_seed": seed,
        **result,
    }


def _load(path: str) -> dict[str, Any]:
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    if not p.is_file():
        usage_error("seed-gym compare", f"no results file {p}")
    try:
        return read_json_object(p)
    except ValueError as e:  # a run's eval .jsonl, a torn or hand-edited file
        usage_error("seed-gym compare", f"{e}; compare takes the results.json of seed-gym eval")


def compare_main(argv: list[str] | None = None) -> int:
    """``seed-gym compare A/results.json B/results.json [--metric success] [--json]``."""
    p = argparse.ArgumentParser(
        prog="seed-gym compare",
        description="Paired comparison of two eval results on identical tasks (B - A).",
    )
    p.add_argument("a", help="results.json (or its folder) of A, the baseline")
    p.add_argument("b", help="results.json (or its folder) of B")
    p.add_argument("--metric", default="success", help="per-task metric (default: success)")
    p.add_argument("--common-tasks", action="store_true", help="pair on the shared tasks only")
    p.add_argument("--n-boot", type=int, default=N_BOOT, help=f"bootstrap draws ({N_BOOT})")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = p.parse_args(argv)
    try:
        res = compare_results(
            _load(args.a),
            _load(args.b),
            metric=args.metric,
            common_tasks=args.common_tasks,
            n_boot=args.n_boot,
            seed=args.seed,
        )
    except MismatchError as e:
        print(f"seed-gym compare: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    lo, hi = res["ci95"]
    verdict = "B better" if lo > 0 else "A better" if hi < 0 else "no significant difference"
    print(f"{res['env_id']} {res['split']}: {res['metric']} on {res['n']} paired tasks")
    print(f"  A {res['a']}: {res['mean_a']:.4f}")
    print(f"  B {res['b']}: {res['mean_b']:.4f}")
    print(
        f"  B - A = {res['diff']:+.4f}  95% CI [{lo:+.4f}, {hi:+.4f}] "
        f"(paired bootstrap, {res['n_boot']} draws)  -> {verdict}"
    )
    print(f"  tasks: B better {res['b_better']}, A better {res['a_better']}, ties {res['ties']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return compare_main(argv)
