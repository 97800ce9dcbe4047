"""Issue 27, item 7 and ``report --csv``: each algorithm keeps its colour, dash and marker in
every report, x ticks fall on round numbers, the trajectory viewer filters by outcome, algorithm
and task and shows the heat-map legend only with teacher data, and ``--csv`` writes one flat row
per (run, split, iteration). Built from small synthetic run folders (the formats
``seed-gym train`` and ``seed-gym eval`` write); tests/test_report.py checks real runs in
Chromium."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, headless_chromium

from seed_gym import stats
from seed_gym.report import load_runs as load
from seed_gym.report import main, render
from seed_gym.report_csv import COLUMNS
from seed_gym.report_svg import STYLES, nice_ticks, style_of, svg_chart

EZ = "seed_gym/EZPoints-v0"


def step(teacher: bool) -> dict:
    lps = [-0.5, -1.0, -0.2]
    return {
        "observation": "Cards: 3 4",
        "response": "<action>3</action>",
        "action": "3",
        "valid": True,
        "reward": 0.0,
        "tokens": ["<action>", "3", "</action>"],
        "logprobs": lps,
        "teacher_logprobs": [lp + 0.5 for lp in lps] if teacher else None,
    }


def trajectory(i: int, task: str, won: bool, teacher: bool = False) -> dict:
    return {
        "format": "seed-gym/trajectory-v1",
        "traj_id": f"t{i}",
        "task_id": task,
        "task_type": "sum",
        "seed": i,
        "won": won,
        "return": float(won),
        "skill": "add them" if teacher else None,
        "steps": [step(teacher)],
    }


def make_run(
    root: Path, name: str, algo: str, *, seed: int = 0, steps: int = 5, teacher: bool = False
) -> Path:
    """A training run folder: config.json, metrics.jsonl (3 iterations, evals at 2 and 3) and
    one trajectory file."""
    run = root / name
    (run / "trajectories").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"algo": algo, "env": EZ, "seed": seed}))
    lines = []
    for it in (1, 2, 3):
        m = {"iteration": it, "rollout/success": 0.25 * it, "rollout/episodes": 8.0,
             "rollout/episode_len": 2.0, "rollout/env_steps": float(steps),
             "rollout/return": 0.1 * it}  # fmt: skip
        if it >= 2:
            for split, n in (("seen", 4.0), ("unseen", 2.0)):
                m |= {f"eval/{split}/success": 0.5, f"eval/{split}/episodes": n,
                      f"eval/{split}/return": 0.5}  # fmt: skip
        lines.append(json.dumps(m))
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    trajs = [
        trajectory(0, "ezpoints-a", True, teacher),
        trajectory(1, "ezpoints-b", False, teacher),
        trajectory(2, "ezpoints-b", True),
    ]
    (run / "trajectories" / "iter_000003.jsonl").write_text(
        "".join(json.dumps(t) + "\n" for t in trajs)
    )
    return run


def make_eval(root: Path, name: str = "ev") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    results = {"env_id": EZ, "split": "seen", "policy": "oracle", "episodes": 5,
               "success_rate": 1.0, "mean_return": 1.0, "mean_steps": 3.0,
               "invalid_action_rate": 0.0}  # fmt: skip
    (folder / "results.json").write_text(json.dumps(results))
    return folder


def series_styles(html: str, split: str = "seen") -> dict[str, tuple[str, str, str]]:
    chart = re.search(rf'<svg class="curve"[^>]*data-split="{split}".*?</svg>', html).group(0)
    return {
        m["method"]: (m["stroke"], m["dash"] or "", m["marker"])
        for m in re.finditer(
            r'<path class="series" data-method="(?P<method>[^"]+)"[^>]*data-marker="(?P<marker>'
            r'[^"]+)"[^>]*stroke="(?P<stroke>[^"]+)"[^>]*?(?:stroke-dasharray="(?P<dash>[^"]+)")?/>',
            chart,
        )
    }


# --- curves ---------------------------------------------------------------------------------------
def test_an_algorithm_keeps_its_style_whatever_else_is_in_the_report(tmp_path):
    make_run(tmp_path / "a", "seed-s0", "seed")
    make_run(tmp_path / "a", "skill-s0", "skill-grpo")
    make_run(tmp_path / "b", "grpo-s0", "grpo")
    make_run(tmp_path / "b", "seed-s0", "seed")
    alone = series_styles(render(load([tmp_path / "a"])))
    together = series_styles(render(load([tmp_path / "b"])))
    assert alone["seed"] == together["seed"] == (STYLES["seed"].color, "7 3", "square")
    # different algorithms differ in colour, dash and marker, so overlapping lines stay apart
    grpo, seed = together["grpo"], together["seed"]
    assert all(g != s for g, s in zip(grpo, seed, strict=True))
    assert len({s[0] for s in alone.values()} | {together["grpo"][0]}) == 3


def test_every_built_in_algorithm_has_its_own_style():
    styles = [style_of(name) for name in STYLES]
    assert len({s.color for s in styles}) == len(styles)
    assert len({(s.dash, s.marker) for s in styles}) == len(styles)
    # a model-suffixed name keeps the algorithm's colour and marker
    assert style_of("seed (smollm2)").color == STYLES["seed"].color


def test_an_unknown_algorithm_gets_the_same_style_in_every_process():
    code = "from seed_gym.report_svg import style_of; print(style_of('rloo'))"
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": str(h)},
            check=True,
        ).stdout
        for h in (1, 2)
    }
    assert seen == {f"{style_of('rloo')}\n"}
    assert style_of("rloo").color not in {s.color for s in STYLES.values()}


def test_points_carry_their_methods_marker(tmp_path):
    make_run(tmp_path, "grpo-s0", "grpo")
    make_run(tmp_path, "prompt-s0", "prompt")
    html = render(load([tmp_path]))
    chart = re.search(r'<svg class="curve"[^>]*data-split="train".*?</svg>', html).group(0)
    markers = re.findall(r'class="marker" data-marker="(\w+)"', chart)
    # 3 points per line, plus one marker in each legend entry
    assert sorted(markers) == sorted(["circle"] * 4 + ["triangle"] * 4)


@pytest.mark.parametrize(
    ("x_max", "ticks"),
    [(25, "0 5 10 15 20 25"), (24, "0 5 10 15 20 25"), (1234, "0 500 1,000 1,500"),
     (100, "0 20 40 60 80 100"), (0.7, "0 0.2 0.4 0.6 0.8")],
)  # fmt: skip
def test_x_ticks_fall_on_round_numbers(x_max, ticks):
    pts = [{"iteration": 1, "x": x_max, "y": 0.5, "lo": 0.5, "hi": 0.5, "n": 1}]
    svg = svg_chart({"grpo": pts}, title="t", env=EZ, split="seen")
    assert " ".join(re.findall(r'class="tick x-tick"[^>]*>([^<]+)<', svg)) == ticks
    assert len(nice_ticks(x_max)) <= 6


# --- the trajectory viewer -----------------------------------------------------------------------
def test_viewer_filters_list_outcomes_algorithms_and_tasks(tmp_path):
    make_run(tmp_path, "grpo-s0", "grpo")
    make_run(tmp_path, "seed-s0", "seed", teacher=True)
    html = render(load([tmp_path]))
    for select, values in [
        ("filter-outcome", ["", "won", "lost"]),
        ("filter-algo", ["", "grpo", "seed"]),
        ("filter-task", ["", "ezpoints-a", "ezpoints-b"]),
    ]:
        block = re.search(rf"<select id='{select}'>(.*?)</select>", html).group(1)
        assert re.findall(r"<option value='([^']*)'", block) == values
    options = re.search(r"<select id='traj-select'>(.*?)</select>", html).group(1)
    attrs = re.findall(r"data-outcome='(\w+)' data-algo='([\w-]+)' data-task='([\w-]+)'", options)
    assert len(attrs) == 6 and ("lost", "seed", "ezpoints-b") in attrs


def test_the_heat_legend_needs_teacher_data(tmp_path):
    make_run(tmp_path / "plain", "grpo-s0", "grpo")
    assert "class='legend-heat'" not in render(load([tmp_path / "plain"]))
    make_run(tmp_path / "seed", "seed-s0", "seed", teacher=True)
    assert "id='legend-heat'" in render(load([tmp_path / "seed"]))


# --- report --csv ---------------------------------------------------------------------------------
def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == COLUMNS
        return list(reader)


def test_csv_has_a_row_per_run_split_and_iteration(tmp_path, monkeypatch, capsys):
    make_run(tmp_path / "runs", "grpo-s0", "grpo", seed=0, steps=5)
    make_run(tmp_path / "runs", "grpo-s1", "grpo", seed=1, steps=7)
    make_eval(tmp_path / "evals")
    monkeypatch.chdir(tmp_path)
    assert main([str(tmp_path / "runs"), str(tmp_path / "evals"), "--csv", "out/runs.csv"]) == 0
    assert not (tmp_path / "report.html").exists()  # --csv alone writes no HTML
    assert "(15 rows)" in capsys.readouterr().out
    rows = read_rows(tmp_path / "out" / "runs.csv")
    # per run: 3 train rows + seen and unseen at iterations 2 and 3; the eval: one row
    keys = [(r["run"], r["split"], r["iteration"]) for r in rows]
    assert len(keys) == len(set(keys)) == 15
    s1 = {(r["split"], r["iteration"]): r for r in rows if r["run"] == "grpo-s1"}
    assert set(s1) == {("train", "1"), ("train", "2"), ("train", "3"), ("seen", "2"),
                       ("seen", "3"), ("unseen", "2"), ("unseen", "3")}  # fmt: skip
    r = s1[("train", "3")]
    assert (r["algo"], r["seed"], r["env"], r["kind"]) == ("grpo", "1", EZ, "train")
    assert float(r["env_steps"]) == 21 and float(r["success"]) == 0.75
    assert float(r["return"]) == pytest.approx(0.3)
    lo, hi = stats.wilson_interval(6, 8)
    assert (float(r["ci_lo"]), float(r["ci_hi"])) == pytest.approx((lo, hi))
    unseen = s1[("unseen", "2")]
    assert float(unseen["episodes"]) == 2 and float(unseen["env_steps"]) == 14
    assert (float(unseen["ci_lo"]), float(unseen["ci_hi"])) == pytest.approx(
        stats.wilson_interval(1, 2)
    )
    ev = next(r for r in rows if r["kind"] == "eval")
    assert (ev["algo"], ev["split"], ev["iteration"], ev["episodes"]) == ("oracle", "seen", "", "5")
    assert float(ev["ci_hi"]) == 1.0 and float(ev["ci_lo"]) < 1.0  # Wilson: never zero width


def test_csv_and_out_write_both(tmp_path):
    run = make_run(tmp_path, "grpo-s0", "grpo")
    out, table = tmp_path / "r.html", tmp_path / "t.csv"
    assert main([str(run), "--out", str(out), "--csv", str(table)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>") and len(read_rows(table)) == 7


# --- Chromium: the filters at work ----------------------------------------------------------------
@pytest.mark.browser
def test_viewer_filters_in_headless_chromium(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    make_run(tmp_path / "runs", "grpo-s0", "grpo")
    make_run(tmp_path / "runs", "seed-s0", "seed", teacher=True)
    out = tmp_path / "report.html"
    assert main([str(tmp_path / "runs"), "--out", str(out)]) == 0
    with headless_chromium("--window-size=1400,1000") as browser:
        browser.get(out.as_uri())
        assert not [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]

        def shown():
            return [s for s in browser.find_elements(By.CSS_SELECTOR, "section.traj")
                    if s.is_displayed()]  # fmt: skip

        legend = browser.find_element(By.ID, "legend-heat")
        assert shown()[0].get_attribute("data-algo") == "grpo" and not legend.is_displayed()
        Select(browser.find_element(By.ID, "filter-algo")).select_by_value("seed")
        (section,) = shown()
        assert section.get_attribute("data-algo") == "seed" and legend.is_displayed()
        Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("lost")
        (section,) = shown()
        assert (section.get_attribute("data-outcome"), section.get_attribute("data-task")) == (
            "lost",
            "ezpoints-b",
        )
        assert browser.find_element(By.ID, "traj-count").text == "1 of 6 trajectories"
        choices = Select(browser.find_element(By.ID, "traj-select")).options
        assert [o.is_enabled() for o in choices].count(True) == 1
        Select(browser.find_element(By.ID, "filter-task")).select_by_value("ezpoints-a")
        assert shown() == [] and browser.find_element(By.ID, "traj-none").is_displayed()
        Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("")
        (section,) = shown()
        assert section.get_attribute("data-task") == "ezpoints-a"
        browser.save_screenshot(str(tmp_path / "viewer-filters.png"))
    assert (tmp_path / "viewer-filters.png").stat().st_size > 0
