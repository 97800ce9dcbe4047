"""Where derived models live in the cache: the format warm-up and SEED Stage 1 are built once
per (kind, env, starting model, settings, transformers version) and reused by every run.

A folder's name ends with a digest of its key, so any change of a setting builds a new one; a
build writes a temporary folder and renames it (``publish``), so a killed build never leaves a
half-written model that a later run would load. ``in_child`` runs a build in a fresh process, so
the memory its fine-tuning touched goes back to the system before the run trains (in-process, a
SmolLM2 run kept ~7 GB resident after its Stage 1).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import shutil
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from seed_gym.data import cache_dir


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40]


def base_key(base: str) -> str:
    """A starting model as a key: a built-in name as it is, a folder by its resolved path
    (rebuild with ``force`` after changing the folder in place)."""
    return base if base in ("smollm2", "tiny") else str(Path(base).expanduser().resolve())


def model_cache_dir(kind: str, env_id: str, base: str, key: dict[str, Any]) -> Path:
    """``$SEED_GYM_CACHE/models/<kind>-<env>-<base>-<digest>-tf<version>`` for ``key`` (any JSON
    object; the transformers version is added to it)."""
    import transformers

    text = json.dumps({**key, "transformers": transformers.__version__}, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    name = f"{kind}-{slug(env_id.split('/')[-1])}-{slug(Path(base).name)}-{digest}"
    return cache_dir("models") / f"{name}-tf{transformers.__version__}"


def staging_dir(out: Path) -> Path:
    """An empty temporary folder beside ``out`` for this process to build into."""
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    return tmp


def publish(tmp: Path, out: Path) -> None:
    """Move a finished build into place (replacing an older one)."""
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


T = TypeVar("T")


def in_child(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a spawned child process (a few seconds of imports); its
    exception is raised here. ``fn`` and the arguments must pickle (module-level functions,
    dataclass configs)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def here(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in this process (``in_child``'s in-process twin)."""
    return fn(*args, **kwargs)
