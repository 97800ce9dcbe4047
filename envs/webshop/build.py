"""``seed-gym data build webshop``: write a generated catalog into the cache.

The folder ``cache_dir("webshop", "generated-v{VERSION}-n{n}-s{seed}")`` holds the three WebShop
files (``items_shuffle.json``, ``items_ins_v2.json``, ``reviews.json``) and ``manifest.json``
(sizes and sha256 of each file). ``seed_gym.data.build_once`` builds it under a lock (processes
starting together build once, the others wait), into a temporary folder that is renamed, so an
interrupted build never leaves a half catalog. An existing folder whose files match the manifest
is reused unless ``force``; one that does not (a truncated or changed file) is rebuilt after a
one-line warning.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from seed_gym.data import (
    build_once,
    cache_dir,
    file_sha256,
    files_damage,
    read_json,
    write_json_atomic,
)
from seed_gym.envs.webshop.generate import generate

CATALOG_VERSION = "1"
DEFAULT_PRODUCTS = 1000
FILES = ("items_shuffle.json", "items_ins_v2.json", "reviews.json")


def catalog_dir(n_products: int = DEFAULT_PRODUCTS, seed: int = 0) -> Path:
    return cache_dir("webshop") / f"generated-v{CATALOG_VERSION}-n{n_products}-s{seed}"


def damage(path: Path) -> str | None:
    """Why the catalog in ``path`` cannot be used (``"missing"`` before the first build), or
    None: a same-size file with other bytes used to be served, and fail to parse."""
    if not (path / "manifest.json").is_file():
        return "missing"
    try:
        files = read_json(path / "manifest.json", "WebShop catalog manifest")["files"]
        recorded = {f: (files[f]["bytes"], files[f]["sha256"]) for f in FILES}
    except (ValueError, KeyError, TypeError):
        return "manifest.json is corrupt"
    return files_damage(path, recorded)


def is_built(path: Path) -> bool:
    return damage(path) is None


def build_catalog(
    force: bool = False, n_products: int = DEFAULT_PRODUCTS, seed: int = 0, **_: object
) -> Path:
    """Generate (or reuse) the catalog of ``n_products`` products; returns its folder."""
    path = catalog_dir(n_products, seed)
    return build_once(
        path, damage, lambda: _build(path, n_products, seed), force=force, what="WebShop catalog"
    )


def _build(path: Path, n_products: int, seed: int) -> None:
    start = time.perf_counter()
    items, attrs, reviews = generate(n_products, seed)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, obj in zip(FILES, (items, attrs, reviews), strict=True):
        # compact JSON: the 100k catalog is ~100 MB indented
        (tmp / name).write_text(json.dumps(obj, separators=(",", ":")))
    files = {f: {"bytes": (tmp / f).stat().st_size, "sha256": file_sha256(tmp / f)} for f in FILES}
    write_json_atomic(
        tmp / "manifest.json",
        {
            "kind": "generated",
            "version": CATALOG_VERSION,
            "n_products": n_products,
            "seed": seed,
            "files": files,
            "build_seconds": round(time.perf_counter() - start, 2),
        },
    )
    # a folder cannot replace a non-empty one, so the old one goes first: under the lock no
    # other builder comes between the two (only ``force`` can pull files from under a reader)
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
