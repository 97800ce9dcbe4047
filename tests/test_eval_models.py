"""``seed-gym eval`` with model policies (model:PATH through the HF engine, openai:URL against a real
local server), k samples per task, provenance, and resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import GUESS_ID, ROOT, import_example

import seed_gym
from seed_gym.evaluate import evaluate
from seed_gym.policies import PolicyError
from seed_gym.tools.model_policy import weights_sha256
from seed_gym.trainer.backends.models import state_dict_sha256

pytest.importorskip("transformers")
import_example()

EZ = "seed_gym/EZPoints-v0"
MODEL_OPTS = {"max_new_tokens": 12}


def read_jsonl(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def tiny_eval(tmp_path, name, **kw):
    kw.setdefault("episodes", 4)
    return evaluate(
        EZ,
        "seen",
        kw.pop("policy", "model:tiny"),
        modality="text",
        max_steps=kw.pop("max_steps", 3),
        out=tmp_path / name,
        progress=False,
        n_boot=100,
        policy_options={**MODEL_OPTS, **kw.pop("options", {})},
        **kw,
    )


def actions_of(tmp_path, name):
    return [
        (e["task_id"], e.get("sample", 0), e["actions"])
        for e in read_jsonl(tmp_path / name / "episodes.jsonl")
    ]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """The tiny model saved as a Hugging Face folder (what model:PATH loads)."""
    from seed_gym.trainer.backends.models import load_policy, save_policy

    path = tmp_path_factory.mktemp("tiny-model")
    save_policy(load_policy("tiny"), path)
    return path


def test_model_policy_batching_does_not_change_episodes(tmp_path):
    for temp in (0.0, 1.0):
        one = tiny_eval(tmp_path, f"b1-{temp}", batch_size=1, options={"temperature": temp})
        four = tiny_eval(tmp_path, f"b4-{temp}", batch_size=4, options={"temperature": temp})
        assert actions_of(tmp_path, f"b1-{temp}") == actions_of(tmp_path, f"b4-{temp}")
        assert one["per_task"] == four["per_task"]
    # the random tiny model writes garbage: every turn is an invalid output, penalized
    assert one["invalid_action_rate"] == 1.0 and one["mean_steps"] == 3.0
    assert one["mean_return"] == pytest.approx(-0.3)


def test_model_path_matches_in_memory_model_and_records_its_hash(tmp_path, tiny_folder):
    from seed_gym.trainer.backends.models import load_policy

    mem = tiny_eval(tmp_path, "mem", options={"temperature": 1.0})
    disk = tiny_eval(tmp_path, "disk", policy=f"model:{tiny_folder}", options={"temperature": 1.0})
    assert actions_of(tmp_path, "mem") == actions_of(tmp_path, "disk")
    assert mem["policy_info"]["model_sha256"] == state_dict_sha256(load_policy("tiny").model)
    assert disk["policy_info"]["model_sha256"] == weights_sha256(tiny_folder)
    assert disk["policy_info"]["model_hash_of"] == "weight files"
    assert disk["policy_info"]["temperature"] == 1.0
    # provenance
    assert disk["versions"]["numpy"] and disk["versions"]["torch"] and disk["versions"]["python"]
    assert disk["machine"]["kernels"] == torch.backends.cpu.get_cpu_capability()
    assert disk["machine"]["cores"] >= 1 and disk["machine"]["cpu"]
    manifest = seed_gym.split_manifest(EZ, "seen")
    assert disk["manifest"]["sha256"] == manifest.hash == disk["manifest_sha256"]
    assert disk["config"]["policy_options"]["max_new_tokens"] == 12
    saved = json.loads((tmp_path / "disk" / "results.json").read_text())
    assert saved["policy_info"] == disk["policy_info"]


def test_weights_hash_changes_with_the_weights(tmp_path, tiny_folder):
    import shutil

    from seed_gym.trainer.backends.models import load_policy, save_policy

    before = weights_sha256(tiny_folder)
    other = tmp_path / "other"
    shutil.copytree(tiny_folder, other)
    assert weights_sha256(other) == before  # the folder name does not matter
    save_policy(load_policy("tiny", seed=1), other)
    assert weights_sha256(other) != before
    with pytest.raises(FileNotFoundError, match="no weight files"):
        weights_sha256((tmp_path / "empty").mkdir() or tmp_path / "empty")


def test_k_samples_per_task_and_pass_at_k(tmp_path):
    res = tiny_eval(tmp_path, "k3", episodes=3, k=3, options={"temperature": 1.0})
    episodes = read_jsonl(tmp_path / "k3" / "episodes.jsonl")
    assert len(episodes) == 9 and res["k"] == 3 and res["tasks"] == 3
    assert [(e["index"], e["sample"]) for e in episodes] == [(i, i % 3) for i in range(9)]
    by_task = {}
    for e in episodes:
        by_task.setdefault(e["task_id"], []).append(e)
    for task_id, eps in by_task.items():
        assert len({e["seed"] for e in eps}) == 1  # same episode (env seed) for all k samples
        assert res["per_task"][task_id]["n"] == 3
    # the k samples sample differently (three completions of 12 random-model tokens)
    samples = [e["actions"] for e in episodes]
    assert res["pass_at_k"].keys() == {"1", "2", "3"}
    assert res["pass_at_k"]["1"] == res["avg_at_k"] == res["success_rate"]
    assert all(a == [None] * 3 for a in samples)
    trajs = None  # no --save-trajectories: no trajectory file
    assert not (tmp_path / "k3" / "trajectories").exists() and trajs is None


def test_save_trajectories_has_tokens_and_logprobs(tmp_path):
    tiny_eval(tmp_path, "tr", episodes=2, save_trajectories=True)
    trajs = read_jsonl(tmp_path / "tr" / "trajectories" / "eval.jsonl")
    episodes = read_jsonl(tmp_path / "tr" / "episodes.jsonl")
    assert [t["task_id"] for t in trajs] == [e["task_id"] for e in episodes]
    for t, e in zip(trajs, episodes, strict=True):
        assert t["format"] == "seed-gym/trajectory-v1" and t["source"] == "eval"
        assert len(t["steps"]) == e["steps"]
        for s in t["steps"]:
            assert len(s["tokens"]) == len(s["logprobs"]) >= 1
            assert all(lp <= 0 for lp in s["logprobs"])
            # after an invalid turn the game's no-op feedback ("No token: ...") comes first
            assert "Cards:" in s["observation"] and s["reward"] == pytest.approx(-0.1)


def test_game_policy_trajectories_embed_images(tmp_path):
    evaluate(
        "seed_gym/Sokoban-v0",
        "seen",
        "oracle",
        episodes=1,
        modality="text+image",
        out=tmp_path,
        progress=False,
        save_trajectories=True,
        n_boot=10,
    )
    (traj,) = read_jsonl(tmp_path / "trajectories" / "eval.jsonl")
    assert traj["won"] and traj["steps"][0]["images"][0].startswith("data:image/png;base64,")
    assert traj["steps"][0]["tokens"] is None


# --- openai:URL against the bundled OpenAI-compatible server --------------------------------------
@pytest.fixture(scope="module")
def server():
    from seed_gym.tools.openai_server import ChatBackend, serve
    from seed_gym.trainer.backends.models import load_policy

    policy = load_policy("tiny")
    srv = serve(ChatBackend(policy.model, policy.tokenizer, "tiny-served"))
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_openai_policy_plays_through_a_real_endpoint(tmp_path, server):
    res = tiny_eval(tmp_path, "oa", policy=f"openai:{server}", batch_size=2)
    assert res["episodes"] == 4 and res["invalid_action_rate"] == 1.0
    info = res["policy_info"]
    assert info["model"] == "tiny-served" and info["endpoint"] == server + "/v1"
    assert info["model_sha256"] is None and "remote" in info["model_hash_of"]
    named = tiny_eval(
        tmp_path, "oa2", policy=f"openai:{server}/v1", options={"model_name": "whatever"}
    )
    assert named["policy_info"]["model"] == "whatever"
    # greedy through the server = greedy through the in-process engine (same weights)
    tiny_eval(tmp_path, "local")
    assert actions_of(tmp_path, "oa") == actions_of(tmp_path, "local")


def test_openai_policy_unreachable_endpoint_fails_clearly(tmp_path):
    with pytest.raises(PolicyError, match="http://127.0.0.1:9/v1/models: cannot connect"):
        tiny_eval(tmp_path, "x", policy="openai:http://127.0.0.1:9", options={"retries": 0})


# --- resume ---------------------------------------------------------------------------------------
def test_resume_refuses_a_different_config(tmp_path):
    evaluate(GUESS_ID, "seen", "random", episodes=3, out=tmp_path, progress=False, n_boot=10)
    with pytest.raises(SystemExit, match="different config .*policy"):
        evaluate(GUESS_ID, "seen", "oracle", episodes=3, out=tmp_path, progress=False)
    res = evaluate(
        GUESS_ID, "seen", "oracle", episodes=3, out=tmp_path, progress=False, overwrite=True
    )
    assert res["success_rate"] == 1.0 and res["resumed_episodes"] == 0


def test_resume_skips_json_lines_that_are_not_episodes(tmp_path):
    # a valid-JSON line that is not an episode record made the rerun raise KeyError / TypeError
    evaluate(GUESS_ID, "seen", "oracle", episodes=3, out=tmp_path, progress=False, n_boot=10)
    log = tmp_path / "episodes.jsonl"
    kept = log.read_text()
    strays = ["[1, 2]", "{}", "5", '{"task_id": 7}', '{"task_id": "x", "sample": "0"}', "null"]
    log.write_text(kept + "\n".join(strays) + "\n")
    res = evaluate(GUESS_ID, "seen", "oracle", episodes=3, out=tmp_path, progress=False)
    assert res["episodes"] == 3 and res["resumed_episodes"] == 3
    assert log.read_text() == kept
    # a corrupt eval_config.json is named, not a JSONDecodeError traceback
    (tmp_path / "eval_config.json").write_text("{trunc")
    with pytest.raises(SystemExit, match="eval_config.json is corrupt"):
        evaluate(GUESS_ID, "seen", "oracle", episodes=3, out=tmp_path, progress=False)


def test_resume_after_kill_neither_redoes_nor_loses_episodes(tmp_path):
    """Kill a running eval (SIGKILL), tear its last line in half, rerun: the result equals an
    uninterrupted run's and the episodes finished before the kill are kept as they were."""
    args = [
        "eval",
        "--env",
        EZ,
        "--modality",
        "text",
        "--split",
        "seen",
        "--policy",
        "model:tiny",
        "--temperature",
        "1.0",
        "--max-new-tokens",
        "12",
        "--max-steps",
        "3",
        "--batch-size",
        "2",
        "--episodes",
        "16",
        "--n-boot",
        "100",
        "--no-progress",
        "--save-trajectories",
    ]
    killed = tmp_path / "killed"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "seed_gym.cli", *args, "--out", str(killed)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    log = killed / "episodes.jsonl"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if log.exists() and len(log.read_text().splitlines()) >= 4:
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = read_jsonl(log)
    assert 4 <= len(before) < 16, proc.stderr.read().decode()[-2000:]
    assert not (killed / "results.json").exists()
    with log.open("a") as f:  # a writer killed mid-line
        f.write('{"task_id": "ezpoints-torn", "won": tr')

    from seed_gym.evaluate import main

    assert main([*args[1:], "--out", str(killed)]) == 0
    after = read_jsonl(log)
    assert len(after) == 16 and len({(e["task_id"], e["sample"]) for e in after}) == 16
    by_key = {(e["task_id"], e["sample"]): e for e in after}
    for e in before:  # kept, not replayed
        assert by_key[(e["task_id"], e["sample"])] == e
    resumed = json.loads((killed / "results.json").read_text())
    assert resumed["resumed_episodes"] == len(before)
    trajs = read_jsonl(killed / "trajectories" / "eval.jsonl")
    assert sorted(t["traj_id"] for t in trajs) == sorted(f"eval-{i}" for i in range(16))

    assert main([*args[1:], "--out", str(tmp_path / "straight")]) == 0
    straight = json.loads((tmp_path / "straight" / "results.json").read_text())
    assert read_jsonl(tmp_path / "straight" / "episodes.jsonl") == after
    for key in ("per_task", "success_rate", "mean_return", "bootstrap", "policy_info"):
        assert resumed[key] == straight[key], key
