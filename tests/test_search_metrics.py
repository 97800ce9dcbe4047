"""SQuAD normalization, exact match and F1 against hand-worked cases, and the action protocol."""

from __future__ import annotations

import pytest

from seed_gym.envs.search.metrics import exact_match, f1_score, normalize_answer
from seed_gym.envs.search.protocol import parse_command


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  an   Apple, a day! ", "apple day"),
        ("1,204,000", "1204000"),
        ("U.S.A.", "usa"),
        ("Theatre the", "theatre"),  # "the" is dropped only as a whole word
        ("", ""),
    ],
)
def test_normalize(raw, normalized):
    assert normalize_answer(raw) == normalized


def test_exact_match_hand_worked():
    assert exact_match("the Beatles", ["Beatles"]) == 1.0
    assert exact_match("Beatles.", "The Beatles") == 1.0
    assert exact_match("Beatle", ["The Beatles"]) == 0.0
    assert exact_match("Paris", ["London", "paris"]) == 1.0  # any gold answer counts
    assert exact_match("", ["Paris"]) == 0.0


def test_f1_hand_worked():
    # pred tokens [new, york, city], gold [new, york]: P = 2/3, R = 1, F1 = 0.8
    assert f1_score("New York City", ["New York"]) == pytest.approx(0.8)
    # pred [barack, obama], gold [obama]: P = 1/2, R = 1 -> 2/3
    assert f1_score("Barack Obama", "Obama") == pytest.approx(2 / 3)
    # best over golds: vs "paris france" P = R = 1/2... pred [paris]: P=1, R=1/2 -> 2/3; vs "paris" -> 1
    assert f1_score("Paris", ["Paris France", "Paris"]) == 1.0
    assert f1_score("the cat", ["a dog"]) == 0.0
    # articles vanish before counting: pred [cat, cat], gold [cat]: common 1, P = 1/2, R = 1
    assert f1_score("the cat cat", "a cat") == pytest.approx(2 / 3)


def test_f1_on_golds_that_normalise_to_nothing_is_squad_v1():
    # SQuAD v1.1's evaluate.py returns 0 when no token is shared, empty answers included
    # (seed-gym 0.1 scored f1_score("the", ["The"]) as 1.0); exact match still counts them equal
    assert f1_score("the", ["The"]) == 0.0
    assert f1_score("", ["!!!"]) == 0.0
    assert f1_score("Paris", ["The"]) == 0.0
    assert exact_match("the", ["The"]) == 1.0
    # another gold can still match
    assert f1_score("Paris", ["The", "Paris"]) == 1.0


@pytest.mark.parametrize(
    "text, kind, content",
    [
        ("<search> capital of France </search>", "search", "capital of France"),
        ("<think>I know it</think>\n<answer>  Paris </answer>", "answer", "Paris"),
        ("<search>multi\n  line</search> trailing words", "search", "multi line"),
    ],
)
def test_protocol_valid(text, kind, content):
    c = parse_command(text)
    assert (c.kind, c.content, c.error) == (kind, content, None)


@pytest.mark.parametrize(
    "text, error_part",
    [
        ("Paris", "no <search> or <answer>"),
        ("<search> a </search><answer> b </answer>", "not both"),
        ("<search> a </search><search> b </search>", "more than once"),
        ("<answer> Paris", "malformed"),
        ("</answer> Paris <answer>", "malformed"),
        ("<answer>   </answer>", "empty"),
        (None, "must be text"),
    ],
)
def test_protocol_invalid(text, error_part):
    c = parse_command(text)
    assert not c.valid and error_part in c.error
