"""Sampling and merging, without a database: proportional allocation, seeded draws, what "identical" means."""

from __future__ import annotations

from collections import Counter

import pytest

from leaderboard.judging.answers import Answer, answer_of
from leaderboard.judging.items import allocation, questions_sample
from leaderboard.judging.services import candidate_key


def test_allocation_is_proportional_with_the_remainder_to_the_largest_fractions() -> None:
    assert allocation([35, 10, 5], 20) == [14, 4, 2]
    assert allocation([1, 1, 1], 2) == [1, 1, 0]  # equal fractions: the earlier stratum first
    assert allocation([98, 1, 1], 3) == [3, 0, 0]
    assert allocation([2, 50], 10) == [0, 10]
    assert allocation([2, 3], 99) == [2, 3]  # never more than a stratum has
    assert sum(allocation([7, 11, 13, 17], 23)) == 23


POPULATION = [(f"q{i}", "YES_NO" if i % 5 == 0 else "ENTITY" if i % 5 == 1 else "DESCRIPTION") for i in range(100)]


def test_a_sample_is_the_same_for_the_same_seed_and_differs_for_another() -> None:
    first = questions_sample(POPULATION, n=30, seed=1, stratum=None)
    assert first == questions_sample(POPULATION, n=30, seed=1, stratum=None)
    assert first != questions_sample(POPULATION, n=30, seed=2, stratum=None)
    assert len(set(first)) == 30


def test_a_stratified_sample_keeps_the_proportions_and_mixes_the_strata() -> None:
    drawn = questions_sample(POPULATION, n=30, seed=4, stratum=lambda q: q[1])
    assert Counter(t for _, t in drawn) == {"DESCRIPTION": 18, "ENTITY": 6, "YES_NO": 6}
    # Shuffled after drawing: not every DESCRIPTION question first.
    assert [t for _, t in drawn] != sorted(t for _, t in drawn)
    assert drawn == questions_sample(POPULATION, n=30, seed=4, stratum=lambda q: q[1])


@pytest.mark.parametrize(("a", "b", "same"), [
    (Answer("北京 故宫"), Answer("北京故宫"), True),  # MRC2018 reads Chinese without white space
    (Answer("北京故宫", "Yes"), Answer("北京故宫", "No"), False),  # another opinion is another answer
    (Answer("北京故宫"), Answer("北京故宮"), False),
])
def test_mrc2018_candidates_are_identical_up_to_white_space(a: Answer, b: Answer, same: bool) -> None:
    assert (candidate_key(a, suite_key="mrc2018") == candidate_key(b, suite_key="mrc2018")) is same


def test_mrqa_candidates_keep_word_boundaries_and_case() -> None:
    def key(text: str) -> str:
        return candidate_key(Answer(text), suite_key="mrqa")

    assert key("The  Beatles ") == key("The Beatles")
    assert key("TheBeatles") != key("The Beatles")
    assert key("the beatles") != key("The Beatles")  # a judge may tell them apart


def test_an_mrc2018_answer_is_its_first_answer_and_first_opinion() -> None:
    assert answer_of({"answers": ["是的", "不"], "yesno_answers": ["Yes", "No"]}, suite_key="mrc2018") == Answer("是的", "Yes")
    assert answer_of("直接回答", suite_key="mrc2018") == Answer("直接回答")
    assert answer_of(None, suite_key="mrqa") == Answer("")
