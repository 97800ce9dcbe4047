"""Split manifests: the fixed, ordered task ids of train / seen / unseen, with a content hash.

``train`` is the training distribution, ``seen`` holds out tasks from that distribution, and
``unseen`` is a distribution shift (held-out rooms, categories, datasets, sizes). Evaluation visits
each task of a manifest exactly once (``iterate``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

SPLITS = ("train", "seen", "unseen")


def content_hash(items: Sequence[str]) -> str:
    """sha256 over the newline-joined items; order matters."""
    return hashlib.sha256("\n".join(items).encode()).hexdigest()


@dataclass(frozen=True)
class SplitManifest:
    env_id: str
    split: str
    task_ids: tuple[str, ...]
    version: str = "1"
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if self.split not in SPLITS:
            raise ValueError(f"unknown split {self.split!r}; choose one of {SPLITS}")
        if not self.task_ids:
            raise ValueError(f"{self.env_id} split {self.split!r} has no tasks")
        if len(set(self.task_ids)) != len(self.task_ids):
            raise ValueError(f"{self.env_id} split {self.split!r} repeats task ids")

    @property
    def hash(self) -> str:
        return content_hash(self.task_ids)

    def __len__(self) -> int:
        return len(self.task_ids)

    def to_dict(self) -> dict:
        return {
            "env_id": self.env_id,
            "split": self.split,
            "version": self.version,
            "n_tasks": len(self.task_ids),
            "sha256": self.hash,
            **self.meta,
        }

    def iterate(self, limit: int | None = None, seed: int | None = None) -> Iterator[str]:
        """Each task exactly once, in manifest order; or a seeded subset of ``limit`` tasks
        (drawn without replacement, kept in manifest order)."""
        ids = self.task_ids
        if limit is not None and limit < len(ids):
            rng = np.random.default_rng(seed)
            keep = np.sort(rng.choice(len(ids), size=limit, replace=False))
            ids = tuple(ids[i] for i in keep)
        yield from ids


def check_disjoint(manifests: Sequence[SplitManifest]) -> None:
    """Raise if any task id appears in two splits."""
    seen: dict[str, str] = {}
    for m in manifests:
        for t in m.task_ids:
            if t in seen:
                raise ValueError(f"task {t!r} is in both {seen[t]!r} and {m.split!r}")
            seen[t] = m.split
