"""ALFWorld's offline game generator, the engine wrapper and the official data layout.

These tests need the alfworld extra but not the built suite: every game is generated into a
temporary folder and played by the real engine.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("alfworld")
pytest.importorskip("textworld")

from seed_gym.envs.alfworld import build, generate, realdata  # noqa: E402
from seed_gym.envs.alfworld.accel import raw_translate  # noqa: E402
from seed_gym.envs.alfworld.engine import Engine, Game, GameFileError  # noqa: E402
from seed_gym.envs.alfworld.generate import TASK_TYPES  # noqa: E402
from seed_gym.envs.alfworld.layout import scan_split  # noqa: E402

# one floor plan per task type that supports it, in train rooms and in the held-out ones
TRAIN_SCENES = {t: build._supporting("train", t)[0] for t in TASK_TYPES}
UNSEEN_SCENES = {t: build._supporting("unseen", t)[0] for t in TASK_TYPES}


def _declared(pddl: str, kind: str) -> set[str]:
    return set(re.findall(rf"^\s+(\S+) - {kind}$", pddl, flags=re.M))


def _write(problem, root: Path, split_dir: str = "train") -> Path:
    """Write and validate ``problem`` in the official layout below ``root``; the game path."""
    folder = root / "json_2.1.1" / split_dir / problem.relpath
    path = generate.write_game(problem, folder, walkthrough=None)
    plan = build.validate(path, problem.relpath, problem.spec.task_type)
    generate.write_game(problem, folder, walkthrough=plan)
    return path


@pytest.mark.parametrize("task_type", TASK_TYPES)
@pytest.mark.parametrize("scenes", [TRAIN_SCENES, UNSEEN_SCENES], ids=["train-room", "unseen-room"])
def test_generated_problem_is_valid_and_solved_by_the_engine(task_type, scenes, tmp_path):
    problem = generate.generate(scenes[task_type], task_type, seed=5)
    pddl = problem.pddl
    otypes = {t[: -len("Type")] for t in _declared(pddl, "otype")}
    rtypes = {t[: -len("Type")] for t in _declared(pddl, "rtype")}
    assert otypes and rtypes and not otypes & rtypes  # the engine confuses overlapping names
    for r, o in re.findall(r"\(canContain (\S+)Type (\S+)Type\)", pddl):
        assert r in rtypes and o in otypes  # canContain only mentions declared types
    objects = _declared(pddl, "object")
    in_recep = set(re.findall(r"\(inReceptacle ([^?\s]\S*) \S+\)", pddl))
    assert objects == in_recep  # every object (lamps included) stands in a receptacle
    assert problem.description and "{" not in problem.description

    path = _write(problem, tmp_path)
    game = json.loads(path.read_text())
    assert game["solvable"] is True and game["walkthrough"]
    assert set(game) == {"pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"}
    assert f"Your task is to: {problem.description}." in game["grammar"]
    traj = json.loads((path.parent / "traj_data.json").read_text())
    assert traj["task_type"] == task_type
    assert traj["scene"]["floor_plan"] == problem.scene.floor_plan


def test_generation_is_deterministic():
    a = generate.generate(1, "pick_heat_then_place_in_recep", seed=3)
    b = generate.generate(1, "pick_heat_then_place_in_recep", seed=3)
    c = generate.generate(1, "pick_heat_then_place_in_recep", seed=4)
    assert (a.pddl, a.description, a.relpath) == (b.pddl, b.description, b.relpath)
    assert a.pddl != c.pddl


def test_split_floor_plans_are_disjoint_and_seen_rooms_are_train_rooms():
    unseen = {build.scene_for("unseen", i) for i in range(build.SPLIT_SIZES["unseen"])}
    train = {build.scene_for("train", i) for i in range(build.FULL_TRAIN)}
    early_train = {build.scene_for("train", i) for i in range(build.SEEN_POOL)}
    seen = {build.scene_for("seen", i) for i in range(build.SPLIT_SIZES["seen"])}
    assert unseen == set(build.UNSEEN_FLOOR_PLANS)
    assert not unseen & train
    assert seen <= early_train  # seen rooms appear in any train split of >= SEEN_POOL games


def test_game_indices_cycle_task_types():
    assert [TASK_TYPES[i % 6] for i in range(12)] == list(TASK_TYPES) * 2
    assert build.game_seed("train", 3, 0) != build.game_seed("seen", 3, 0)


# --- robustness ---------------------------------------------------------------------------------
def test_missing_and_corrupt_game_files_name_the_file(tmp_path):
    engine = Engine()
    missing = tmp_path / "nope" / "game.tw-pddl"
    with pytest.raises(GameFileError, match=re.escape(str(missing))):
        engine.load(Game("nope", missing, "pick_and_place_simple"))

    problem = generate.generate(301, "pick_and_place_simple", seed=1)
    path = _write(problem, tmp_path)
    path.write_text('{"pddl_domain": "(define')  # truncated JSON
    with pytest.raises(GameFileError, match=f"{re.escape(str(path))} is corrupt"):
        engine.load(Game("x", path, "pick_and_place_simple"))

    path.write_text(json.dumps({"pddl_domain": "", "grammar": ""}))
    with pytest.raises(GameFileError, match="no pddl_problem"):
        engine.load(Game("x", path, "pick_and_place_simple"))

    # a good file again, but its traj_data.json goes missing
    generate.write_game(problem, path.parent, walkthrough=["look"])
    (path.parent / "traj_data.json").unlink()
    with pytest.raises(GameFileError, match=re.escape(str(path.parent / "traj_data.json"))):
        engine.load(Game("x", path, "pick_and_place_simple"))


@pytest.mark.parametrize(
    "breakage",
    [
        # the overlap gotcha: a type declared as object type and receptacle type
        lambda p: p.replace("    (:objects\n", "    (:objects\n        BookType - rtype\n", 1),
        # a goal predicate with the wrong arity
        lambda p: p.replace("(inReceptacle ?o ?r)", "(inReceptacle ?o)", 1),
    ],
    ids=["duplicate-type", "wrong-arity"],
)
def test_translator_systemexit_is_contained(breakage, tmp_path):
    problem = generate.generate(301, "pick_and_place_simple", seed=1)
    with pytest.raises(SystemExit):  # what fast-downward does on its own
        import fast_downward

        fast_downward.pddl2sas(generate.domain_text(), breakage(problem.pddl))
    with pytest.raises(ValueError, match="translator rejected"):
        raw_translate(generate.domain_text(), breakage(problem.pddl), False)

    path = _write(problem, tmp_path)
    data = json.loads(path.read_text())
    data["pddl_problem"] = breakage(data["pddl_problem"])
    path.write_text(json.dumps(data))
    with pytest.raises(GameFileError, match=re.escape(str(path))):
        Engine().load(Game("broken", path, "pick_and_place_simple"))


# --- the official layout ------------------------------------------------------------------------
def _official_tree(root: Path) -> dict[str, list[str]]:
    """A tiny json_2.1.1 with two games per split plus every kind of folder alfworld skips."""
    kept: dict[str, list[str]] = {}
    for split, split_dir in (
        ("train", "train"),
        ("seen", "valid_seen"),
        ("unseen", "valid_unseen"),
    ):
        for i, task_type in enumerate(("pick_and_place_simple", "pick_cool_then_place_in_recep")):
            scene = 1 if split != "unseen" else 10
            problem = generate.generate(scene, task_type, seed=100 + i + 10 * len(kept))
            _write(problem, root, split_dir)
            kept.setdefault(split, []).append(problem.relpath)
    train = root / "json_2.1.1" / "train"
    src = train / kept["train"][0]
    # skipped: movable receptacles, sliced objects, unknown task type, no game file, unsolvable
    for name in (
        "pick_and_place_with_movable_recep-Apple-Bowl-Fridge-1/trial_T1",
        "pick_and_place_simple-AppleSliced-None-Fridge-1/trial_T2",
        "pick_three_obj_and_place-Apple-None-Fridge-1/trial_T3",
        "pick_and_place_simple-Apple-None-Fridge-1/trial_T4",
        "pick_and_place_simple-Apple-None-Fridge-1/trial_T5",
    ):
        shutil.copytree(src, train / name)
    (train / "pick_and_place_simple-Apple-None-Fridge-1/trial_T4/game.tw-pddl").unlink()
    unsolvable = train / "pick_and_place_simple-Apple-None-Fridge-1/trial_T5/game.tw-pddl"
    data = json.loads(unsolvable.read_text())
    data["solvable"] = False
    unsolvable.write_text(json.dumps(data))
    return {s: sorted(v) for s, v in kept.items()}


def test_official_layout_loads_through_the_same_env(tmp_path, monkeypatch):
    import seed_gym
    from seed_gym.envs.alfworld import ALFWorldEnv

    kept = _official_tree(tmp_path)
    for split, split_dir in (
        ("train", "train"),
        ("seen", "valid_seen"),
        ("unseen", "valid_unseen"),
    ):
        assert [g.task_id for g in scan_split(tmp_path / "json_2.1.1", split)] == kept[split]
        assert split_dir in str(scan_split(tmp_path / "json_2.1.1", split)[0].path)

    # data_dir= may name the folder above json_2.1.1 or json_2.1.1 itself
    for where in (tmp_path, tmp_path / "json_2.1.1"):
        env = ALFWorldEnv(split="unseen", data_dir=where)
        assert list(env.manifest("unseen").task_ids) == kept["unseen"]
        assert env.manifest("unseen").meta["source"] == "json_2.1.1"

    # $ALFWORLD_DATA, as alfworld-download sets it up
    monkeypatch.setattr(realdata, "_USER_VALUE", str(tmp_path))
    env = seed_gym.make("seed_gym/ALFWorld-v0", split="seen")
    try:
        assert list(env.unwrapped.manifest("seen").task_ids) == kept["seen"]
        wins = 0
        for task_id in kept["seen"]:
            obs, info = env.reset(seed=0, options={"task_id": task_id})
            assert obs["text"].startswith("-= Welcome to TextWorld, ALFRED! =-")
            assert (
                "You are in the middle of a room" in obs["text"]
                and "Your task is to:" in obs["text"]
            )
            while True:
                obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
                if terminated or truncated:
                    break
            wins += info["won"] and reward == 10.0
        assert wins == len(kept["seen"])
        seed_gym.check_env(env, n_steps=6)
    finally:
        env.close()


def test_a_folder_without_games_is_an_error_not_a_fallback(tmp_path):
    from seed_gym.envs.alfworld import ALFWorldEnv

    with pytest.raises(FileNotFoundError, match="json_2.1.1"):
        ALFWorldEnv(split="train", data_dir=tmp_path).manifest("train")


def test_alfworld_default_data_dir_is_ignored_when_empty(monkeypatch):
    monkeypatch.setattr(realdata, "_USER_VALUE", None)
    monkeypatch.setenv("ALFWORLD_DATA", str(Path("~/.cache/alfworld").expanduser()))
    if (Path("~/.cache/alfworld/json_2.1.1").expanduser()).is_dir():
        pytest.skip("a real ALFWorld download is present")
    assert realdata.data_dir_from_env() is None


# --- the accelerated engine says exactly what the bare one says -----------------------------------
def test_accelerated_engine_is_identical_to_bare_textworld(tmp_path):
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs import PddlEnv

    problem = generate.generate(10, "pick_two_obj_and_place", seed=2)
    path = _write(problem, tmp_path)

    bare = AlfredDemangler(
        PddlEnv(textworld.EnvInfos(won=True, admissible_commands=True)), shuffle=False
    )
    bare.load(str(path))
    state = bare.reset()
    ours = Engine()
    ours.load(Game(problem.relpath, path, problem.spec.task_type))
    frame = ours.reset()
    assert frame.feedback == state.feedback and frame.admissible == state["admissible_commands"]
    rng = random.Random(0)
    for i in range(25):
        command = rng.choice(state["admissible_commands"]) if i % 4 else "take the moon"
        state, _, _ = bare.step(command)
        frame = ours.step(command)
        assert frame.feedback == state.feedback
        assert frame.admissible == state["admissible_commands"]
        assert frame.won == state["won"]
        assert frame.valid == (i % 4 != 0)
    ours.close()


def test_train_size_setting(monkeypatch):
    monkeypatch.delenv(build.TRAIN_ENV_VAR, raising=False)
    assert build.default_train_size() == build.DEFAULT_TRAIN
    monkeypatch.setenv(build.TRAIN_ENV_VAR, "full")
    assert build.default_train_size() == build.FULL_TRAIN == 3553
    monkeypatch.setenv(build.TRAIN_ENV_VAR, "1200")
    assert build.default_train_size() == 1200
    for bad in ("0", "lots"):
        monkeypatch.setenv(build.TRAIN_ENV_VAR, bad)
        with pytest.raises(ValueError, match=build.TRAIN_ENV_VAR):
            build.default_train_size()


# --- first-use build from a user script ---------------------------------------------------------
UNGUARDED_SCRIPT = """
import json, sys
from seed_gym.envs.alfworld.build import build_suite, read_manifest

# no `if __name__ == "__main__":` guard, as in a quick user script
root = build_suite(n_train=2, n_seen=1, n_unseen=1, root=sys.argv[1] if len(sys.argv) > 1 else ROOT, workers=2)
m = read_manifest(root)
print(json.dumps({s: len(m["splits"][s]["games"]) for s in ("train", "seen", "unseen")}))
"""


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_first_use_build_from_an_unguarded_script_finishes(how, tmp_path):
    # seed-gym 0.1 built with a spawn pool inside the caller: its workers re-ran this script,
    # called build_suite again and blocked on the lock the parent held (from stdin they
    # respawned endlessly), so the script never finished
    import subprocess
    import sys

    root = tmp_path / "suite"
    script = UNGUARDED_SCRIPT.replace("ROOT", repr(str(root)))
    if how == "file":
        path = tmp_path / "user_script.py"
        path.write_text(script)
        run = subprocess.run(
            [sys.executable, str(path), str(root)], capture_output=True, text=True, cwd=tmp_path
        )
    else:
        run = subprocess.run(
            [sys.executable, "-"], input=script, capture_output=True, text=True, cwd=tmp_path
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"train": 2, "seen": 1, "unseen": 1}
    # progress reached the caller's stderr
    assert "building the ALFWorld suite in a subprocess" in run.stderr
    assert "building 4 ALFWorld games" in run.stderr
