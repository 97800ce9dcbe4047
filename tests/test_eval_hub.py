"""``seed-gym eval --policy model:ORG/NAME`` reads a hub id through the Hugging Face cache, as
``train --model`` does; an id the cache lacks is one whole sentence saying what to run, exit
status 2, nothing written (issue 27, item 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from seed_gym.tools.model_policy import weights_sha256

EZ = ["--env", "seed_gym/EZPoints-v0", "--modality", "text", "--split", "seen"]
SMALL = ["--episodes", "1", "--max-steps", "1", "--max-new-tokens", "4", "--n-boot", "10"]
SNAPSHOT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory):
    """A Hugging Face hub cache holding ``org/tiny`` (the tiny model), laid out as
    ``hf download`` leaves it: ``models--org--tiny/{refs/main, snapshots/<hash>/}``."""
    from seed_gym.trainer.backends.models import load_policy, save_policy

    cache = tmp_path_factory.mktemp("hub")
    repo = cache / "models--org--tiny"
    save_policy(load_policy("tiny"), repo / "snapshots" / SNAPSHOT)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(SNAPSHOT)
    return cache


def eval_cli(cache, *args: str) -> subprocess.CompletedProcess:
    # a fresh process: huggingface_hub reads HF_HUB_CACHE and HF_HUB_OFFLINE when imported
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "eval", *args, "--no-progress"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def test_a_cached_hub_id_is_evaluated(hub_cache, tmp_path):
    out = tmp_path / "eval"
    done = eval_cli(hub_cache, *EZ, *SMALL, "--policy", "model:org/tiny", "--out", str(out))
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["policy"] == "model:org/tiny"
    snapshot = hub_cache / "models--org--tiny" / "snapshots" / SNAPSHOT
    assert results["policy_info"]["model_sha256"] == weights_sha256(snapshot)
    assert results["episodes"] == 1


def test_an_id_missing_from_the_cache_is_one_sentence_exit_2_nothing_written(hub_cache, tmp_path):
    out = tmp_path / "eval"
    done = eval_cli(hub_cache, *EZ, *SMALL, "--policy", "model:org/absent", "--out", str(out))
    assert done.returncode == 2
    err = done.stderr.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("seed-gym eval: model:org/absent: model 'org/absent' is not in")
    assert "`hf download org/absent`" in err and "HF_HUB_OFFLINE=0" in err
    assert str(hub_cache) in err
    assert not err.endswith(("a)", "(")), err  # a whole sentence, not a cut one
    assert not out.exists()


def test_hub_problem_names_what_to_run_for_each_failure(monkeypatch):
    from huggingface_hub import constants, errors

    from seed_gym.trainer.backends.models import hub_problem

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    unreachable = hub_problem("org/x", errors.LocalEntryNotFoundError("no connection"))
    assert "cannot be reached" in unreachable and "`hf download org/x`" in unreachable
    other = hub_problem("org/x", RuntimeError("boom"))
    assert "RuntimeError" in other and "`hf download org/x`" in other
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    offline = hub_problem("org/x", errors.LocalEntryNotFoundError("offline"))
    assert "HF_HUB_OFFLINE=1 forbids" in offline and "HF_HUB_OFFLINE=0" in offline
    for message in (unreachable, offline, other):
        assert "\n" not in message


def test_a_path_that_is_no_hub_id_names_both_forms(tmp_path, capsys):
    from seed_gym.evaluate import main

    with pytest.raises(SystemExit) as info:
        main([*EZ, *SMALL, "--policy", "model:./nowhere/at/all", "--out", str(tmp_path / "o")])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "hub id (ORG/NAME)" in err and "\n" not in err
    assert not (tmp_path / "o").exists()
