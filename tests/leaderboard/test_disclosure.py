"""The sealing rule on its own: which averages can be published without giving a sealed value away.

No Django and no database: datasets are plain names, averages are (name, family, datasets).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable
from fractions import Fraction

from leaderboard.challenges.disclosure import (
    Average,
    averages_to_publish,
    exposed_by_reveal,
    isolates_a_coordinate,
    rank,
)


def avg(name: str, *over: str, family: str = "f1") -> Average:
    return Average(name, family, frozenset(over))


def test_a_mean_over_one_sealed_and_visible_datasets_is_withheld() -> None:
    # sealed = n x mean - the visible values
    averages = [avg("macro_f1", "squad", "xquad", "coqa")]
    assert averages_to_publish(averages, sealed={"coqa"}) == set()


def test_a_mean_over_two_sealed_datasets_is_published() -> None:
    averages = [avg("macro_f1", "xquad", "coqa", "drop"), avg("split_III_f1", "coqa", "drop")]
    assert averages_to_publish(averages, sealed={"coqa", "drop"}) == {"macro_f1", "split_III_f1"}


def test_a_split_of_one_sealed_dataset_is_withheld_and_the_others_published() -> None:
    averages = [avg("macro_f1", "xquad", "coqa"), avg("split_II_f1", "xquad"), avg("split_III_f1", "coqa")]
    assert averages_to_publish(averages, sealed={"coqa"}) == {"split_II_f1"}


def test_a_staged_reveal_withholds_the_split_and_the_overall_mean() -> None:
    # Split III = {drop (revealed), coqa (sealed)}: sealed = 2 x Split III - revealed.
    averages = [avg("macro_f1", "xquad", "drop", "coqa"), avg("split_II_f1", "xquad"),
                avg("split_III_f1", "drop", "coqa")]
    assert averages_to_publish(averages, sealed={"coqa"}) == {"split_II_f1"}


def test_the_first_average_has_first_claim() -> None:
    # Each alone hides the three sealed values; together their difference isolates drop.
    averages = [avg("macro_f1", "coqa", "drop", "race"), avg("split_III_f1", "coqa", "race")]
    assert averages_to_publish(averages, sealed={"coqa", "drop", "race"}) == {"macro_f1"}
    assert averages_to_publish(averages[::-1], sealed={"coqa", "drop", "race"}) == {"split_III_f1"}


def test_families_do_not_mix() -> None:
    # An F1 mean and an EM mean over the same two sealed datasets: nothing linear ties them.
    averages = [avg("macro_f1", "coqa", "drop"), avg("macro_em", "coqa", "drop", family="em"),
                avg("split_f1", "coqa", "drop", "xquad")]
    assert averages_to_publish(averages, sealed={"coqa", "drop"}) == {"macro_f1", "macro_em", "split_f1"}
    # Two F1 means over different sets do combine: (c+d)/2 and (c+d+r)/3 give r.
    averages = [avg("a", "coqa", "drop"), avg("b", "coqa", "drop", family="em"), avg("c", "coqa", "drop", "race")]
    assert averages_to_publish(averages, sealed={"coqa", "drop", "race"}) == {"a", "b"}


def test_means_over_visible_datasets_only_are_always_published() -> None:
    averages = [avg("split_II_f1", "xquad", "quac"), avg("split_I_f1", "squad")]
    assert averages_to_publish(averages, sealed={"coqa"}) == {"split_II_f1", "split_I_f1"}
    assert averages_to_publish(averages, sealed={"coqa"}, strict=True) == {"split_II_f1", "split_I_f1"}


def test_strict_withholds_every_mean_that_covers_a_sealed_dataset() -> None:
    averages = [avg("macro_f1", "xquad", "coqa", "drop"), avg("split_III_f1", "coqa", "drop"),
                avg("split_II_f1", "xquad")]
    assert averages_to_publish(averages, sealed={"coqa", "drop"}, strict=True) == {"split_II_f1"}


def test_an_empty_mean_is_harmless() -> None:
    assert averages_to_publish([avg("macro_f1")], sealed={"coqa"}) == {"macro_f1"}


def test_arithmetic_is_exact() -> None:
    # Thirds and sevenths: (a+b+c)/3 - (a+b+c+d+e+f+g)/7 ... in floats these cancel only nearly.
    three = [Fraction(1, 3)] * 3 + [Fraction(0)] * 4
    seven = [Fraction(1, 7)] * 7
    four = [Fraction(0)] * 3 + [Fraction(1, 4)] * 4
    assert rank([three, seven, four]) == 2
    assert not isolates_a_coordinate([three, seven])
    assert not isolates_a_coordinate([three, seven, four])
    assert isolates_a_coordinate([[Fraction(1, 3), Fraction(1, 3)], [Fraction(1, 2), Fraction(0)]])


def _determined(published: list[Average], sealed: set[str], target: str) -> bool:
    """Brute force, independent of the elimination: the target is determined iff no change of the
    sealed values that keeps every published mean fixed moves it.  Searched over small integer
    perturbations (enough for 0/1 structures of this size)."""
    names = sorted(sealed)
    for deltas in itertools.product(range(-2, 3), repeat=len(names)):
        change: dict[Hashable, int] = dict(zip(names, deltas))  # Average.over holds Hashable names
        if change[target] == 0:
            continue
        if all(sum(change.get(d, 0) for d in a.over) == 0 for a in published):
            return False
    return True


def test_random_structures_publish_nothing_that_determines_a_sealed_value_and_stop_only_when_needed() -> None:
    rng = random.Random(2019)
    universe = ["a", "b", "c", "d", "v1", "v2"]
    for _ in range(300):
        sealed = set(rng.sample(["a", "b", "c", "d"], rng.randint(1, 4)))
        averages = [
            avg(f"m{i}", *rng.sample(universe, rng.randint(1, len(universe))), family=rng.choice(["f1", "em"]))
            for i in range(rng.randint(1, 5))
        ]
        chosen = averages_to_publish(averages, sealed=sealed)
        published = [a for a in averages if a.name in chosen]
        for family in ("f1", "em"):
            mine = [a for a in published if a.family == family]
            for target in sealed:
                assert not _determined(mine, sealed, target), (averages, sealed, target)
        # Greedy: each withheld average would have given a sealed value away with those before it.
        for index, average in enumerate(averages):
            if average.name in chosen:
                continue
            before = [a for a in averages[:index] if a.name in chosen]  # every family: one unknown per dataset
            assert any(_determined([*before, average], sealed, t) for t in sealed), (averages, sealed, average)


def test_averages_of_related_families_over_different_datasets_give_nothing_away() -> None:
    """The interactive protocol's drop is f1 - own_f1 on every dataset: with the ranking F1 over
    two of three sealed datasets and own F1 and drop over all of them, 4 x (own + drop) - 3 x F1
    is the third one's F1 (the audit found it public, exactly).  Every average is an equation on
    the same unknowns, so the second one over the other datasets is withheld."""
    averages = [avg("f1", "v", "s1", "s2"), avg("own_f1", "v", "s1", "s2", "s3", family="own_f1"),
                avg("gold_own_drop", "v", "s1", "s2", "s3", family="gold_own_drop")]
    assert averages_to_publish(averages, sealed={"s1", "s2", "s3"}) == {"f1"}
    # Over the same datasets, another family adds no equation: macro F1 and macro EM both stay.
    same = [avg("macro_f1", "v", "s1", "s2"), avg("macro_em", "v", "s1", "s2", family="em")]
    assert averages_to_publish(same, sealed={"s1", "s2"}) == {"macro_f1", "macro_em"}


def test_a_reveal_exposes_what_earlier_averages_and_the_revealed_values_pin() -> None:
    split_iii = [avg("split_III_f1", "coqa", "drop")]
    assert exposed_by_reveal(split_iii, sealed_after={"drop"}) == {"drop"}  # 2 x mean - CoQA
    assert exposed_by_reveal(split_iii, sealed_after={"drop", "quoref"}) == {"drop"}  # quoref is not in it
    three = [avg("split_III_f1", "coqa", "drop", "quoref")]
    assert exposed_by_reveal(three, sealed_after={"drop", "quoref"}) == set()  # two unknowns, one equation
    assert exposed_by_reveal(three, sealed_after={"quoref"}) == {"quoref"}
