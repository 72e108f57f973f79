"""Breakdowns by slice: the slices each format's records give, their sizes and means, and seeded intervals."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.breakdowns import (
    ANSWER_LENGTH,
    ANSWERABLE,
    LEVEL,
    NO_RECORDS,
    QUESTION_TYPE,
    SOURCE,
    TURN,
    Breakdown,
    Family,
    Slice,
    dataset_breakdown,
    length_bucket,
    slice_intervals,
    smallest_joint_cell,
    turn_bucket,
    words,
)


def by_slice(breakdown: Breakdown, family: str) -> dict[str, tuple[int, float]]:
    found = next(f for f in breakdown.families if f.name == family)
    return {s.label: (s.questions, s.score) for s in found.slices}


def test_mrc2018_records_give_question_type_and_source_slices_with_their_rouge_l() -> None:
    records = [
        {"id": 1, "question_type": "DESCRIPTION", "source": "zhidao", "rouge_l": 0.2},
        {"id": 2, "question_type": "YES_NO", "source": "search", "rouge_l": 1.0},
        {"id": 3, "question_type": "ENTITY", "source": "search", "rouge_l": 0.5},
        {"id": 4, "question_type": "YES_NO", "source": "zhidao", "rouge_l": 0.0},
        {"id": 5, "question_type": "DESCRIPTION", "source": "search", "rouge_l": 0.4},
    ]
    breakdown = dataset_breakdown("mrc2018", records, samples=200)
    assert breakdown.metric == "ROUGE-L" and breakdown.questions == 5
    assert breakdown.score == pytest.approx(42.0)
    assert [f.name for f in breakdown.families] == [QUESTION_TYPE, SOURCE]
    # DuReader's order of question types, not the records' order.
    assert list(by_slice(breakdown, QUESTION_TYPE)) == ["YES_NO", "ENTITY", "DESCRIPTION"]
    assert by_slice(breakdown, QUESTION_TYPE)["YES_NO"] == pytest.approx((2, 50.0))
    assert by_slice(breakdown, QUESTION_TYPE)["DESCRIPTION"] == pytest.approx((2, 30.0))
    assert by_slice(breakdown, SOURCE) == {"search": pytest.approx((3, 190 / 3)), "zhidao": pytest.approx((2, 10.0))}


def test_squad2_records_give_answerable_and_level_slices_and_gold_gives_answer_length() -> None:
    records = [
        {"id": "a", "has_ans": True, "level": None, "f1": 1.0},
        {"id": "b", "has_ans": True, "level": None, "f1": 0.5},
        {"id": "c", "has_ans": False, "level": "LEVEL1", "f1": 0.0},
        {"id": "d", "has_ans": False, "level": "LEVEL2", "f1": 1.0},
        {"id": "e", "has_ans": True, "level": None, "f1": 0.25},
    ]
    lengths = {"a": "1", "b": "8+", "c": "no answer", "d": "no answer", "e": "2-3"}
    breakdown = dataset_breakdown("squad2", records, answer_lengths=lengths, samples=200)
    assert [f.name for f in breakdown.families] == [LEVEL, ANSWERABLE, ANSWER_LENGTH]
    assert by_slice(breakdown, ANSWERABLE) == {"answerable": pytest.approx((3, 175 / 3)),
                                               "unanswerable": pytest.approx((1 + 1, 50.0))}
    assert list(by_slice(breakdown, LEVEL)) == ["LEVEL1", "LEVEL2", "no level"]
    assert by_slice(breakdown, LEVEL)["no level"] == pytest.approx((3, 175 / 3))
    assert list(by_slice(breakdown, ANSWER_LENGTH)) == ["1", "2-3", "8+", "no answer"]
    assert by_slice(breakdown, ANSWER_LENGTH)["8+"] == pytest.approx((1, 50.0))
    # Without the gold, no answer-length family (the records do not hold the answers).
    assert ANSWER_LENGTH not in [f.name for f in dataset_breakdown("squad2", records, samples=50).families]


def test_quac_turns_come_from_the_qid_and_filtered_questions_do_not_count() -> None:
    records = [{"id": f"C_x_q#{n}", "model_f1": n / 10, "filtered": False} for n in range(7)]
    records.append({"id": "C_x_q#7", "model_f1": 1.0, "filtered": True})
    breakdown = dataset_breakdown("quac", records, samples=100)
    assert breakdown.questions == 7
    # q#0 is the dialog's first turn; q#4 and later are "5+".
    assert by_slice(breakdown, TURN) == {"1": pytest.approx((1, 0.0)), "2": pytest.approx((1, 10.0)),
                                         "3": pytest.approx((1, 20.0)), "4": pytest.approx((1, 30.0)),
                                         "5+": pytest.approx((3, 50.0))}


def test_coqa_records_give_source_and_turn_slices() -> None:
    records = [{"id": f"s{k}", "turn_id": t, "source": src, "f1": f1}
               for k, (t, src, f1) in enumerate([(1, "mctest", 1.0), (2, "mctest", 0.0), (1, "race", 0.5),
                                                 (6, "race", 0.5), (5, "wikipedia", 0.0)])]
    breakdown = dataset_breakdown("coqa", records, samples=100)
    assert [f.name for f in breakdown.families] == [SOURCE, TURN]
    assert by_slice(breakdown, TURN) == {"1": pytest.approx((2, 75.0)), "2": pytest.approx((1, 0.0)),
                                         "5+": pytest.approx((2, 25.0))}
    assert by_slice(breakdown, SOURCE)["race"] == pytest.approx((2, 50.0))


def test_a_family_with_one_slice_or_an_unlabelled_question_is_left_out() -> None:
    one_source = [{"id": i, "question_type": "ENTITY" if i % 2 else "YES_NO", "source": "search", "rouge_l": 0.5}
                  for i in range(4)]
    assert [f.name for f in dataset_breakdown("mrc2018", one_source, samples=20).families] == [QUESTION_TYPE]
    lengths = {"a": "1"}  # the gold lacks question b: the slices would not partition the questions
    records = [{"id": "a", "f1": 1.0}, {"id": "b", "f1": 0.0}]
    assert dataset_breakdown("mrqa", records, answer_lengths=lengths, samples=20).families == ()


def test_records_without_the_per_question_score_say_it_is_unavailable() -> None:
    breakdown = dataset_breakdown("mrc2018", [{"id": 1, "question_type": "ENTITY", "source": "search"}])
    assert breakdown.families == () and "rouge_l" in breakdown.unavailable
    assert dataset_breakdown("mrqa", []).unavailable == NO_RECORDS
    assert dataset_breakdown("deepread", [{"id": "q", "humsent": 1}]).unavailable


def test_answer_length_counts_the_shortest_gold_answer_in_words() -> None:
    assert length_bucket(["the Eiffel Tower", "Eiffel"]) == "1"
    assert length_bucket(["in the year 1889", "the year 1889"]) == "2-3"
    assert length_bucket(["a b c d e f g"]) == "4-7"
    assert length_bucket(["a b c d e f g h"]) == "8+"
    assert length_bucket([]) == "no answer"
    assert words("北京大学 campus", cjk=True) == 5 and words("北京大学 campus") == 2
    assert [turn_bucket(k) for k in (1, 4, 5, 12)] == ["1", "4", "5+", "5+"]


def test_intervals_contain_the_mean_and_are_reproducible_with_the_seed() -> None:
    rng = np.random.default_rng(3)
    values = list(rng.random(300) * 100)
    labels = ["a"] * 120 + ["b"] * 180
    first = slice_intervals(values, labels, samples=1000, seed=11)
    assert first == slice_intervals(values, labels, samples=1000, seed=11)
    assert first != slice_intervals(values, labels, samples=1000, seed=12)
    for s, chunk in zip(first, (values[:120], values[120:])):
        assert s.questions == len(chunk)
        assert s.score == pytest.approx(float(np.mean(chunk)))
        assert s.ci_low < s.score < s.ci_high
        # About two standard errors each side for a mean of uniform values (sd 28.9).
        half = (s.ci_high - s.ci_low) / 2
        assert half == pytest.approx(1.96 * 28.87 / np.sqrt(len(chunk)), rel=0.25)


def test_a_constant_slice_has_a_zero_width_interval() -> None:
    [only] = slice_intervals([40.0] * 10, ["x"] * 10, samples=100)
    assert (only.ci_low, only.score, only.ci_high) == pytest.approx((40.0,) * 3)


def _family(name: str, labels: list[str]) -> Family:
    sizes = {label: labels.count(label) for label in dict.fromkeys(labels)}
    return Family(name=name, slices=tuple(Slice(label, n, 0.0, 0.0, 0.0) for label, n in sizes.items()),
                  labels=tuple(labels))


def test_two_families_with_large_slices_can_still_single_out_one_question_together() -> None:
    """SQuAD 2.0 with one unanswerable question left without a level: "no level" is every answerable
    question plus that one, so it and "answerable" give its score away, though every slice has 61+."""
    answerable = ["answerable"] * 200 + ["unanswerable"] * 121
    level = ["no level"] * 200 + ["LEVEL1"] * 60 + ["LEVEL2"] * 60 + ["no level"]
    a, b = _family("answerable", answerable), _family("difficulty level", level)
    assert min(a.smallest, b.smallest) == 60
    assert smallest_joint_cell([a]) == 121 and smallest_joint_cell([b]) == 60
    assert smallest_joint_cell([a, b]) == 1
    # Nested the other way round (every unanswerable question levelled), the cells stay large.
    assert smallest_joint_cell([a, _family("difficulty level", ["no level"] * 200 + ["LEVEL1"] * 61 +
                                           ["LEVEL2"] * 60)]) == 60
    assert smallest_joint_cell([]) == 0
