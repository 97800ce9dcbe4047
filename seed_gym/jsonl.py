"""JSON lines, the format of every record a run writes (metrics, trajectories, skills, evals,
datasets): one writer that never fails on model text, one reader, atomic whole-file writes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD. A model server's JSON may hold
    ``"\\ud800"``, which decodes to a ``str`` that UTF-8 cannot encode: written as is it raised
    ``UnicodeEncodeError`` mid-eval and left an empty ``episodes.jsonl``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 with surrogatepass joins any valid pair; "replace" turns lone halves into U+FFFD
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def json_line(record: Any) -> str:
    """One JSON line (UTF-8 kept readable, lone surrogates made writable), newline included."""
    return clean_text(json.dumps(record, ensure_ascii=False)) + "\n"


def write_jsonl(rows: Iterable[Any], path: str | Path) -> Path:
    """Write ``rows`` as JSON lines through a temp file (a killed writer never leaves half a
    file behind)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json_line(row))
    tmp.replace(path)
    return path


def read_jsonl(path: str | Path, *, strict: bool = False) -> list[Any]:
    """The records of ``path``. A line that does not parse (a writer killed mid-line) is skipped,
    or with ``strict`` raises ``ValueError`` naming the file and line."""
    out = []
    with Path(path).open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                if strict:
                    raise ValueError(f"{path}: line {n} is not JSON ({e})") from None
    return out
