"""``seed-gym train`` and ``seed-gym sft`` failing safe (issue 28, the trainer's side).

A bad flag or value, env, model or ``--import`` is one line naming it, exit status 2, nothing
written; a run folder that cannot be used as asked (a damaged ``config.json``, ``metrics.jsonl``
or ``checkpoint.pt``, nothing to resume from, another writer) is one line naming the file or
folder, exit status 1, as ``eval`` does. What ``tests/test_train.py`` covers already (an unknown
env or modality, a bad ``--env-kwarg`` for the env, a missing model folder; a cut config.json, a
cut or pickled checkpoint) is not repeated here."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import run_metrics  # noqa: E402
from test_train import ECHO_ID, RESUME_KW, _cfg  # noqa: E402  (registers the LetterE env)

from seed_gym.folder_lock import LOCK_NAME, folder_lock  # noqa: E402
from seed_gym.trainer.config import TrainConfig, parse_args, tiny  # noqa: E402
from seed_gym.trainer.run_setup import run_folder_lock  # noqa: E402
from seed_gym.trainer.run_state import read_checkpoint  # noqa: E402
from seed_gym.trainer.sft import main as sft_main  # noqa: E402
from seed_gym.trainer.train import main, train  # noqa: E402


def exit_code(fn, argv: list[str]) -> int:
    """The command's exit status, whether it returned it or raised ``SystemExit``."""
    try:
        return int(fn(argv))
    except SystemExit as e:
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)  # a message: Python prints it and exits 1
        return 1


def one_line(err: str, prog: str = "seed-gym train") -> str:
    err = err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    assert err.startswith(f"{prog}: "), err
    return err


def files(folder) -> dict[str, bytes]:
    """Every file under ``folder`` but the lock file, with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name != LOCK_NAME
    }


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A tiny run of two iterations (checkpoint after each); tests copy it."""
    out = tmp_path_factory.mktemp("runs") / "run"
    train(_cfg(out.parent, "run", **{**RESUME_KW, "iterations": 2}))
    return out


def copy_run(finished_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    (out / LOCK_NAME).unlink(missing_ok=True)
    return out


# --- every flag, before anything is written ---------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--iterations", "0"], ["--iterations", "0", ">= 1"]),
        (["--group-size", "0"], ["--group-size", "0", ">= 1"]),
        (["--group-size", "1"], ["--group-size", "1", ">= 2", "--algo grpo"]),
        (["--lr", "-1"], ["--lr", "-1.0", ">= 0"]),
        (["--lr", "nan"], ["--lr", "nan", ">= 0"]),
        (["--lr", "abc"], ["--lr", "'abc'", "seed-gym train --help"]),
        (["--algo", "bogus"], ["--algo", "'bogus'", "grpo", "seed", "--import"]),
        (["--seed", "-1"], ["--seed", "-1", "[0, 2**63 - 1]"]),
        (["--top-p", "2"], ["--top-p", "2.0", "(0, 1]"]),
        (["--eval-splits", "dev"], ["--eval-splits", "dev", "train, seen, unseen"]),
        (["--eval-samples", "2"], ["--eval-samples", "--eval-temperature"]),
        (["--threads", "0"], ["--threads", "0", ">= 1"]),
        (["--mini-batches", "0"], ["--mini-batches", "0", ">= 1 or None"]),
        (["--sft-annotator", "gpt"], ["--sft-annotator", "'gpt'", "openai:URL"]),
        (["--format-warmup-noise", "2"], ["--format-warmup-noise", "2.0", "[0, 1]"]),
        (["--engine", "tgi"], ["--engine", "'tgi'", "hf, vllm"]),
        (["--device", "gpu"], ["--device", "'gpu'", "cpu, cuda, cuda:N or auto"]),
        (["--sft-annotator", "openai:localhost"], ["--sft-annotator", "http(s) URL"]),
        (["--algo", "static-skills", "--skill-bank", "no/bank.json"], ["--skill-bank no/bank.json", "No such file"]),
        (["--env-kwarg", "colour"], ["--env-kwarg", "'colour'", "KEY=VALUE"]),
        (["--algo-arg", "k"], ["--algo-arg", "'k'", "KEY=VALUE"]),
        (["--no-such-flag", "1"], ["--no-such-flag"]),
        (["--preset", "huge"], ["--preset", "'huge'", "tiny", "smollm2-cpu"]),
        (["--import", "no/such/file.py"], ["--import", "no/such/file.py", "no such file"]),
        (["--import", "no_such_module_xyz"], ["--import", "no_such_module_xyz"]),
    ],
)  # fmt: skip
def test_bad_train_flags_are_one_line_exit_2_and_write_nothing(argv, expected, tmp_path, capsys):
    # 0.3: a 5-6 line box from tyro naming the field, not the flag ("Error parsing optim: kl_coef,
    # ent_coef and lr must be >= 0"); --seed -1 ran until numpy refused it; a missing --import
    # file exited 1; an unknown preset printed a list without the prefix
    out = tmp_path / "run"
    base = ["--preset", "tiny", "--env", ECHO_ID, "--out", str(out)]
    if argv[0] == "--preset":
        base = base[2:]
    assert exit_code(main, [*base, *argv]) == 2
    err = one_line(capsys.readouterr().err)
    assert all(e in err for e in expected), err
    assert not out.exists()


def test_an_out_that_is_a_file_and_resume_without_out_are_usage_errors(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main(["--preset", "tiny", "--env", ECHO_ID, "--out", str(tmp_path / "f")]) == 2
    assert "is a file; give a folder" in one_line(capsys.readouterr().err)
    assert exit_code(main, ["--resume"]) == 2
    assert "--resume needs --out" in one_line(capsys.readouterr().err)


def test_what_this_machine_lacks_is_one_line_before_anything_is_written(tmp_path, capsys):
    # 0.3: an AssertionError from torch ("Torch not compiled with CUDA enabled") or an
    # ImportError of vllm, after the run folder was written
    import importlib.util

    out = tmp_path / "run"
    base = ["--preset", "tiny", "--env", ECHO_ID, "--out", str(out)]
    cases = [(["--device", f"cuda:{torch.cuda.device_count()}"], "CUDA device(s)")]
    if importlib.util.find_spec("vllm") is None:
        cases.append((["--engine", "vllm"], "pip install 'seed-gym[vllm]'"))
    for argv, said in cases:
        assert main([*base, *argv]) == 2
        assert said in one_line(capsys.readouterr().err)
        assert not out.exists()


def test_dry_run_plans_the_built_in_models(tmp_path, capsys):
    # 0.3: "'tiny' is neither 'tiny', 'smollm2', ..." (the plan read only model folders)
    out = tmp_path / "run"
    assert main(["--preset", "tiny", "--env", ECHO_ID, "--dry-run", "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "model      tiny:" in shown and "fits on 1 GPU(s)" in shown
    assert not out.exists()


# --- the run folder --resume reads: one line naming the file, exit 1 ---------------------------
def _resume(run) -> list[str]:
    return ["--out", str(run), "--resume", "--iterations", "3"]


def test_a_config_json_that_is_not_an_object_names_the_file(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    for text, said in (("[1, 2]", "a list"), ('"tiny"', "a string"), ("null", "null")):
        (run / "config.json").write_text(text)
        assert exit_code(main, _resume(run)) == 1
        err = one_line(capsys.readouterr().err)
        assert "run/config.json" in err and f"JSON object of fields, not {said}" in err, err
    (run / "config.json").write_bytes(b'{"iterations": "\xff"}')  # not UTF-8
    assert exit_code(main, _resume(run)) == 1
    assert "config.json is not valid JSON" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("group", "field", "value", "expected"),
    [
        ("rollout", "group_size", "4", "'rollout.group_size' (--group-size) must be an integer, not a string ('4')"),
        ("optim", "lr", [1], "'optim.lr' (--lr) must be a number, not a list"),
        ("eval", "splits", "seen", "'eval.splits' (--eval-splits) must be a list of strings"),
        ("system", "progress", 1, "'system.progress' (--progress) must be a boolean (true or false), not an integer (1)"),
        ("rollout", "max_turns", "3", "--max-turns) must be an integer or null"),
        (None, "iterations", 2.5, "'iterations' (--iterations) must be an integer, not a number (2.5)"),
        (None, "rollout", 5, "'rollout' must be an object of fields, not an integer (5)"),
    ],
)  # fmt: skip
def test_a_field_of_the_wrong_type_is_named_with_its_type(
    group, field, value, expected, tmp_path, capsys
):
    # 0.3: "'<' not supported between instances of 'str' and 'int'", naming no field
    run = tmp_path / "run"
    run.mkdir()
    saved = tiny().replace(env=ECHO_ID, out=str(run)).to_dict()
    (saved[group] if group else saved)[field] = value
    (run / "config.json").write_text(json.dumps(saved))
    assert exit_code(main, _resume(run)) == 1
    err = one_line(capsys.readouterr().err)
    assert "run/config.json: config field " in err and expected in err, err


def test_a_flat_config_json_of_the_wrong_type_is_named_too():
    with pytest.raises(
        ValueError, match=r"'optim.mini_batch_size' \(--mini-batch-size\) must be an integer"
    ):
        TrainConfig.from_dict({"mini_batch_size": "32"})
    with pytest.raises(ValueError, match=r"--imports?\) must be a list of strings"):
        TrainConfig.from_dict({"imports": "a.py"})
    # numpy numbers are numbers (benchmarks build configs from them)
    assert TrainConfig.from_dict({"seed": __import__("numpy").int64(3)}).seed == 3


def test_metrics_that_are_not_utf8_name_the_line(finished_run, tmp_path, capsys):
    # 0.3: UnicodeDecodeError from read_text, a traceback
    run = copy_run(finished_run, tmp_path)
    lines = (run / "metrics.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    (run / "metrics.jsonl").write_bytes(lines[0][:20] + b"\xff\xfe" + lines[0][20:] + lines[1])
    before = files(run)
    assert exit_code(main, _resume(run)) == 1
    err = one_line(capsys.readouterr().err)
    assert "metrics.jsonl: line 1 is not UTF-8" in err, err
    assert files(run) == before  # checked before anything is built or written


def test_a_last_metrics_line_cut_inside_a_character_is_dropped(finished_run, tmp_path):
    run = copy_run(finished_run, tmp_path)
    cut = '{"iteration": 3, "note": "caf\u00e9"}'.encode()[:-3]  # a kill mid-character
    (run / "metrics.jsonl").write_bytes((run / "metrics.jsonl").read_bytes() + cut)
    train(parse_args(_resume(run)))
    assert [m["iteration"] for m in run_metrics(run)] == [1, 2, 3]


def test_a_checkpoint_of_another_model_is_one_line_and_changes_nothing(
    finished_run, tmp_path, capsys
):
    # 0.3: "Error(s) in loading state_dict ... size mismatch ..." as a traceback
    run = copy_run(finished_run, tmp_path)
    payload = read_checkpoint(run / "checkpoint.pt")
    name = next(k for k, v in payload["model"].items() if v.dim() == 2)
    payload["model"][name] = torch.zeros(3, 5)
    torch.save(payload, run / "checkpoint.pt")
    before = files(run)
    assert exit_code(main, [*_resume(run), "--lr", "0.5"]) == 1
    err = one_line(capsys.readouterr().err)
    assert "checkpoint.pt: does not fit this run's model" in err and name in err, err
    assert "--model" in err
    assert files(run) == before  # config.json is written only once the checkpoint loaded


def test_resume_without_a_checkpoint_never_restarts_logged_iterations(
    finished_run, tmp_path, capsys
):
    # 0.3: --resume without checkpoint.pt silently trained from iteration 0 again, appending
    # iterations 1.. a second time to metrics.jsonl
    run = copy_run(finished_run, tmp_path)
    (run / "checkpoint.pt").unlink()
    before = files(run)
    assert exit_code(main, _resume(run)) == 1
    err = one_line(capsys.readouterr().err)
    assert "logs iterations 1..2" in err and "no checkpoint.pt" in err, err
    assert files(run) == before
    # a new run into a folder holding logged iterations is refused as one with a checkpoint
    cfg = ["--preset", "tiny", "--env", ECHO_ID, "--out", str(run)]
    assert exit_code(main, cfg) == 1
    assert "already holds a run: pass --resume" in one_line(capsys.readouterr().err)


def test_resume_before_the_first_checkpoint_starts_from_iteration_zero(tmp_path, capsys):
    # a run stopped before its first iteration ended (no checkpoint, no iteration logged; here
    # with the start eval's line 0) starts over, says so, and logs line 0 once
    cfg = _cfg(tmp_path, "r", **{**RESUME_KW, "iterations": 1, "eval_at_start": True})
    train(cfg)
    run = tmp_path / "r"
    (run / "checkpoint.pt").unlink()
    lines = (run / "metrics.jsonl").read_text().splitlines()
    (run / "metrics.jsonl").write_text(lines[0] + "\n")  # killed in iteration 1
    capsys.readouterr()
    train(parse_args(["--out", str(run), "--resume"]))
    assert "has no checkpoint yet" in capsys.readouterr().err
    assert [m["iteration"] for m in run_metrics(run)] == [0, 1]
    # the same command without --resume (benchmarks/learning.py reruns it so) starts over too
    (run / "checkpoint.pt").unlink()
    (run / "metrics.jsonl").write_text(lines[0] + "\n")
    train(cfg)
    assert [m["iteration"] for m in run_metrics(run)] == [0, 1]


# --- one writer per folder ------------------------------------------------------------------
def test_a_second_train_into_a_folder_in_use_refuses_in_one_line(tmp_path, capsys):
    # 0.3: two trainings wrote one folder, each its own iterations into one metrics.jsonl
    out = tmp_path / "run"
    with folder_lock(out, holder="seed-gym train"):
        code = main(["--preset", "tiny", "--env", ECHO_ID, "--out", str(out), "--no-progress"])
    assert code == 1
    err = one_line(capsys.readouterr().err)
    assert "is in use by seed-gym train (pid" in err, err
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # nothing else written
    train(_cfg(tmp_path, "run", **{**RESUME_KW, "iterations": 1}))  # the lock is free again


def test_only_rank_zero_takes_the_lock(tmp_path, monkeypatch):
    with folder_lock(tmp_path / "run"):
        monkeypatch.setenv("RANK", "1")
        with run_folder_lock(tmp_path / "run"):  # a torchrun rank > 0 writes through rank 0
            pass
        monkeypatch.setenv("RANK", "0")
        with pytest.raises(Exception, match="in use"), run_folder_lock(tmp_path / "run"):
            pass


# --- seed-gym sft ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--env", "bogus/X-v0"], ["unknown env 'bogus/X-v0'", "seed_gym/Sokoban-v0"]),
        (["--epochs", "-1"], ["--epochs must be >= 0, not -1"]),
        (["--rollouts", "0"], ["--rollouts must be >= 1, not 0"]),
        (["--annotator", "gpt"], ["--annotator must be", "'gpt'"]),
        (["--lr", "x"], ["--lr", "'x'"]),
        (["--model", "/no/such/model"], ["'/no/such/model'"]),
        (["--preset", "huge"], ["--preset", "'huge'"]),
    ],
)  # fmt: skip
def test_bad_sft_arguments_are_one_line_exit_2_and_write_nothing(argv, expected, tmp_path, capsys):
    # 0.3: an unknown env was a traceback that left an empty --out folder
    out = tmp_path / "stage1"
    assert exit_code(sft_main, ["--out", str(out), "--preset", "tiny", *argv]) == 2
    err = one_line(capsys.readouterr().err, "seed-gym sft")
    assert all(e in err for e in expected), err
    assert not out.exists()


def test_a_second_sft_into_a_folder_in_use_refuses_in_one_line(tmp_path, capsys):
    out = tmp_path / "stage1"
    with folder_lock(out, holder="seed-gym sft"):
        code = sft_main(["--out", str(out), "--preset", "tiny", "--env", "seed_gym/Sokoban-v0"])
    assert code == 1
    assert "is in use by seed-gym sft (pid" in one_line(capsys.readouterr().err, "seed-gym sft")
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]
