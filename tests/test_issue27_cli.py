"""Issue 27, item 8: ``seed-gym train --help`` is short, lists the presets and algorithms from
their registries and doubles no negation; every train ends with a seen / unseen summary, one
eval or many; ``--no-progress`` silences transformers' bars too; ``--wandb`` logs every metrics
line (offline here) or says in one line how to install it; ALFWorld's first-use build shows a
tqdm bar."""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytest.importorskip("transformers")
from seed_gym.trainer import config as config_module  # noqa: E402
from seed_gym.trainer.algorithms import ALGORITHMS  # noqa: E402
from seed_gym.trainer.config import PRESETS, parse_args, tiny  # noqa: E402
from seed_gym.trainer.run_state import Logger, RunStateError  # noqa: E402
from seed_gym.trainer.train import main as train_main  # noqa: E402

EZ = "seed_gym/EZPoints-v0"
RLOO = str(ROOT / "docs" / "examples" / "rloo.py")
TINY = ["--preset", "tiny", "--env", EZ, "--modality", "text", "--no-tensorboard", "--no-save-hf"]


def help_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        parse_args([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


# --- train --help ---------------------------------------------------------------------------------
def test_train_help_is_short_and_lists_presets_and_algorithms(capsys):
    shown = help_of(capsys)
    lines = shown.splitlines()
    assert len(lines) < 200  # tyro's boxes took 366
    assert all(len(line) <= 110 for line in lines if not line.startswith("usage:"))
    presets = shown[shown.index("presets (--preset NAME):") :]
    algorithms = shown[shown.index("algorithms (--algo NAME") :]
    assert all(name in presets for name in PRESETS)
    assert all(f"\n  {name} " in algorithms for name in ALGORITHMS)
    assert "``" not in shown and "╭" not in shown  # no RST markup, no boxes


def test_the_lists_come_from_the_registries(capsys, monkeypatch):
    monkeypatch.setitem(PRESETS, "my-preset", lambda: tiny().replace(preset="my-preset"))
    shown = help_of(capsys, "--import", RLOO)
    presets = shown[shown.index("presets (--preset NAME):") :]
    assert "\n  my-preset\n" in presets and "\n  rloo " in shown


def test_help_shows_the_presets_defaults(capsys):
    shown = help_of(capsys, "--preset", "smollm2-cpu")
    assert "options (defaults: preset smollm2-cpu):" in shown
    line = next(ln for ln in shown.splitlines() if ln.strip().startswith("--group-size"))
    assert line.endswith("(default 8)")  # the preset's, not the dataclass's 4


def test_no_negation_is_doubled(capsys):
    shown = help_of(capsys)
    assert "--no-no-" not in shown
    assert "  --no-sft, --sft " in shown
    assert parse_args(["--preset", "tiny-vlm"]).stage1.skip is True
    assert parse_args(["--preset", "tiny-vlm", "--sft"]).stage1.skip is False
    assert parse_args(["--no-sft"]).stage1.skip is True


# --- the summary after every train ----------------------------------------------------------------
def test_a_train_with_one_eval_prints_its_success(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")  # restored after the test
    assert (
        train_main([*TINY, "--iterations", "1", "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    )
    err = capsys.readouterr().err.splitlines()
    summary = [line for line in err if " success: " in line]
    assert [line.split(":")[0] for line in summary] == ["  seen success", "unseen success"]
    for line in summary:  # tiny random model: 0 of 2 episodes, Wilson [0, 0.658]
        assert "iteration 1 0.000 [0.000, 0.658] (95% Wilson interval, 2 episodes)" in line
    assert err[-1].startswith(f"run written to {tmp_path / 'r'}")


def test_the_prompting_baseline_prints_its_success_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    argv = [*TINY, "--algo", "prompt", "--out", str(tmp_path / "p"), "--no-progress"]
    assert train_main(argv) == 0
    err = capsys.readouterr().err
    assert "  seen success: iteration 0 " in err and "unseen success: iteration 0 " in err


def test_a_train_with_several_evals_prints_the_gain(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    argv = [*TINY, "--iterations", "2", "--eval-every", "1", "--eval-splits", "seen"]
    assert train_main([*argv, "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if " success: " in ln]
    assert line.startswith("  seen success: iteration 1 ") and " -> iteration 2 " in line
    assert "; gain +0.000 [+0.000, +0.000] (95% intervals: Wilson over 2 episodes" in line


# --- --no-progress --------------------------------------------------------------------------------
def cli_train(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_DISABLE_PROGRESS_BARS",)}
    return subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "train", *TINY, "--iterations", "1", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )


def test_no_progress_silences_the_transformers_bars(tmp_path):
    saved = cli_train("--out", str(tmp_path / "base"), "--save-hf", "--no-progress")
    assert saved.returncode == 0, saved.stderr
    model = str(tmp_path / "base" / "model")
    # loading a saved model: transformers draws its "Loading weights" bar ...
    loud = cli_train("--model", model, "--out", str(tmp_path / "loud"), "--eval-splits", "seen")
    assert loud.returncode == 0 and "Loading weights" in loud.stderr
    # ... unless --no-progress, which leaves no bar at all
    quiet = cli_train("--model", model, "--out", str(tmp_path / "quiet"), "--no-progress")
    assert quiet.returncode == 0, quiet.stderr
    assert "Loading weights" not in quiet.stderr and "it/s]" not in quiet.stderr
    assert "\r" not in quiet.stderr


# --- --wandb --------------------------------------------------------------------------------------
def test_wandb_flag_without_the_package_is_one_line(capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    assert parse_args([]).system.wandb is False  # off by default
    with pytest.raises(SystemExit) as done:
        parse_args(["--wandb"])
    assert done.value.code == 2
    assert capsys.readouterr().err == (
        "seed-gym train: --wandb needs the wandb package: pip install 'seed-gym[wandb]'\n"
    )
    monkeypatch.setitem(sys.modules, "wandb", None)  # the Python API: the same line
    with pytest.raises(RunStateError, match=r"pip install 'seed-gym\[wandb\]'"):
        Logger(Path("."), False, wandb={})


def wandb_records(run_dir: Path) -> list:
    """The records of the offline W&B run in ``run_dir/wandb`` (its LevelDB-style log of
    protobuf records: a 7-byte header, then 32 KiB blocks of checksummed chunks)."""
    from wandb.proto import wandb_internal_pb2 as pb

    (path,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    data, block, pos, chunk, records = path.read_bytes(), 32768, 7, b"", []
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or the last chunk of one
            record = pb.Record()
            record.ParseFromString(chunk)
            records.append(record)
            chunk = b""
    return records


def key(item) -> str:
    return item.key or "/".join(item.nested_key)


def test_wandb_offline_gets_every_metrics_line(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = Logger(tmp_path, False, wandb={"algo": "grpo", "seed": 3})
    logger.log(1, {"rollout/success": 0.25, "eval/seen/success": 0.5, "note": "text"})
    logger.log(2, {"rollout/success": 0.75})
    logger.close()
    history = [
        {key(item): json.loads(item.value_json) for item in r.history.item}
        for r in wandb_records(tmp_path)
        if r.WhichOneof("record_type") == "history"
    ]
    assert [(h["_step"], h["iteration"], h["rollout/success"]) for h in history] == [
        (1, 1, 0.25),
        (2, 2, 0.75),
    ]
    assert history[0]["eval/seen/success"] == 0.5 and "note" not in history[0]
    config = {
        key(item): json.loads(item.value_json)
        for r in wandb_records(tmp_path)
        if r.WhichOneof("record_type") == "run"  # the run record carries the config
        for item in r.run.config.update
    }
    assert (config["algo"], config["seed"]) == ("grpo", 3)
    # the metrics file is written as before
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in lines] == [1, 2]
    # a resumed run logs to the same W&B run
    run_id = (tmp_path / "wandb-run-id").read_text().strip()
    Logger(tmp_path, False, wandb={}).close()
    assert (tmp_path / "wandb-run-id").read_text().strip() == run_id


def test_train_with_wandb_logs_its_iterations_and_config(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    argv = [*TINY, "--iterations", "1", "--wandb", "--out", str(out), "--no-progress"]
    assert train_main(argv) == 0
    history = [
        {key(item) for item in r.history.item}
        for r in wandb_records(out)
        if r.WhichOneof("record_type") == "history"
    ]
    assert history and all("iteration" in h for h in history)
    assert any("train/loss" in h for h in history)
    config = {
        key(item)
        for r in wandb_records(out)
        if r.WhichOneof("record_type") == "run"
        for item in r.run.config.update
    }
    assert {"algo", "seed", "preset"} <= {k.split("/")[-1] for k in config}, config


# --- ALFWorld's first-use build -------------------------------------------------------------------
def test_alfworld_build_shows_a_tqdm_bar(capsys, monkeypatch):
    from seed_gym.envs.alfworld import build

    monkeypatch.setattr(build, "build_one", lambda item: {"index": item[1]})
    todo = [("train", i, "/nowhere") for i in range(3)]
    recs = list(build._run(todo, 1, verbose=True))
    assert [(r["split"], r["index"]) for r in recs] == [("train", 0), ("train", 1), ("train", 2)]
    err = capsys.readouterr().err
    assert "[seed-gym] ALFWorld games: 100%" in err and "3/3" in err
    assert "[seed-gym]   3/3" not in err  # no bare counter lines
    list(build._run(todo, 1, verbose=False))
    assert capsys.readouterr().err == ""


def test_extras_name_what_the_code_imports():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["wandb"] == ["wandb>=0.17"] and "wandb" in extras["all"][0]
    assert extras["report"] == []  # the report is inline SVG: no matplotlib
    sources = [
        *ROOT.glob("seed_gym/**/*.py"),
        *ROOT.glob("trainer/**/*.py"),
        *ROOT.glob("envs/**/*.py"),
    ]
    assert not [p for p in sources if "matplotlib" in p.read_text()]
    assert config_module.SystemConfig().wandb is False
