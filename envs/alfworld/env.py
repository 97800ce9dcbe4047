"""``seed_gym/ALFWorld-v0``: text ALFWorld on the real alfworld + textworld engine."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

from seed_gym.core import SeedEnv
from seed_gym.envs.alfworld.accel import TranslationCache
from seed_gym.envs.alfworld.engine import NOTHING_HAPPENS, Engine, Frame, Game, read_json
from seed_gym.envs.alfworld.generate import GENERATOR_VERSION, TASK_TYPES
from seed_gym.envs.alfworld.layout import SPLIT_DIRS
from seed_gym.envs.alfworld.realdata import real_split, resolve_data_dir, source_info
from seed_gym.splits import SPLITS, SplitManifest

MAX_COMMAND_CHARS = 200
WIN_REWARD = 10.0
EXPERTS = ("state", "planner")


class ALFWorldEnv(SeedEnv):
    """Household tasks in text (ALFWorld), played by the real ALFWorld engine.

    Description:
        ALFWorld's TextWorld engine (``textworld.envs.PddlEnv`` + ``AlfredDemangler``) runs one
        ALFRED task per episode: find, take, transform (heat / cool / clean / look under a lamp)
        and place objects in a room of receptacles. Six task types: pick_and_place_simple,
        look_at_obj_in_light, pick_clean_then_place_in_recep, pick_heat_then_place_in_recep,
        pick_cool_then_place_in_recep, pick_two_obj_and_place (``info["task_type"]``).
        Games come from the generated offline suite (``seed-gym data build alfworld``, built on
        first use) or, with ``$ALFWORLD_DATA`` / ``data_dir=``, from the official ``json_2.1.1``.

    Observation:
        ``{"text": str}``, exactly what the engine prints. The first one reads "-= Welcome to
        TextWorld, ALFRED! =-", "You are in the middle of a room. Looking quickly around you, you
        see ..." and "Your task is to: ...". ``task_description`` holds the task sentence.
        ``info["admissible_actions"]`` lists the engine's admissible commands without ``help``.

    Actions:
        A command string (``go to fridge 1``, ``take apple 2 from countertop 1``, ``heat apple 2
        with microwave 1``, ...), matched after stripping, lowercasing and collapsing spaces.
        Every well-formed command goes to the engine; one that is not admissible gets the
        engine's "Nothing happens." and leaves the state unchanged. ``info["action_is_valid"]``
        is True iff the command was admissible. Garbage (not a string, empty, control characters,
        over 200 characters) never reaches the engine: "Nothing happens.", invalid.

    Rewards:
        10 on the step that wins (``info["won"]`` from the engine's goal check), else 0.

    Termination:
        ``terminated`` when the task is done; ``truncated`` after 50 steps (registry TimeLimit).

    Splits:
        ``train`` (generated: ``$SEED_GYM_ALFWORLD_TRAIN`` games, default 360, ``full`` = 3,553),
        ``seen`` (140 held-out games in train floor plans), ``unseen`` (134 games in ALFRED's
        valid_unseen floor plans, never in train). With real data: ``train`` / ``valid_seen`` /
        ``valid_unseen`` of ``json_2.1.1``.

    Version History:
        v0: initial release (generator ``alfgen-1``).
    """

    env_id = "seed_gym/ALFWorld-v0"
    modalities = ("text",)

    def __init__(
        self,
        split: str = "train",
        modality: str | None = None,
        render_mode: str | None = None,
        data_dir: str | Path | None = None,
        train_size: int | None = None,
        expert: str = "state",
        pool_size: int = 2,
    ):
        super().__init__(split, modality, render_mode)
        if expert not in EXPERTS:
            raise ValueError(f"expert must be one of {EXPERTS}, not {expert!r}")
        self.data_dir = None if data_dir is None else str(data_dir)
        self.train_size = train_size
        self.expert = expert
        self.pool_size = max(1, int(pool_size))
        self._json_root: Path | None = None
        self._meta: dict[str, Any] = {}
        self._games: dict[str, dict[str, Game]] = {}
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engine: Engine | None = None
        self._history: list[
            str
        ] = []  # admissible commands since reset, to rebuild after unpickling
        self._text = ""

    # --- data ---------------------------------------------------------------------------------
    def _resolve(self) -> None:
        if self._json_root is not None:
            return
        real = resolve_data_dir(self.data_dir)
        if real is not None:
            self._json_root, self._meta = real, source_info(real)
            return
        # lazy: `python -m seed_gym.envs.alfworld.build` imports this package first (runpy)
        from seed_gym.envs.alfworld.build import build_suite, default_train_size

        n_train = self.train_size or default_train_size()
        root = build_suite(n_train=n_train)
        self._json_root = root / "json_2.1.1"
        self._meta = {
            "source": "generated",
            "generator": GENERATOR_VERSION,
            "root": str(root),
            "train_size": n_train,
        }

    def _split_games(self, split: str) -> dict[str, Game]:
        if split not in self._games:
            self._resolve()
            assert self._json_root is not None
            if self._meta.get("source") == "generated" and "train_size" in self._meta:
                # lazy: `python -m seed_gym.envs.alfworld.build` imports this package first (runpy)
                from seed_gym.envs.alfworld.build import suite_games

                n = self._meta["train_size"] if split == "train" else None
                records = suite_games(self._json_root.parent, split, n)
                folder = self._json_root / SPLIT_DIRS[split]
                games = [
                    Game(r["task_id"], folder / r["task_id"] / "game.tw-pddl", r["task_type"])
                    for r in records
                ]
            else:
                games = real_split(self._json_root, split)
            self._games[split] = {g.task_id: g for g in games}
        return self._games[split]

    def manifest(self, split: str) -> SplitManifest:
        games = self._split_games(split)
        types = {t: 0 for t in TASK_TYPES}
        for g in games.values():
            types[g.task_type] += 1
        meta = {**self._meta, "task_types": types}
        version = GENERATOR_VERSION if meta.get("source") == "generated" else "json_2.1.1"
        return SplitManifest(self.env_id, split, tuple(games), version=version, meta=meta)

    def content_key(self, task_id: str) -> str:
        """The game's PDDL problem (initial state and goal), hashed: the same problem under two
        trial folders is the same game."""
        for split in SPLITS:
            game = self._split_games(split).get(task_id)
            if game is not None:
                problem = read_json(game.path, "ALFWorld game file").get("pddl_problem", "")
                return hashlib.sha256(str(problem).encode()).hexdigest()
        raise ValueError(f"task_id {task_id!r} is in no split of {self.env_id}")

    # --- engines ------------------------------------------------------------------------------
    def _engine_for(self, game: Game) -> Engine:
        """A loaded engine for ``game``: kept ones are reused (LRU pool of ``pool_size``)."""
        if game.task_id in self._engines:
            self._engines.move_to_end(game.task_id)
            return self._engines[game.task_id]
        if len(self._engines) >= self.pool_size:
            _, engine = self._engines.popitem(last=False)
        else:
            # lazy: `python -m seed_gym.envs.alfworld.build` imports this package first (runpy)
            from seed_gym.envs.alfworld.build import translation_dir

            engine = Engine(
                TranslationCache(translation_dir(), share_replan=self.expert != "planner"),
                planner=self.expert == "planner",
            )
        engine.load(game)
        self._engines[game.task_id] = engine
        return engine

    def _live(self) -> Engine:
        """The engine of the current episode, rebuilt and replayed after unpickling."""
        if self._engine is None:
            if self.task_id is None:
                raise RuntimeError("call reset() before step()")
            self._engine = self._engine_for(self._split_games(self.split)[self.task_id])
            self._engine.reset()
            for command in self._history:
                self._engine.step(command)
        return self._engine

    # --- gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task_id = self._choose_task(options)
        game = self._split_games(self.split)[task_id]
        self._engine = self._engine_for(game)
        frame = self._engine.reset()
        self.task_id, self.task_type = task_id, game.task_type
        self.task_description = _task_sentence(frame.feedback)
        self._history = []
        self._text = frame.feedback
        return {"text": frame.feedback}, self._frame_info(frame)

    def step(self, action: Any):
        engine = self._live()
        already_won = engine.won
        command = _command(action)
        if command is None:
            frame = Frame(NOTHING_HAPPENS, engine.admissible, engine.won, valid=False)
        else:
            frame = engine.step(command)
            if frame.valid:
                self._history.append(command)
        self._text = frame.feedback
        # the win pays once: steps after the end (the game still answers them) pay nothing
        reward = WIN_REWARD if (frame.won and frame.valid and not already_won) else 0.0
        return {"text": frame.feedback}, reward, frame.won, False, self._frame_info(frame)

    def _frame_info(self, frame: Frame) -> dict[str, Any]:
        visible = [a for a in frame.admissible if a != "help"]
        return self._info(won=frame.won, action_is_valid=frame.valid, admissible_actions=visible)

    def render_text(self) -> str:
        return self._text

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()
        self._engine = None
        super().close()

    # --- experts ------------------------------------------------------------------------------
    def _plan(self) -> list[str]:
        engine = self._live()
        return engine.planner_plan() if self.expert == "planner" else engine.expert_plan()

    def oracle_action(self) -> str:
        """The next command of the expert's plan (``look`` once nothing is left to do)."""
        plan = self._plan()
        return plan[0] if plan else "look"

    def privileged_info(self) -> dict[str, Any]:
        engine = self._live()
        params = engine.traj.get("pddl_params", {})
        return {
            "expert": self.expert,
            "expert_plan": self._plan(),
            "task_params": {k: v for k, v in params.items() if isinstance(v, (str, bool))},
            "walkthrough": list(engine.walkthrough or []),
        }

    # --- pickling (subprocess / Ray workers, deepcopy) ----------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_engines"] = OrderedDict()  # C library handles do not pickle; rebuilt lazily
        state["_engine"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _command(action: Any) -> str | None:
    """The command the engine should see, or None for garbage."""
    if not isinstance(action, str) or len(action) > MAX_COMMAND_CHARS:
        return None
    command = " ".join(action.split()).lower()
    if not command or not command.isprintable():
        return None
    return command


def _task_sentence(intro: str) -> str:
    """ "Your task is to: put a clean mug in coffeemachine." -> "put a clean mug in coffeemachine"."""
    marker = "Your task is to:"
    if marker not in intro:
        return ""
    return intro.split(marker, 1)[1].strip().splitlines()[0].rstrip(".").strip()
