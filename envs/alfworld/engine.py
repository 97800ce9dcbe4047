"""One real ALFWorld engine: textworld's ``PddlEnv`` behind alfworld's ``AlfredDemangler``.

This is the stack ``alfworld.agents.environment.AlfredTWEnv`` builds for every game: the PDDL
domain and problem run in fast-downward (``PddlEnv``), the text comes from the game's TWL2 grammar,
and ``AlfredDemangler`` turns ALFRED ids (``Apple_bar__plus_00_dot_97...``) into "apple 1". A game
is one ``game.tw-pddl`` file (JSON with ``pddl_domain``, ``grammar``, ``pddl_problem``,
``solvable``, ``walkthrough``) next to its ``traj_data.json``; generated games and the official
``json_2.1.1`` games are the same kind of file and go through ``Engine.load`` alike.

Robustness: a missing or corrupt file raises ``GameFileError`` naming the file, and the
``SystemExit`` fast-downward uses to reject a malformed problem becomes a ``GameFileError`` too.
Speed: the engine runs under ``accel.accelerated`` (memoised translation and template parsing).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seed_gym.envs.alfworld.accel import TranslationCache, accelerated
from seed_gym.envs.alfworld.expert import WorldView, expert_plan
from seed_gym.envs.alfworld.generate import TASK_TYPES

GAME_FILE = "game.tw-pddl"
TRAJ_FILE = "traj_data.json"
NOTHING_HAPPENS = "Nothing happens."


class GameFileError(ValueError):
    """A game file is missing, corrupt, or rejected by the engine. The message names the file."""


@dataclass(frozen=True)
class Game:
    """One game of a split: ``task_id`` is ``<task folder>/<trial>`` below the split folder."""

    task_id: str
    path: Path  # the game.tw-pddl file
    task_type: str


def read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise GameFileError(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GameFileError(f"{what} {path} is corrupt: {e}") from None
    if not isinstance(data, dict):
        raise GameFileError(f"{what} {path} is corrupt: expected a JSON object")
    return data


def read_game(path: Path) -> tuple[dict, dict]:
    """``(game data, traj data)`` of a ``game.tw-pddl`` file, validated enough to load."""
    path = Path(path)
    data = read_json(path, "ALFWorld game file")
    missing = [
        k for k in ("pddl_domain", "grammar", "pddl_problem") if not isinstance(data.get(k), str)
    ]
    if missing:
        raise GameFileError(f"ALFWorld game file {path} is corrupt: no {', '.join(missing)}")
    traj = read_json(path.parent / TRAJ_FILE, "ALFWorld traj_data file")
    if traj.get("task_type") not in TASK_TYPES or not isinstance(traj.get("pddl_params"), dict):
        raise GameFileError(
            f"ALFWorld traj_data file {path.parent / TRAJ_FILE} has no usable task_type/pddl_params"
        )
    return data, traj


@contextlib.contextmanager
def engine_errors(path: Path, doing: str) -> Iterator[None]:
    """Turn the engine's ways of failing (``SystemExit`` from fast-downward included) into
    ``GameFileError`` naming the game file."""
    try:
        yield
    except GameFileError:
        raise
    except SystemExit as e:
        raise GameFileError(
            f"the PDDL engine exited (code {e.code}) while {doing} {path}"
        ) from None
    except ValueError as e:
        raise GameFileError(f"the PDDL engine rejected {path} while {doing}: {e}") from None
    except Exception as e:  # noqa: BLE001 - parse errors of tatsu / fast-downward have no common base
        raise GameFileError(
            f"the PDDL engine failed while {doing} {path}: {type(e).__name__}: {e}"
        ) from None


@dataclass
class Frame:
    """What the engine says after a reset or a step."""

    feedback: str
    admissible: list[str]
    won: bool
    valid: bool  # the command was one of the admissible commands


class Engine:
    """Plays one game at a time; ``load`` a ``Game``, then ``reset`` / ``step`` it."""

    def __init__(self, translations: TranslationCache | None = None, planner: bool = False):
        try:
            import textworld
            from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
            from textworld.envs import PddlEnv
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                f"ALFWorld needs the alfworld extra: pip install 'seed-gym[alfworld]' ({e})"
            ) from e
        self.planner = planner
        self.translations = translations or TranslationCache(share_replan=not planner)
        infos = textworld.EnvInfos(won=True, admissible_commands=True, facts=True)
        self._pddl = PddlEnv(infos)
        self._env = AlfredDemangler(self._pddl, shuffle=False)
        self.game: Game | None = None
        self.traj: dict[str, Any] = {}
        self.walkthrough: list[str] | None = None
        self._state = None
        self._plan: list[str] | None = None

    # --- playing ------------------------------------------------------------------------------
    def load(self, game: Game) -> None:
        data, traj = read_game(game.path)
        with engine_errors(game.path, "loading"), accelerated(self.translations):
            self._env.load(str(game.path))
        self.game, self.traj = game, traj
        self.walkthrough = (
            data.get("walkthrough") if isinstance(data.get("walkthrough"), list) else None
        )
        self._state = None

    def reset(self) -> Frame:
        assert self.game is not None, "load a game first"
        with engine_errors(self.game.path, "resetting"), accelerated(self.translations):
            self._state = self._env.reset()
        self._plan = None
        return self._frame(valid=True)

    def step(self, command: str) -> Frame:
        assert self._state is not None, "reset first"
        valid = command in self._state["admissible_commands"]
        with engine_errors(self.game.path, "stepping"), accelerated(self.translations):
            self._state, _, _ = self._env.step(command)
        if self._plan is not None:
            # following the plan keeps the rest of it; anything else makes us replan on demand
            self._plan = (
                self._plan[1:] if (valid and self._plan and self._plan[0] == command) else None
            )
        return self._frame(valid=valid)

    def _frame(self, valid: bool) -> Frame:
        s = self._state
        return Frame(str(s.feedback), list(s["admissible_commands"]), bool(s["won"]), valid)

    @property
    def admissible(self) -> list[str]:
        return list(self._state["admissible_commands"]) if self._state is not None else []

    @property
    def won(self) -> bool:
        return bool(self._state["won"]) if self._state is not None else False

    # --- experts ------------------------------------------------------------------------------
    def world(self) -> WorldView:
        return WorldView.from_facts(self._state["facts"])

    def expert_plan(self) -> list[str]:
        """The privileged expert's plan from the current state (see ``expert.py``)."""
        if self._plan is None:
            self._plan = expert_plan(self.world(), self.traj["task_type"], self.traj["pddl_params"])
        return list(self._plan)

    def planner_plan(self) -> list[str]:
        """fast-downward's optimal plan from the current state (ALFWorld's planner expert; can
        take seconds to minutes on big rooms)."""
        assert self._state is not None, "reset first"
        with engine_errors(self.game.path, "planning"), accelerated(self.translations):
            return list(self._pddl._pddl_state.replan(self._pddl._entity_infos))

    def close(self) -> None:
        # Drop the engine; never dlclose its fast-downward copy: ctypes handles into it may
        # outlive this object, and calling into an unloaded library segfaults.
        self._state = None
        self._plan = None
