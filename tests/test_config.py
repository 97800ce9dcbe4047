"""The training config in groups: the same flags as the flat config before it, presets unchanged,
and runs saved in the flat form load and resume.

``golden/train-configs-flat.json`` holds every preset and the default config as seed-gym wrote
them before the groups (one flat object per config, the ``config.json`` of runs up to commit
1424639)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_metrics

from seed_gym.report import load_run, runs_table
from seed_gym.trainer.config import FLAGS, GROUPS, PRESETS, TrainConfig, parse_args, tiny
from seed_gym.trainer.train import train

GUESS = str(
    Path(__file__).parents[1] / "docs" / "examples" / "guess_number.py"
)  # imported at parse
FLAT = json.loads((Path(__file__).parent / "golden" / "train-configs-flat.json").read_text())
# fields added since the golden file was written, with their defaults (CHANGELOG)
ADDED_SINCE = {
    "warmup_threads": None,
    # 0.4.0: Stage 1 as the reference's card pipeline, SEED's instruments, --target-kl, builds in
    # a child process, skill rows in the warm-up
    "sft_accept_filter": False,
    "sft_balance": True,
    "sft_seed": 0,
    "sft_cache": True,
    "sft_replay": 0.0,
    "skill_control": 8,
    "grad_probe": True,
    "target_kl": None,
    "isolate_builds": True,
    "format_warmup_skill_episodes": 0,
    # 0.4.0: algorithms as plug-ins take their own options
    "algo_arg": (),
    # 0.4.0: optional Weights & Biases logging (the wandb extra)
    "wandb": False,
    # 0.4.0: no step in an update without a policy-gradient signal (off: the reference steps)
    "skip_saturated": False,
    # 0.4.0: a line search on the whole update against its KL to the sampling policy
    "max_update_kl": None,
    "update_backtracks": 3,
}


def golden(name: str) -> dict:
    """A config of the golden file as the flags it has today: the added fields at their default."""
    return {**{k: _tuples(v) for k, v in FLAT[name].items()}, **ADDED_SINCE}


def test_every_flat_field_is_still_a_flag_with_its_value():
    assert set(FLAGS) == set(golden("default"))
    assert TrainConfig().flags() == golden("default")


# preset values changed on purpose since the golden file was written (CHANGELOG)
CHANGED_SINCE = {
    "smollm2-cpu": {
        "max_new_tokens": 64,  # 0.3.0: the warm-up's longer thoughts
        # 0.3.0 too: half the warm-up, to fit the 30 / 90-minute budgets; 4 turns (no free
        # illegal tokens), whose shorter evals pay for the third eval sample per task
        "format_warmup_episodes": 32,
        "max_turns": 4,
        # 0.4.0: analyzer fields that fit a whole skill; Stage 1 as the card pipeline (with its
        # own replay); the warm-up without analyzer rows, with skill rows and less noise
        "analyzer_max_new_tokens": 128,
        "format_warmup_analyzer_episodes": 0,
        "format_warmup_skill_episodes": 16,
        "format_warmup_noise": 0.15,
        "sft_tasks_per_type": 16,
        "sft_temperature": 1.0,
        "sft_lr": 1e-4,
        "sft_replay": 1.0,
        "sft_reruns": 8,  # the default: reruns only run with --sft-accept-filter
        # 0.4.0: a tenth of the reference's KL (docs/seed.md, "Departures at CPU scale")
        "kl_coef": 0.001,
    },
    # 0.4.0: the random model's structured analyses need room for five words; it builds in place
    "tiny": {"analyzer_max_new_tokens": 32, "isolate_builds": False},
    "tiny-vlm": {"analyzer_max_new_tokens": 32, "isolate_builds": False},
    # 0.4.0: the reference's Stage 1 per env family (cards: temperature 1, every row; the rest:
    # the rerun filter)
    **{f"paper-{e}": {"sft_temperature": 1.0} for e in ("sokoban", "ezpoints")},
    **{f"paper-{e}": {"sft_accept_filter": True} for e in ("alfworld", "webshop", "search")},
}


@pytest.mark.parametrize("name", sorted(set(FLAT) - {"default"}))
def test_presets_are_what_they_were_before_the_groups(name):
    now, before = PRESETS[name]().flags(), golden(name)
    before.update(CHANGED_SINCE.get(name, {}))
    if name == "smollm2-cpu":  # bf16 where this CPU runs it natively (models.bf16_is_fast)
        now.pop("bf16"), before.pop("bf16")
    assert now == before


def test_a_flat_config_json_loads_into_the_groups(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(FLAT["smollm2-cpu"]))
    cfg = TrainConfig.load(tmp_path / "config.json")
    assert (cfg.optim.lr, cfg.eval.tasks, cfg.warmup.episodes, cfg.stage1.epochs) == (
        5e-5, 12, 64, 3,
    )  # fmt: skip
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg  # the nested form round-trips
    assert set(cfg.to_dict()) >= set(GROUPS)


def test_every_flag_of_the_flat_cli_parses(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    shown = capsys.readouterr().out
    for name in golden("default"):
        flag = "--import" if name == "imports" else "--" + name.replace("_", "-")
        assert flag in shown, flag
    cfg = parse_args(
        ["--lr", "0.5", "--eval-tasks", "3", "--sft-epochs", "2", "--format-warmup-episodes",
         "4", "--opd-coef", "0.2", "--no-sft", "--max-turns", "3", "--dual-clip", "None",
         "--imports", GUESS, "--no-progress", "--eval-splits", "seen"]
    )  # fmt: skip
    assert (cfg.optim.lr, cfg.eval.tasks, cfg.stage1.epochs, cfg.warmup.episodes) == (0.5, 3, 2, 4)
    assert (cfg.opd.coef, cfg.stage1.skip, cfg.rollout.max_turns) == (0.2, True, 3)
    assert cfg.optim.dual_clip is None and cfg.imports == (GUESS,)
    assert cfg.system.progress is False and cfg.eval.splits == ("seen",)


def test_replace_takes_flag_names_and_checks_the_result():
    cfg = tiny().replace(lr=0.25, eval_tasks=7, no_sft=True, seed=3)
    assert (cfg.optim.lr, cfg.eval.tasks, cfg.stage1.skip, cfg.seed) == (0.25, 7, True, 3)
    assert tiny().optim.lr == 1e-3  # a copy
    with pytest.raises(ValueError, match="unknown config field 'learning_rate'"):
        tiny().replace(learning_rate=1.0)
    with pytest.raises(ValueError, match="--micro-batch must be >= 1"):
        tiny().replace(micro_batch=0)


def test_a_run_saved_in_the_flat_form_resumes(tmp_path):
    out = tmp_path / "run"
    cfg = tiny().replace(
        env="seed_gym/EZPoints-v0", modality="text", out=str(out), iterations=1,
        progress=False, tensorboard=False, save_hf=False, eval_splits=("seen",), eval_tasks=1,
    )  # fmt: skip
    train(cfg)
    flat = {k: v for k, v in cfg.replace(resume=False).flags().items() if k not in ADDED_SINCE}
    assert set(flat) == set(FLAT["tiny"])  # what the flat version wrote
    (out / "config.json").write_text(json.dumps(flat, indent=1, sort_keys=True))
    train(parse_args(["--resume", "--out", str(out), "--iterations", "2"]))
    assert [m["iteration"] for m in run_metrics(out)] == [1, 2]
    resumed = TrainConfig.load(out / "config.json")  # written again, now in groups
    # the fields added since take their defaults (the flat file does not hold them)
    expected = cfg.replace(resume=False, iterations=2).flags()
    assert {k: v for k, v in resumed.flags().items() if k not in ADDED_SINCE} == {
        k: v for k, v in expected.items() if k not in ADDED_SINCE
    }
    assert "<td>2 x 2</td>" in runs_table([load_run(out)])  # the report's B x G, from the groups


def _tuples(value):
    """JSON gives lists where the config holds tuples."""
    return tuple(value) if isinstance(value, list) else value
