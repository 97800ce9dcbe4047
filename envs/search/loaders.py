"""Readers for the standard Search-R1 / FlashRAG file formats, with errors that name the file.

* Questions: ``.jsonl`` or ``.parquet`` rows with ``question`` and ``golden_answers`` (FlashRAG),
  optionally ``id`` and ``data_source``; Search-R1's processed parquet rows also work (answers in
  ``reward_model.ground_truth.target``, question in ``question`` or the ``prompt`` text).
* Corpus: ``.jsonl`` rows ``{"id": ..., "contents": "\\"Title\\"\\ntext"}`` (``wiki-18.jsonl``).
* FAISS index: a prebuilt index whose rows follow corpus order (``e5_Flat.index``); see
  ``retrieval.DenseRetriever``.
* A data folder, in one of three layouts (``discover_splits``):
  ``{train,seen,unseen}.{jsonl,parquet}`` (seed-gym's own), ``{train,test}.parquet`` with a
  ``data_source`` column (Search-R1's merged files), or ``<dataset>/{train,dev,test}.{jsonl,parquet}``
  (FlashRAG) for the seven datasets.

A folder whose held-out questions all come from the train datasets (Search-R1's NQ-only
``train.parquet`` + ``test.parquet``) has no distribution shift to hold out, so its held-out
questions are halved: ordered by the sha256 of ``data_source/id``, the first half (rounded up) is
``seen`` and the rest ``unseen``, in file order within each (``_halve``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seed_gym.envs.search.corpus import Corpus, Passage
from seed_gym.envs.search.questions import SEARCH_R1_DATASETS, SEARCH_R1_TRAIN, QAItem

_QUESTION_MARK = "Question:"


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based row number, row) from a jsonl or parquet file."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as e:
            raise ImportError(
                "reading parquet needs pyarrow (pip install 'seed-gym[search]')"
            ) from e
        try:
            table = pq.read_table(path)
        except Exception as e:  # noqa: BLE001  pyarrow raises several types for a bad file
            raise ValueError(f"{path} is not a readable parquet file: {e}") from None
        for i, row in enumerate(table.to_pylist(), 1):
            yield i, row
        return
    if path.suffix not in (".jsonl", ".json"):
        raise ValueError(f"{path}: expected a .jsonl or .parquet file")
    with open(path, "rb") as f:  # decoded per line, so a bad byte is named with its line
        for i, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path} line {i} is not valid UTF-8") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} line {i} is not valid JSON: {e.msg}") from None
            except (ValueError, RecursionError) as e:  # a 5000-digit number, [[[[... too deep
                raise ValueError(f"{path} line {i} is not readable JSON: {e}") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path} line {i} is not a JSON object")
            yield i, row


def _question_text(row: dict[str, Any]) -> str | None:
    if isinstance(row.get("question"), str):
        return row["question"]
    prompt = row.get("prompt")  # Search-R1's processed rows keep the question inside the prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        text = str(prompt[-1].get("content", ""))
        if _QUESTION_MARK in text:
            return text.rsplit(_QUESTION_MARK, 1)[1].strip()
    return None


def _answers(row: dict[str, Any]) -> Any:
    if "golden_answers" in row:
        return row["golden_answers"]
    truth = (
        ((row.get("reward_model") or {}).get("ground_truth") or {})
        if isinstance(row.get("reward_model"), dict)
        else {}
    )
    return truth.get("target")


def load_questions(path: str | Path, data_source: str | None = None) -> list[QAItem]:
    """Question rows of one file. ``data_source`` fills rows that lack the column."""
    path = Path(path)
    out: list[QAItem] = []
    for n, row in _rows(path):
        question = _question_text(row)
        if question is None or not question.strip():
            raise ValueError(f"{path} row {n} has no 'question' text")
        answers = _answers(row)
        if isinstance(answers, str):
            answers = [answers]
        if (
            not isinstance(answers, (list, tuple))
            or not answers
            or not all(isinstance(a, str) for a in answers)
        ):
            raise ValueError(
                f"{path} row {n} needs 'golden_answers' as a non-empty list of strings, got {answers!r:.80}"
            )
        answers = [a for a in answers if a.strip()]
        if not answers:
            raise ValueError(f"{path} row {n} has only empty golden_answers")
        source = row.get("data_source") or data_source or path.parent.name
        meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
        meta = dict(meta)
        qid = row.get("id")
        if qid is None and isinstance(row.get("extra_info"), dict):
            qid = row["extra_info"].get("index")
        qid = f"{source}-{path.stem}-{n - 1}" if qid is None else str(qid)
        out.append(
            QAItem(
                id=qid,
                question=question.strip(),
                golden_answers=tuple(answers),
                data_source=str(source),
                supporting_ids=tuple(meta.pop("supporting_ids", ()) or ()),
                oracle_queries=tuple(meta.pop("oracle_queries", ()) or ()),
                style=str(meta.pop("style", "") or ""),
                meta=meta,
            )
        )
    if not out:
        raise ValueError(f"{path} holds no questions")
    return out


def load_corpus(path: str | Path, name: str | None = None) -> Corpus:
    """A jsonl corpus of ``{"id", "contents"}`` rows (``title``/``text`` columns also accepted)."""
    path = Path(path)
    passages = []
    for n, row in _rows(path):
        pid = row.get("id", n - 1)
        if isinstance(row.get("contents"), str):
            passages.append(Passage.from_contents(str(pid), row["contents"]))
        elif isinstance(row.get("text"), str):
            passages.append(Passage(str(pid), str(row.get("title", "")), row["text"]))
        else:
            raise ValueError(f"{path} row {n} has no 'contents' string")
    if not passages:
        raise ValueError(f"corpus {path} has no passages")
    try:
        return Corpus(passages, name=name or path.stem)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def _find(folder: Path, stem: str) -> Path | None:
    for ext in (".parquet", ".jsonl"):
        if (folder / f"{stem}{ext}").exists():
            return folder / f"{stem}{ext}"
    return None


def _unique(items: list[QAItem], where: Path) -> list[QAItem]:
    """Prefix ids with their data source when two datasets reuse the same ids (FlashRAG's
    ``test_0``); raise if ids still clash."""
    ids = [q.id for q in items]
    if len(set(ids)) != len(ids):
        items = [QAItem(**{**q.__dict__, "id": f"{q.data_source}/{q.id}"}) for q in items]
        ids = [q.id for q in items]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{where} repeats question ids within one data source")
    return items


def _halve(items: list[QAItem]) -> tuple[list[QAItem], list[QAItem]]:
    """(seen, unseen) of held-out questions that all come from the train datasets: the first
    half by sha256 of ``data_source/id`` and the rest, each in file order. The hash, not the
    row order, decides, so a reordered or regenerated file splits the same way; halving keeps
    both evaluations as large as they can be (and unseen then is no distribution shift)."""

    def rank(i: int) -> str:
        return hashlib.sha256(f"{items[i].data_source}/{items[i].id}".encode()).hexdigest()

    seen = set(sorted(range(len(items)), key=rank)[: (len(items) + 1) // 2])
    return [q for i, q in enumerate(items) if i in seen], [
        q for i, q in enumerate(items) if i not in seen
    ]


def discover_splits(
    data_dir: str | Path, train_datasets: tuple[str, ...] = SEARCH_R1_TRAIN
) -> dict[str, list[QAItem]]:
    """train / seen / unseen question lists from a data folder (layouts in the module docstring).

    For Search-R1 data, as in the paper: ``train`` = the train files of ``train_datasets``
    (NQ + HotpotQA), ``seen`` = their test (else dev) questions, ``unseen`` = the test (else dev)
    questions of every other dataset present.
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"search data folder {root} does not exist")
    splits: dict[str, list[QAItem]] = {"train": [], "seen": [], "unseen": []}
    if all(_find(root, s) for s in splits):  # seed-gym layout
        for s in splits:
            splits[s] = load_questions(_find(root, s))  # type: ignore[arg-type]
    elif _find(root, "test") or _find(root, "train"):  # Search-R1 merged files
        if train_file := _find(root, "train"):
            splits["train"] = [
                q for q in load_questions(train_file) if q.data_source in train_datasets
            ]
        if test_file := _find(root, "test"):
            for q in load_questions(test_file):
                splits["seen" if q.data_source in train_datasets else "unseen"].append(q)
    else:  # FlashRAG per-dataset folders
        found = [d for d in SEARCH_R1_DATASETS if (root / d).is_dir()]
        found += sorted(
            p.name
            for p in root.iterdir()
            if p.is_dir()
            and p.name not in SEARCH_R1_DATASETS
            and (_find(p, "test") or _find(p, "dev"))
        )
        if not found:
            raise ValueError(
                f"{root} has none of the known layouts: {{train,seen,unseen}}.jsonl, "
                f"{{train,test}}.parquet, or <dataset>/{{train,dev,test}}.jsonl for {', '.join(SEARCH_R1_DATASETS)}"
            )
        for d in found:
            if d in train_datasets and (f := _find(root / d, "train")):
                splits["train"] += load_questions(f, data_source=d)
            if f := (_find(root / d, "test") or _find(root / d, "dev")):
                splits["seen" if d in train_datasets else "unseen"] += load_questions(
                    f, data_source=d
                )
    if splits["seen"] and not splits["unseen"]:
        splits["seen"], splits["unseen"] = _halve(splits["seen"])
    for s, items in splits.items():
        if not items:
            raise ValueError(
                f"{root}: the {s!r} split is empty (train datasets: {', '.join(train_datasets)})"
            )
        splits[s] = _unique(items, root)
    all_ids = [q.id for items in splits.values() for q in items]
    if len(set(all_ids)) != len(all_ids):
        # the same id in two splits (e.g. train_0 in nq/train and nq/test): qualify by split
        splits = {
            s: [QAItem(**{**q.__dict__, "id": f"{s}:{q.id}"}) for q in items]
            for s, items in splits.items()
        }
    return splits
