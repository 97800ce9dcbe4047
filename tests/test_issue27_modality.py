"""Issue 27, items 4 and 6: a text-only model shown images is refused by ``train`` and ``eval``
before anything is written (one line, exit status 2), so the corrected rerun starts cleanly; and
``results.json`` holds one interval for one run's success, Wilson's."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from seed_gym import stats  # noqa: E402
from seed_gym.evaluate import main as eval_main  # noqa: E402
from seed_gym.evaluate import summarize  # noqa: E402
from seed_gym.trainer.config import parse_args  # noqa: E402
from seed_gym.trainer.run_setup import modality_problem, reads_images, run_problem  # noqa: E402
from seed_gym.trainer.train import main as train_main  # noqa: E402

EZ = "seed_gym/EZPoints-v0"  # default modality: image
SOKOBAN = "seed_gym/Sokoban-v0"  # default modality: text


def one_line(err: str) -> str:
    err = err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


# --- train --------------------------------------------------------------------------------------
def test_train_refuses_a_text_model_on_the_default_image_modality(tmp_path, capsys):
    # 0.3 trained the tiny text model on EZPoints' pictures (as <image> placeholders), silently
    out = tmp_path / "run"
    assert train_main(["--preset", "tiny", "--env", EZ, "--out", str(out), "--no-progress"]) == 2
    err = one_line(capsys.readouterr().err)
    assert err.startswith("seed-gym train: --model tiny reads text only"), err
    assert f"{EZ} shows images in modality 'image' (its default)" in err, err
    assert "pass --modality text" in err and "tiny-vlm" in err, err
    assert not out.exists()
    # the corrected command is not refused (a dry run plans it without writing)
    fixed = ["--preset", "tiny", "--env", EZ, "--modality", "text", "--out", str(out)]
    assert train_main([*fixed, "--dry-run"]) == 0
    assert not out.exists()


def test_train_refuses_an_explicit_image_modality_for_a_text_model(tmp_path):
    cfg = parse_args(["--preset", "tiny", "--env", SOKOBAN, "--modality", "image"])
    problem = modality_problem(cfg)
    assert problem is not None and "in modality 'image';" in problem  # no "(its default)"
    assert run_problem(cfg) == problem
    assert run_problem(parse_args(["--preset", "tiny", "--env", SOKOBAN])) is None


def test_vision_language_models_may_be_shown_images(tmp_path):
    assert modality_problem(parse_args(["--preset", "tiny-vlm", "--env", EZ])) is None
    vlm, text = tmp_path / "vlm", tmp_path / "text"
    for folder, config in ((vlm, {"vision_config": {}}), (text, {"model_type": "llama"})):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
    assert reads_images(str(vlm)) and not reads_images(str(text))
    assert reads_images("smollm2-vlm") and not reads_images("smollm2")
    cfg = parse_args(["--preset", "tiny", "--env", EZ, "--model", str(text)])
    assert f"--model {text} reads text only" in modality_problem(cfg)
    assert modality_problem(cfg.replace(model=str(vlm))) is None


# --- eval ---------------------------------------------------------------------------------------
def test_eval_refusal_leaves_nothing_so_the_corrected_rerun_runs(tmp_path, capsys):
    out = tmp_path / "eval"
    argv = ["--env", EZ, "--policy", "model:tiny", "--out", str(out), "--no-progress"]
    with pytest.raises(SystemExit) as e:
        eval_main(argv)
    assert e.value.code == 2
    assert "pass --modality text" in one_line(capsys.readouterr().err)
    assert not out.exists()
    fixed = ["--modality", "text", "--episodes", "1", "--max-steps", "1", "--max-new-tokens", "4"]
    assert eval_main([*argv, *fixed, "--n-boot", "10"]) == 0
    assert json.loads((out / "results.json").read_text())["modality"] == "text"


# --- results.json: one interval for one run's success --------------------------------------------
def _episodes(wins: list[bool]) -> list[dict]:
    return [
        {"task_id": f"t{i}", "task_type": "a", "won": w, "return": float(w), "steps": 1,
         "invalid_steps": 0, "extras": {}}
        for i, w in enumerate(wins)
    ]  # fmt: skip


@pytest.mark.parametrize("wins", [[True] * 5, [False] * 5, [True, False, True]])
def test_results_hold_the_wilson_interval_only_for_success(wins):
    results = summarize(_episodes(wins), n_boot=50)
    assert results["ci_method"] == "wilson"
    assert results["success_ci95"] == list(stats.wilson_interval(sum(wins), len(wins)))
    # the percentile bootstrap of the success ([1.0, 1.0] at 5/5) is gone; other statistics keep
    # theirs, and the point estimate stays among the bootstrap's metrics
    boot = results["bootstrap"]
    assert "success" not in boot["ci95"]
    assert {"macro_success", "return", "steps", "invalid_rate"} <= set(boot["ci95"])
    assert boot["metrics"]["success"] == results["success_rate"]
