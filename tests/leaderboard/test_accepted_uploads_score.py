"""An upload the platform accepts is one it can score, for every suite.

Answers of many shapes (hand-picked, then random ones from a seeded generator) go through
exactly the checks an upload passes (``parse_upload``, then ``predictions_check``: the suite's
answer format and the question ids); each one accepted must then score without an error.  A
refusal must name the file.  Before issue 17, MRC2018 accepted ``"yesno_answers": "Yes"`` and
failed at scoring, counting against the team's quota.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from leaderboard.challenges.suites import SUITES
from leaderboard.submissions.scores import predictions_check
from leaderboard.submissions.uploads import DatasetTarget, UploadError, parse_upload
from tests.builders.cast import DEMO_DATA
from tests.builders.suites import coqa_gold, quac_gold, squad2_gold


def _copy(name: str) -> Callable[[Path], Path]:
    def gold(tmp_path: Path) -> Path:
        return DEMO_DATA / name

    return gold


def _written(document: Callable[[], Any]) -> Callable[[Path], Path]:
    def gold(tmp_path: Path) -> Path:
        path = tmp_path / "gold.json"
        path.write_text(json.dumps(document()), encoding="utf-8")
        return path

    return gold


GOLDS: dict[str, Callable[[Path], Path]] = {
    "mrqa": _copy("mrqa/SQuAD.dev.jsonl.gz"),
    "mrc2018": _copy("dureader/search.dev.jsonl"),
    "squad2": _written(squad2_gold),
    "quac": _written(quac_gold),
    "coqa": _written(coqa_gold),
}

SCALARS: list[Any] = ["", "x", "Yes", "No", "Depends", "y", "n", "m", "CANNOTANSWER", "中文 答案", "é\u00a0😀",
                      0, 1, -2.5, 1e300, True, False, None]
FIELDS = ["answer", "answers", "yesno", "followup", "yesno_answers", "entity_answers", "question_id",
          "question_type", "source", "x"]

HAND_PICKED: list[Any] = [
    *SCALARS,
    [], ["x"], {},
    {"answers": ["x"]}, {"answers": ["x"], "yesno_answers": ["Yes"]}, {"answers": ["x"], "yesno_answers": []},
    {"answers": [], "yesno_answers": ["No"]}, {"answers": ["x", "y"], "yesno_answers": ["Yes", "No"]},
    {"answers": ["x"], "yesno_answers": "Yes"}, {"answers": ["x"], "yesno_answers": [1]},
    {"answers": ["x"], "yesno_answers": [None]}, {"answers": ["x"], "yesno_answers": None},
    {"answers": ["x"], "yesno_answers": [["Yes"]]}, {"answers": "x"}, {"answers": None}, {"answers": [1]},
    {"answers": ["x"], "question_id": [1], "question_type": "YES_NO", "entity_answers": [[]], "source": "search"},
    {"answer": "x"}, {"answer": "x", "yesno": "y", "followup": "n"}, {"answer": "x", "yesno": "Y"},
    {"answer": "x", "followup": None}, {"answer": "x", "follow_up": "m"}, {"answer": 1}, {"answer": ["x"]},
]


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.5:
        return rng.choice(SCALARS)
    if roll < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(FIELDS): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def candidates(seed: int, n: int) -> Iterator[Any]:
    """The hand-picked answers, then ``n`` random ones: a third objects of plausible fields, a
    third a valid MRC2018 or QuAC object with fields added or replaced, a third anything."""
    yield from HAND_PICKED
    rng = random.Random(seed)
    for _ in range(n):
        roll = rng.random()
        if roll < 1 / 3:
            yield {rng.choice(FIELDS): _value(rng, 1) for _ in range(rng.randint(1, 3))}
        elif roll < 2 / 3:
            answer: dict[str, Any] = rng.choice([{"answers": [rng.choice(SCALARS[:11])]},
                                                 {"answer": rng.choice(SCALARS[:11])}])
            for _ in range(rng.randint(1, 2)):
                answer[rng.choice(FIELDS)] = _value(rng, 1)
            yield answer
        else:
            yield _value(rng, 0)


@pytest.mark.parametrize("key", list(GOLDS))
def test_every_answer_shape_an_upload_is_accepted_with_is_scored(key: str, tmp_path: Path) -> None:
    suite = SUITES[key]
    gold = GOLDS[key](tmp_path)
    qids = suite.inspect_gold(gold.read_bytes(), filename=gold.name).qids
    target = DatasetTarget("data", (), qids)
    accepted = refused = 0
    for answer in candidates(seed=17, n=300):
        raw = json.dumps({qid: answer for qid in qids}, ensure_ascii=False).encode("utf-8")
        try:
            per_dataset = parse_upload(raw, filename="p.json", targets=[target], max_expanded_bytes=len(raw))
            predictions_check(suite, per_dataset["data"], qids=qids, where="p.json [data]")
        except UploadError as exc:
            assert str(exc).startswith("p.json"), (answer, str(exc))
            refused += 1
            continue
        accepted += 1
        try:
            suite.score(str(gold), per_dataset["data"].by_qid, suite.options_type())
        except Exception as exc:  # noqa: BLE001 - any error here is the bug this test is for
            pytest.fail(f"{key}: accepted {answer!r} but scoring failed: {type(exc).__name__}: {exc}")
    assert accepted and refused, (accepted, refused)


def test_an_mrc2018_yes_no_label_that_is_not_a_list_of_strings_is_refused_naming_the_question(
    tmp_path: Path,
) -> None:
    suite = SUITES["mrc2018"]
    gold = GOLDS["mrc2018"](tmp_path)
    qids = suite.inspect_gold(gold.read_bytes(), filename=gold.name).qids
    preds: dict[str, dict[str, object]] = {qid: {"answers": ["x"], "yesno_answers": ["Yes"]} for qid in qids}
    preds[qids[3]] = {"answers": ["x"], "yesno_answers": "Yes"}
    raw = json.dumps(preds).encode()
    per_dataset = parse_upload(raw, filename="p.json", targets=[DatasetTarget("data", (), qids)],
                               max_expanded_bytes=len(raw))
    with pytest.raises(UploadError) as caught:
        predictions_check(suite, per_dataset["data"], qids=qids, where="p.json [data]")
    assert str(caught.value) == (
        f"p.json [data], id {qids[3]!r}: \"yesno_answers\" should be a list of strings (e.g. [\"Yes\"]), found 'Yes'"
    )
