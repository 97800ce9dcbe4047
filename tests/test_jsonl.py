"""The one JSON-lines reader: a bad line (not UTF-8, not JSON, cut inside a character, a record
of the wrong shape) is skipped, counted and named once, never a crash; and an eval reruns over an
``episodes.jsonl`` holding such lines (issue 28)."""

from __future__ import annotations

import json
import warnings

import pytest
from conftest import GUESS_ID, import_example

from seed_gym.evaluate import evaluate
from seed_gym.jsonl import read_jsonl, write_jsonl

import_example()


def test_bad_lines_are_skipped_counted_and_named_once(tmp_path):
    p = tmp_path / "t.jsonl"
    good = '{"a": 1}\n'
    p.write_bytes(
        good.encode()
        + b'{"a": "\xff\xfe"}\n'  # invalid UTF-8
        + b"[1, 2]\n"
        + b"\n"
        + ("[" * 100_000).encode()
        + b"\n"  # nested too deep for json
        + b'{"a": 2}\n'
        + '{"a": "caf\u00e9"}\n'.encode()[:-4]  # the last line cut inside "é"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = read_jsonl(p)
    assert rows == [{"a": 1}, [1, 2], {"a": 2}]
    (w,) = caught
    message = str(w.message)
    assert str(p) in message and "skipped 3 bad lines (2, 5, 7)" in message, message
    assert "line 2 is not UTF-8" in message

    with pytest.warns(UserWarning, match=r"skipped 4 bad lines \(2, 3, 5, 7\)"):
        assert read_jsonl(p, valid=lambda r: isinstance(r, dict)) == [{"a": 1}, {"a": 2}]
    with pytest.raises(ValueError, match=r"t.jsonl: line 2 is not UTF-8"):
        read_jsonl(p, strict=True)


def test_a_clean_file_reads_without_warning(tmp_path):
    p = write_jsonl([{"x": "\ud800"}, {"y": [1]}], tmp_path / "ok.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_jsonl(p) == [{"x": "\ufffd"}, {"y": [1]}]
    assert [f.name for f in tmp_path.iterdir()] == ["ok.jsonl"]  # no temp file left


def test_eval_reruns_over_malformed_episode_lines(tmp_path):
    first = evaluate(GUESS_ID, "seen", "oracle", episodes=6, out=tmp_path, progress=False)
    log = tmp_path / "episodes.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines()
    records = [json.loads(x) for x in lines]
    broken = [
        {k: v for k, v in records[0].items() if k != "won"},  # a missing field
        {**records[1], "steps": "1"},  # a wrong type: summarize crashed on these
        {**records[2], "return": None},
        {**records[3], "extras": {"guess.x": "a"}},
    ]
    body = "".join(json.dumps(r) + "\n" for r in broken) + lines[4] + "\n"
    # invalid UTF-8, then the last record cut inside a multi-byte character
    tail = (lines[5][:-1] + ', "note": "\u00e9"}').encode()
    log.write_bytes(body.encode() + b'{"task_id": "\xff"}\n' + tail[:-3])
    with pytest.warns(
        UserWarning, match=r"episodes.jsonl: skipped 6 bad lines \(1, 2, 3, 4, 6, 7\)"
    ):
        again = evaluate(GUESS_ID, "seen", "oracle", episodes=6, out=tmp_path, progress=False)
    assert again["resumed_episodes"] == 1  # the one intact line is kept, five are replayed
    for key in ("episodes", "success_rate", "mean_return", "per_task"):
        assert again[key] == first[key], key
    assert read_jsonl(log) == sorted(records, key=lambda r: r["index"])
