"""``seed-gym report``: built from real tiny training runs (``seed-gym train --preset tiny``) with
trajectory files written by ``trajlog.write_trajectories`` (synthetic SEED skill and teacher
logprobs on real rollouts), plus real eval folders; checked as HTML and in headless Chromium."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, headless_chromium

from seed_gym import trajlog
from seed_gym.evaluate import evaluate
from seed_gym.report import env_steps, load_run, main, result_cells

pytest.importorskip("transformers")
EZ = "seed_gym/EZPoints-v0"
SKILL = "Pair the large card with a small one and check the sum before answering."


def train_args(out: Path, algo: str, seed: int) -> list[str]:
    return [
        "--preset",
        "tiny",
        "--env",
        EZ,
        "--modality",
        "text",
        "--algo",
        algo,
        "--seed",
        str(seed),
        "--iterations",
        "3",
        "--eval-every",
        "1",
        "--out",
        str(out),
        "--no-progress",
        "--no-tensorboard",
        "--no-save-hf",
    ]


def write_seed_trajectories(run_dir: Path, iteration: int) -> list:
    """Real tiny-model rollouts on the run's env, written with a synthetic skill per trajectory
    and teacher logprobs = student logprobs + a known per-token shift."""
    from seed_gym.trainer.backends.engines import HFEngine
    from seed_gym.trainer.backends.models import load_policy
    from seed_gym.trainer.collect import SamplingParams, collect
    from seed_gym.wrappers.pool import make_group_pool

    policy = load_policy("tiny")
    tasks = ["ezpoints-10S-2D", "ezpoints-3H-9S"]
    from seed_gym.registration import task_ids

    tasks = task_ids(EZ, "train")[:2]
    pool = make_group_pool(
        EZ, tasks, 2, split="train", modality="text", history=None, backend="local"
    )
    try:
        trajs = collect(
            pool,
            HFEngine(policy.model, policy.tokenizer),
            tasks,
            [5, 6],
            sampling=SamplingParams(8, 1.0, 1.0),
            seed=3,
            prefix=f"it{iteration}-",
            max_turns=2,
        )
    finally:
        pool.close()
    skills = [SKILL if i % 2 == 0 else None for i in range(len(trajs))]
    teacher = [
        [
            [lp + (0.5 if k % 2 == 0 else -1.0) for k, lp in enumerate(s.old_logprobs)]
            for s in t.steps
        ]
        if skills[i]
        else None
        for i, t in enumerate(trajs)
    ]
    trajlog.write_trajectories(
        trajlog.iteration_path(run_dir, iteration),
        trajs,
        tokenizer=policy.tokenizer,
        skills=skills,
        teacher_logprobs=teacher,
        iteration=iteration,
    )
    return trajs


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    from seed_gym.trainer.config import parse_args
    from seed_gym.trainer.train import train

    root = tmp_path_factory.mktemp("bench")
    runs = root / "runs"
    # one run through the console entry point, the others through the train API
    result = subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "train", *train_args(runs / "grpo-s0", "grpo", 0)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    train(parse_args(train_args(runs / "grpo-s1", "grpo", 1)))
    train(parse_args(train_args(runs / "prompt-s0", "prompt", 0)))
    trajs = write_seed_trajectories(runs / "grpo-s0", 3)
    evaluate(
        "seed_gym/Sokoban-v0",
        "seen",
        "oracle",
        episodes=2,
        modality="text+image",
        out=root / "evals" / "sokoban-oracle",
        progress=False,
        save_trajectories=True,
        n_boot=100,
    )
    evaluate(
        "seed_gym/Sokoban-v0",
        "seen",
        "random",
        episodes=2,
        max_steps=4,
        out=root / "evals" / "sokoban-random",
        progress=False,
        n_boot=100,
    )
    out = root / "report.html"
    assert main([str(runs), str(root / "evals"), "--out", str(out)]) == 0
    return {"root": root, "runs": runs, "html": out.read_text(), "path": out, "trajs": trajs}


# --- trajectory files -----------------------------------------------------------------------------
def test_trajectory_file_format(bench):
    path = bench["runs"] / "grpo-s0" / "trajectories" / "iter_000003.jsonl"
    records = trajlog.read_jsonl(path)
    assert len(records) == len(bench["trajs"]) == 4
    for i, (rec, traj) in enumerate(zip(records, bench["trajs"], strict=True)):
        assert rec["format"] == trajlog.FORMAT and rec["iteration"] == 3
        assert rec["traj_id"] == traj.traj_id and len(rec["steps"]) == len(traj.steps)
        assert rec["skill"] == (SKILL if i % 2 == 0 else None)
        for s, step in zip(rec["steps"], traj.steps, strict=True):
            assert len(s["tokens"]) == len(step.response_ids) == len(s["logprobs"])
            assert s["logprobs"] == pytest.approx(step.old_logprobs)
            assert s["response"] == step.response_text and s["reward"] == step.reward
            if rec["skill"]:
                assert s["teacher_logprobs"][0] == pytest.approx(s["logprobs"][0] + 0.5)
            else:
                assert s["teacher_logprobs"] is None


def test_write_trajectories_rejects_misaligned_inputs(bench, tmp_path):
    trajs = bench["trajs"]
    with pytest.raises(ValueError, match="3 skills for 4 trajectories"):
        trajlog.write_trajectories(tmp_path / "x.jsonl", trajs, tokenizer=None, skills=[None] * 3)
    bad = [[[0.0]] * len(t.steps) for t in trajs]  # one logprob for a many-token response
    with pytest.raises(ValueError, match="teacher_logprobs has 1 entries"):
        trajlog.write_trajectories(
            tmp_path / "x.jsonl", trajs, tokenizer=trajs and _tok(), teacher_logprobs=bad
        )


def _tok():
    from seed_gym.trainer.backends.models import tiny_tokenizer

    return tiny_tokenizer()


def test_read_skips_a_torn_last_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"a": 1}\n{"a": 2}\n{"a": ')
    assert trajlog.read_jsonl(p) == [{"a": 1}, {"a": 2}]


# --- curves and tables from the run folders -------------------------------------------------------
def test_env_steps_accumulate_rollout_steps(bench):
    run = load_run(bench["runs"] / "grpo-s0")
    assert run.kind == "train" and run.method == "grpo" and run.env == EZ
    expected, total = [], 0.0
    for m in run.metrics:
        total += m["rollout/episodes"] * m["rollout/episode_len"]
        expected.append(total)
    assert env_steps(run.metrics) == expected and expected[-1] > 0


def test_results_cells_pool_seeds_and_read_evals(bench):
    runs = [load_run(p) for p in sorted(bench["runs"].iterdir())]
    runs += [load_run(p) for p in sorted((bench["root"] / "evals").iterdir())]
    cells = result_cells(runs)
    grpo = cells[("grpo", EZ, "unseen")]
    assert grpo["runs"] == 2 and grpo["episodes"] == 4  # 2 eval tasks x 2 seeds
    assert cells[("prompt", EZ, "seen")]["runs"] == 1
    oracle = cells[("oracle", "seed_gym/Sokoban-v0", "seen")]
    assert oracle["success"] == 1.0 and oracle["how"] == "wilson"
    assert oracle["ci"][0] < 1.0  # never zero width at n/n


# --- the HTML -------------------------------------------------------------------------------------
def test_html_is_self_contained(bench):
    html = bench["html"]
    assert html.startswith("<!DOCTYPE html>")
    # nothing is fetched: no external scripts, styles or images
    assert not re.search(r"""(src|href)=["']https?://""", html)
    assert "<script src" not in html and "<link" not in html


def test_report_cli_entry_point(bench, tmp_path):
    out = tmp_path / "r.html"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "seed_gym.cli",
            "report",
            str(bench["runs"] / "grpo-s0"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert out.exists() and "Skill the teacher saw" in out.read_text()
    bad = subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "report", str(tmp_path), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert bad.returncode != 0 and "holds no run" in bad.stderr


# --- headless Chromium ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    with headless_chromium("--window-size=1400,1000") as driver:
        yield driver


@pytest.mark.browser
def test_report_in_headless_chromium(bench, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(bench["path"].as_uri())
    assert browser.title == "seed-gym report"
    js_errors = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert not js_errors, js_errors

    # learning curves: train / seen / unseen charts of EZPoints with a grpo and a prompt line
    charts = browser.find_elements(By.CSS_SELECTOR, "svg.curve")
    assert {c.get_attribute("data-split") for c in charts} == {"train", "seen", "unseen"}
    unseen = next(c for c in charts if c.get_attribute("data-split") == "unseen")
    lines = {
        s.get_attribute("data-method"): int(s.get_attribute("data-points"))
        for s in unseen.find_elements(By.CSS_SELECTOR, "path.series")
    }
    assert lines == {"grpo": 3, "prompt": 1}  # eval after each of 3 iterations; prompt: once
    assert unseen.find_elements(By.CSS_SELECTOR, "polygon.band")  # 2 grpo seeds: a band
    assert unseen.size["width"] > 300 and unseen.is_displayed()
    # both algorithms are visible and told apart: own colour, own dash, a marker on every point
    drawn = {}
    for path in unseen.find_elements(By.CSS_SELECTOR, "path.series"):
        method = path.get_attribute("data-method")
        marks = [
            m
            for m in unseen.find_elements(By.CSS_SELECTOR, "svg.curve > .marker")
            if m.get_attribute("stroke") == path.get_attribute("stroke")
        ]
        assert len(marks) == lines[method] and all(m.is_displayed() for m in marks)
        assert all(m.size["width"] > 0 and m.size["height"] > 0 for m in marks)
        drawn[method] = (
            path.value_of_css_property("stroke"),
            path.value_of_css_property("stroke-dasharray"),
            marks[0].get_attribute("data-marker"),
        )
    assert all(g != p for g, p in zip(drawn["grpo"], drawn["prompt"], strict=True)), drawn
    assert (
        browser.execute_script(  # the 3-point grpo line is drawn, not just its markers
            "return arguments[0].getBBox().width",
            unseen.find_element(By.CSS_SELECTOR, "path.series[data-method='grpo']"),
        )
        > 100
    )
    legend = [
        g.get_attribute("data-method")
        for g in unseen.find_elements(By.CSS_SELECTOR, ".legend-entry")
    ]
    assert legend == ["grpo", "prompt"]
    browser.execute_script("arguments[0].scrollIntoView()", unseen)
    browser.save_screenshot(str(tmp_path / "report-curves.png"))
    assert (tmp_path / "report-curves.png").stat().st_size > 10_000

    # results table: methods x (env, split), with intervals
    rows = browser.find_elements(By.CSS_SELECTOR, "table.results tr.method-row")
    methods = [r.find_element(By.CSS_SELECTOR, "th").text for r in rows]
    assert methods == ["grpo", "oracle", "prompt", "random"]
    heads = browser.find_elements(By.CSS_SELECTOR, "table.results thead th")
    assert [h.text.replace("\n", " ") for h in heads] == [
        "method",
        f"{EZ} seen",
        f"{EZ} unseen",
        "seed_gym/Sokoban-v0 seen",
    ]
    oracle = rows[1].text
    # oracle won 2 of 2: Wilson 95 % interval [0.342, 1.000], the CLI's, never zero width
    assert "1.000 [0.342, 1.000]" in oracle
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.eval-row")) == 2
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.run-row")) == 3

    # the viewer: the first trajectory (a SEED one, picked first) is shown with its steps
    shown = [s for s in browser.find_elements(By.CSS_SELECTOR, "section.traj") if s.is_displayed()]
    assert len(shown) == 1
    first = shown[0]
    assert SKILL in first.find_element(By.CSS_SELECTOR, ".skill").text
    steps = first.find_elements(By.CSS_SELECTOR, ".step")
    record = trajlog.read_jsonl(bench["runs"] / "grpo-s0" / "trajectories" / "iter_000003.jsonl")[0]
    assert len(steps) == len(record["steps"]) >= 1
    cells = steps[0].find_elements(By.CSS_SELECTOR, "span.tok.heat")
    assert len(cells) == len(record["steps"][0]["tokens"])
    deltas = [float(c.get_attribute("data-delta")) for c in cells]
    assert deltas == pytest.approx(
        [0.5 if k % 2 == 0 else -1.0 for k in range(len(deltas))], abs=1e-3
    )
    colors = {c.value_of_css_property("background-color") for c in cells[:2]}
    assert len(colors) == 2  # positive and negative gaps get different colours
    assert "Cards:" in steps[0].find_element(By.CSS_SELECTOR, ".obs").text

    # choosing a Sokoban eval trajectory shows its inline images
    select = Select(browser.find_element(By.ID, "traj-select"))
    sokoban = next(o for o in select.options if "sokoban-oracle" in o.text)
    select.select_by_value(sokoban.get_attribute("value"))
    shown = [s for s in browser.find_elements(By.CSS_SELECTOR, "section.traj") if s.is_displayed()]
    assert len(shown) == 1 and shown[0] != first
    imgs = shown[0].find_elements(By.CSS_SELECTOR, "img.obs-img")
    assert imgs and all(
        browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", im) > 0
        for im in imgs
    )
    assert shown[0].find_elements(By.CSS_SELECTOR, ".step .action")[0].text in {
        "up",
        "down",
        "left",
        "right",
    }

    # the filters: algorithm, outcome, task; the heat legend only with teacher data
    def visible():
        return [
            s for s in browser.find_elements(By.CSS_SELECTOR, "section.traj") if s.is_displayed()
        ]

    legend = browser.find_element(By.ID, "legend-heat")
    algo = Select(browser.find_element(By.ID, "filter-algo"))
    assert [o.get_attribute("value") for o in algo.options] == ["", "grpo", "oracle"]
    algo.select_by_value("oracle")
    (oracle,) = visible()
    assert oracle.get_attribute("data-algo") == "oracle" and "sokoban-oracle" in oracle.text
    assert not legend.is_displayed()  # no teacher data in an eval
    enabled = [o for o in select.options if o.is_enabled()]
    assert enabled and all("sokoban-oracle" in o.text for o in enabled)
    algo.select_by_value("grpo")
    Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("lost")
    (lost,) = visible()
    assert (lost.get_attribute("data-algo"), lost.get_attribute("data-outcome")) == ("grpo", "lost")
    assert "lost" in lost.find_element(By.CSS_SELECTOR, ".traj-head").text
    enabled = [o for o in select.options if o.is_enabled()]
    assert enabled and all(o.get_attribute("data-outcome") == "lost" for o in enabled)
    task = enabled[-1].get_attribute("data-task")
    Select(browser.find_element(By.ID, "filter-task")).select_by_value(task)
    assert all(s.get_attribute("data-task") == task for s in visible())
    count = browser.find_element(By.ID, "traj-count").text
    assert count.endswith(f"of {len(select.options)} trajectories")
    browser.save_screenshot(str(tmp_path / "report-viewer.png"))
    assert (tmp_path / "report-viewer.png").stat().st_size > 10_000


@pytest.mark.parametrize("name", ["results.json", "config.json"])
def test_report_names_a_corrupt_run_file_in_one_line(tmp_path, name):
    run = tmp_path / "run"
    run.mkdir()
    if name == "config.json":  # a training run: metrics beside a hand-edited config
        (run / "metrics.jsonl").write_text('{"iteration": 1}\n')
    (run / name).write_text('{"algo": ')
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "seed_gym.cli",
            "report",
            str(run),
            "--out",
            str(tmp_path / "r.html"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and not (tmp_path / "r.html").exists()
    assert done.stderr == f"seed-gym report: {run / name} is not JSON (Expecting value, line 1)\n"
