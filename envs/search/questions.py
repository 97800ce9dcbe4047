"""A question record: the Search-R1 / FlashRAG row (``id``, ``question``, ``golden_answers``,
``data_source``) plus what the oracle and hindsight annotators need (supporting passage ids, the
searches that retrieve them, the question style)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# the seven datasets of the Search-R1 paper, by the data_source names its files use
SEARCH_R1_DATASETS = (
    "nq",
    "triviaqa",
    "popqa",
    "hotpotqa",
    "2wikimultihopqa",
    "musique",
    "bamboogle",
)
SEARCH_R1_TRAIN = ("nq", "hotpotqa")  # the paper trains on NQ + HotpotQA; the rest are held out


@dataclass(frozen=True)
class QAItem:
    id: str
    question: str
    golden_answers: tuple[str, ...]
    data_source: str
    supporting_ids: tuple[str, ...] = ()  # passages that hold the answer (and the bridge)
    oracle_queries: tuple[str, ...] = ()  # searches that retrieve them, in hop order
    style: str = ""  # single / bridge / comparison / ... (empty when unknown)
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if not self.question.strip():
            raise ValueError(f"question {self.id!r} is empty")
        if not self.golden_answers or not all(
            isinstance(a, str) and a.strip() for a in self.golden_answers
        ):
            raise ValueError(
                f"question {self.id!r} needs non-empty golden_answers, got {self.golden_answers!r}"
            )

    def to_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "golden_answers": list(self.golden_answers),
            "data_source": self.data_source,
            "metadata": {
                "supporting_ids": list(self.supporting_ids),
                "oracle_queries": list(self.oracle_queries),
                "style": self.style,
                **self.meta,
            },
        }
