"""seed_gym.stats: pass@k, per-task aggregation, cluster bootstrap, paired comparison (hand-checked)."""

from __future__ import annotations

import json
import subprocess
import sys
from math import comb

import numpy as np
import pytest
from conftest import GUESS_ID, ROOT, import_example

from seed_gym import stats
from seed_gym.evaluate import evaluate, summarize

import_example()


def ep(task_id, won, *, task_type="a", steps=2, invalid=0, ret=None, extras=None, seed=0):
    return {
        "task_id": task_id,
        "task_type": task_type,
        "seed": seed,
        "won": won,
        "return": float(won) if ret is None else ret,
        "steps": steps,
        "invalid_steps": invalid,
        "extras": extras or {},
    }


# --- pass@k ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "n,c,k,expected",
    [
        (5, 2, 1, 0.4),  # = c / n
        (5, 2, 3, 0.9),  # 1 - C(3,3)/C(5,3) = 1 - 1/10
        (10, 3, 4, 1 - 35 / 210),  # 1 - C(7,4)/C(10,4)
        (4, 0, 2, 0.0),
        (4, 4, 1, 1.0),
        (4, 3, 2, 1.0),  # n - c < k: every pair holds a success
    ],
)
def test_pass_at_k_hand_worked(n, c, k, expected):
    assert stats.pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)
    assert stats.pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)


def test_pass_at_k_rejects_bad_input():
    with pytest.raises(ValueError, match="1 <= k <= n"):
        stats.pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        stats.pass_at_k(3, 5, 1)
    assert stats.k_values(1) == [1] and stats.k_values(5) == [1, 2, 4, 5]
    assert stats.k_values(8) == [1, 2, 4, 8]


# --- per task + summaries -------------------------------------------------------------------------
def two_tasks():
    # t1 (type a): 3 of 4 won; t2 (type b): 1 of 4 won
    return [ep("t1", w, task_type="a") for w in (1, 0, 1, 1)] + [
        ep("t2", w, task_type="b", steps=4, invalid=1) for w in (0, 0, 0, 1)
    ]


def test_summarize_tasks_hand_worked():
    tasks = stats.per_task(two_tasks())
    assert tasks["t1"]["n"] == 4 and tasks["t1"]["successes"] == 3
    s = stats.summarize_tasks(tasks, n_boot=200)
    m = s["metrics"]
    assert m["success"] == 0.5  # 4 / 8 episodes
    assert m["macro_success"] == 0.5  # (0.75 + 0.25) / 2
    assert m["pass@1"] == 0.5
    assert m["pass@2"] == pytest.approx((1.0 + 0.5) / 2)  # t2: 1 - C(3,2)/C(4,2) = 0.5
    assert m["pass@4"] == 1.0
    assert m["steps"] == 3.0  # (4*2 + 4*4) / 8
    assert m["invalid_rate"] == 4 / 24  # 4 invalid steps of 24
    assert s["k_min"] == s["k_max"] == 4
    for name, (lo, hi) in s["ci95"].items():
        assert lo <= m[name] + 1e-12 and m[name] <= hi + 1e-12, name


def test_macro_differs_from_micro_when_types_are_unbalanced():
    eps = [ep(f"a{i}", 1, task_type="a") for i in range(3)] + [ep("b0", 0, task_type="b")]
    m = stats.summarize_tasks(stats.per_task(eps), n_boot=50)["metrics"]
    assert m["success"] == 0.75 and m["macro_success"] == 0.5


def test_extras_average_over_reporting_episodes_only():
    eps = [
        ep("t1", 1, extras={"search.em": 1.0, "search.f1": 1.0}),
        ep("t2", 0, extras={"search.em": 0.0, "search.f1": 0.5}),
        ep("t3", 0),
    ]
    m = stats.summarize_tasks(stats.per_task(eps), n_boot=50)["metrics"]
    assert m["search.em"] == 0.5 and m["search.f1"] == 0.75


def test_summarize_reports_k_and_per_task():
    s = summarize(two_tasks(), n_boot=100)
    assert s["k"] == 4 and s["tasks"] == 2 and s["episodes"] == 8
    assert s["avg_at_k"] == 0.5 and s["pass_at_k"]["2"] == pytest.approx(0.75)
    assert s["per_task"]["t2"] == {
        "type": "b",
        "seed": 0,
        "n": 4,
        "successes": 1,
        "success": 0.25,
        "return": 0.25,
        "steps": 4.0,
        "invalid_steps": 4,
        "total_steps": 16,
    }


# --- bootstrap ------------------------------------------------------------------------------------
def test_bootstrap_is_seeded_and_sized_right():
    rng = np.random.default_rng(1)
    won = rng.integers(0, 2, size=400)
    eps = [ep(f"t{i}", int(w), ret=float(rng.random())) for i, w in enumerate(won)]
    tasks = stats.per_task(eps)
    a = stats.summarize_tasks(tasks, seed=7)["ci95"]
    b = stats.summarize_tasks(tasks, seed=7)["ci95"]
    c = stats.summarize_tasks(tasks, seed=8)["ci95"]
    assert a == b and a["return"] != c["return"]  # (continuous returns: quantiles move)
    a = a["success"]
    p = won.mean()
    half = 1.959964 * np.sqrt(p * (1 - p) / 400)  # the normal interval it should approach
    assert a[0] == pytest.approx(p - half, abs=0.012) and a[1] == pytest.approx(p + half, abs=0.012)


def test_bootstrap_resamples_whole_tasks():
    # every task is all-or-nothing over its 10 samples: 4 tasks, not 40 independent episodes,
    # so the interval is as wide as a 4-sample one
    eps = [ep(f"t{i}", int(i < 2)) for i in range(4) for _ in range(10)]
    lo, hi = stats.summarize_tasks(stats.per_task(eps), n_boot=2000)["ci95"]["success"]
    assert lo <= 0.0 + 1e-12 and hi >= 1.0 - 1e-12  # a draw of 4 tasks can be all 0 or all 1


def test_constant_metric_has_a_point_interval():
    eps = [ep(f"t{i}", 1, steps=3) for i in range(5)]
    ci = stats.summarize_tasks(stats.per_task(eps), n_boot=100)["ci95"]
    assert ci["success"] == [1.0, 1.0] and ci["steps"] == [3.0, 3.0]


# --- paired comparison ----------------------------------------------------------------------------
def test_paired_difference_hand_worked():
    r = stats.paired_difference([0, 0, 1, 1], [1, 0, 1, 1], n_boot=500)
    assert r["diff"] == 0.25 and r["mean_a"] == 0.5 and r["mean_b"] == 0.75
    assert (r["b_better"], r["a_better"], r["ties"]) == (1, 0, 3)
    lo, hi = r["ci95"]
    assert 0.0 <= lo <= 0.25 <= hi <= 1.0  # every paired difference is >= 0
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired_difference([1, 0], [1])


def test_paired_interval_is_narrower_than_unpaired_on_correlated_data():
    rng = np.random.default_rng(0)
    hard = rng.random(300)  # per-task difficulty shared by both methods
    a = (hard < 0.5).astype(float)
    b = (hard < 0.55).astype(float)  # B solves a superset of A's tasks
    lo, hi = stats.paired_difference(a, b)["ci95"]
    assert lo > 0  # 5% better on every hard-enough task: clearly significant when paired
    assert hi - lo < 0.06


def results_for(episodes, **meta):
    base = {"env_id": "e", "split": "seen", "manifest_sha256": "h", "policy": "p"}
    return {**base, **meta, "per_task": summarize(episodes, n_boot=10)["per_task"]}


def test_compare_refuses_mismatches_clearly():
    a = results_for([ep("t1", 1), ep("t2", 0)])
    with pytest.raises(stats.MismatchError, match="manifest_sha256 differs"):
        stats.compare_results(a, {**a, "manifest_sha256": "other"})
    with pytest.raises(stats.MismatchError, match="split differs"):
        stats.compare_results(a, {**a, "split": "unseen"})
    fewer = results_for([ep("t1", 1)])
    with pytest.raises(stats.MismatchError, match="task sets differ"):
        stats.compare_results(a, fewer)
    assert stats.compare_results(a, fewer, common_tasks=True)["n"] == 1
    reseeded = results_for([ep("t1", 1, seed=5), ep("t2", 0)])
    with pytest.raises(stats.MismatchError, match="different env seeds"):
        stats.compare_results(a, reseeded)
    with pytest.raises(stats.MismatchError, match="without per_task"):
        stats.compare_results(a, {k: v for k, v in a.items() if k != "per_task"})
    with pytest.raises(stats.MismatchError, match="B's per_task is not an object"):
        stats.compare_results(a, {**a, "per_task": ["t1", "t2"]})


def test_compare_on_other_metrics():
    a = results_for([ep("t1", 1, steps=4), ep("t2", 0, steps=6)])
    b = results_for([ep("t1", 1, steps=2), ep("t2", 1, steps=3)])
    r = stats.compare_results(a, b, metric="steps", n_boot=100)
    assert r["diff"] == -2.5 and r["metric"] == "steps"


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_compare_cli_on_real_evals(tmp_path):
    evaluate(GUESS_ID, "seen", "random", out=tmp_path / "r", progress=False, n_boot=200)
    evaluate(GUESS_ID, "seen", "oracle", out=tmp_path / "o", progress=False, n_boot=200)
    evaluate(GUESS_ID, "unseen", "oracle", out=tmp_path / "u", progress=False, n_boot=200)
    random = json.loads((tmp_path / "r" / "results.json").read_text())
    result = cli("compare", str(tmp_path / "r" / "results.json"), str(tmp_path / "o"), "--json")
    assert result.returncode == 0, result.stderr
    res = json.loads(result.stdout)
    assert res["n"] == 20 and res["mean_b"] == 1.0
    assert res["diff"] == pytest.approx(1.0 - random["success_rate"])
    assert res["ci95"][0] > 0 and res["a_better"] == 0
    text = cli("compare", str(tmp_path / "r"), str(tmp_path / "o")).stdout
    assert "B better" in text and "paired tasks" in text
    bad = cli("compare", str(tmp_path / "o"), str(tmp_path / "u"))
    assert bad.returncode == 2 and "split differs ('seen' vs 'unseen')" in bad.stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"env_id": "x", "per_', "is not JSON (Unterminated string"),
        (b"[1, 2]", "holds a JSON list, not an object"),
        (b'{"env_id": "\xff"}', "is not UTF-8"),
        # a training run's eval file: episodes, one per line
        (b'{"task_id": "t1", "won": true}\n{"task_id": "t2", "won": false}\n', "Extra data"),
    ],
)
def test_compare_names_a_file_it_cannot_read_in_one_line(tmp_path, content, problem):
    good = results_for([ep("t1", 1)])
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_bytes(content)
    result = cli("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and problem in result.stderr
    assert result.stderr.startswith(f"seed-gym compare: {tmp_path / 'b.json'} ")
