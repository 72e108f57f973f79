"""Every suite stores, as the inputs systems read, only its format's allowlist (scoring.inputs).

The gold files are those of test_suites_more.py (SQuAD 2.0, QuAC, CoQA) and the
every-field records of tests/scoring/every_field.py (MRQA, DuReader), with a
canary in every answer-bearing text and an unknown field in every object.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest

from leaderboard.challenges.suites import SUITES
from scoring.inputs import COQA, DEEPREAD, DUREADER, MRQA_CONTEXT, MRQA_HEADER, QUAC, Fields, squad2_fields
from tests.builders.suites import coqa_gold, encode, quac_gold, squad2_gold
from tests.scoring.every_field import (
    ANSWER_KEYS,
    allowed_keys,
    canaries_in,
    deepread_document,
    dureader_lines,
    keys_of,
    mrqa_gzip,
    mrqa_lines,
    plant,
)


def _mrqa() -> bytes:
    return mrqa_gzip([plant(line) for line in mrqa_lines()])


def _mrc2018() -> bytes:
    lines = [plant(json.loads(line)) for line in dureader_lines().decode("utf-8").splitlines()]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")


# Suite -> (gold file name, its bytes with every field, the format's allowlists).
GOLDS: dict[str, tuple[str, Callable[[], bytes], tuple[Fields, ...]]] = {
    "mrqa": ("TernQA.jsonl.gz", _mrqa, (MRQA_HEADER, MRQA_CONTEXT)),
    "mrc2018": ("search.test.jsonl", _mrc2018, (DUREADER,)),
    "squad2": ("dev-v2.0.json", lambda: encode(plant(squad2_gold())), (squad2_fields(keep_levels=True),)),
    # QuAC's loader checks the dialog acts, so they keep their labels; they are checked by name.
    "quac": ("val_v0.2.json", lambda: encode(plant(quac_gold(), keep=frozenset({"yesno", "followup"}))), (QUAC,)),
    "coqa": ("coqa-dev-v1.0.json", lambda: encode(plant(coqa_gold())), (COQA,)),
    # The loader checks the marked sentences against the story, so they keep their ids; checked by name.
    "deepread": ("deepread-dev.json",
                 lambda: encode(plant(deepread_document(), keep=frozenset({"answer_sentences"}))), (DEEPREAD,)),
}


def _parsed(inputs: bytes) -> Any:
    if inputs[:2] == b"\x1f\x8b":
        inputs = gzip.decompress(inputs)
    text = inputs.decode("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines()]


def test_every_suite_is_covered() -> None:
    assert set(GOLDS) == set(SUITES)


@pytest.mark.parametrize("key", list(GOLDS))
def test_a_gold_file_with_every_field_gives_inputs_without_any_answer_field(key: str) -> None:
    filename, make, allowlists = GOLDS[key]
    content = make()
    assert canaries_in(gzip.decompress(content) if content[:2] == b"\x1f\x8b" else content)

    info = SUITES[key].inspect_gold(content, filename=filename)

    assert info.qids
    assert canaries_in(gzip.decompress(info.inputs) if key == "mrqa" else info.inputs) == []
    keys = keys_of(_parsed(info.inputs))
    assert not keys & ANSWER_KEYS, keys & ANSWER_KEYS
    assert keys <= set().union(*map(allowed_keys, allowlists)), keys
