"""What the trainer does when an env lacks an optional hook (docs/adding_an_env.md, section 5):
a warning naming the hook where it falls back to a default, one line before anything is written
where it cannot run at all; and ``seed-gym sft`` refuses what ``train`` refuses."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import import_example

pytest.importorskip("torch")

import seed_gym  # noqa: E402
from seed_gym.trainer.algorithms.seed.annotators import PrivilegedAnnotator  # noqa: E402
from seed_gym.trainer.sft import main as sft_main  # noqa: E402
from seed_gym.trainer.train import main as train_main  # noqa: E402
from seed_gym.trainer.trajectory import Trajectory  # noqa: E402
from seed_gym.trainer.warmup import play_demonstrations  # noqa: E402
from seed_gym.wrappers.spec import next_action  # noqa: E402

guess_number = import_example()
BARE_SPEC = dataclasses.replace(
    guess_number.SPEC,
    reasoning=next_action,
    hindsight=None,
)


class NoOracle(guess_number.GuessNumberEnv):
    env_id = "test/NoOracle-v0"
    oracle_action = seed_gym.SeedEnv.oracle_action


class Secretive(guess_number.GuessNumberEnv):
    env_id = "test/Secretive-v0"

    def privileged_info(self) -> dict:
        return {}


for cls, spec in ((NoOracle, guess_number.SPEC), (Secretive, BARE_SPEC)):
    if cls.env_id not in seed_gym.list_envs():
        seed_gym.register(cls.env_id, cls, max_episode_steps=6, agent_spec=spec)


def one_line(err: str) -> str:
    err = err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


def test_a_warm_up_on_an_env_without_an_oracle_is_refused_before_anything_is_written(
    tmp_path, capsys
):
    out = tmp_path / "run"
    argv = ["--preset", "tiny", "--env", NoOracle.env_id, "--out", str(out)]
    assert train_main([*argv, "--format-warmup-episodes", "4", "--no-progress"]) == 2
    err = one_line(capsys.readouterr().err)
    assert "clones test/NoOracle-v0's oracle_action(), which NoOracle does not implement" in err
    assert "--format-warmup-episodes 0" in err and not out.exists()
    assert train_main([*argv, "--dry-run"]) == 0  # without the warm-up: nothing to refuse


def test_demonstrations_without_agent_reasoning_warn_and_say_what_they_show():
    with pytest.warns(UserWarning, match=r"no AgentSpec.reasoning: .*'Next I <action>.'"):
        (episode,) = play_demonstrations(Secretive.env_id, n_episodes=1)
    assert "Next I " in episode.rows[0]["completion"]


def test_the_privileged_annotator_warns_for_a_missing_hindsight_and_an_empty_privileged_info():
    with pytest.warns(UserWarning, match="test/Secretive-v0 has no AgentSpec.hindsight"):
        annotator = PrivilegedAnnotator(Secretive.env_id)
    traj = Trajectory(
        traj_id="t0",
        group_id="g0",
        task_id="secret-3",
        task_type="range-100",
        task="Guess the number.",
        seed=0,
    )
    with pytest.warns(UserWarning, match=r"privileged_info\(\) is empty"):
        (skill,) = annotator.annotate([traj], [{}])
    assert skill is not None  # a generic skill from the outcome, as documented


def test_sft_refuses_a_text_model_shown_images_and_takes_modality_and_env_kwargs(tmp_path, capsys):
    out = tmp_path / "s1"
    argv = ["--env", "seed_gym/EZPoints-v0", "--preset", "tiny", "--out", str(out)]
    with pytest.raises(SystemExit) as exit_:
        sft_main(argv)
    assert exit_.value.code == 2 and not out.exists()
    err = one_line(capsys.readouterr().err)
    assert "--model tiny reads text only" in err and "pass --modality text" in err
    with pytest.raises(SystemExit) as exit_:
        sft_main([*argv, "--modality", "text", "--env-kwarg", "no_such_argument=1"])
    assert exit_.value.code == 2 and not out.exists()
    assert "no_such_argument" in one_line(capsys.readouterr().err)
