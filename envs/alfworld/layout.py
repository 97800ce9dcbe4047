"""The official ALFWorld data layout, read the way ``AlfredTWEnv.collect_game_files`` reads it.

::

    json_2.1.1/
      train/         <task_type>-<Object>-<MovableRecep>-<Parent>-<scene>/<trial>/game.tw-pddl
      valid_seen/    ...                                                  /<trial>/traj_data.json
      valid_unseen/  ...

A game counts when its folder has ``traj_data.json`` and a ``game.tw-pddl`` marked
``"solvable": true``, its task type is one of the six, and it is not a movable-receptacle or sliced
variant (alfworld skips those too). Generated suites are written in exactly this layout, so the
same loader serves both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from seed_gym.envs.alfworld.engine import GAME_FILE, TRAJ_FILE, Game, GameFileError
from seed_gym.envs.alfworld.generate import TASK_TYPES

SPLIT_DIRS = {"train": "train", "seen": "valid_seen", "unseen": "valid_unseen"}


def find_json_root(path: str | Path) -> Path:
    """The folder holding ``train/ valid_seen/ valid_unseen/``: ``path`` itself, or
    ``path/json_2.1.1`` (``$ALFWORLD_DATA`` conventionally points one level above)."""
    path = Path(path).expanduser()
    for cand in (path / "json_2.1.1", path):
        if any((cand / d).is_dir() for d in SPLIT_DIRS.values()):
            return cand
    raise FileNotFoundError(
        f"no ALFWorld data under {path}: expected {path}/json_2.1.1/{{train,valid_seen,valid_unseen}}/"
        "<task>/<trial>/game.tw-pddl (the layout alfworld-download creates)"
    )


def task_type_of(folder_name: str) -> str | None:
    """``pick_two_obj_and_place-Book-None-Desk-313`` -> ``pick_two_obj_and_place``."""
    head = folder_name.split("-", 1)[0]
    return head if head in TASK_TYPES else None


def scan_split(json_root: Path, split: str, check_solvable: bool = True) -> list[Game]:
    """Every playable game of ``split`` under ``json_root``, sorted by task id."""
    folder = Path(json_root) / SPLIT_DIRS[split]
    if not folder.is_dir():
        return []
    games = []
    for root, _dirs, files in os.walk(folder):
        if TRAJ_FILE not in files:
            continue
        trial = Path(root)
        task_folder = trial.parent.name
        if "movable" in str(trial) or "Sliced" in str(trial):
            continue
        task_type = task_type_of(task_folder)
        if task_type is None:
            continue
        game_file = trial / GAME_FILE
        if not game_file.exists():
            continue
        if check_solvable and not _solvable(game_file):
            continue
        task_id = trial.relative_to(folder).as_posix()
        games.append(Game(task_id, game_file, task_type))
    games.sort(key=lambda g: g.task_id)
    return games


def _solvable(game_file: Path) -> bool:
    try:
        return bool(json.loads(game_file.read_text()).get("solvable"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GameFileError(f"ALFWorld game file {game_file} is corrupt: {e}") from None
