"""Loaders for the standard Search-R1 / FlashRAG formats, on small files written here, and clear
errors on corrupt input."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import seed_gym
from seed_gym.envs.search.corpus import Corpus, Passage
from seed_gym.envs.search.loaders import discover_splits, load_corpus, load_questions
from seed_gym.envs.search.questions import SEARCH_R1_DATASETS
from seed_gym.envs.search.retrieval import load_faiss_index

PASSAGES = [
    ("0", '"Paris"\nParis is the capital and largest city of France.'),
    ("1", '"Berlin"\nBerlin is the capital of Germany, on the river Spree.'),
    (
        "2",
        '"Mount Everest"\nMount Everest is the highest mountain above sea level, in the Himalayas.',
    ),
    ("3", '"Amazon River"\nThe Amazon River in South America is the largest river by discharge.'),
    ("4", '"Lisbon"\nLisbon is the capital of Portugal.'),
]
QUESTIONS = {
    "nq": [
        ("what is the capital of france", ["Paris"]),
        ("capital of portugal", ["Lisbon", "Lisboa"]),
    ],
    "hotpotqa": [("Which river flows through the capital of Germany?", ["Spree", "the Spree"])],
    "triviaqa": [("Highest mountain above sea level?", ["Mount Everest", "Everest"])],
    "popqa": [("What is the largest river by discharge?", ["Amazon River"])],
    "2wikimultihopqa": [("Which country has Berlin as capital?", ["Germany"])],
    "musique": [("The capital of France is what city?", ["Paris"])],
    "bamboogle": [("Which city is the capital of Portugal?", ["Lisbon"])],
}


def _jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _corpus(path):
    return _jsonl(path, [{"id": i, "contents": c} for i, c in PASSAGES])


def _flashrag_rows(dataset, split):
    return [
        {"id": f"{split}_{i}", "question": q, "golden_answers": a, "metadata": {}}
        for i, (q, a) in enumerate(QUESTIONS[dataset])
    ]


def test_flashrag_layout_names_the_seven_datasets(tmp_path):
    assert SEARCH_R1_DATASETS == (
        "nq",
        "triviaqa",
        "popqa",
        "hotpotqa",
        "2wikimultihopqa",
        "musique",
        "bamboogle",
    )
    for d in SEARCH_R1_DATASETS:
        if d in ("nq", "hotpotqa"):
            _jsonl(tmp_path / d / "train.jsonl", _flashrag_rows(d, "train"))
        # hotpotqa, 2wiki and musique ship dev only, as FlashRAG does
        name = "dev" if d in ("hotpotqa", "2wikimultihopqa", "musique") else "test"
        _jsonl(tmp_path / d / f"{name}.jsonl", _flashrag_rows(d, name))
    splits = discover_splits(tmp_path)
    assert {q.data_source for q in splits["train"]} == {"nq", "hotpotqa"}
    assert {q.data_source for q in splits["seen"]} == {"nq", "hotpotqa"}
    assert {q.data_source for q in splits["unseen"]} == set(SEARCH_R1_DATASETS) - {"nq", "hotpotqa"}
    ids = [q.id for s in splits.values() for q in s]
    assert len(ids) == len(set(ids))  # FlashRAG reuses "test_0" across datasets
    nq = next(q for q in splits["seen"] if q.data_source == "nq" and "portugal" in q.question)
    assert nq.golden_answers == ("Lisbon", "Lisboa")


def test_search_r1_merged_parquet_and_env(tmp_path):
    def rows(datasets):
        out = []
        for d in datasets:
            for i, (q, a) in enumerate(QUESTIONS[d]):
                out.append(
                    {
                        "id": f"{d}_{i}",
                        "question": q,
                        "golden_answers": a,
                        "data_source": d,
                        "prompt": [
                            {
                                "role": "user",
                                "content": f"Answer the given question. ... Question: {q}\n",
                            }
                        ],
                        "ability": "fact-reasoning",
                        "reward_model": {"style": "rule", "ground_truth": {"target": a}},
                        "extra_info": {"split": "x", "index": i},
                    }
                )
        return out

    pq.write_table(pa.Table.from_pylist(rows(["nq", "hotpotqa"])), tmp_path / "train.parquet")
    pq.write_table(pa.Table.from_pylist(rows(list(QUESTIONS))), tmp_path / "test.parquet")
    _corpus(tmp_path / "corpus.jsonl")
    splits = discover_splits(tmp_path)
    assert len(splits["train"]) == 3 and len(splits["seen"]) == 3 and len(splits["unseen"]) == 5
    # Search-R1's processed rows without the question/golden_answers columns still load
    bare = [
        {k: v for k, v in r.items() if k not in ("question", "golden_answers")}
        for r in rows(["bamboogle"])
    ]
    pq.write_table(pa.Table.from_pylist(bare), tmp_path / "bare.parquet")
    (q,) = load_questions(tmp_path / "bare.parquet")
    assert q.question == "Which city is the capital of Portugal?" and q.golden_answers == (
        "Lisbon",
    )

    env = seed_gym.make("seed_gym/SearchQA-v0", split="unseen", data=str(tmp_path))
    assert set(env.unwrapped.manifest("unseen").meta["datasets"]) == {
        "triviaqa",
        "popqa",
        "2wikimultihopqa",
        "musique",
        "bamboogle",
    }
    obs, info = env.reset(options={"task_id": env.unwrapped.task_ids[0]})
    obs, r, term, trunc, info = env.step(
        env.unwrapped.oracle_action()
    )  # no hops known: searches the question
    assert obs["text"].startswith('<information>Doc 1(Title: "')
    obs, r, term, trunc, info = env.step(env.unwrapped.oracle_action())
    assert (r, term, info["task_type"]) == (1.0, True, "triviaqa")


def test_corpus_and_faiss_index(tmp_path):
    corpus = load_corpus(_corpus(tmp_path / "wiki-18.jsonl"))
    assert corpus[2] == Passage(
        "2",
        "Mount Everest",
        "Mount Everest is the highest mountain above sea level, in the Himalayas.",
    )
    import faiss

    index = faiss.IndexFlatIP(8)
    index.add(np.random.default_rng(0).normal(size=(len(corpus), 8)).astype("float32"))
    faiss.write_index(index, str(tmp_path / "e5_Flat.index"))
    assert load_faiss_index(tmp_path / "e5_Flat.index", corpus, 8).ntotal == 5
    with pytest.raises(ValueError, match="has 5 rows but the corpus has 4"):
        load_faiss_index(tmp_path / "e5_Flat.index", Corpus(list(corpus)[:4]))
    with pytest.raises(ValueError, match="dimension 8; the encoder gives 384"):
        load_faiss_index(tmp_path / "e5_Flat.index", corpus, 384)
    (tmp_path / "bad.index").write_bytes(b"not an index at all")
    with pytest.raises(ValueError, match="corrupt or not a FAISS index"):
        load_faiss_index(tmp_path / "bad.index", corpus)


def test_corrupt_inputs_give_clear_errors(tmp_path):
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"question": "ok?", "golden_answers": ["yes"]}\n{"question": "broken\n')
    with pytest.raises(ValueError, match=r"q.jsonl line 2 is not valid JSON"):
        load_questions(bad)
    _jsonl(bad, [{"question": "no answers?"}])
    with pytest.raises(ValueError, match=r"row 1 needs 'golden_answers'"):
        load_questions(bad)
    _jsonl(bad, [{"golden_answers": ["x"]}])
    with pytest.raises(ValueError, match=r"row 1 has no 'question'"):
        load_questions(bad)
    _jsonl(bad, [{"question": "q?", "golden_answers": ["", "  "]}])
    with pytest.raises(ValueError, match="only empty golden_answers"):
        load_questions(bad)
    (tmp_path / "x.parquet").write_bytes(b"PAR1 garbage")
    with pytest.raises(ValueError, match="not a readable parquet file"):
        load_questions(tmp_path / "x.parquet")
    (tmp_path / "q.csv").write_text("question,answer\n")
    with pytest.raises(ValueError, match="expected a .jsonl or .parquet"):
        load_questions(tmp_path / "q.csv")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_questions(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no passages"):
        load_corpus(tmp_path / "empty.jsonl")
    _jsonl(tmp_path / "c.jsonl", [{"id": "1", "contents": "a"}, {"id": "1", "contents": "b"}])
    with pytest.raises(ValueError, match="repeats passage ids"):
        load_corpus(tmp_path / "c.jsonl")
    _jsonl(tmp_path / "c.jsonl", [{"id": "1", "body": "a"}])
    with pytest.raises(ValueError, match="row 1 has no 'contents'"):
        load_corpus(tmp_path / "c.jsonl")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ValueError, match="none of the known layouts"):
        discover_splits(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError):
        seed_gym.make("seed_gym/SearchQA-v0", data=str(tmp_path / "no-such-dir"))


def _search_r1_nq_rows(split: str, n: int) -> list[dict]:
    """Rows as Search-R1's ``nq_search.py`` writes them: data_source "nq", the question also in
    the prompt, answers in reward_model, ``extra_info.index`` restarting at 0 in each file."""
    return [
        {
            "id": f"{split}_{i}",
            "question": f"{split} question number {i}?",
            "golden_answers": [f"answer {i}"],
            "data_source": "nq",
            "prompt": [
                {"role": "user", "content": f"... Question: {split} question number {i}?\n"}
            ],
            "ability": "fact-reasoning",
            "reward_model": {"style": "rule", "ground_truth": {"target": [f"answer {i}"]}},
            "extra_info": {"split": split, "index": i},
        }
        for i in range(n)
    ]


def test_a_search_r1_nq_only_folder_opens_every_split(tmp_path):
    # no dataset outside the train ones: every split raised "the 'unseen' split is empty"
    pq.write_table(pa.Table.from_pylist(_search_r1_nq_rows("train", 6)), tmp_path / "train.parquet")
    test = _search_r1_nq_rows("test", 9)
    pq.write_table(pa.Table.from_pylist(test), tmp_path / "test.parquet")
    _corpus(tmp_path / "corpus.jsonl")
    splits = discover_splits(tmp_path)
    assert [len(splits[s]) for s in ("train", "seen", "unseen")] == [6, 5, 4]
    held = splits["seen"] + splits["unseen"]
    assert sorted(q.question for q in held) == sorted(r["question"] for r in test)
    # the halves follow the ids' hashes, not the row order
    pq.write_table(pa.Table.from_pylist(test[::-1]), tmp_path / "test.parquet")
    again = discover_splits(tmp_path)
    for s in ("seen", "unseen"):
        assert sorted(q.id for q in again[s]) == sorted(q.id for q in splits[s])
    for split in ("train", "seen", "unseen"):
        env = seed_gym.make("seed_gym/SearchQA-v0", split=split, data=str(tmp_path))
        obs, info = env.reset(seed=0)
        assert info["split"] == split and info["task_type"] == "nq"
        assert obs["text"].startswith(f"{'train' if split == 'train' else 'test'} question")
        ids = env.unwrapped.manifest(split).task_ids
        assert len(ids) == len(splits[split])


def test_content_keys_ignore_punctuation_articles_and_case(tmp_path):
    from seed_gym.checker import EnvCheckError, check_splits_disjoint_by_content

    def row(q):
        return {"question": q, "golden_answers": ["x"], "data_source": "d"}

    _jsonl(tmp_path / "train.jsonl", [row("Who founded the study of physics")])
    _jsonl(tmp_path / "seen.jsonl", [row("who founded  study of Physics?")])
    _jsonl(tmp_path / "unseen.jsonl", [row("Who founded chemistry?")])
    env = seed_gym.make("seed_gym/SearchQA-v0", split="seen", data=str(tmp_path))
    raw = env.unwrapped
    train, seen = raw.manifest("train").task_ids[0], raw.manifest("seen").task_ids[0]
    assert raw.content_key(train) == raw.content_key(seen) == "who founded study of physics"
    with pytest.raises(EnvCheckError, match="same content"):  # passed with a lowercase-only key
        check_splits_disjoint_by_content(env)


def test_the_offline_splits_stay_disjoint_under_the_em_key():
    from seed_gym.checker import check_splits_disjoint_by_content

    check_splits_disjoint_by_content(seed_gym.make("seed_gym/SearchQA-v0"))


def test_bad_utf8_in_a_question_file_names_the_line(tmp_path):
    (tmp_path / "q.jsonl").write_bytes(
        b'{"question": "ok?", "golden_answers": ["y"]}\n{"q": "\xff"}\n'
    )
    with pytest.raises(ValueError, match=r"q.jsonl line 2 is not valid UTF-8"):
        load_questions(tmp_path / "q.jsonl")
