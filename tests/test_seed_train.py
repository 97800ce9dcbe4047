"""SEED in the training loop: Stage 1 then Stage 2 end to end on the tiny model, every baseline
flag for 2 iterations, exact resume, the skill log and trajectory files, and the report on them.

Structured decoding makes even the random tiny model's analyses parse (noise, but skills); the
tests that need meaningful skills from the policy replace only the analyzer's *generation*
(``analyzer.analyzer_generate_fn``) by a fixed valid answer. Everything else (parsing, rescoring
under π_old, the gated OPD loss, logs) is the real code path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import checkpoint_params, deterministic_metrics, run_metrics  # noqa: E402

from seed_gym.trainer.algorithms import ALGORITHMS as ALGOS  # noqa: E402
from seed_gym.trainer.algorithms.seed import analyzer  # noqa: E402
from seed_gym.trainer.config import TrainConfig, tiny  # noqa: E402
from seed_gym.trainer.train import main as train_main  # noqa: E402
from seed_gym.trainer.train import train  # noqa: E402

SOKOBAN = "seed_gym/Sokoban-v0"
ANSWER = json.dumps(
    {
        "episode_summary": "The agent moved around without pushing the box onto the target.",
        "episode_skill": "Push the box toward the target and never walk into walls.",
    }
)


def _cfg(tmp_path, name, **kw) -> TrainConfig:
    base = tiny().to_dict()
    base.update(
        env=SOKOBAN,
        out=str(tmp_path / name),
        progress=False,
        tensorboard=False,
        save_hf=False,
        eval_splits=("seen",),
    )
    base.update(kw)
    return TrainConfig.from_dict(base)


@pytest.fixture
def canned_analyzer(monkeypatch):
    """The policy-as-analyzer answers with a fixed valid JSON (the tiny model cannot)."""
    calls = []

    def fake(cfg, engine):
        def generate(chats):
            calls.append(len(chats))
            return [ANSWER] * len(chats)

        return generate

    monkeypatch.setattr(analyzer, "analyzer_generate_fn", fake)
    return calls


OPD_KEYS = {"opd/gate_mean", "opd/active_ratio", "opd/teacher_gap_mean", "opd/loss"}


def test_seed_cli_runs_stage1_then_stage2(tmp_path, capsys):
    # the real analyzer (the random tiny model): Stage 1 with the privileged annotator (cached),
    # Stage 2 with the OPD metrics logged; structured decoding makes even the random model's
    # analyses parse, so the distillation is on
    out = tmp_path / "seed"
    argv = ["--env", SOKOBAN, "--algo", "seed", "--preset", "tiny", "--out", str(out)]
    argv += ["--no-progress", "--no-tensorboard", "--ent-coef", "0.01", "--eval-splits", "seen"]
    assert train_main(argv) == 0
    printed = capsys.readouterr().err  # the summary: SEED's instruments and the phase table
    assert "SEED instruments" in printed and "fork gap won" in printed and "rescore" in printed
    stage1 = json.loads((out / "stage1" / "stage1.json").read_text())
    assert stage1["annotator"] == "privileged" and stage1["metrics"]["stage1/trajectories"] == 2
    assert Path(stage1["dataset"]).exists() and Path(stage1["model"]).is_dir()
    saved = TrainConfig.load(out / "config.json")
    assert saved.stage1.model == stage1["model"]  # resume will not redo Stage 1
    lines = run_metrics(out)
    assert [m["iteration"] for m in lines] == [1, 2]
    for m in lines:
        assert OPD_KEYS | {"analyzer/parse_rate", "rollout/env_steps"} <= set(m)
        assert {"time/rollout", "time/analyze", "time/rescore", "time/update"} <= set(m)
        assert m["rollout/env_steps"] == m["rollout/episodes"] * m["rollout/episode_len"]
        assert m["analyzer/parse_rate"] >= 0.9 and m["opd/active_ratio"] > 0
        assert {"opd/skill_gap", "opd/skill_gap_lost", "opd/grad_norm_teacher"} <= set(m)
    assert lines[1]["train/env_steps_total"] == sum(m["rollout/env_steps"] for m in lines)
    from seed_gym.trainer.backends.models import load_policy

    start = load_policy(stage1["model"]).model.state_dict()
    end = checkpoint_params(out)
    assert any(not torch.equal(start[k], end[k]) for k in end)
    assert sorted(p.name for p in (out / "skills").iterdir()) == [
        "iter_000001.jsonl",
        "iter_000002.jsonl",
    ]
    from seed_gym.trainer.algorithms.seed.skill_log import SkillLog

    for rec in SkillLog(out).read(1):
        assert rec["skill"] is None or len(rec["skill"].split()) >= 5


def test_stage1_is_cached_and_shared_by_runs(tmp_path, monkeypatch):
    from seed_gym.trainer.algorithms.seed import stage1 as sft

    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path / "cache"))
    built = []
    real = sft.run_stage1
    monkeypatch.setattr(
        sft, "run_stage1", lambda cfg, out, **kw: built.append(out) or real(cfg, out, **kw)
    )
    first = _cfg(tmp_path, "a", algo="seed", iterations=1)
    train(first)
    train(first.replace(out=str(tmp_path / "b")))  # another run of the same settings: no rebuild
    assert len(built) == 1 and built[0].parent == tmp_path / "cache" / "models"
    a, b = (TrainConfig.load(tmp_path / n / "config.json").stage1.model for n in "ab")
    assert a == b and Path(a).is_relative_to(tmp_path / "cache")
    assert (tmp_path / "b" / "stage1" / "stage1.json").exists()  # each run records it
    train(first.replace(out=str(tmp_path / "c"), sft_rollouts=3))  # a Stage 1 setting: rebuilt
    train(first.replace(out=str(tmp_path / "d"), sft_cache=False))  # in the run folder
    assert len(built) == 3
    local = TrainConfig.load(tmp_path / "d" / "config.json").stage1.model
    assert local == str(tmp_path / "d" / "stage1" / "model")
    assert not list((tmp_path / "cache" / "models").glob("*.tmp*"))  # builds were renamed


def test_seed_distills_skills_and_report_renders_them(tmp_path, canned_analyzer):
    # every Sokoban episode of the random model fails alike: GRPO advantages are all 0, so any
    # parameter change comes from the OPD term
    cfg = _cfg(
        tmp_path, "seed", algo="seed", no_sft=True, iterations=2, opd_coef=1.0, skill_control=2
    )
    train(cfg)
    run = tmp_path / "seed"
    lines = run_metrics(run)
    for m in lines:
        assert m["analyzer/parse_rate"] == 1.0 and m["train/adv_abs_mean"] == 0.0
        assert m["opd/teacher_tokens"] > 0 and 0.0 < m["opd/gate_mean"] < 1.0
        assert 0.0 <= m["opd/active_ratio"] <= 1.0 and m["opd/loss"] != 0.0
    from seed_gym.trainer.backends.models import load_policy

    start = load_policy("tiny", seed=cfg.seed).model.state_dict()
    end = checkpoint_params(run)
    assert any(not torch.equal(start[k], end[k]) for k in end)
    assert canned_analyzer == [4, 4]  # B*G trajectories per iteration, no retries needed

    from seed_gym.trainer.algorithms.seed.skill_log import SkillLog

    records = SkillLog(run).read(2)
    assert len(records) == 4 and all(r["iteration"] == 2 for r in records)
    skill = json.loads(ANSWER)["episode_skill"]
    assert all(r["skill"] == skill and r["mean_teacher_gap"] is not None for r in records)

    from seed_gym.trajlog import iteration_path, read_jsonl

    trajs = read_jsonl(iteration_path(run, 1))
    assert len(trajs) == 4 and all(t["skill"] == skill for t in trajs)
    for t in trajs:
        for s in t["steps"]:
            assert len(s["teacher_logprobs"]) == len(s["logprobs"]) == len(s["tokens"])
    # the shuffled-skill control's trajectories carry the skill they were scored under and, per
    # step, those logprobs (skill_gap_regions.py reads them); the others carry neither
    controlled = [t for t in trajs if "control_skill" in t]
    assert len(controlled) == 2 and all(t["control_skill"] == skill for t in controlled)
    for t in trajs:
        for s in t["steps"]:
            assert ("control_logprobs" in s) == ("control_skill" in t)
            assert len(s.get("control_logprobs", s["tokens"])) == len(s["tokens"])
    # the teacher gap in the log is the mean over tokens of teacher - student
    t0 = trajs[0]
    diffs = [
        a - b
        for s in t0["steps"]
        for a, b in zip(s["teacher_logprobs"], s["logprobs"], strict=True)
    ]
    rec = next(r for r in SkillLog(run).read(1) if r["traj_id"] == t0["traj_id"])
    assert rec["mean_teacher_gap"] == pytest.approx(sum(diffs) / len(diffs), abs=1e-5)

    from seed_gym.report import main as report_main

    html_path = tmp_path / "report.html"
    assert report_main([str(run), "--out", str(html_path)]) == 0
    html = html_path.read_text()
    assert "Skill the teacher saw" in html and "never walk into walls" in html
    assert "teacher - student" in html
    assert "SEED instruments" in html and "fork gap lost" in html  # per iteration
    assert "Where the time and memory went" in html and "<td>rescore</td>" in html


BASELINES = [
    ("grpo", []),
    ("seed", ["--no-sft"]),
    ("seed", ["--no-sft", "--positive-only"]),
    ("seed", ["--no-sft", "--teacher-advantage"]),
    ("skill-grpo", ["--no-sft"]),
    ("static-skills", []),
    ("opsd", []),
    ("prompt", []),
]


@pytest.mark.parametrize(
    ("algo", "flags"), BASELINES, ids=[" ".join([a, *f]) for a, f in BASELINES]
)
def test_every_baseline_runs_two_iterations(tmp_path, algo, flags, canned_analyzer):
    out = tmp_path / "run"
    argv = ["--env", SOKOBAN, "--algo", algo, "--preset", "tiny", "--out", str(out)]
    argv += ["--no-progress", "--no-tensorboard", "--no-save-hf", "--eval-splits", "seen", *flags]
    assert train_main(argv) == 0
    lines = run_metrics(out)
    if algo == "prompt":
        assert [m["iteration"] for m in lines] == [0] and "eval/seen/success" in lines[0]
        return
    assert [m["iteration"] for m in lines] == [1, 2]
    last = lines[-1]
    if algo in ("seed", "static-skills", "opsd"):
        assert set(last) >= OPD_KEYS and last["opd/teacher_tokens"] > 0
        if "--teacher-advantage" in flags:
            assert last["opd/loss"] == 0.0  # the signal rides on the advantages instead
    else:
        assert not OPD_KEYS & set(last)
    if algo in ("seed", "skill-grpo"):
        assert last["analyzer/parse_rate"] == 1.0
    if algo == "skill-grpo":
        # iteration 2's actors saw the skill of iteration 1's analysis
        from seed_gym.trajlog import iteration_path, read_jsonl

        first = read_jsonl(iteration_path(out, 1))
        second = read_jsonl(iteration_path(out, 2))
        assert all(t["skill"] is None for t in first)
        assert all(t["skill"] == json.loads(ANSWER)["episode_skill"] for t in second)
    assert (out / "trajectories" / "iter_000002.jsonl").exists()
    assert (out / "skills" / "iter_000002.jsonl").exists() == (algo != "grpo")


def test_seed_resume_is_exact(tmp_path, canned_analyzer):
    full = _cfg(tmp_path, "full", algo="seed", no_sft=True, iterations=3, opd_coef=1.0)
    train(full)
    part = _cfg(tmp_path, "part", algo="seed", no_sft=True, iterations=1, opd_coef=1.0)
    train(part)
    resumed = part.replace(iterations=3, resume=True)
    train(resumed)
    a, b = checkpoint_params(tmp_path / "full"), checkpoint_params(tmp_path / "part")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ma = [deterministic_metrics(m) for m in run_metrics(tmp_path / "full")]
    mb = [deterministic_metrics(m) for m in run_metrics(tmp_path / "part")]
    assert ma == mb


def test_skill_grpo_resume_keeps_actor_skills(tmp_path, canned_analyzer):
    full = _cfg(tmp_path, "full", algo="skill-grpo", no_sft=True, iterations=2)
    train(full)
    part = _cfg(tmp_path, "part", algo="skill-grpo", no_sft=True, iterations=1)
    train(part)
    train(part.replace(iterations=2, resume=True))
    from seed_gym.trajlog import iteration_path, read_jsonl

    got = [t["skill"] for t in read_jsonl(iteration_path(tmp_path / "part", 2))]
    want = [t["skill"] for t in read_jsonl(iteration_path(tmp_path / "full", 2))]
    assert got == want and all(got)


def test_opsd_takes_privileged_info_at_reset(tmp_path):
    from seed_gym.trainer.backends.engines import HFEngine
    from seed_gym.trainer.backends.models import load_policy
    from seed_gym.trainer.collect import SamplingParams, collect
    from seed_gym.wrappers.pool import make_group_pool

    policy = load_policy("tiny")
    engine = HFEngine(policy.model, policy.tokenizer)
    tasks = ["sokoban-6x6-b1-000000", "sokoban-6x6-b1-000001"]
    pool = make_group_pool(SOKOBAN, tasks, 2)
    try:
        trajs = collect(
            pool,
            engine,
            tasks,
            [1, 2],
            sampling=SamplingParams(8, 1.0, 1.0),
            seed=0,
            max_turns=2,
            privileged=True,
            skills=["Push the box toward the target first.", None],
        )
    finally:
        pool.close()
    for t in trajs:
        info = t.privileged
        # the solver's plan from the start state: as long as the optimal solution
        assert info["solution_length"] == info["optimal_from_start"] == len(info["solution"])
    assert trajs[0].privileged == trajs[1].privileged  # one group: same task and seed
    # the skill sits in the actor prompt of group 0 only, and the stored ids encode it
    from seed_gym.trainer.backends.engines import encode_chat

    for t in trajs:
        text = t.steps[0].messages[-1]["content"]
        assert ("**Episode-Level Skill**" in text) == (t.group_id == "b0")
        assert t.steps[0].prompt_ids == encode_chat(policy.tokenizer, t.steps[0].messages)
    assert trajs[0].actor_skill and trajs[2].actor_skill is None


def test_sft_cli_writes_dataset_meta_and_model(tmp_path):
    from seed_gym.trainer.algorithms.seed.stage1 import read_jsonl
    from seed_gym.trainer.sft import main as sft_main

    out = tmp_path / "s1"
    argv = ["--env", "seed_gym/EZPoints-v0", "--modality", "text", "--preset", "tiny"]
    argv += ["--out", str(out), "--tasks-per-type", "1", "--rollouts", "2", "--reruns", "2"]
    argv += ["--no-progress"]
    assert sft_main(argv) == 0
    meta = json.loads((out / "stage1.json").read_text())
    assert meta["env"] == "seed_gym/EZPoints-v0" and meta["annotator"] == "privileged"
    assert meta["config"]["sft_rollouts"] == 2 and meta["config"]["sft_temperature"] == 0.4
    assert meta["metrics"]["stage1/trajectories"] == 2
    rows = read_jsonl(out / "stage1_dataset.jsonl")
    assert len(rows) == meta["metrics"]["stage1/rows"]
    assert (out / "model" / "config.json").exists()


def test_config_invariants_for_seed_flags():
    assert {"seed", "skill-grpo", "static-skills", "opsd"} <= set(ALGOS)
    with pytest.raises(ValueError, match="need a teacher"):
        TrainConfig().replace(algo="grpo", positive_only=True)
    for algo in (
        "seed",
        "static-skills",
        "opsd",
    ):  # a teacher: its flags apply, groups still needed
        assert TrainConfig().replace(algo=algo, positive_only=True).opd.positive_only
        with pytest.raises(ValueError, match="--group-size must be >= 2 for --algo"):
            TrainConfig().replace(algo=algo, group_size=1)
    with pytest.raises(ValueError, match="--teacher-advantage replaces"):
        TrainConfig().replace(algo="seed", positive_only=True, teacher_advantage=True)
    with pytest.raises(ValueError, match="--opd-beta"):
        TrainConfig().replace(algo="seed", opd_beta=0.0)
    with pytest.raises(ValueError, match="--sft-annotator"):
        TrainConfig().replace(algo="seed", sft_annotator="gpt")
    cfg = TrainConfig(algo="seed")
    assert cfg.opd.coef == 0.01 and cfg.opd.beta == 5.0 and cfg.stage1.temperature == 0.4
    assert cfg.stage1.epochs == 3 and cfg.stage1.lr == 5e-6 and cfg.stage1.rollouts == 8
