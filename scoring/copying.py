"""How much two systems' answers agree, against what their accuracies would predict: the copy signal.

Two independent systems agree where both are right (the gold answer) and, much more rarely, where
both are wrong: a wrong answer is one of many possible spans, and two systems built apart seldom
pick the same wrong one.  A team that uploads another team's predictions with a few answers changed
shares nearly all of its wrong answers.  So the statistic is:

* ``same_wrong / both_wrong``: among the questions both got wrong (and both answered with some
  non-empty text: two abstentions are no evidence of copying), the share with the same normalized
  answer (``answer_key``).
* beside it, the overall agreement against the agreement expected if the two were independent:
  ``p_a p_b + (1 - p_a)(1 - p_b) c``, with ``p`` the accuracy on the questions both answered and
  ``c`` the wrong-answer agreement measured between real independent systems
  (``INDEPENDENT_WRONG_SHARE``; deploy/demo/integrity_calibrate.py measures it).

A pair is flagged when the wrong-answer share reaches ``FLAG_WRONG_SHARE`` over at least
``MIN_BOTH_WRONG`` questions.  Nothing here acts on it: the console lists the pair for a person.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from scoring.text import normalize_answer

# Measured by deploy/demo/integrity_calibrate.py on the shared MRQA data (docs/organizers/integrity.md):
# between four baselines built apart, on the files of 100 questions or more, the share of identical
# wrong answers was 0.0-10.0% (mean 1.8%; SQuAD dev, 10,507 questions: at most 6.1%); copies of the
# baseline with 5-20% of their answers replaced shared 80-96%.  The expectation uses the highest.
INDEPENDENT_WRONG_SHARE = 0.10
FLAG_WRONG_SHARE = 0.6
# Below this, a high share is too likely by chance (3 of 4 means little).
MIN_BOTH_WRONG = 10


def answer_key(answer: object) -> str:
    """The answer compared: SQuAD's normalization for text, each element for a list (DuReader), a
    canonical JSON for anything else (a structured answer)."""
    if isinstance(answer, str):
        return normalize_answer(answer)
    if isinstance(answer, list) and all(isinstance(a, str) for a in answer):
        return " | ".join(sorted(normalize_answer(a) for a in answer))
    return json.dumps(answer, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class PairAgreement:
    questions: int  # answered by both, with a per-question verdict for both
    same: int  # identical normalized answers among them
    right_a: int
    right_b: int
    both_wrong: int  # both wrong, both with a non-empty answer
    same_wrong: int  # of those, identical

    @property
    def wrong_share(self) -> float | None:
        return self.same_wrong / self.both_wrong if self.both_wrong else None

    @property
    def agreement(self) -> float | None:
        return self.same / self.questions if self.questions else None

    @property
    def expected_agreement(self) -> float | None:
        """The agreement two independent systems of these accuracies would show."""
        if not self.questions:
            return None
        p_a, p_b = self.right_a / self.questions, self.right_b / self.questions
        return p_a * p_b + (1 - p_a) * (1 - p_b) * INDEPENDENT_WRONG_SHARE

    @property
    def flagged(self) -> bool:
        share = self.wrong_share
        return share is not None and self.both_wrong >= MIN_BOTH_WRONG and share >= FLAG_WRONG_SHARE


def pair_agreement(
    answers_a: Mapping[str, object], answers_b: Mapping[str, object],
    right_a: Mapping[str, bool], right_b: Mapping[str, bool],
) -> PairAgreement:
    """Compare two systems over the questions both answered and both have a verdict for.

    ``right_*``: qid -> whether that system's answer was right (exact match), from its scoring.
    """
    questions = same = n_right_a = n_right_b = both_wrong = same_wrong = 0
    for qid in answers_a.keys() & answers_b.keys() & right_a.keys() & right_b.keys():
        key_a, key_b = answer_key(answers_a[qid]), answer_key(answers_b[qid])
        questions += 1
        same += key_a == key_b
        n_right_a += right_a[qid]
        n_right_b += right_b[qid]
        if not right_a[qid] and not right_b[qid] and key_a and key_b:
            both_wrong += 1
            same_wrong += key_a == key_b
    return PairAgreement(questions, same, n_right_a, n_right_b, both_wrong, same_wrong)
