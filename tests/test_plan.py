"""Paper scale without a GPU: the paper presets, ``--dry-run`` memory plans for Qwen2.5-3B and -7B
configs written here (no weights), and hub model ids read from a Hugging Face cache offline."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("transformers")

from seed_gym.trainer.backends.plan import GB, Budget, ModelShape, memory_plan  # noqa: E402
from seed_gym.trainer.config import PRESETS, parse_args  # noqa: E402

# the published configs (Qwen/Qwen2.5-3B-Instruct, Qwen/Qwen2.5-7B-Instruct config.json)
QWEN = {
    "3b": {"hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
           "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 151936,
           "tie_word_embeddings": True},
    "7b": {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
           "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
           "tie_word_embeddings": False},
}  # fmt: skip


def qwen_folder(tmp_path, size: str):
    folder = tmp_path / f"Qwen2.5-{size.upper()}-Instruct"
    folder.mkdir()
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", **QWEN[size]}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(("size", "billions"), [("3b", 3.09), ("7b", 7.62)])
def test_parameter_counts_match_the_published_sizes(tmp_path, size, billions):
    shape = ModelShape.from_config(qwen_folder(tmp_path, size))
    assert shape.params / 1e9 == pytest.approx(billions, rel=0.01)


def test_sharding_divides_the_training_state():
    shape = ModelShape("q", 36, 2048, 11008, 16, 2, 151936, True)
    cfg = parse_args(["--preset", "paper-alfworld"])
    budget = Budget(128, 50, 2048, 512)
    one, eight = memory_plan(shape, cfg, budget, 1), memory_plan(shape, cfg, budget, 8)
    for item in ("parameters", "gradients", "optimizer"):
        assert eight[item] == pytest.approx(one[item] / 8)
    # 16 bytes a parameter for fp32 weights, gradients and AdamW: ~46 GiB for 3B on one GPU
    state = one["parameters"] + one["gradients"] + one["optimizer"]
    assert state / GB == pytest.approx(16 * shape.params / GB)


def test_the_paper_presets():
    for env in ("alfworld", "webshop", "search", "sokoban", "ezpoints"):
        cfg = PRESETS[f"paper-{env}"]()
        assert (
            cfg.rollout.group_size,
            cfg.rollout.tasks_per_iter,
            cfg.optim.lr,
            cfg.optim.kl_coef,
        ) == (8, 16, 1e-6, 0.01)
        assert (cfg.optim.ent_coef, cfg.opd.coef, cfg.opd.beta, cfg.system.engine) == (
            0.001,
            0.01,
            5.0,
            "vllm",
        )
        assert cfg.system.fsdp and cfg.rollout.max_new_tokens == 512 and cfg.algo == "seed"
        # SEED.md Stage 1: the card games sample at T=1 and keep every parsed card; the text
        # envs sample at 0.4 and keep what the with-skill rerun accepts
        card_game = env in ("sokoban", "ezpoints")
        assert (cfg.stage1.tasks_per_type, cfg.stage1.rollouts, cfg.stage1.temperature) == (
            30,
            8,
            1.0 if card_game else 0.4,
        )
        assert cfg.stage1.accept_filter == (not card_game)
        assert ("VL" in cfg.model) == (env in ("sokoban", "ezpoints"))


def dry_run(folder, world: int, preset: str = "paper-alfworld"):
    return subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "train", "--preset", preset, "--model",
         str(folder), "--dry-run"],
        capture_output=True, text=True, env={**os.environ, "WORLD_SIZE": str(world)},
    )  # fmt: skip


def test_dry_run_plans_3b_and_7b_and_refuses_what_does_not_fit(tmp_path):
    plans = {}
    folders = {size: qwen_folder(tmp_path, size) for size in QWEN}
    for size, world in (("3b", 1), ("3b", 2), ("7b", 1), ("7b", 8)):
        run = plans[(size, world)] = dry_run(folders[size], world)
        out = run.stdout
        assert "memory per GPU" in out and "parameters" in out and "vllm kv cache" in out, out
        assert "split      unseen" in out and "step-samples" in out
        # the env was played: its prompt measured (in characters / 4 without tokenizer files)
        assert int(re.search(r"prompt <= (\d+) tokens", out).group(1)) > 100, out
    assert plans[("7b", 1)].returncode == 2  # 7B fully fine-tuned needs ~122 GB of state alone
    assert "does not fit on 1 GPU(s)" in plans[("7b", 1)].stdout
    assert plans[("7b", 8)].returncode == 0, plans[("7b", 8)].stdout
    assert "fits on 8 GPU(s)" in plans[("7b", 8)].stdout
    assert plans[("3b", 2)].returncode == 0
    assert "vLLM gpu_memory_utilization for 2 GPU(s)" in plans[("3b", 2)].stdout


TINY_REPO = "seedgym-test/tiny-llama"


def test_hub_ids_load_from_the_cache_offline(tmp_path):
    """A tiny model saved into a Hugging Face cache layout under a made-up repo id loads by id
    with HF_HUB_OFFLINE=1; an id that is not cached is one line naming it."""
    from seed_gym.trainer.backends.models import load_policy

    policy = load_policy("tiny", seed=0)
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hf" / "hub" / ("models--" + TINY_REPO.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    policy.model.save_pretrained(snapshot)
    policy.tokenizer.save_pretrained(snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    code = (
        "from seed_gym.trainer.backends.models import load_policy\n"
        f"p = load_policy({TINY_REPO!r})\n"
        "print(p.model.config.hidden_size, p.model.num_parameters())\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == [str(policy.model.config.hidden_size),
                                  str(policy.model.num_parameters())]  # fmt: skip
    missing = subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "eval", "--env", "example/GuessNumber-v0",
         "--import", "docs/examples/guess_number.py", "--policy", "model:nobody/missing-model",
         "--episodes", "1", "--out", str(tmp_path / "e")],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert missing.returncode != 0
    last = missing.stderr.strip().splitlines()[-1]
    assert "nobody/missing-model" in last and "Traceback" not in missing.stderr, missing.stderr
