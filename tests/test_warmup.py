"""Format warm-up: demonstrations parse under every env's agent spec, the warm-up lowers the
completion loss of the tiny model, the warmed model is cached, and ``seed-gym train`` loads it.

ALFWorld, WebShop and SearchQA build their data caches on first use (as the conformance tests do);
after that each demonstration test takes seconds.
"""

from __future__ import annotations

import json

import pytest

import seed_gym
from seed_gym.trainer.warmup import (
    WarmupSettings,
    analyzer_demonstrations,
    build_warmup_model,
    demonstrations,
    format_warmup,
)
from seed_gym.wrappers.spec import DemoStep
from seed_gym.wrappers.templates import ezpoints, search, sokoban

ENVS = [
    "seed_gym/Sokoban-v0",
    "seed_gym/EZPoints-v0",
    "seed_gym/ALFWorld-v0",
    "seed_gym/WebShop-v0",
    "seed_gym/SearchQA-v0",
]


@pytest.mark.parametrize("env_id", ENVS)
def test_demonstrations_parse_under_the_env_spec(env_id):
    spec = seed_gym.agent_spec(env_id)
    rows = demonstrations(env_id, "train", 2, seed=3, noise=0.0)
    assert rows
    for row in rows:
        parsed = spec.parse(row["completion"])
        assert parsed.valid, (row["completion"], parsed.error)
        assert parsed.thought  # the reasoning block is there and not empty
        assert row["provenance"]["source"] == "oracle"
        assert row["messages"][-1]["role"] == "user"
    # the pure oracle wins both episodes: each ends in a winning step
    assert len({r["provenance"]["episode"] for r in rows}) == 2


@pytest.mark.parametrize("env_id", ENVS)
def test_noisy_demonstrations_still_parse_and_are_seeded(env_id):
    spec = seed_gym.agent_spec(env_id)
    rows = demonstrations(env_id, "train", 2, seed=1, noise=0.5)
    assert all(spec.parse(r["completion"]).valid for r in rows)
    again = demonstrations(env_id, "train", 2, seed=1, noise=0.5)
    assert [r["completion"] for r in rows] == [r["completion"] for r in again]
    assert [r["messages"] for r in rows] == [r["messages"] for r in again]


def test_noise_mixes_random_actions_in():
    rows = demonstrations("seed_gym/Sokoban-v0", "train", 8, seed=0, noise=0.5)
    sources = {r["provenance"]["source"] for r in rows}
    assert sources == {"oracle", "noise"}
    only_noise = demonstrations("seed_gym/EZPoints-v0", "train", 3, seed=0, noise=1.0)
    assert {r["provenance"]["source"] for r in only_noise} == {"noise"}


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="noise"):
        demonstrations("seed_gym/Sokoban-v0", "train", 1, noise=1.5)
    with pytest.raises(ValueError, match="noise"):
        WarmupSettings(noise=-0.1)
    with pytest.raises(ValueError, match=">= 1"):
        WarmupSettings(episodes=0)
    with pytest.raises(ValueError, match="analyzer_episodes"):
        WarmupSettings(analyzer_episodes=-1)
    with pytest.raises(ValueError, match="text-only"):
        demonstrations("seed_gym/EZPoints-v0", "train", 1, modality="image")


@pytest.mark.parametrize("env_id", ["seed_gym/EZPoints-v0", "seed_gym/Sokoban-v0"])
def test_analyzer_rows_are_the_privileged_skills_of_played_episodes(env_id):
    from seed_gym.trainer.algorithms.seed.analyzer import analyzer_instruction, parse_skill_json

    rows = analyzer_demonstrations(env_id, "train", 4, seed=0, noise=0.0)
    assert len(rows) == 4 and {r["provenance"]["source"] for r in rows} == {"analyzer"}
    # episodes alternate: the pure oracle (noise 0) wins, then a random player (which may win
    # by luck: the Sokoban stream of WARMUP_VERSION 4 does once); some episode must lose
    won = [r["provenance"]["won"] for r in rows]
    assert won[0::2] == [True, True]
    more = analyzer_demonstrations(env_id, "train", 8, seed=0, noise=0.0)
    assert [r["provenance"]["won"] for r in more[0::2]] == [True] * 4
    assert not all(r["provenance"]["won"] for r in more[1::2])  # random players mostly lose
    for row in rows:
        prompt = row["messages"][0]["content"]
        won = row["provenance"]["won"]
        assert row["messages"][0]["role"] == "user"
        assert prompt.startswith(analyzer_instruction(won))
        assert f"episode_success: {'success' if won else 'failure'}" in prompt
        assert "Step 1\nObservation: " in prompt and "Response: <think>" in prompt
        fields = parse_skill_json(row["completion"])
        expected = "repeat the workflow that worked" if won else "Avoid this mistake"
        assert expected in fields["episode_skill"]
    again = analyzer_demonstrations(env_id, "train", 4, seed=0, noise=0.0)
    assert again == rows
    # a budget truncates the prompt exactly as the trainer's analyzer would
    short = analyzer_demonstrations(
        env_id, "train", 2, seed=0, noise=0.0, analyzer_kwargs={"max_prompt_tokens": 120}
    )
    assert len(short[1]["messages"][0]["content"]) < len(rows[1]["messages"][0]["content"])
    assert "steps omitted" in short[1]["messages"][0]["content"]


def test_reasoning_reads_only_the_observation():
    grid = "# # # # #\n# P _ # #\n# _ X _ #\n# O _ √ #\n# # # # #"
    # each env's reasoning lives in its agent spec (wrappers/templates/<env>.py)
    step = DemoStep(grid, "Push every box onto a target.", "down", {})
    assert sokoban.reasoning(step) == (
        "I am at (1, 1). Box at (2, 2). On target: (3, 3). Target at (3, 1). I move down."
    )
    expected = f"<think>{sokoban.reasoning(step)}</think><action>down</action>"
    assert sokoban.SPEC.demo_completion(step) == expected
    cards = "Cards: the Queen of Hearts and the 2 of Spades.\nFormula: 10 +"
    step = DemoStep(cards, "", "2", {})
    assert ezpoints.reasoning(step) == (
        "The cards count 10 and 2. The formula so far is '10 +'. I append 2."
    )
    # one card down: the arithmetic that picks the operator (the product only when the sum misses)
    step = DemoStep(cards.replace("10 +", "10"), "", "+", {})
    assert ezpoints.reasoning(step) == "The cards count 10 and 2. 10 + 2 = 12. I append +."
    three_four = "Cards: the 3 of Hearts and the 4 of Clubs.\nFormula: 4"
    assert ezpoints.reasoning(DemoStep(three_four, "", "*", {})) == (
        "The cards count 3 and 4. 4 + 3 = 7, not 12; 4 * 3 = 12. I append *."
    )
    answer = DemoStep("", "q", "<answer> Paris </answer>", {})
    assert search.SPEC.demo_completion(answer).endswith("</think><answer> Paris </answer>")


def test_warmup_lowers_the_completion_loss_of_the_tiny_model():
    import torch

    from seed_gym.trainer.algorithms.seed.stage1 import answer_nll, encode_row
    from seed_gym.trainer.backends.models import load_policy

    torch.set_num_threads(1)
    rows = demonstrations("seed_gym/EZPoints-v0", "train", 3, seed=0, noise=0.0)
    policy = load_policy("tiny", seed=0)
    examples = [encode_row(policy.tokenizer, r) for r in rows]

    def loss() -> float:
        with torch.no_grad():
            return float(answer_nll(policy.model, examples, pad_id=policy.pad_id))

    before = loss()
    stats = format_warmup(
        policy.model, policy.tokenizer, rows, epochs=3, lr=3e-3, micro_batch=4, val_fraction=0.0
    )
    after = loss()
    assert after < before - 0.5
    assert stats["rows"] == len(rows) and stats["steps"] == 3 * -(-len(rows) // 4)
    assert stats["train_loss_last_epoch"] < stats["train_loss_first_epoch"]


def test_build_caches_the_warmed_model(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path))
    kw = {"episodes": 2, "epochs": 1, "lr": 1e-3, "bf16": False, "progress": False}
    path = build_warmup_model("seed_gym/EZPoints-v0", "tiny", **kw)
    assert (path / "config.json").exists() and path.is_relative_to(tmp_path / "models")
    record = json.loads((path / "warmup.json").read_text())
    assert record["env_id"] == "seed_gym/EZPoints-v0" and record["base"] == "tiny"
    assert record["settings"]["episodes"] == 2 and record["oracle_rows"] > 0
    stamp = (path / "warmup.json").stat().st_mtime_ns
    assert build_warmup_model("seed_gym/EZPoints-v0", "tiny", **kw) == path  # cached
    assert (path / "warmup.json").stat().st_mtime_ns == stamp
    other = build_warmup_model("seed_gym/EZPoints-v0", "tiny", **{**kw, "noise": 0.0})
    assert other != path
    with_analyzer = build_warmup_model(
        "seed_gym/EZPoints-v0", "tiny", **kw, analyzer_episodes=2, analyzer_budget=256
    )
    assert with_analyzer not in (path, other)
    record = json.loads((with_analyzer / "warmup.json").read_text())
    assert record["analyzer_rows"] == 2 and record["stats"]["rows"] > record["analyzer_rows"]
    assert not list((tmp_path / "models").glob("*.tmp*"))


def test_train_starts_from_the_warmed_model(tmp_path, monkeypatch):
    """With lr 0 one GRPO iteration leaves the weights alone, so the run's final model must equal
    the warmed folder's weights, not the seeded tiny model's."""
    import torch

    from seed_gym.trainer.backends.models import load_policy
    from seed_gym.trainer.config import TrainConfig, tiny
    from seed_gym.trainer.train import train
    from seed_gym.trainer.warmup import warmup_dir

    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path / "cache"))
    cfg = tiny()
    cfg.env, cfg.out, cfg.iterations, cfg.optim.lr = (
        "seed_gym/Sokoban-v0",
        str(tmp_path / "run"),
        1,
        0.0,
    )
    cfg.warmup.episodes, cfg.warmup.lr = 2, 1e-3
    cfg.eval.splits, cfg.system.progress, cfg.system.tensorboard = ("seen",), False, False
    train(cfg)
    warm = warmup_dir(
        cfg.env,
        "tiny",
        WarmupSettings(episodes=2, epochs=cfg.warmup.epochs, lr=1e-3, bf16=cfg.bf16),
    )
    assert (warm / "warmup.json").exists()
    saved = TrainConfig.load(tmp_path / "run" / "config.json")
    assert saved.model == "tiny" and saved.warmup.episodes == 2
    final = load_policy(str(tmp_path / "run" / "model")).model.state_dict()
    warmed = load_policy(str(warm)).model.state_dict()
    base = load_policy("tiny", seed=cfg.seed).model.state_dict()
    key = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(final[key], warmed[key])
    assert not torch.equal(final[key], base[key])


def test_the_warmup_is_built_on_its_own_thread_count(tmp_path, monkeypatch):
    """``--warmup-threads 2 --threads 1`` (``make demo``, the learning benchmark): the warm-up
    runs on 2 torch threads and the run gets its 1 back."""
    import torch

    from seed_gym.trainer import warmup
    from seed_gym.trainer.config import tiny

    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path))
    during = []

    build = warmup._build

    def spy(*args, **kwargs):
        during.append(torch.get_num_threads())
        build(*args, **kwargs)

    monkeypatch.setattr(warmup, "_build", spy)
    cfg = tiny().replace(env="seed_gym/EZPoints-v0", format_warmup_episodes=2, progress=False)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        path = warmup.warmup_for_config(cfg, threads=2)
        assert (path / "warmup.json").exists() and during == [2]
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_bf16_warmup_trains_the_weights_it_saves():
    """Regression: one autocast region over all steps must not reuse stale bf16 weight copies
    (the in-process loss fell while the fp32 weights drifted); the held-out loss measured inside
    the warm-up must match a fresh fp32 measurement of the final weights."""
    import torch

    from seed_gym.trainer.algorithms.seed.stage1 import answer_nll, encode_row, split_rows
    from seed_gym.trainer.backends.models import load_policy

    torch.set_num_threads(1)
    rows = demonstrations("seed_gym/EZPoints-v0", "train", 4, seed=0, noise=0.0)
    policy = load_policy("tiny", seed=0)
    stats = format_warmup(
        policy.model,
        policy.tokenizer,
        rows,
        epochs=4,
        lr=3e-3,
        micro_batch=4,
        bf16=True,
        val_fraction=0.3,
    )
    _, val = split_rows(len(rows), 0.3, 0)
    examples = [encode_row(policy.tokenizer, rows[i]) for i in val]
    with torch.no_grad():
        fresh = float(answer_nll(policy.model, examples, pad_id=policy.pad_id))
    assert stats["val_loss_after"] < stats["val_loss_before"] - 0.5
    assert abs(fresh - stats["val_loss_after"]) < 0.1 * stats["val_loss_after"]


@pytest.mark.parametrize("env_id", ["seed_gym/EZPoints-v0", "seed_gym/Sokoban-v0"])
def test_skill_rows_carry_a_hindsight_skill_and_follow_it(env_id):
    import seed_gym
    from seed_gym.trainer.warmup import skill_demonstrations
    from seed_gym.wrappers.skill import SKILL_HEADER

    rows = skill_demonstrations(env_id, "train", 4, seed=0, noise=0.0)
    assert rows and {r["provenance"]["source"] for r in rows} == {"skill"}
    spec = seed_gym.agent_spec(env_id)
    episodes: dict[int, list[dict]] = {}
    for row in rows:
        text = row["messages"][-1]["content"]
        assert text.count(SKILL_HEADER) == 1
        # the card games have no task line: the block sits right before the closing instruction
        assert (
            text.index(SKILL_HEADER)
            < text.index("Now it's your turn")
            < text.index(SKILL_HEADER) + 600
        )
        assert spec.parse(row["completion"]).valid
        episodes.setdefault(row["provenance"]["episode"], []).append(row)
    skills = {text[text.index(SKILL_HEADER):].split("]")[0] for text in
              (r["messages"][-1]["content"] for r in rows)}  # fmt: skip
    assert any("Avoid this mistake" in s for s in skills)  # a lost source episode
    assert any("repeat the workflow that worked" in s for s in skills)  # a won one
    # every replay wins: the won episode's actions again, or the oracle's after a loss
    assert all(r["provenance"]["won"] for r in rows)
    for ep_rows in episodes.values():  # the prompts of one episode share its skill
        blocks = {
            r["messages"][-1]["content"].split(SKILL_HEADER)[1].split("]")[0] for r in ep_rows
        }
        assert len(blocks) == 1
