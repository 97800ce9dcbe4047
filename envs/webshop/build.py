"""``seed-gym data build webshop``: write a generated catalog into the cache.

The folder ``cache_dir("webshop", "generated-v{VERSION}-n{n}-s{seed}")`` holds the three WebShop
files (``items_shuffle.json``, ``items_ins_v2.json``, ``reviews.json``) and ``manifest.json``
(sizes and sha256 of each file). A build writes to a temporary folder and renames it, so an
interrupted build never leaves a half catalog; an existing, complete folder is reused unless
``force``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from seed_gym.data import cache_dir, file_sha256, read_json, write_json_atomic
from seed_gym.envs.webshop.generate import generate

CATALOG_VERSION = "1"
DEFAULT_PRODUCTS = 1000
FILES = ("items_shuffle.json", "items_ins_v2.json", "reviews.json")


def catalog_dir(n_products: int = DEFAULT_PRODUCTS, seed: int = 0) -> Path:
    return cache_dir("webshop") / f"generated-v{CATALOG_VERSION}-n{n_products}-s{seed}"


def is_built(path: Path) -> bool:
    manifest = path / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        meta = read_json(manifest, "WebShop catalog manifest")
    except ValueError:
        return False
    return all(
        (path / f).is_file() and (path / f).stat().st_size == meta["files"][f]["bytes"]
        for f in FILES
    )


def build_catalog(
    force: bool = False, n_products: int = DEFAULT_PRODUCTS, seed: int = 0, **_: object
) -> Path:
    """Generate (or reuse) the catalog of ``n_products`` products; returns its folder."""
    path = catalog_dir(n_products, seed)
    if is_built(path) and not force:
        return path
    start = time.perf_counter()
    items, attrs, reviews = generate(n_products, seed)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
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
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)
    try:
        os.replace(tmp, path)
    except OSError:
        # another process finished the same build first: keep its (identical) catalog
        shutil.rmtree(tmp, ignore_errors=True)
        if not is_built(path):
            raise
    return path
