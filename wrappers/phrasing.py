"""Small text helpers for the sentences env specs write (demonstration reasoning, hindsight)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def listing(items: Sequence[Any], limit: int) -> str:
    """``"a, b, c"``, or the first ``limit`` items and ``"... (n more)"``."""
    items = [str(x) for x in items]
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f", ... ({more} more)" if more > 0 else "")


def clip(text: Any, limit: int = 160) -> str:
    """``text`` on one line, cut to ``limit`` characters with ``...``."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
