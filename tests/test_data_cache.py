"""The data cache under concurrent first use and damage (issue 28): processes started together on
an empty cache build each data set once and all read it; a truncated or changed cached file is
rebuilt after a one-line warning instead of crashing or serving fewer questions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

from seed_gym.data import build_lock, cache_root
from seed_gym.envs.search import dataset as search_dataset
from seed_gym.envs.search.build import build_corpora, damage
from seed_gym.envs.search.dataset import load_dataset
from seed_gym.envs.search.loaders import discover_splits
from seed_gym.envs.webshop.build import build_catalog, is_built

# one worker: count the builds (the generators are wrapped), wait for the start signal, then use
# both data sets the way an env does: build on first use, read every file
WORKER = """
import json, sys, time
from pathlib import Path
import seed_gym.envs.search.build as search_build
import seed_gym.envs.webshop.build as webshop_build

builds = []
def counted(fn, name):
    def wrapper(*args, **kwargs):
        builds.append(name)
        return fn(*args, **kwargs)
    return wrapper
webshop_build.generate = counted(webshop_build.generate, "webshop")
search_build.make_splits = counted(search_build.make_splits, "search")

from seed_gym.envs.search.dataset import load_dataset
from seed_gym.envs.webshop.catalog import load_catalog

go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.005)
catalog = load_catalog(num_products=12, seed=5)
dataset = load_dataset("offline")
print(json.dumps({"builds": builds, "products": len(catalog.products),
                  "questions": {s: len(q) for s, q in dataset.splits.items()}}))
"""


def test_processes_started_together_build_once(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEED_GYM_CACHE", str(cache))
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    time.sleep(0.5)  # let them import and wait at the start line (late ones still race)
    go.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-2000:]
        results.append(json.loads(out))
    builds = [b for r in results for b in r["builds"]]
    assert sorted(builds) == ["search", "webshop"]  # once each, whoever came first
    assert len({json.dumps(r["questions"]) for r in results}) == 1
    assert {r["products"] for r in results} == {12}
    assert not list(cache.rglob("*.tmp*"))  # no temp file or folder left behind


def test_build_lock_excludes_threads_and_processes(tmp_path):
    """Two holders in one process exclude each other too (a flock per open file)."""
    import threading

    inside, overlaps = [], []

    def hold():
        with build_lock(tmp_path / "data"):
            inside.append(1)
            overlaps.append(len(inside))
            time.sleep(0.05)
            inside.pop()

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [1, 1, 1, 1]
    assert (tmp_path / "data.lock").exists() and not (tmp_path / "data").exists()


@pytest.fixture
def offline(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path))
    return build_corpora()


@pytest.mark.parametrize(
    "cut", ["at a line end", "mid-line", "same size, other bytes", "missing", "corpus"]
)
def test_damaged_search_data_is_rebuilt_with_a_warning(offline, cut):
    name = "corpus.jsonl" if cut == "corpus" else "train.jsonl"
    path = offline / name
    data = path.read_bytes()
    full = discover_splits(offline)
    if cut == "at a line end":  # used to serve fewer train questions in silence
        path.write_bytes(data[: data.rindex(b"\n", 0, len(data) // 2) + 1])
    elif cut == "mid-line":  # used to end every env with "line N is not valid JSON"
        path.write_bytes(data[: len(data) // 2])
    elif cut == "same size, other bytes":
        path.write_bytes(data.replace(b"?", b"!", 1))
    elif cut == "missing":
        path.unlink()
    else:
        path.write_bytes(data[:1000])
    assert damage(offline) is not None
    with pytest.warns(UserWarning, match=f"search data {re.escape(str(offline))}: {name} "):
        assert build_corpora() == offline
    assert path.read_bytes() == data and damage(offline) is None
    assert discover_splits(offline) == full


def test_a_corrupt_search_manifest_is_rebuilt(offline):
    (offline / "manifest.json").write_text('{"sha256": ')
    with pytest.warns(UserWarning, match="manifest.json is corrupt; rebuilding it"):
        build_corpora()
    assert damage(offline) is None


def test_the_offline_dataset_loads_through_a_truncated_file(offline, monkeypatch):
    monkeypatch.setattr(search_dataset, "_CACHE", {})  # the per-process cache would hide it
    (offline / "seen.jsonl").write_bytes((offline / "seen.jsonl").read_bytes()[:5000])
    with pytest.warns(UserWarning, match="seen.jsonl has 5000 bytes"):
        ds = load_dataset("offline")
    assert len(ds.splits["seen"]) == 300


@pytest.mark.parametrize("name", ["items_ins_v2.json", "reviews.json"])
def test_a_damaged_webshop_catalog_is_rebuilt_with_a_warning(tmp_path, monkeypatch, name):
    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path))
    path = build_catalog(n_products=12, seed=5)
    data = (path / name).read_bytes()
    (path / name).write_bytes(data.replace(b'"', b"'", 1))  # same size, no longer JSON
    assert not is_built(path)
    with pytest.warns(
        UserWarning, match=f"{name} does not match its sha256 in the manifest; rebuilding"
    ):
        build_catalog(n_products=12, seed=5)
    assert (path / name).read_bytes() == data
    (path / name).write_bytes(data[:100])
    with pytest.warns(UserWarning, match=f"{name} has 100 bytes, the manifest says {len(data)}"):
        build_catalog(n_products=12, seed=5)
    assert is_built(path) and cache_root() == tmp_path
