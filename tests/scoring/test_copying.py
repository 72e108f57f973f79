"""The copy signal's statistic: shared wrong answers, normalized, over the questions both answered."""

from __future__ import annotations

from scoring.copying import MIN_BOTH_WRONG, answer_key, pair_agreement


def test_answers_are_compared_normalized() -> None:
    assert answer_key("The  Eiffel Tower.") == answer_key("eiffel tower")
    assert answer_key(["B", "a"]) == answer_key(["A", "b"])


def test_a_copy_with_a_few_answers_changed_is_flagged() -> None:
    qids = [f"q{i}" for i in range(40)]
    a = {q: f"wrong {i}" for i, q in enumerate(qids)}
    b = {**a, "q0": "mine", "q1": "mine too"}
    wrong = dict.fromkeys(qids, False)
    pair = pair_agreement(a, b, wrong, wrong)
    assert (pair.both_wrong, pair.same_wrong) == (40, 38)
    assert pair.flagged


def test_independent_wrong_answers_and_shared_abstentions_are_not() -> None:
    qids = [f"q{i}" for i in range(40)]
    a = {q: f"a {i}" for i, q in enumerate(qids)}
    b = {q: ("" if i < 30 else f"b {i}") for i, q in enumerate(qids)}
    wrong = dict.fromkeys(qids, False)
    pair = pair_agreement(a, b, wrong, wrong)
    assert pair.both_wrong == 10 and pair.same_wrong == 0 and not pair.flagged
    # Both abstaining is no evidence: those questions are left out of the share.
    assert pair_agreement(dict.fromkeys(qids, ""), dict.fromkeys(qids, ""), wrong, wrong).both_wrong == 0


def test_too_few_shared_wrong_answers_are_not_flagged() -> None:
    qids = [f"q{i}" for i in range(MIN_BOTH_WRONG - 1)]
    same = {q: "x" for q in qids}
    wrong = dict.fromkeys(qids, False)
    pair = pair_agreement(same, same, wrong, wrong)
    assert pair.wrong_share == 1.0 and not pair.flagged
