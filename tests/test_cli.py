"""The user CLI: ``seed-gym list``, ``eval`` (results files, exact-once visits, CI) and ``play``."""

from __future__ import annotations

import importlib.util
import io
import json
import math
import subprocess
import sys

import pytest
from conftest import EXAMPLES, GUESS_ID, ROOT, import_example

import seed_gym
from seed_gym.evaluate import evaluate, summarize, wilson_interval
from seed_gym.evaluate import main as eval_main
from seed_gym.play import play
from seed_gym.policies import OraclePolicy, Policy, RandomPolicy, make_policy, register_policy

import_example()
EXAMPLE = str(EXAMPLES / "guess_number.py")
SUITE = [
    "seed_gym/ALFWorld-v0",
    "seed_gym/EZPoints-v0",
    "seed_gym/SearchQA-v0",
    "seed_gym/Sokoban-v0",
    "seed_gym/WebShop-v0",
]


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def read_jsonl(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


# --- list ---------------------------------------------------------------------------------------
def test_list_prints_every_suite_id():
    result = cli("list")
    assert result.returncode == 0, result.stderr
    listed = result.stdout.split()
    assert set(SUITE) <= set(listed) and listed == sorted(listed)


# --- statistics ---------------------------------------------------------------------------------
def test_wilson_interval_hand_worked():
    z2 = 1.959963984540054**2
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(z2 / (10 + z2))  # 0.2775
    lo, hi = wilson_interval(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 0) == (0.0, 1.0)


def test_summarize_macro_average_and_extras():
    def ep(task_type, won, steps, invalid, extras):
        return {
            "task_type": task_type,
            "won": won,
            "return": 10.0 * won,
            "steps": steps,
            "invalid_steps": invalid,
            "extras": extras,
        }

    records = [
        ep("a", True, 2, 0, {"webshop.score": 1.0}),
        ep("a", True, 4, 1, {"webshop.score": 0.5}),
        ep("a", False, 6, 3, {}),
        ep("b", False, 8, 0, {"webshop.score": 0.0, "search.em": 1.0}),
    ]
    s = summarize(records)
    assert s["success_rate"] == 0.5 and s["ci_method"] == "wilson"
    assert s["per_task_type"]["a"]["success_rate"] == pytest.approx(2 / 3)
    assert s["per_task_type"]["b"]["success_rate"] == 0.0
    assert s["macro_success_rate"] == pytest.approx(1 / 3)
    assert s["mean_steps"] == 5.0 and s["mean_return"] == 5.0
    assert s["invalid_action_rate"] == 4 / 20
    assert s["extras"] == {"search.em": 1.0, "webshop.score": 0.5}
    assert s["extras_episodes"] == {"search.em": 1, "webshop.score": 3}


# --- policies -----------------------------------------------------------------------------------
def test_policy_registry():
    assert isinstance(make_policy("random"), RandomPolicy)
    assert isinstance(make_policy("oracle"), OraclePolicy)
    assert isinstance(make_policy("oracle"), Policy)
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("nomodel:/nowhere")
    with pytest.raises(
        FileNotFoundError, match="a local Hugging Face model folder with a config.json nor a hub id"
    ):
        make_policy("model:/nowhere")  # model: is built in now; a missing folder says so
    seen = []
    register_policy("echo", lambda arg: seen.append(arg) or RandomPolicy())
    make_policy("echo:some/path:with:colons")
    assert seen == ["some/path:with:colons"]


# --- eval ---------------------------------------------------------------------------------------
def test_eval_oracle_visits_every_task_once_in_manifest_order(tmp_path):
    rc = eval_main(
        [
            "--import",
            EXAMPLE,
            "--env",
            GUESS_ID,
            "--split",
            "seen",
            "--policy",
            "oracle",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert rc == 0
    results = json.loads((tmp_path / "results.json").read_text())
    manifest = seed_gym.split_manifest(GUESS_ID, "seen")
    assert results["env_id"] == GUESS_ID and results["split"] == "seen"
    assert results["manifest_sha256"] == manifest.hash and results["subset"] is None
    assert results["episodes"] == len(manifest) == 20
    assert results["success_rate"] == 1.0 and results["macro_success_rate"] == 1.0
    lo, hi = results["success_ci95"]
    assert hi == 1.0 and lo == pytest.approx(wilson_interval(20, 20)[0]) and lo < 1.0
    assert results["mean_steps"] == 1.0 and results["mean_return"] == 1.0
    assert results["invalid_action_rate"] == 0.0
    assert results["per_task_type"] == {
        "range-100": {"episodes": 20, "success_rate": 1.0, "success_ci95": [lo, hi]}
    }
    episodes = read_jsonl(tmp_path / "episodes.jsonl")
    assert [e["task_id"] for e in episodes] == list(manifest.task_ids)
    assert [e["index"] for e in episodes] == list(range(20))
    assert all(e["actions"] == [e["task_id"].split("-")[1]] for e in episodes)


def test_eval_random_is_worse_and_counts_steps(tmp_path):
    results = evaluate(GUESS_ID, "unseen", "random", out=tmp_path, progress=False)
    assert results["episodes"] == 100
    assert results["success_rate"] < 0.2
    episodes = read_jsonl(tmp_path / "episodes.jsonl")
    won = [e for e in episodes if e["won"]]
    assert all(e["steps"] <= 12 for e in episodes)
    assert all(e["truncated"] and e["steps"] == 12 for e in episodes if not e["won"])
    assert results["mean_steps"] == pytest.approx(sum(e["steps"] for e in episodes) / 100)
    assert results["success_rate"] == len(won) / 100


def test_eval_subset_is_seeded_and_deterministic(tmp_path):
    a = evaluate(
        GUESS_ID, "train", "random", episodes=7, seed=3, out=tmp_path / "a", progress=False
    )
    b = evaluate(
        GUESS_ID, "train", "random", episodes=7, seed=3, out=tmp_path / "b", progress=False
    )
    assert a == b
    manifest = seed_gym.split_manifest(GUESS_ID, "train")
    tasks = [e["task_id"] for e in read_jsonl(tmp_path / "a" / "episodes.jsonl")]
    assert tasks == list(manifest.iterate(limit=7, seed=3))
    assert a["subset"] == {"n": 7, "seed": 3}
    # a task keeps its episode seed in a subset run and a full run (paired comparisons)
    evaluate(GUESS_ID, "train", "random", seed=3, out=tmp_path / "full", progress=False)
    full = {e["task_id"]: e for e in read_jsonl(tmp_path / "full" / "episodes.jsonl")}
    for e in read_jsonl(tmp_path / "a" / "episodes.jsonl"):
        assert full[e["task_id"]]["seed"] == e["seed"]
        assert full[e["task_id"]]["actions"] == e["actions"]


def test_eval_max_steps_override(tmp_path):
    results = evaluate(GUESS_ID, "seen", "random", max_steps=2, out=tmp_path, progress=False)
    assert results["max_steps"] == 2
    assert all(e["steps"] <= 2 for e in read_jsonl(tmp_path / "episodes.jsonl"))


def test_eval_through_the_console_entry_point(tmp_path):
    result = cli(
        "eval",
        "--import",
        EXAMPLE,
        "--env",
        GUESS_ID,
        "--split",
        "seen",
        "--policy",
        "oracle",
        "--episodes",
        "3",
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "success=1.000" in result.stdout
    assert len(read_jsonl(tmp_path / "episodes.jsonl")) == 3


def test_eval_unknown_env_fails_clearly():
    result = cli("eval", "--env", "seed_gym/Nope-v0", "--policy", "random")
    assert result.returncode == 2 and result.stderr.startswith(
        "seed-gym eval: unknown env 'seed_gym/Nope-v0'; choose one of: seed_gym/ALFWorld-v0"
    )
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not has_module("seed_gym.envs.sokoban"), reason="Sokoban not written yet")
@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_eval_sokoban_oracle_wins_and_random_mostly_loses(tmp_path, split):
    oracle = evaluate(
        "seed_gym/Sokoban-v0", split, "oracle", episodes=50, out=tmp_path / "o", progress=False
    )
    assert oracle["success_rate"] == 1.0 and oracle["episodes"] == 50
    assert oracle["invalid_action_rate"] == 0.0
    random = evaluate(
        "seed_gym/Sokoban-v0", split, "random", episodes=50, out=tmp_path / "r", progress=False
    )
    assert random["success_rate"] < 0.3
    assert math.isfinite(random["mean_return"]) and random["mean_steps"] > oracle["mean_steps"]


# --- real data and bad arguments from the command line -------------------------------------------
def test_eval_env_kwarg_reads_real_webshop_files(tmp_path):
    # --env-kwarg passes constructor arguments: real data without a registration file
    from test_webshop_loader import write_five_category_catalog

    data = write_five_category_catalog(tmp_path)
    out = tmp_path / "out"
    argv = ["--env", "seed_gym/WebShop-v0", "--env-kwarg", f"data_dir={data}"]
    argv += ["--env-kwarg", 'unseen_categories=["garden", "grocery"]', "--split", "unseen"]
    argv += ["--policy", "oracle", "--out", str(out), "--no-progress", "--n-boot", "10"]
    assert eval_main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["episodes"] == 24 and results["success_rate"] == 1.0
    assert results["config"]["env_kwargs"] == {
        "data_dir": str(data),
        "unseen_categories": ["garden", "grocery"],
    }
    assert {e["task_type"] for e in read_jsonl(out / "episodes.jsonl")} == {"garden", "grocery"}
    assert eval_main(argv) == 0  # the same kwargs resume the same eval


def test_play_env_kwarg_reaches_the_constructor():
    result = cli(
        "play",
        "seed_gym/SearchQA-v0",
        "--env-kwarg",
        "topk=1",
        stdin="<search> river city </search>\n",
    )
    assert result.returncode == 0, result.stderr
    assert "Doc 1(Title: " in result.stdout and "Doc 2(" not in result.stdout


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["eval", "--env", "seed_gym/Nope-v0"], ["'seed_gym/Nope-v0'", "seed_gym/Sokoban-v0"]),
        (["eval", "--env", "seed_gym/Sokoban-v0", "--split", "dev"], ["'dev'", "train, seen"]),
        (["eval", "--env", "seed_gym/Sokoban-v0", "--modality", "audio"], ["'audio'", "text+image"]),
        (["eval", "--env", "seed_gym/EZPoints-v0", "--max-steps", "0"], ["--max-steps", "0"]),
        (["eval", "--env", "seed_gym/EZPoints-v0", "--policy", "model:/nonexistent"],
         ["model:/nonexistent", "tiny, smollm2"]),
        (["eval", "--env", "seed_gym/EZPoints-v0", "--policy", "bogus"], ["'bogus'", "oracle"]),
        (["eval", "--env", "seed_gym/WebShop-v0", "--env-kwarg", "datadir=/x"],
         ["'datadir'", "data_dir"]),
        (["eval", "--env", "seed_gym/WebShop-v0", "--env-kwarg", "data_dir=/nonexistent"],
         ["data_dir='/nonexistent'", "no items_shuffle"]),
        (["eval", "--env", "seed_gym/Sokoban-v0", "--env-kwarg", "junk"], ["'junk'", "KEY=VALUE"]),
        (["play", "seed_gym/Nope-v0"], ["'seed_gym/Nope-v0'", "seed_gym/EZPoints-v0"]),
        (["play", "seed_gym/Sokoban-v0", "--modality", "audio"], ["'audio'", "text+image"]),
        (["play", "--env", "seed_gym/Nope-v0"], ["'seed_gym/Nope-v0'", "seed_gym/EZPoints-v0"]),
        (["play"], ["name the env once", "--env ENV_ID"]),
        (["play", "seed_gym/Sokoban-v0", "--env", "seed_gym/Sokoban-v0"], ["name the env once"]),
        (["data", "build", "bogus"], ["'bogus'", "alfworld, search"]),
        (["list", "extra"], ["extra"]),
        (["serve", "nosite"], ["'nosite'", "webshop"]),
        (["serve", "webshop", "--data-dir", "/nonexistent"], ["/nonexistent"]),
    ],
)  # fmt: skip
def test_bad_arguments_are_one_line_and_write_nothing(argv, expected, tmp_path, capsys):
    # seed-gym 0.1 printed 15-40 line tracebacks for each of these
    from seed_gym.cli import main as cli_main

    out = tmp_path / "out"
    if argv[0] == "eval":
        argv = [*argv, "--out", str(out)]
    with pytest.raises(SystemExit) as e:
        cli_main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("seed-gym"), err
    for part in expected:
        assert part in err, err
    assert not out.exists()


# --- play ---------------------------------------------------------------------------------------
def secret_at(seed: int, split: str = "seen") -> str:
    env = seed_gym.make(GUESS_ID, split=split)
    env.reset(seed=seed)
    return str(env.unwrapped.secret)


def test_play_reads_actions_until_quit(tmp_path):
    out = io.StringIO()
    stdin = io.StringIO(f"forty\nhint\n{secret_at(0)}\nquit\nnever read\n")
    assert play(GUESS_ID, seed=0, stdin=stdin, out=out, image_dir=tmp_path) == 0
    text = out.getvalue()
    assert "Task: Guess the secret whole number between 1 and 100." in text
    assert "reward +0.00 (invalid action)" in text
    assert f"oracle: {secret_at(0)}" in text
    assert "Episode over: won, return +1.00 in 2 steps." in text
    assert "New episode (seed 1)" in text
    assert "never read" not in text


def test_play_exits_cleanly_at_end_of_input():
    out = io.StringIO()
    assert play(GUESS_ID, seed=0, stdin=io.StringIO("1\n"), out=out) == 0
    assert out.getvalue().rstrip().endswith("(end of input)")


def test_play_agent_mode_shows_the_prompt_and_parses_completions():
    out = io.StringIO()
    stdin = io.StringIO("just 5\n<think>go</think><action>5</action>\n")
    assert play(GUESS_ID, seed=0, agent=True, stdin=stdin, out=out) == 0
    text = out.getvalue()
    assert "--- user ---\nYour task is to: Guess the secret" in text
    assert "You guessed (invalid output)." in text and "You guessed 5." in text


def test_play_through_the_console_entry_point():
    result = cli(
        "play",
        "--import",
        EXAMPLE,
        "--env",
        GUESS_ID,
        "--split",
        "unseen",
        "--seed",
        "2",
        stdin="7\n",
    )
    assert result.returncode == 0, result.stderr
    assert "7? " in result.stdout and "(end of input)" in result.stdout


@pytest.mark.skipif(not has_module("seed_gym.envs.sokoban"), reason="Sokoban not written yet")
def test_play_saves_images_to_png(tmp_path):
    result = cli(
        "play",
        "seed_gym/Sokoban-v0",
        "--modality",
        "image",
        "--image-dir",
        str(tmp_path),
        stdin="up\nquit\n",
    )
    assert result.returncode == 0, result.stderr
    paths = [
        line.split("saved to ", 1)[1].rstrip("]")
        for line in result.stdout.splitlines()
        if "[image saved to" in line
    ]
    assert len(paths) == 2
    from PIL import Image

    for path in paths:
        with Image.open(path) as image:
            assert image.mode == "RGB" and image.size[0] > 0
    assert "Admissible actions: up, down, left, right" in result.stdout


# --- agent policies (the path model:PATH / openai:URL policies take) -----------------------------
class _ScriptedAgent:
    """An 'LLM' that answers with the oracle's move in the think/action format, or garbage."""

    acts_on = "agent"

    def __init__(self, garbage: bool):
        self.name = "garbage" if garbage else "scripted"
        self.garbage = garbage

    def reset(self, env, *, seed):
        pass

    def act(self, env, obs, info):
        assert obs["messages"][-1]["role"] == "user"  # it gets the chat observation
        if self.garbage:
            return "I am not sure what to do."
        return f"<think>easy</think><action>{env.unwrapped.oracle_action()}</action>"

    def close(self):
        pass


def test_eval_agent_policies_play_the_chat_env(tmp_path):
    register_policy("scripted", lambda arg: _ScriptedAgent(garbage=arg == "garbage"))
    good = evaluate(GUESS_ID, "seen", "scripted", max_steps=3, out=tmp_path / "g", progress=False)
    assert good["success_rate"] == 1.0 and good["invalid_action_rate"] == 0.0
    bad = evaluate(
        GUESS_ID, "seen", "scripted:garbage", max_steps=3, out=tmp_path / "b", progress=False
    )
    assert bad["success_rate"] == 0.0 and bad["invalid_action_rate"] == 1.0
    assert bad["mean_steps"] == 3.0  # invalid turns count toward the step limit
    # 3 x the format penalty 0.1 (the example's no-op pays 0: the penalty rule)
    assert bad["mean_return"] == pytest.approx(-0.3)
    episode = read_jsonl(tmp_path / "b" / "episodes.jsonl")[0]
    assert episode["actions"] == [None, None, None] and episode["truncated"]


@pytest.mark.parametrize(
    "command", [["list"], ["check"], ["train", "--preset", "tiny"], ["eval", "--policy", "random"]]
)
def test_an_import_file_that_raises_is_one_line_in_every_command(tmp_path, command):
    # 0.4.0 before the fix: SyntaxError and ImportError were one line, anything else the module's
    # code raised (a register() call with a bad argument, a RuntimeError) a traceback
    user = tmp_path / "user_env.py"
    user.write_text('raise RuntimeError("boom at import")\n')
    out = tmp_path / "out"
    argv = [*command, "--import", str(user)]
    if command[0] in ("train", "eval"):
        argv += ["--env", "seed_gym/Sokoban-v0", "--out", str(out)]
    result = cli(*argv)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"seed-gym {command[0]}: --import {user}: RuntimeError: boom at import"
    )
    assert not out.exists()


def test_top_level_help_describes_every_subcommand(capsys):
    from seed_gym.cli import DELEGATED, DESCRIPTIONS
    from seed_gym.cli import main as cli_main

    with pytest.raises(SystemExit) as exit_:
        cli_main(["--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for name in ("list", "check", "data", *DELEGATED):
        assert f" {name} " in text, name
    for description in DESCRIPTIONS.values():
        assert " ".join(description.replace("%%", "%").split()) in text, description
    assert "``" not in text and "see `seed-gym" not in text  # no RST, no bare pointers
