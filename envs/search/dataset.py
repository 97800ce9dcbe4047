"""A question set with its corpus: the offline build or a user's Search-R1 data folder, loaded
once per process and shared by every env copy in it."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from seed_gym.envs.search.build import build_corpora
from seed_gym.envs.search.corpus import Corpus
from seed_gym.envs.search.loaders import discover_splits, load_corpus
from seed_gym.envs.search.questions import SEARCH_R1_TRAIN, QAItem


@dataclass
class QADataset:
    name: str
    splits: dict[str, list[QAItem]]
    corpus_path: Path | None
    _corpus: Corpus | None = None

    def __post_init__(self):
        self.by_id = {q.id: q for items in self.splits.values() for q in items}

    @property
    def corpus(self) -> Corpus:
        if self._corpus is None:
            if self.corpus_path is None:
                raise ValueError(
                    f"dataset {self.name!r} has no corpus; pass corpus=PATH or a retrieval server URL"
                )
            self._corpus = load_corpus(self.corpus_path)
        return self._corpus

    def has_corpus(self) -> bool:
        return self.corpus_path is not None


_CACHE: dict[tuple, QADataset] = {}
_LOCK = threading.Lock()


def load_dataset(
    data: str = "offline",
    corpus: str | None = None,
    train_datasets: tuple[str, ...] = SEARCH_R1_TRAIN,
) -> QADataset:
    """``"offline"`` (built on demand) or a folder in a layout ``discover_splits`` reads; the
    corpus defaults to ``corpus.jsonl`` (or ``wiki-18.jsonl``) in that folder."""
    key = (data, corpus, tuple(train_datasets))
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        root = build_corpora() if data == "offline" else Path(data).expanduser()
        splits = discover_splits(root, tuple(train_datasets))
        corpus_path = Path(corpus).expanduser() if corpus else None
        if corpus_path is None:
            corpus_path = next(
                (root / n for n in ("corpus.jsonl", "wiki-18.jsonl") if (root / n).exists()), None
            )
        if corpus_path is not None and not corpus_path.exists():
            raise FileNotFoundError(f"corpus {corpus_path} does not exist")
        ds = _CACHE[key] = QADataset(str(data), splits, corpus_path)
        return ds
