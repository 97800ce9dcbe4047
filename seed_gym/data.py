"""Where generated and real data lives: one cache folder, builders per dataset, manifests.

Nothing generated is committed. ``seed-gym data build NAME`` (or first use) builds a dataset into
``cache_dir(NAME)``; ``$SEED_GYM_CACHE`` moves the whole cache (default ``~/.cache/seed-gym``).

Builders go through ``build_once``: it checks the data against its manifest (``files_damage``),
and builds under ``build_lock(folder)`` when it is missing or damaged (rebuilding the latter
after a one-line warning); each file is written under a temp name unique to the process and
renamed into place. So env workers started together on an empty cache build a data set once and
the others wait for it (issue 28: four of nine crashed).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from seed_gym.jsonl import temp_path

# name -> "module:function"; function(force: bool = False) -> Path (the built folder)
BUILDERS: dict[str, str] = {
    "alfworld": "seed_gym.envs.alfworld.build:build_suite",
    "webshop": "seed_gym.envs.webshop.build:build_catalog",
    "search": "seed_gym.envs.search.build:build_corpora",
    "smollm2": "seed_gym.trainer.backends.models:build_smollm2",
}


def cache_root() -> Path:
    return Path(os.environ.get("SEED_GYM_CACHE", Path.home() / ".cache" / "seed-gym")).expanduser()


def cache_dir(*parts: str) -> Path:
    """``cache_root()/parts``, created on demand."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def builder(name: str) -> Callable[..., Path]:
    if name not in BUILDERS:
        raise KeyError(f"no dataset {name!r}; known: {', '.join(sorted(BUILDERS))}")
    module, _, fn = BUILDERS[name].partition(":")
    return getattr(importlib.import_module(module), fn)


def build(name: str, force: bool = False, **kwargs: Any) -> Path:
    return builder(name)(force=force, **kwargs)


@contextlib.contextmanager
def build_lock(folder: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``FOLDER.lock`` (a sibling, so the folder itself can be
    replaced) while a data set is checked and built; other processes wait here. The lock file
    stays: removing it would let a waiter and a newcomer lock two different files."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes, also on a crash
        yield


def build_once(
    folder: Path,
    damage: Callable[[Path], str | None],
    build: Callable[[], None],
    *,
    force: bool = False,
    what: str = "data",
) -> Path:
    """``folder`` once ``damage(folder)`` finds nothing wrong, calling ``build()`` under
    ``build_lock`` first if it does (or if ``force``). ``damage`` returns why the data cannot be
    used, ``"missing"`` before the first build, or None; damaged data is rebuilt after a one-line
    warning instead of crashing its reader or serving less."""
    if not force and damage(folder) is None:  # the usual case takes no lock
        return folder
    with build_lock(folder):
        why = "forced" if force else damage(folder)  # another process may have built it meanwhile
        if why is None:
            return folder
        if why not in ("missing", "forced"):
            warnings.warn(f"{what} {folder}: {why}; rebuilding it", stacklevel=3)
        build()
    return folder


def files_damage(folder: Path, recorded: dict[str, tuple[int | None, str]]) -> str | None:
    """Why a file of ``folder`` differs from its recorded ``(bytes, sha256)`` (bytes None: not
    recorded), or None. The size catches a truncation at once; the hash, same-size damage."""
    for name, (size, sha) in recorded.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if size is not None and path.stat().st_size != size:
            return f"{name} has {path.stat().st_size} bytes, the manifest says {size}"
        if file_sha256(path) != sha:
            return f"{name} does not match its sha256 in the manifest"
    return None


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON through a temp file and rename, so a killed build never leaves half a file
    (and two writers never rename each other's temp file)."""
    path = Path(path)
    tmp = temp_path(path)
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
    os.replace(tmp, path)


def read_json(path: str | Path, what: str = "data file") -> Any:
    """Load JSON with an error that names the file when it is missing or corrupt."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{what} {path} is corrupt: {e}") from None
