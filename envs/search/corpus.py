"""Passages and corpora in the Search-R1 / FlashRAG format.

A corpus is a jsonl file of ``{"id": str, "contents": str}`` rows, where ``contents`` is the title
in double quotes on the first line and the passage text after it (``"Aaron"\\nAaron is ...``), as in
the ``wiki-18.jsonl`` dump Search-R1 retrieves from. Row order is the row number a FAISS index uses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seed_gym.jsonl import temp_path


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    # the row's ``contents`` when it is not exactly '"title"\ntext' (kept so the agent sees the
    # corpus bytes, as Search-R1 shows them); None for the usual wiki-18 rows, to save memory
    raw: str | None = field(default=None, compare=False, repr=False)

    @property
    def contents(self) -> str:
        """The corpus row's ``contents``: as read, or ``"title"\ntext`` for built passages."""
        return self.raw if self.raw is not None else f'"{self.title}"\n{self.text}'

    @classmethod
    def from_contents(cls, id: str, contents: str) -> Passage:
        first, _, rest = contents.partition("\n")
        if not rest:  # a one-line passage has no title line
            title, text = "", first.strip()
        else:
            title, text = first.strip().strip('"'), rest.strip()
        canonical = f'"{title}"\n{text}'
        return cls(str(id), title, text, None if contents == canonical else contents)

    def to_row(self) -> dict[str, str]:
        return {"id": self.id, "contents": self.contents}


class Corpus(Sequence[Passage]):
    """An ordered, id-addressable list of passages with a content hash (the cache key of indexes)."""

    def __init__(
        self, passages: Iterable[Passage], name: str = "corpus", fingerprint: str | None = None
    ):
        self.passages: tuple[Passage, ...] = tuple(passages)
        if not self.passages:
            raise ValueError(f"corpus {name!r} has no passages")
        self.name = name
        self._index = {p.id: i for i, p in enumerate(self.passages)}
        if len(self._index) != len(self.passages):
            raise ValueError(f"corpus {name!r} repeats passage ids")
        self._fingerprint = fingerprint

    def __len__(self) -> int:
        return len(self.passages)

    def __getitem__(self, i):  # type: ignore[override]
        return self.passages[i]

    def position(self, passage_id: str) -> int:
        return self._index[passage_id]

    def get(self, passage_id: str) -> Passage | None:
        i = self._index.get(passage_id)
        return None if i is None else self.passages[i]

    @property
    def fingerprint(self) -> str:
        """sha256 over ids and contents in order; indexes are cached under this key."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            for p in self.passages:
                h.update(p.id.encode())
                h.update(b"\t")
                h.update(p.contents.encode())
                h.update(b"\n")
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def write_jsonl(self, path: str | Path) -> Path:
        path = Path(path)
        tmp = temp_path(path)  # unique per process: two writers never rename each other's file
        with open(tmp, "w", encoding="utf-8") as f:
            for p in self.passages:
                f.write(json.dumps(p.to_row(), ensure_ascii=False) + "\n")
        tmp.replace(path)
        return path
