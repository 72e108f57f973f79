from __future__ import annotations

import pytest

from scoring.text import NormalizedAnswer, exact_match, f1_v1, f1_v2, max_em_f1_v1, normalize_answer


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Cat", "cat"),
        ("1,204", "1204"),
        ("3.5%", "35"),
        ("well-known", "wellknown"),
        ("an apple and a pear", "apple and pear"),
        ("theater", "theater"),
        ("a\u00a0b\tc\u3000d\n", "b c d"),
        ("\u201cquoted\u201d \u2014 dash", "\u201cquoted\u201d \u2014 dash"),
        ("  ", ""),
    ],
)
def test_normalize_answer_matches_the_official_rules(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_dotted_capital_i_lowers_to_two_code_points() -> None:
    assert normalize_answer("\u0130") == "i\u0307"


def test_empty_against_empty_is_0_in_v1_and_1_in_v2() -> None:
    assert f1_v1("", "") == 0.0
    assert exact_match("the", "")
    assert f1_v2("", "") == 1.0
    assert f1_v2("the", "a") == 1.0
    assert f1_v2("cat", "") == 0.0


def test_f1_counts_repeated_tokens_as_a_multiset() -> None:
    assert f1_v1("cat cat dog", "cat dog dog") == pytest.approx(2 / 3)


def test_max_over_golds_takes_em_and_f1_separately() -> None:
    em, f1 = max_em_f1_v1("big red barn", ["red barn", "big red barn door"])
    assert em == 0
    assert f1 == pytest.approx(max(f1_v1("big red barn", "red barn"), f1_v1("big red barn", "big red barn door")))
    assert NormalizedAnswer("The barn").norm == "barn"
