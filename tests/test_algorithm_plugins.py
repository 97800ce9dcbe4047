"""An algorithm as a plug-in: docs/examples/rloo.py, a file outside the package, trains on the
tiny model through ``--import FILE --algo rloo``, with the advantages it defines."""

from __future__ import annotations

import json
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import ROOT, checkpoint_params, run_metrics  # noqa: E402
from test_train import ECHO_ID  # noqa: E402  (registers the one-turn letter-e env)

from seed_gym.registration import import_env_modules  # noqa: E402
from seed_gym.trainer.algorithms import ALGORITHMS, Algorithm, register_algorithm  # noqa: E402
from seed_gym.trainer.backends.models import load_policy  # noqa: E402
from seed_gym.trainer.config import TrainConfig, parse_args, tiny  # noqa: E402
from seed_gym.trainer.train import train  # noqa: E402
from seed_gym.trainer.trajectory import StepSample, Trajectory  # noqa: E402

RLOO = str(ROOT / "docs" / "examples" / "rloo.py")


@pytest.fixture(scope="module")
def rloo():
    import_env_modules([RLOO])
    return sys.modules["rloo"]


def _traj(group: str, rewards: list[float]) -> Trajectory:
    step = dict(messages=[], prompt_ids=[1], response_ids=[2], old_logprobs=[-1.0])
    step.update(response_text="x", observation="o", action="x", valid=True)
    steps = [StepSample(**step, reward=r) for r in rewards]
    return Trajectory(f"{group}-{len(rewards)}", group, "t", "type", "task", 0, steps=steps)


def test_leave_one_out_by_hand(rloo):
    # group a: 1 - (0 + 0)/2, 0 - (1 + 0)/2, 0 - (1 + 0)/2; group b: 5 - 3, 3 - 5; c alone: 0
    got = rloo.leave_one_out([1.0, 0.0, 0.0, 5.0, 3.0, 7.0], list("aaabbc"))
    assert got == [1.0, -0.5, -0.5, 2.0, -2.0, 0.0]


def test_rloo_gives_each_step_its_trajectory_advantage_scaled_by_its_option(rloo):
    cfg = TrainConfig.from_dict({**tiny().to_dict(), "algo": "rloo", "algo_arg": ("scale=0.5",)})
    trajs = [_traj("a", [1.0, 0.5]), _traj("a", [0.0]), _traj("b", [2.0])]
    # returns 1.5 and 0.0 in group a: +-1.5, halved; b alone: 0
    assert ALGORITHMS["rloo"](cfg).advantages(trajs) == [[0.75, 0.75], [-0.75], [0.0]]


def test_rloo_from_a_file_trains_changes_parameters_and_resumes(tmp_path, rloo):
    out = tmp_path / "rloo"
    argv = ["--preset", "tiny", "--import", RLOO, "--algo", "rloo", "--env", ECHO_ID]
    argv += ["--group-size", "4", "--max-new-tokens", "4", "--eval-splits", "seen"]
    cfg = parse_args([*argv, "--iterations", "1", "--out", str(out), "--no-progress"])
    assert (cfg.algo, cfg.imports) == ("rloo", (RLOO,))
    init = {k: v.clone() for k, v in load_policy("tiny", seed=cfg.seed).model.state_dict().items()}
    first = train(cfg)
    assert first["train/adv_abs_mean"] > 0  # the letter-e groups mix wins and losses
    params = checkpoint_params(out)
    assert any(not torch.equal(init[k], params[k]) for k in init)
    saved = json.loads((out / "config.json").read_text())
    assert (saved["algo"], saved["imports"]) == ("rloo", [RLOO])
    train(parse_args(["--resume", "--out", str(out), "--iterations", "2", "--no-progress"]))
    assert [m["iteration"] for m in run_metrics(out)] == [1, 2]


def test_registry_refuses_a_second_class_under_a_taken_name_and_names_import():
    with pytest.raises(ValueError, match="'grpo' is registered already"):

        @register_algorithm
        class Impostor(Algorithm):
            name = "grpo"

    with pytest.raises(TypeError, match="Algorithm subclass"):
        register_algorithm(object)
    with pytest.raises(ValueError, match="--import"):
        TrainConfig.from_dict({**tiny().to_dict(), "algo": "no-such-algo"})


def test_list_algos_names_the_built_in_ones_and_the_imported_one(capsys):
    from seed_gym.cli import main

    assert main(["list", "--algos", "--import", RLOO]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert {"grpo", "seed", "skill-grpo", "static-skills", "opsd", "prompt", "rloo"} <= set(names)
