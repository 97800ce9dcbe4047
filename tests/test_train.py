"""End-to-end training on the tiny model: it runs, changes parameters, checkpoints, resumes exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import checkpoint_params, deterministic_metrics, run_metrics  # noqa: E402

import seed_gym  # noqa: E402
from seed_gym.splits import SplitManifest  # noqa: E402
from seed_gym.trainer.backends.models import bf16_is_fast  # noqa: E402
from seed_gym.trainer.config import TrainConfig, parse_args, tiny  # noqa: E402
from seed_gym.trainer.run_state import load_checkpoint  # noqa: E402
from seed_gym.trainer.train import main, task_batch, train  # noqa: E402
from seed_gym.wrappers.spec import AgentSpec, ParsedAction  # noqa: E402

ECHO_ID = "test/LetterE-v0"


class LetterEEnv(seed_gym.SeedEnv):
    """Description: one turn; say anything. Rewards: 1 if the text has the letter e, else 0.
    A random tiny model hits it about half the time, so group returns differ and GRPO gets a
    signal without a trained model."""

    env_id = ECHO_ID

    def manifest(self, split):
        return SplitManifest(self.env_id, split, tuple(f"{split}-{i}" for i in range(6)))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.task_id = self._choose_task(options)
        self.task_description = "say something with the letter e"
        return self._observation("Speak."), self._info()

    def step(self, action):
        won = "e" in (self._as_action(action) or "")
        return self._observation("Done."), float(won), True, False, self._info(won=won)


def _parse_any(text: str) -> ParsedAction:
    return ParsedAction(text, True)


if ECHO_ID not in seed_gym.list_envs():
    seed_gym.register(
        ECHO_ID,
        LetterEEnv,
        max_episode_steps=2,
        agent_spec=AgentSpec(
            render=lambda ctx: f"Your task is to: {ctx.task}", parse=_parse_any, history=0
        ),
    )


def _cfg(tmp_path, name, **kw) -> TrainConfig:
    base = tiny().to_dict()
    base.update(out=str(tmp_path / name), progress=False, tensorboard=False, save_hf=False)
    base.update(kw)
    return TrainConfig.from_dict(base)


def test_two_iterations_on_sokoban_change_parameters_and_checkpoint(tmp_path):
    # the random model never writes a valid <action>, so returns tie and advantages vanish; the
    # entropy bonus still moves the weights through the whole pipeline
    cfg = _cfg(tmp_path, "sokoban", env="seed_gym/Sokoban-v0", ent_coef=0.01, eval_splits=("seen",))
    from seed_gym.trainer.backends.models import load_policy

    init = {k: v.clone() for k, v in load_policy("tiny", seed=cfg.seed).model.state_dict().items()}
    last = train(cfg)
    run = tmp_path / "sokoban"
    lines = run_metrics(run)
    assert [m["iteration"] for m in lines] == [1, 2]
    assert last["rollout/episodes"] == 4.0  # B=2 tasks × G=2
    assert last["rollout/invalid_ratio"] == 1.0
    # 3 no-op turns: the step cost 0.1 and the format penalty 0.1 each
    assert last["rollout/return"] == pytest.approx(-0.6)
    assert "eval/seen/success" in lines[-1] and "time/rollout" in lines[-1]
    assert json.loads((run / "config.json").read_text())["env"] == "seed_gym/Sokoban-v0"
    params = checkpoint_params(run)
    assert any(not torch.equal(init[k], params[k]) for k in init)
    payload = load_checkpoint(run / "checkpoint.pt", load_policy("tiny").model, None)
    assert payload["iteration"] == 2 and payload["data_position"] == 4


def test_skip_saturated_takes_no_step_without_a_policy_gradient(tmp_path):
    # the random model never writes a valid Sokoban action: every group ties, every advantage
    # is 0; by default the entropy bonus still moves the weights, with --skip-saturated nothing does
    kw = dict(env="seed_gym/Sokoban-v0", ent_coef=0.01, eval_splits=("seen",), iterations=1)
    skipped_cfg = _cfg(tmp_path, "skipped", skip_saturated=True, **kw)
    stepped = train(_cfg(tmp_path, "stepped", **kw))
    skipped = train(skipped_cfg)
    assert stepped["train/adv_abs_mean"] == skipped["train/adv_abs_mean"] == 0.0
    assert stepped["train/optimizer_steps"] >= 1 and "train/skipped_saturated" not in stepped
    assert skipped["train/optimizer_steps"] == 0.0 and skipped["train/skipped_saturated"] == 1.0
    a, b = checkpoint_params(tmp_path / "stepped"), checkpoint_params(tmp_path / "skipped")
    from seed_gym.trainer.backends.models import load_policy

    init = load_policy("tiny", seed=skipped_cfg.seed).model.state_dict()
    assert all(torch.equal(init[k], b[k]) for k in b)  # not a weight moved
    assert any(not torch.equal(init[k], a[k]) for k in a)
    # an iteration with a signal steps as usual, and says it did not skip
    signal = dict(env=ECHO_ID, iterations=1, group_size=4, tasks_per_iter=2, max_new_tokens=6,
                  eval_splits=("seen",), eval_tasks=1)  # fmt: skip
    m = train(_cfg(tmp_path, "signal", skip_saturated=True, **signal))
    assert m["train/adv_abs_mean"] > 0 and m["train/optimizer_steps"] >= 1
    assert m["train/skipped_saturated"] == 0.0


def test_target_kl_stops_the_update_early(tmp_path):
    # the first mini-batch runs pi_old itself (approx. KL ~ 0); after a step at a large lr the
    # policy has moved, so a small target stops the iteration before its later steps
    kw = dict(env="seed_gym/EZPoints-v0", modality="text", iterations=1, mini_batches=4,
              lr=0.05, eval_splits=("seen",), group_size=4)  # fmt: skip
    full = train(_cfg(tmp_path, "full", **kw))
    loose = train(_cfg(tmp_path, "loose", target_kl=100.0, **kw))
    tight = train(_cfg(tmp_path, "tight", target_kl=1e-4, **kw))
    assert full["train/optimizer_steps"] == loose["train/optimizer_steps"] == 4
    assert "train/early_stop" not in full and loose["train/early_stop"] == 0.0
    assert 1 <= tight["train/optimizer_steps"] < 4 and tight["train/early_stop"] == 1.0
    with pytest.raises(ValueError, match="--target-kl"):
        _cfg(tmp_path, "bad", target_kl=0.0)


def test_max_update_kl_keeps_halves_or_undoes_the_update(tmp_path):
    # one iteration at a large lr moves the policy far from pi_old on its own samples
    from seed_gym.trainer.backends.models import load_policy

    kw = dict(env="seed_gym/EZPoints-v0", modality="text", iterations=1, mini_batches=2,
              lr=0.05, eval_splits=("seen",), group_size=4)  # fmt: skip
    full = train(_cfg(tmp_path, "full", **kw))
    measured = train(_cfg(tmp_path, "measured", max_update_kl=float("inf"), **kw))
    init = load_policy("tiny", seed=tiny().seed).model.state_dict()
    start, end = init, checkpoint_params(tmp_path / "full")
    # within the limit: the update as it was, and its KL measured
    assert "train/update_kl" not in full
    assert measured["train/update_scale"] == 1.0 and measured["train/update_kl"] > 0.01
    assert measured["train/update_kl_kept"] == measured["train/update_kl"]
    kept = checkpoint_params(tmp_path / "measured")
    assert all(torch.equal(kept[k], end[k]) for k in end)
    # just below the whole update's KL: half the weight change is kept, and its KL is in the limit
    limit = 0.9 * measured["train/update_kl"]
    half = train(_cfg(tmp_path, "half", max_update_kl=limit, **kw))
    assert half["train/update_kl"] == measured["train/update_kl"]
    assert half["train/update_scale"] == 0.5 and half["train/update_kl_kept"] <= limit
    halved = checkpoint_params(tmp_path / "half")
    for k in end:
        if end[k].is_floating_point():
            torch.testing.assert_close(halved[k], start[k] + 0.5 * (end[k] - start[k]))
    # no fraction within the limit: the weights are the ones the update started from
    none = train(_cfg(tmp_path, "none", max_update_kl=1e-12, update_backtracks=2, **kw))
    assert none["train/update_scale"] == 0.0 and none["train/update_kl_kept"] == 0.0
    undone = checkpoint_params(tmp_path / "none")
    assert all(torch.equal(undone[k], start[k]) for k in start)
    with pytest.raises(ValueError, match="--max-update-kl"):
        _cfg(tmp_path, "bad", max_update_kl=0.0)
    with pytest.raises(ValueError, match="--update-backtracks"):
        _cfg(tmp_path, "bad", update_backtracks=-1)


def test_update_kl_of_an_unchanged_policy_is_its_sampling_mismatch_only(tmp_path):
    # lr 0: the weights do not move, so the KL to pi_old on its own samples is what the
    # trainer's forward and the sampler's logprobs differ by: ~0
    m = train(_cfg(tmp_path, "still", env="seed_gym/EZPoints-v0", modality="text", iterations=1,
                   lr=0.0, eval_splits=("seen",), group_size=4, max_update_kl=1.0))  # fmt: skip
    assert m["train/update_scale"] == 1.0 and 0.0 <= m["train/update_kl"] < 1e-3


def test_backtrack_halves_the_change_until_the_measure_is_within_the_limit():
    from seed_gym.trainer.line_search import backtrack

    before = [torch.zeros(2)]
    params = [torch.tensor([4.0, 0.0])]
    sq = lambda: float(params[0].pow(2).sum())  # noqa: E731  (16, then 4, 1, 0.25 per halving)
    out = backtrack(params, before, sq, limit=1.0, tries=3)
    assert out == {"train/update_kl": 16.0, "train/update_scale": 0.25, "train/update_kl_kept": 1.0}
    assert params[0].tolist() == [1.0, 0.0]
    params = [torch.tensor([4.0, 0.0])]
    out = backtrack(params, before, sq, limit=1.0, tries=1)  # 16 -> 4: still above, undone
    assert out["train/update_scale"] == 0.0 and params[0].tolist() == [0.0, 0.0]
    params = [torch.tensor([4.0, 0.0])]
    assert backtrack(params, before, sq, limit=20.0, tries=0)["train/update_scale"] == 1.0


def test_grpo_signal_and_exact_resume(tmp_path):
    kw = dict(
        env=ECHO_ID,
        iterations=3,
        group_size=4,
        tasks_per_iter=2,
        max_new_tokens=6,
        micro_batch=3,
        mini_batches=2,
        kl_coef=0.05,
        eval_splits=("seen",),
        eval_tasks=1,
    )
    full = train(_cfg(tmp_path, "full", **kw))
    assert full["train/adv_abs_mean"] > 0  # returns differ inside groups
    assert full["train/grad_norm"] > 0
    # stop after one iteration, then resume the same run to three
    train(_cfg(tmp_path, "split", **{**kw, "iterations": 1}))
    resumed_cfg = parse_args(["--out", str(tmp_path / "split"), "--resume", "--iterations", "3"])
    assert resumed_cfg.env == ECHO_ID and resumed_cfg.iterations == 3
    train(resumed_cfg)
    a, b = checkpoint_params(tmp_path / "full"), checkpoint_params(tmp_path / "split")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    ma, mb = run_metrics(tmp_path / "full"), run_metrics(tmp_path / "split")
    assert [m["iteration"] for m in mb] == [1, 2, 3]
    assert [deterministic_metrics(m) for m in ma] == [deterministic_metrics(m) for m in mb]
    # the run says where and with what each of its two starts ran
    starts = [json.loads(line) for line in (tmp_path / "split" / "provenance.jsonl").open()]
    assert [s["iteration"] for s in starts] == [0, 1]
    for s in starts:
        assert s["torch_threads"] == torch.get_num_threads() and s["world_size"] == 1
        assert s["versions"]["torch"] == torch.__version__
        assert s["machine"]["kernels"] == torch.backends.cpu.get_cpu_capability()


def test_resume_trains_with_the_flags_it_is_given_not_the_saved_ones(tmp_path):
    """``--resume --lr 0`` must not move a weight (the checkpoint's optimizer state carries the
    lr it was saved with; before 0.4.0 it trained on with it), and the optimizer's other saved
    settings give way to the flags too."""
    kw = dict(env=ECHO_ID, iterations=1, group_size=4, tasks_per_iter=2, max_new_tokens=6,
              micro_batch=4, eval_splits=("seen",), eval_tasks=1, lr=1e-3)  # fmt: skip
    train(_cfg(tmp_path, "r", **kw))
    before = checkpoint_params(tmp_path / "r")
    flags = [
        "--iterations",
        "2",
        "--lr",
        "0",
        "--adam-betas",
        "0.5",
        "0.9",
        "--weight-decay",
        "0.3",
    ]
    resumed = parse_args(["--out", str(tmp_path / "r"), "--resume", *flags])
    assert train(resumed)["train/grad_norm"] > 0  # a gradient, and a step of size 0
    after = checkpoint_params(tmp_path / "r")
    assert all(torch.equal(before[k], after[k]) for k in before)
    saved = torch.load(tmp_path / "r" / "checkpoint.pt", weights_only=False)["optimizer"]
    group = saved["param_groups"][0]
    assert (group["lr"], tuple(group["betas"]), group["weight_decay"]) == (0.0, (0.5, 0.9), 0.3)


def test_refuses_to_overwrite_a_run(tmp_path):
    cfg = _cfg(tmp_path, "r", env=ECHO_ID, iterations=1, eval_splits=("seen",), eval_tasks=1)
    train(cfg)
    with pytest.raises(SystemExit, match="--resume"):
        train(cfg)


def test_prompt_baseline_only_evaluates(tmp_path):
    m = train(_cfg(tmp_path, "p", env=ECHO_ID, algo="prompt", eval_tasks=2))
    assert m["eval/seen/episodes"] == 2.0 and "eval/unseen/success" in m
    assert not (tmp_path / "p" / "checkpoint.pt").exists()


def test_sampled_eval_runs_k_episodes_per_task_and_is_reproducible(tmp_path):
    kw = dict(env=ECHO_ID, algo="prompt", eval_tasks=2, eval_samples=3, eval_temperature=1.0)
    a = train(_cfg(tmp_path, "a", eval_splits=("seen",), **kw))
    b = train(_cfg(tmp_path, "b", eval_splits=("seen",), **kw))
    assert a["eval/seen/episodes"] == 6.0  # 2 tasks x 3 samples
    assert deterministic_metrics(a) == deterministic_metrics(b)
    with pytest.raises(ValueError, match="--eval-temperature"):
        _cfg(tmp_path, "c", env=ECHO_ID, eval_samples=2)


def test_eval_at_start_logs_the_starting_policy_as_iteration_zero(tmp_path):
    kw = dict(env=ECHO_ID, iterations=1, eval_splits=("seen",), eval_tasks=1, eval_at_start=True)
    train(_cfg(tmp_path, "r", **kw))
    lines = run_metrics(tmp_path / "r")
    assert [m["iteration"] for m in lines] == [0, 1]
    assert "eval/seen/success" in lines[0] and "rollout/env_steps" not in lines[0]
    assert "eval/seen/success" in lines[1] and lines[1]["rollout/env_steps"] > 0


def test_eval_cache_reuses_the_start_eval_of_identical_weights_only(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path / "cache"))
    kw = dict(env=ECHO_ID, iterations=1, eval_splits=("seen",), eval_tasks=2, eval_samples=2,
              eval_temperature=1.0, eval_at_start=True, eval_cache=True)  # fmt: skip
    train(_cfg(tmp_path, "grpo", **kw))  # evaluates the start and stores it
    train(_cfg(tmp_path, "prompt", algo="prompt", **kw))  # same start weights and seed: a hit
    train(_cfg(tmp_path, "seed1", algo="prompt", **{**kw, "seed": 1}))  # another seed: a miss
    first, hit, other = (run_metrics(tmp_path / n)[0] for n in ("grpo", "prompt", "seed1"))
    assert "eval/seen/cached" not in first and hit["eval/seen/cached"] == 1.0
    assert "eval/seen/cached" not in other
    assert deterministic_metrics(hit) == deterministic_metrics(first)
    rows = [
        (tmp_path / n / "evals" / "iter_0000-seen.jsonl").read_text() for n in ("grpo", "prompt")
    ]
    assert rows[0] == rows[1] and rows[0]
    assert "eval/seen/cached" not in run_metrics(tmp_path / "grpo")[1]  # only the start eval


def test_eval_cache_key_covers_every_weight_and_unreadable_entries_are_recomputed(
    tmp_path, monkeypatch
):
    import torch

    from seed_gym.trainer import eval_cache
    from seed_gym.trainer.backends.models import load_policy, state_dict_sha256

    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path / "cache"))
    cfg, model = _cfg(tmp_path, "k"), load_policy("tiny", seed=0).model
    key = eval_cache.eval_key(cfg, state_dict_sha256(model), "seen")
    assert key == eval_cache.eval_key(cfg, state_dict_sha256(model), "seen")
    assert key != eval_cache.eval_key(cfg, state_dict_sha256(model), "unseen")
    other_cfg = _cfg(tmp_path, "k", eval_tasks=3)
    assert key != eval_cache.eval_key(other_cfg, state_dict_sha256(model), "seen")
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] += 1e-3
    assert key != eval_cache.eval_key(cfg, state_dict_sha256(model), "seen")
    path = eval_cache.store_eval(key, eval_cache.CachedEval({"eval/seen/success": 0.5}, []))
    assert eval_cache.load_eval(key).metrics == {"eval/seen/success": 0.5}
    path.write_text('{"metrics": ')  # cut by a kill or a full disk
    assert eval_cache.load_eval(key) is None


def test_task_stream_is_a_function_of_position():
    ids = [f"t{i}" for i in range(5)]
    stream = task_batch(ids, 0, 0, 12)
    assert sorted(stream[:5]) == ids and sorted(stream[5:10]) == ids  # each epoch a permutation
    assert task_batch(ids, 0, 7, 5) == stream[7:12]


def test_config_invariants():
    with pytest.raises(ValueError, match="algo"):
        TrainConfig(algo="nope")
    with pytest.raises(ValueError, match="--group-size"):
        TrainConfig().replace(group_size=1)
    with pytest.raises(ValueError, match="--dual-clip"):
        TrainConfig().replace(dual_clip=0.5)
    with pytest.raises(ValueError, match="eval splits"):
        TrainConfig().replace(eval_splits=("test",))
    cfg = parse_args(["--preset", "smollm2-cpu", "--env", "seed_gym/EZPoints-v0", "--lr", "3e-5"])
    assert (cfg.model, cfg.env, cfg.optim.lr) == ("smollm2", "seed_gym/EZPoints-v0", 3e-5)
    assert cfg.bf16 == bf16_is_fast("cpu")  # bf16 only where the CPU runs it natively
    assert parse_args(["--preset", "smollm2-cpu", "--no-bf16"]).bf16 is False


@pytest.mark.slow
def test_smollm2_smoke(tmp_path):
    """One short GRPO iteration with the real SmolLM2 (about a minute or two on 2 cores)."""
    pytest.importorskip("gguf")
    from seed_gym.trainer.backends.models import smollm2_gguf

    try:
        smollm2_gguf()
    except (ImportError, FileNotFoundError) as e:
        pytest.skip(str(e))
    cfg = parse_args(
        [
            "--preset",
            "smollm2-cpu",
            "--out",
            str(tmp_path / "s"),
            "--env",
            "seed_gym/Sokoban-v0",
            "--iterations",
            "1",
            "--tasks-per-iter",
            "1",
            "--group-size",
            "2",
            "--max-turns",
            "2",
            "--max-new-tokens",
            "24",
            "--eval-tasks",
            "1",
            "--eval-splits",
            "seen",
            "--no-progress",
            "--no-tensorboard",
            "--no-save-hf",
            # GRPO never analyzes: skip the preset's analyzer warm-up rows (CI time; they are
            # tested in test_warmup.py), and a short warm-up (the preset's takes ~10 minutes)
            "--format-warmup-analyzer-episodes",
            "0",
            "--format-warmup-episodes",
            "8",
            "--format-warmup-epochs",
            "1",
        ]
    )
    m = train(cfg)
    assert m["rollout/episodes"] == 2.0 and m["train/response_tokens"] > 0
    assert (tmp_path / "s" / "checkpoint.pt").exists()


def test_train_on_a_user_env_from_imports_and_resume(tmp_path):
    """`--imports file.py` registers a user env before training; the saved config keeps it, so a
    resumed run (a fresh process would have no registration otherwise) finds the env again."""
    example = str(seed_gym.__path__[0] + "/../docs/examples/guess_number.py")
    out = tmp_path / "guess"
    argv = ["--preset", "tiny", "--imports", example, "--env", "example/GuessNumber-v0"]
    cfg = parse_args([*argv, "--iterations", "1", "--out", str(out), "--no-progress"])
    assert cfg.imports == (example,)
    train(cfg)
    assert json.loads((out / "config.json").read_text())["imports"] == [example]
    train(parse_args(["--resume", "--out", str(out), "--iterations", "2", "--no-progress"]))
    assert len(run_metrics(out)) == 2


# --- resume after a kill: one commit per iteration, clear errors, no pickles ---------------------
RESUME_KW = dict(
    env=ECHO_ID, iterations=3, group_size=2, tasks_per_iter=2, max_new_tokens=4,
    eval_splits=("seen",), eval_tasks=1, eval_every=1,
)  # fmt: skip


class Killed(BaseException):
    """Stands in for a SIGKILL: nothing after the raise runs, no handler catches it."""


def test_a_kill_during_eval_loses_no_iteration_and_resume_is_exact(tmp_path, monkeypatch):
    import seed_gym.trainer.train as train_module

    full_cfg = _cfg(tmp_path, "full", **RESUME_KW, save_hf=True)
    train(full_cfg)
    real_eval = train_module.evaluate

    def eval_killed_at(iteration_to_kill):
        def fake(cfg, engine, split, iteration):
            if iteration == iteration_to_kill:
                raise Killed
            return real_eval(cfg, engine, split, iteration)

        return fake

    cfg = _cfg(tmp_path, "killed", **RESUME_KW, save_hf=True)
    monkeypatch.setattr(train_module, "evaluate", eval_killed_at(2))
    with pytest.raises(Killed):
        train(cfg)
    assert [m["iteration"] for m in run_metrics(tmp_path / "killed")] == [1]
    # killed again, in the final eval: no model/ yet
    resume = ["--out", str(tmp_path / "killed"), "--resume", "--no-progress"]
    monkeypatch.setattr(train_module, "evaluate", eval_killed_at(3))
    with pytest.raises(Killed):
        train(parse_args(resume))
    assert [m["iteration"] for m in run_metrics(tmp_path / "killed")] == [1, 2]
    assert not (tmp_path / "killed" / "model").exists()
    monkeypatch.setattr(train_module, "evaluate", real_eval)
    train(parse_args(resume))
    mk, mf = run_metrics(tmp_path / "killed"), run_metrics(tmp_path / "full")
    assert [m["iteration"] for m in mk] == [1, 2, 3]
    assert [deterministic_metrics(m) for m in mk] == [deterministic_metrics(m) for m in mf]
    a, b = checkpoint_params(tmp_path / "full"), checkpoint_params(tmp_path / "killed")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert (tmp_path / "killed" / "model" / "config.json").is_file()
    # a finished run resumed once more only writes a missing model/
    import shutil

    shutil.rmtree(tmp_path / "killed" / "model")
    train(parse_args(resume))
    assert (tmp_path / "killed" / "model" / "config.json").is_file()
    assert len(run_metrics(tmp_path / "killed")) == 3


def test_a_line_cut_by_a_kill_is_repaired_on_resume(tmp_path):
    cfg = _cfg(tmp_path, "r", **{**RESUME_KW, "iterations": 2})
    train(cfg)
    path = tmp_path / "r" / "metrics.jsonl"
    path.write_text(path.read_text() + '{"iteration": 3, "rollout/succ')  # killed mid-write
    train(parse_args(["--out", str(tmp_path / "r"), "--resume", "--iterations", "3"]))
    assert [m["iteration"] for m in run_metrics(tmp_path / "r")] == [1, 2, 3]
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "garbage", *lines[1:]]) + "\n")
    with pytest.raises(SystemExit, match=r"metrics.jsonl: line 2 is not a metrics record"):
        train(parse_args(["--out", str(tmp_path / "r"), "--resume", "--iterations", "4"]))


def test_resume_errors_name_the_file(tmp_path):
    with pytest.raises(SystemExit, match=r"no-such-run/config.json does not exist"):
        parse_args(["--out", str(tmp_path / "no-such-run"), "--resume"])
    cfg = _cfg(tmp_path, "r", **{**RESUME_KW, "iterations": 1})
    train(cfg)
    run = tmp_path / "r"
    good = (run / "config.json").read_text()
    (run / "config.json").write_text(good[: len(good) // 2])
    with pytest.raises(SystemExit, match=r"r/config.json is not valid JSON"):
        parse_args(["--out", str(run), "--resume"])
    (run / "config.json").write_text(good)
    ckpt = (run / "checkpoint.pt").read_bytes()
    (run / "checkpoint.pt").write_bytes(ckpt[: len(ckpt) // 3])
    with pytest.raises(SystemExit, match=r"checkpoint.pt: not a readable seed-gym checkpoint"):
        train(parse_args(["--out", str(run), "--resume", "--iterations", "2"]))


class Payload:
    """Would run code when unpickled."""

    def __reduce__(self):
        return (print, ("pwned",))


def test_checkpoints_load_without_pickle(tmp_path, capsys):
    from seed_gym.trainer.run_state import read_checkpoint

    cfg = _cfg(tmp_path, "r", **{**RESUME_KW, "iterations": 1})
    train(cfg)
    payload = read_checkpoint(tmp_path / "r" / "checkpoint.pt")  # weights_only=True
    assert payload["iteration"] == 1 and payload["metrics"]["rollout/episodes"] == 4.0
    payload["evil"] = Payload()
    torch.save(payload, tmp_path / "r" / "checkpoint.pt")
    with pytest.raises(SystemExit, match="not a readable seed-gym checkpoint"):
        train(parse_args(["--out", str(tmp_path / "r"), "--resume", "--iterations", "2"]))
    assert "pwned" not in capsys.readouterr().out


def test_checkpoints_written_by_0_1_still_load(tmp_path):
    # 0.1 kept numpy's RNG state as numpy's own tuple (an array inside): still allowed
    import numpy as np

    from seed_gym.trainer.run_state import _numpy_state_in, read_checkpoint

    cfg = _cfg(tmp_path, "r", **{**RESUME_KW, "iterations": 1})
    train(cfg)
    payload = read_checkpoint(tmp_path / "r" / "checkpoint.pt")
    payload["rng"]["numpy"] = np.random.get_state()
    del payload["metrics"]
    torch.save(payload, tmp_path / "r" / "checkpoint.pt")
    old = read_checkpoint(tmp_path / "r" / "checkpoint.pt")
    np.random.set_state(_numpy_state_in(old["rng"]["numpy"]))
    train(parse_args(["--out", str(tmp_path / "r"), "--resume", "--iterations", "2"]))
    assert [m["iteration"] for m in run_metrics(tmp_path / "r")] == [1, 2]


def test_the_example_env_trains_with_seed_warmup_and_stage1_without_trainer_edits(
    tmp_path, monkeypatch
):
    """docs/examples/guess_number.py names its demonstration reasoning and hindsight phrasing in
    its AgentSpec: the format warm-up, SEED Stage 1 with the privileged annotator and SEED itself
    run on it with no trainer change."""
    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path / "cache"))
    example = str(seed_gym.__path__[0] + "/../docs/examples/guess_number.py")
    out = tmp_path / "guess-seed"
    argv = ["--preset", "tiny", "--import", example, "--env", "example/GuessNumber-v0"]
    argv += ["--algo", "seed", "--iterations", "1", "--out", str(out), "--no-progress"]
    argv += ["--format-warmup-episodes", "2", "--format-warmup-analyzer-episodes", "2"]
    m = train(parse_args(argv))
    assert m["rollout/episodes"] == 4.0
    warm = next((tmp_path / "cache" / "models").glob("warmup-guessnumber-v0-tiny-*"))
    record = json.loads((warm / "warmup.json").read_text())
    assert record["oracle_rows"] > 0 and record["analyzer_rows"] == 2
    assert "I guess" in record["example_completion"]  # the spec's reasoning
    stage1 = json.loads((out / "stage1" / "stage1.json").read_text())
    rows = [json.loads(x) for x in Path(stage1["dataset"]).read_text().splitlines()]
    assert stage1["annotator"] == "privileged" and rows
    assert all("the secret was" in json.loads(r["completion"])["episode_skill"] for r in rows)


# --- the train command line: --env-kwarg, one-line errors -------------------------------------
class PrefixedEnv(LetterEEnv):
    """LetterE whose task ids carry a constructor argument: ``--env-kwarg prefix=...``."""

    env_id = "test/PrefixedLetterE-v0"

    def __init__(self, split="train", modality=None, render_mode=None, prefix: str = "t"):
        self.prefix = prefix
        super().__init__(split=split, modality=modality, render_mode=render_mode)

    def manifest(self, split):
        return SplitManifest(
            self.env_id, split, tuple(f"{self.prefix}-{split}-{i}" for i in range(6))
        )


if PrefixedEnv.env_id not in seed_gym.list_envs():
    seed_gym.register(
        PrefixedEnv.env_id,
        PrefixedEnv,
        max_episode_steps=2,
        agent_spec=AgentSpec(
            render=lambda ctx: f"Your task is to: {ctx.task}", parse=_parse_any, history=0
        ),
    )


def test_env_kwargs_reach_every_env_and_survive_resume(tmp_path):
    out = tmp_path / "kw"
    argv = ["--preset", "tiny", "--env", PrefixedEnv.env_id, "--env-kwarg", "prefix=zz",
            "--out", str(out), "--iterations", "1", "--tasks-per-iter", "2", "--group-size", "2",
            "--max-new-tokens", "4", "--eval-tasks", "2", "--no-progress", "--no-tensorboard",
            "--no-save-hf"]  # fmt: skip
    assert main(argv) == 0
    assert json.loads((out / "config.json").read_text())["env_kwarg"] == ["prefix=zz"]
    assert main(["--resume", "--out", str(out), "--iterations", "2", "--no-progress"]) == 0
    rollouts = [json.loads(line) for f in sorted((out / "trajectories").glob("*.jsonl"))
                for line in f.read_text().splitlines()]  # fmt: skip
    evals = [json.loads(line) for f in sorted((out / "evals").glob("*.jsonl"))
             for line in f.read_text().splitlines()]  # fmt: skip
    assert len(rollouts) == 8 and evals  # 2 iterations x 2 tasks x 2, and the evals
    assert all(r["task_id"].startswith("zz-train-") for r in rollouts)
    assert all(r["task_id"].startswith("zz-") for r in evals)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--env", "bogus/X-v0"], "unknown env 'bogus/X-v0'; choose one of: "),
        (["--env", "seed_gym/EZPoints-v0", "--modality", "smell"], "no modality 'smell'"),
        (["--env", ECHO_ID, "--env-kwarg", "colour=red"], "takes no argument 'colour'"),
        (["--env", PrefixedEnv.env_id, "--model", "/nonexistent/model"], "'/nonexistent/model'"),
        (["--env", "seed_gym/WebShop-v0", "--env-kwarg", "data_dir=/nope"], "/nope"),
    ],
)
def test_train_usage_errors_are_one_line_and_write_nothing(tmp_path, capsys, argv, needle):
    out = tmp_path / "run"
    assert main([*argv, "--preset", "tiny", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("seed-gym train: ") and needle in err
    assert not out.exists()
