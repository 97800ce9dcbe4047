"""One interval for one run's success everywhere (issue 27, item 6): the Wilson interval in the
CLI line, ``results.json`` and the HTML report, never of zero width at 0/n or n/n."""

from __future__ import annotations

import json
import math

import pytest

from seed_gym import stats
from seed_gym.evaluate import main as eval_main
from seed_gym.report import load_run, result_cells, write_report

SOKOBAN = "seed_gym/Sokoban-v0"


def wilson_by_hand(s: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = s / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n))


def test_wilson_at_the_ends_has_width_and_exact_ends():
    lo, hi = stats.wilson_interval(5, 5)
    assert hi == 1.0 and lo == pytest.approx(wilson_by_hand(5, 5)[0], abs=1e-12)
    assert f"{lo:.3f}" == "0.566"  # 3.84 / (5 + 3.84), z = 1.96
    assert lo == pytest.approx(5 / (5 + 1.959963984540054**2))
    lo0, hi0 = stats.wilson_interval(0, 5)
    assert lo0 == 0.0 and hi0 == pytest.approx(1 - lo)
    assert stats.wilson_interval(3, 10) == pytest.approx(wilson_by_hand(3, 10))


def test_five_of_five_shows_the_same_wilson_interval_in_cli_results_and_report(tmp_path, capsys):
    out = tmp_path / "eval"
    argv = ["--env", SOKOBAN, "--split", "seen", "--policy", "oracle", "--episodes", "5"]
    assert eval_main([*argv, "--out", str(out), "--no-progress", "--n-boot", "200"]) == 0
    line = capsys.readouterr().out
    assert "success=1.000 [0.566, 1.000]" in line

    results = json.loads((out / "results.json").read_text())
    assert results["episodes"] == 5 and results["success_rate"] == 1.0
    assert results["ci_method"] == "wilson"
    assert results["success_ci95"] == list(stats.wilson_interval(5, 5))

    cell = result_cells([load_run(out)])[("oracle", SOKOBAN, "seen")]
    assert cell["how"] == "wilson" and cell["ci"] == results["success_ci95"]
    html = write_report([out], tmp_path / "report.html").read_text()
    assert html.count("[0.566, 1.000]") >= 2  # the results table and the eval details
    assert "[1.000, 1.000]" not in html


def test_report_recomputes_wilson_for_results_without_it(tmp_path):
    from seed_gym.report import success_interval

    old = {"episodes": 5, "success_rate": 0.0, "bootstrap": {"ci95": {"success": [0.0, 0.0]}}}
    lo, hi = success_interval(old)
    assert lo == 0.0 and f"{hi:.3f}" == "0.434"
