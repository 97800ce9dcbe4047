"""Build the offline ALFWorld suite: ``seed-gym data build alfworld`` (or first use of the env).

Splits, shaped like ALFWorld's ``json_2.1.1``:

- ``train``: ``$SEED_GYM_ALFWORLD_TRAIN`` games (default ``DEFAULT_TRAIN`` so the whole build
  fits in about five minutes on two cores; ``FULL_TRAIN`` = 3,553 is the size of the original),
  in the 116 floor plans that are not held out;
- ``seen`` (``valid_seen``): 140 new games in floor plans of the first ``SEEN_POOL`` train games;
- ``unseen`` (``valid_unseen``): 134 games in ALFRED's four ``valid_unseen`` floor plans
  (FloorPlan10, 219, 308, 424), which never appear in train.

Task types go round-robin (index ``i`` has type ``TASK_TYPES[i % 6]``), so every split is balanced
and the per-type success rates are comparable. Game ``i`` of a split is a pure function of
``(split, i)``: growing train adds games and never changes the first ones.

Every game enters a split only after the real engine loaded it, its first observation is the
official one ("You are in the middle of a room..." and "Your task is to: ..."), and the expert's
plan, executed command by command through the engine, ends with ``won``. A rejected draw
(malformed, ``SystemExit`` from the translator, unsolved) is replaced by the next draw of the same
index and counted in the manifest. The build also stores each game's PDDL translation
(~100 KB), so the first reset of a game is fast in any process.

A parallel build runs in a process of its own (``python -m seed_gym.envs.alfworld.build``), never
with a pool inside the caller: ``spawn`` workers import the caller's ``__main__``, and a user
script without an ``if __name__ == "__main__"`` guard then called ``make`` again in every worker,
which blocked on the build lock the parent held (from stdin the workers respawned endlessly).
The builder's own ``__main__`` is guarded, so its pool is safe; its progress goes to stderr.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from seed_gym.data import cache_dir, file_sha256, write_json_atomic
from seed_gym.envs.alfworld.accel import TranslationCache
from seed_gym.envs.alfworld.engine import Engine, Game
from seed_gym.envs.alfworld.generate import (
    GENERATOR_VERSION,
    TASK_TYPES,
    candidate_tasks,
    domain_text,
    floor_plans,
    generate,
    grammar_text,
    load_scene,
    write_game,
)
from seed_gym.envs.alfworld.layout import SPLIT_DIRS
from seed_gym.splits import content_hash

TRAIN_ENV_VAR = "SEED_GYM_ALFWORLD_TRAIN"
DEFAULT_TRAIN = 360
FULL_TRAIN = 3553
SPLIT_SIZES = {"seen": 140, "unseen": 134}
UNSEEN_FLOOR_PLANS = (10, 219, 308, 424)  # ALFRED's valid_unseen scenes
SEEN_POOL = 240  # seen games reuse floor plans of the first SEEN_POOL train games
MAX_DRAWS = 40
CHECKPOINT_EVERY = 25
_SPLIT_SALT = {"train": 11, "seen": 23, "unseen": 37}


def default_train_size() -> int:
    value = os.environ.get(TRAIN_ENV_VAR, "").strip().lower()
    if not value:
        return DEFAULT_TRAIN
    if value == "full":
        return FULL_TRAIN
    try:
        n = int(value)
    except ValueError:
        raise ValueError(
            f"${TRAIN_ENV_VAR} must be a number of games or 'full', not {value!r}"
        ) from None
    if n < 1:
        raise ValueError(f"${TRAIN_ENV_VAR} must be positive, not {n}")
    return n


def default_root() -> Path:
    return cache_dir("alfworld", GENERATOR_VERSION)


def translation_dir() -> Path:
    """Where PDDL translations are stored, keyed by content (shared by generated and real games)."""
    try:
        fd = metadata.version("fast-downward-textworld")
    except metadata.PackageNotFoundError:  # pragma: no cover
        fd = "unknown"
    return cache_dir("alfworld", f"translations-fd{fd}")


# --- which scene each game uses ---------------------------------------------------------------
@cache
def split_floor_plans(split: str) -> tuple[int, ...]:
    plans = floor_plans()
    if split == "unseen":
        return tuple(p for p in plans if p in UNSEEN_FLOOR_PLANS)
    return tuple(p for p in plans if p not in UNSEEN_FLOOR_PLANS)


@cache
def _supporting(split: str, task_type: str) -> tuple[int, ...]:
    return tuple(s for s in split_floor_plans(split) if candidate_tasks(load_scene(s), task_type))


def scene_for(split: str, index: int) -> int:
    """The floor plan of game ``index`` of ``split`` (independent of how the draw goes)."""
    task_type = TASK_TYPES[index % len(TASK_TYPES)]
    if split == "seen":
        # a floor plan some early train game of the same type is in ("rooms seen in training")
        rng = np.random.default_rng([_SPLIT_SALT[split], index, 1])
        same_type = range(index % len(TASK_TYPES), SEEN_POOL, len(TASK_TYPES))
        return scene_for("train", int(rng.choice(list(same_type))))
    scenes = _supporting(split, task_type)
    rng = np.random.default_rng([_SPLIT_SALT[split], index, 1])
    return int(scenes[int(rng.integers(len(scenes)))])


def game_seed(split: str, index: int, draw: int) -> int:
    return _SPLIT_SALT[split] * 10**10 + index * 100 + draw


# --- one game -----------------------------------------------------------------------------------
_ENGINE = None


def _engine():
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = Engine(TranslationCache(translation_dir(), maxsize=4))
    return _ENGINE


def validate(game_path: Path, task_id: str, task_type: str) -> list[str]:
    """The expert's winning plan, executed through the real engine; raises ``ValueError`` (or
    ``GameFileError``) saying why a game is not fit for a split."""
    engine = _engine()
    engine.load(Game(task_id, game_path, task_type))
    frame = engine.reset()
    if (
        "You are in the middle of a room" not in frame.feedback
        or "Your task is to:" not in frame.feedback
    ):
        raise ValueError(f"unexpected first observation: {frame.feedback[:120]!r}")
    if frame.won:
        raise ValueError("the goal holds before the first action")
    plan = engine.expert_plan()
    if not plan:
        raise ValueError("the expert found no plan")
    for command in plan:
        frame = engine.step(command)
        if not frame.valid:
            raise ValueError(f"expert command {command!r} was not admissible")
    if not frame.won:
        raise ValueError(f"the expert plan {plan} did not win")
    return plan


def build_one(args: tuple[str, int, str]) -> dict:
    """Draw, write and validate game ``index`` of ``split`` under ``root``."""
    split, index, root = args
    task_type = TASK_TYPES[index % len(TASK_TYPES)]
    scene = scene_for(split, index)
    split_dir = Path(root) / "json_2.1.1" / SPLIT_DIRS[split]
    reasons: list[str] = []
    for draw in range(MAX_DRAWS):
        seed = game_seed(split, index, draw)
        try:
            problem = generate(scene, task_type, seed)
        except ValueError as e:
            reasons.append(str(e))
            continue
        folder = split_dir / problem.relpath
        path = write_game(problem, folder, walkthrough=None)
        try:
            plan = validate(path, problem.relpath, task_type)
        except (ValueError, SystemExit) as e:  # GameFileError is a ValueError
            reasons.append(f"{type(e).__name__}: {e}")
            shutil.rmtree(folder, ignore_errors=True)
            continue
        write_game(problem, folder, walkthrough=plan)
        return {
            "index": index,
            "task_id": problem.relpath,
            "task_type": task_type,
            "floor_plan": problem.scene.floor_plan,
            "seed": seed,
            "expert_steps": len(plan),
            "sha256": file_sha256(path),
            "rejected": len(reasons),
        }
    raise RuntimeError(
        f"{split} game {index} ({task_type}, FloorPlan{scene}): no valid draw in {MAX_DRAWS}: {reasons[-3:]}"
    )


# --- the suite ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One builder at a time per suite folder (subprocess env workers may all start at once)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".build.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_manifest(root: Path) -> dict | None:
    path = Path(root) / "manifest.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if data.get("generator") == GENERATOR_VERSION else None


def _versions() -> dict:
    out = {}
    for dist in ("alfworld", "textworld", "fast-downward-textworld"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover
            out[dist] = None
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def build_suite(
    force: bool = False,
    n_train: int | None = None,
    n_seen: int = SPLIT_SIZES["seen"],
    n_unseen: int = SPLIT_SIZES["unseen"],
    root: str | Path | None = None,
    workers: int | None = None,
    verbose: bool = True,
) -> Path:
    """Build (or top up) the generated suite and return its root (``<root>/json_2.1.1`` is in the
    official layout, ``<root>/manifest.json`` lists the games with their hashes).

    Existing games are kept: asking for more train games only adds the missing indices. ``force``
    rebuilds everything. ``workers`` defaults to the number of CPUs.
    """
    root = Path(root) if root is not None else default_root()
    want = {"train": n_train or default_train_size(), "seen": n_seen, "unseen": n_unseen}
    parallel = (workers if workers is not None else os.cpu_count() or 1) > 1
    if parallel and not _IN_BUILDER:
        if force or _missing(root, want):
            _build_in_subprocess(root, want, force=force, workers=workers, verbose=verbose)
        return root
    with _locked(root):
        manifest = None if force else read_manifest(root)
        if force and (root / "json_2.1.1").exists():
            shutil.rmtree(root / "json_2.1.1")
        have = (
            {s: {g["index"]: g for g in manifest["splits"][s]["games"]} for s in SPLIT_DIRS}
            if manifest
            else {s: {} for s in SPLIT_DIRS}
        )
        todo = [(s, i, str(root)) for s in SPLIT_DIRS for i in range(want[s]) if i not in have[s]]
        if not todo:
            return root
        start = time.time()
        if verbose:
            print(
                f"[seed-gym] building {len(todo)} ALFWorld games into {root} ...",
                file=sys.stderr,
                flush=True,
            )
        for n, rec in enumerate(_run(todo, workers, verbose), 1):
            have[rec.pop("split")][rec["index"]] = rec
            if n % CHECKPOINT_EVERY == 0:  # an interrupted build resumes from here
                _write_manifest(root, have, want, time.time() - start)
        _write_manifest(root, have, want, time.time() - start)
        if verbose:
            print(
                f"[seed-gym] ALFWorld suite ready in {time.time() - start:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    return root


_IN_BUILDER = False  # True in ``python -m seed_gym.envs.alfworld.build``, whose pool is safe


def _missing(root: Path, want: dict[str, int]) -> bool:
    manifest = read_manifest(root)
    if manifest is None:
        return True
    return any(len(manifest["splits"][s]["games"]) < want[s] for s in SPLIT_DIRS)


def _build_in_subprocess(
    root: Path, want: dict[str, int], *, force: bool, workers: int | None, verbose: bool
) -> None:
    """Run the build as ``python -m seed_gym.envs.alfworld.build`` and wait for it. The child
    takes the build lock itself, so concurrent callers queue on it instead of deadlocking."""
    cmd = [
        sys.executable,
        "-m",
        "seed_gym.envs.alfworld.build",
        "--root",
        str(root),
        "--train",
        str(want["train"]),
        "--seen",
        str(want["seen"]),
        "--unseen",
        str(want["unseen"]),
    ]
    cmd += ["--workers", str(workers)] if workers else []
    cmd += ["--force"] if force else []
    cmd += [] if verbose else ["--quiet"]
    if verbose:
        print(
            f"[seed-gym] first use: building the ALFWorld suite in a subprocess ({' '.join(cmd[1:4])})",
            file=sys.stderr,
            flush=True,
        )
    # stderr is inherited: the builder's progress lines reach the caller's terminal
    rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL).returncode
    if rc != 0 or _missing(root, want):
        raise RuntimeError(
            f"building the ALFWorld suite into {root} failed (exit code {rc}); its messages are "
            f"above. Rerun it alone with: {' '.join(cmd)}"
        )


def _write_manifest(
    root: Path, have: dict[str, dict[int, dict]], want: dict[str, int], seconds: float
) -> None:
    splits = {}
    for s in SPLIT_DIRS:
        games = [have[s][i] for i in sorted(have[s])]
        ids = [g["task_id"] for g in games[: want[s]]]
        splits[s] = {
            "dir": SPLIT_DIRS[s],
            "n": len(games),
            "sha256": content_hash(ids),
            "task_types": dict(sorted(Counter(g["task_type"] for g in games).items())),
            "floor_plans": sorted({g["floor_plan"] for g in games}, key=lambda f: int(f[9:])),
            "rejected_draws": sum(g["rejected"] for g in games),
            "games": games,
        }
    write_json_atomic(
        root / "manifest.json",
        {
            "generator": GENERATOR_VERSION,
            "versions": _versions(),
            "domain_sha256": _sha(domain_text()),
            "grammar_sha256": _sha(grammar_text()),
            "unseen_floor_plans": [f"FloorPlan{n}" for n in UNSEEN_FLOOR_PLANS],
            "seen_pool": SEEN_POOL,
            "build_seconds": round(seconds, 1),
            "splits": splits,
        },
    )


def _run(todo: list[tuple[str, int, str]], workers: int | None, verbose: bool) -> Iterator[dict]:
    workers = workers or max(1, min(len(todo), os.cpu_count() or 1))
    # a tqdm bar on stderr (games, rate, time left); a log file gets a line every 30 s, not a
    # redraw every 0.1 s
    bar = tqdm(total=len(todo), desc="[seed-gym] ALFWorld games", unit="game", file=sys.stderr,
               disable=not verbose, mininterval=0.5 if sys.stderr.isatty() else 30)  # fmt: skip

    def tick(rec: dict, split: str) -> dict:
        bar.update(1)
        rec["split"] = split
        return rec

    try:
        if workers == 1:
            for item in todo:
                yield tick(build_one(item), item[0])
            return
        # spawn, not fork: the parent may hold threads (pytest, torch) that fork would copy
        with mp.get_context("spawn").Pool(workers) as pool:
            for item, rec in zip(todo, pool.imap(build_one, todo, chunksize=4), strict=True):
                yield tick(rec, item[0])
    finally:
        bar.close()


def suite_games(root: Path, split: str, n: int | None = None) -> list[dict]:
    """Manifest records of ``split`` (the first ``n``), or [] when the suite lacks them."""
    manifest = read_manifest(root)
    if manifest is None:
        return []
    games = manifest["splits"][split]["games"]
    return games if n is None else games[:n]


def main(argv: list[str] | None = None) -> int:
    import argparse

    global _IN_BUILDER
    _IN_BUILDER = True
    p = argparse.ArgumentParser(
        prog="python -m seed_gym.envs.alfworld.build", description="Build the ALFWorld suite."
    )
    p.add_argument("--root", help="suite folder (default: the cache)")
    p.add_argument(
        "--train", type=int, default=None, help=f"train games (default: ${TRAIN_ENV_VAR})"
    )
    p.add_argument("--seen", type=int, default=SPLIT_SIZES["seen"])
    p.add_argument("--unseen", type=int, default=SPLIT_SIZES["unseen"])
    p.add_argument("--workers", type=int, default=None, help="processes (default: CPUs)")
    p.add_argument("--force", action="store_true", help="rebuild every game")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    root = build_suite(
        force=args.force,
        n_train=args.train,
        n_seen=args.seen,
        n_unseen=args.unseen,
        root=args.root,
        workers=args.workers,
        verbose=not args.quiet,
    )
    print(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
