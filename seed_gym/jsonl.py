"""JSON lines, the format of every record a run writes (metrics, trajectories, skills, evals,
datasets): one writer that never fails on model text, one reader, atomic whole-file writes."""

from __future__ import annotations

import json
import os
import uuid
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

MAX_LINES_NAMED = 10  # a warning names this many skipped lines, then counts the rest


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
    file behind; the temp name is unique, so two writers never rename each other's file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json_line(row))
    tmp.replace(path)
    return path


def temp_path(path: Path) -> Path:
    """A sibling of ``path`` no other process or thread writes: ``NAME.PID-RANDOM.tmp``."""
    return path.with_name(f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def read_json_object(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path`` (a ``results.json``, a ``config.json``); ``ValueError`` with
    one line naming the file when it is not UTF-8, not JSON or not an object."""
    try:
        record = json.loads(Path(path).read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not JSON ({e.msg}, line {e.lineno})") from None
    except (ValueError, RecursionError) as e:  # an int over 4300 digits, [[[[... too deep
        raise ValueError(f"{path} is not readable JSON ({type(e).__name__})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path} holds a JSON {type(record).__name__}, not an object")
    return record


def read_jsonl(
    path: str | Path, *, strict: bool = False, valid: Callable[[Any], bool] | None = None
) -> list[Any]:
    """The records of ``path``, one per line. A bad line is skipped and counted: not UTF-8, not
    JSON (a writer killed mid-line, or mid-character), or rejected by ``valid`` (a record with
    missing fields or wrong types). One warning names the file and the skipped lines; with
    ``strict`` the first bad line raises ``ValueError`` naming the file and line instead."""
    out, bad = [], []
    # bytes, decoded line by line: one invalid byte must cost its line, not the whole file
    with Path(path).open("rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                record = json.loads(line)
            except UnicodeDecodeError:
                problem = "is not UTF-8"
            except json.JSONDecodeError as e:
                problem = f"is not JSON ({e.msg})"
            except (ValueError, RecursionError) as e:  # an int over 4300 digits, [[[[... too deep
                problem = f"is not readable JSON ({type(e).__name__})"
            else:
                if valid is None or valid(record):
                    out.append(record)
                    continue
                problem = "is not a valid record"
            if strict:
                raise ValueError(f"{path}: line {n} {problem}")
            bad.append((n, problem))
    if bad:
        shown = ", ".join(str(n) for n, _ in bad[:MAX_LINES_NAMED])
        more = f" and {len(bad) - MAX_LINES_NAMED} more" if len(bad) > MAX_LINES_NAMED else ""
        warnings.warn(
            f"{path}: skipped {len(bad)} bad line{'s' * (len(bad) > 1)} ({shown}{more}); "
            f"line {bad[0][0]} {bad[0][1]}",
            stacklevel=2,
        )
    return out
