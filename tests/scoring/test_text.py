from __future__ import annotations

import random
from collections import Counter

import pytest

from scoring.text import NormalizedAnswer, TokenBag, exact_match, f1_v1, f1_v2, max_em_f1_v1, normalize_answer


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


def test_token_bags_that_both_repeat_tokens_intersect_as_multisets() -> None:
    rng = random.Random(11)
    words = ["x", "y", "z", "w"]  # four words: most pairs repeat some token on both sides
    bags = [TokenBag([rng.choice(words) for _ in range(rng.randint(1, 9))]) for _ in range(600)]
    both_repeat = 0
    for a, b in zip(bags[0::2], bags[1::2], strict=True):
        both_repeat += a.repeats and b.repeats
        same = sum((Counter(a.tokens) & Counter(b.tokens)).values())
        assert a.overlap(b) == same == b.overlap(a)
        assert a.f1_v1(b) == f1_v1(" ".join(a.tokens), " ".join(b.tokens)) == b.f1_v1(a)
    assert both_repeat > 100
    assert TokenBag(["x", "x", "y", "x"]).extra() == {"x": 2}
