"""Where generated and real data lives: one cache folder, builders per dataset, manifests.

Nothing generated is committed. ``seed-gym data build NAME`` (or first use) builds a dataset into
``cache_dir(NAME)``; ``$SEED_GYM_CACHE`` moves the whole cache (default ``~/.cache/seed-gym``).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON through a temp file and rename, so a killed build never leaves half a file."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
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
