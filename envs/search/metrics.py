"""Answer scoring as in SQuAD (and Search-R1): normalize, then exact match and token F1.

Normalization lower-cases, drops punctuation, drops the articles a / an / the and collapses
whitespace. A prediction is scored against every gold answer and the best score counts. F1 follows
SQuAD v1.1's ``evaluate.py``: a gold that normalises to nothing (``"The"``, ``"!!!"``) scores F1 0
against every prediction, while its exact match (two empty strings) is 1.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalization: lower, strip punctuation, drop articles, collapse spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(gold: str | Iterable[str]) -> list[str]:
    return [gold] if isinstance(gold, str) else list(gold)


def exact_match(prediction: str, gold: str | Iterable[str]) -> float:
    """1.0 if the normalized prediction equals any normalized gold answer, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(gold)))


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    # SQuAD v1.1's evaluate.py: no common token is F1 0, also when both normalise to nothing
    # (gold "The" or "!!!"); only v2.0 scores two empty answers as a match
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, gold: str | Iterable[str]) -> float:
    """Best token-level F1 of the normalized prediction against the gold answers."""
    pred = normalize_answer(prediction).split()
    return max((_f1(pred, normalize_answer(g).split()) for g in _golds(gold)), default=0.0)
