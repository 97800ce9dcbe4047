"""benchmarks/replay_update.py: one update of a finished run replayed under variants, on real
``seed-gym train`` runs of the tiny SEED preset (seconds each)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import ROOT

pytest.importorskip("transformers")

spec = importlib.util.spec_from_file_location(
    "replay_update", ROOT / "benchmarks" / "replay_update.py"
)
replay = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replay)

TINY = ["--env", "seed_gym/EZPoints-v0", "--modality", "text", "--algo", "seed", "--preset", "tiny",
        "--no-progress", "--eval-every", "0"]  # fmt: skip


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "orig"
    cmd = [
        sys.executable,
        "-m",
        "seed_gym.cli",
        "train",
        *TINY,
        "--iterations",
        "2",
        "--out",
        str(out),
    ]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def test_the_base_branch_is_the_original_update_and_a_variant_changes_it(
    original, tmp_path, capsys
):
    out = tmp_path / "replay"
    argv = [str(original), "--update", "2", "--variant", "base=", "--variant",
            "no-opd=--opd-coef 0", "--variant", "undone=--max-update-kl 1e-12", "--after", "1",
            "--jobs", "2", "--out", str(out)]  # fmt: skip
    assert replay.main(argv) == 0
    lines = replay.iteration_lines(original)
    # the prefix is the original's first iteration, bit for bit
    prefix = replay.iteration_lines(out / "prefix")
    assert max(prefix) == 1
    for key in replay.SAME_KEYS:
        assert prefix[1][key] == lines[1][key], key
    res = json.loads((out / "replay.json").read_text())
    base, no_opd = res["variants"]["base"], res["variants"]["no-opd"]
    assert base["reproduces_original"] is True
    assert base["update"]["train/grad_norm"] == lines[2]["train/grad_norm"]
    assert "reproduces_original" not in no_opd  # only the flagless branch is checked
    assert no_opd["flags"] == ["--opd-coef", "0"]
    # the same samples, another loss: update 2 differs
    assert no_opd["update"]["train/grad_norm"] != base["update"]["train/grad_norm"]
    for row in (base, no_opd):
        assert len(row["rollout_after"]) == 1 and row["rollout_after"][0] is not None
        assert row["seen"]["n"] > 0 and 0.0 <= row["seen"]["ci95"][0] <= row["seen"]["ci95"][1]
        assert 3 in replay.iteration_lines(out / ("base" if row is base else "no-opd"))
    # the line search's branch: the same steps, then every weight put back
    undone = res["variants"]["undone"]["update"]
    assert undone["train/grad_norm"] == base["update"]["train/grad_norm"]
    assert undone["train/update_scale"] == 0.0 and "train/update_scale" not in base["update"]
    table = capsys.readouterr().out
    assert "base (= original)" in table and "--opd-coef 0" in table
    assert f"undone ({undone['train/update_kl']:.3g})" in table
    assert replay.kept_cell({"train/update_scale": 0.125, "train/update_kl": 0.08,
                             "train/update_kl_kept": 0.0068}) == "1/8 (0.0068)"  # fmt: skip
    # rerun: everything is there, nothing trains again
    assert replay.main(argv) == 0
    assert "[run]" not in capsys.readouterr().out


def test_a_variant_is_name_equals_flags():
    assert replay.parse_variant('slow=--lr 1e-6 --kl-coef "0.0"') == (
        "slow",
        ["--lr", "1e-6", "--kl-coef", "0.0"],
    )
    assert replay.parse_variant("base=") == ("base", [])
    for bad in ("--lr 1e-6", "prefix=--lr 0", "=--lr 0", "a/b=--lr 0"):
        with pytest.raises(SystemExit, match="NAME=FLAGS"):
            replay.parse_variant(bad)


def test_an_update_outside_the_run_is_one_line(original, tmp_path):
    with pytest.raises(SystemExit, match=r"--update must be in 1\.\.2"):
        replay.main([str(original), "--update", "3", "--variant", "base=", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="no config.json"):
        replay.main([str(tmp_path), "--update", "1", "--variant", "base=", "--out", str(tmp_path)])
