"""Chinese answers in an MRQA-suite challenge (issue 16, section 4).

MRQA's metric splits on white space, so a Chinese answer is one token and gold plus "。" scores 0.
``suite_options: {tokenization: cjk}`` makes the suite score with CMRC 2018's EM/F1, and
``challenge_load`` warns an organizer whose gold answers are mostly CJK text without it.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from leaderboard.challenges.spec import SpecError
from leaderboard.challenges.starting_kit import _score_lines
from leaderboard.challenges.suites import SUITES
from leaderboard.challenges.suites.mrqa import MrqaOptions
from leaderboard.submissions.reload import challenge_load

SPEC = """
slug: zh
title: Chinese MRQA
metric_suite: mrqa
{options}
phases:
  - {{slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z,
     closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions]}}
datasets:
  - {{slug: cmrc, name: CMRC 2018, split: II, files: {{dev: {gold}}}}}
"""

CONTEXT = "北京是中华人民共和国的首都，天安门广场位于北京市中心。"


def _gold(tmp_path: Path, answers: dict[str, list[str]], name: str = "zh.jsonl.gz") -> Path:
    lines = [
        {"header": {"dataset": "CMRC", "split": "dev"}},
        {"id": "c1", "context": CONTEXT, "context_tokens": [[ch, i] for i, ch in enumerate(CONTEXT)],
         "qas": [{"qid": qid, "question": "哪里？", "question_tokens": [["哪里", 0]], "answers": golds}
                 for qid, golds in answers.items()]},
    ]
    path = tmp_path / name
    path.write_bytes(gzip.compress("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()))
    return path


CHINESE = {"q1": ["北京"], "q2": ["天安门广场"], "q3": ["2018年"], "q4": ["Beijing"]}


def _spec(tmp_path: Path, gold: Path, options: str = "") -> Path:
    spec = tmp_path / "zh.yaml"
    spec.write_text(SPEC.format(options=options, gold=gold), encoding="utf-8")
    return spec


@pytest.mark.django_db
def test_load_warns_when_most_gold_answers_are_cjk_and_tokens_are_white_space(tmp_path: Path) -> None:
    warnings: list[str] = []
    challenge_load(spec_path=_spec(tmp_path, _gold(tmp_path, CHINESE)), warn=warnings.append)
    assert len(warnings) == 1
    assert "zh.datasets[0] (cmrc)" in warnings[0] and "75%" in warnings[0]
    assert "tokenization: cjk" in warnings[0]


@pytest.mark.django_db
def test_the_command_prints_the_warning_on_stdout(tmp_path: Path) -> None:
    out = io.StringIO()
    call_command("challenge_load", str(_spec(tmp_path, _gold(tmp_path, CHINESE))), stdout=out)
    warnings = [line for line in out.getvalue().splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1
    assert warnings[0].startswith("warning: zh.datasets[0] (cmrc): 75% of the gold answers are Chinese")
    assert "loaded zh:" in out.getvalue()


@pytest.mark.django_db
def test_no_warning_with_the_cjk_option_or_for_english_answers(tmp_path: Path) -> None:
    warnings: list[str] = []
    challenge = challenge_load(spec_path=_spec(tmp_path, _gold(tmp_path, CHINESE), "suite_options: {tokenization: cjk}"),
                               warn=warnings.append)
    assert challenge.suite_options == {"tokenization": "cjk"} and warnings == []
    english = _gold(tmp_path, {"q1": ["Beijing"], "q2": ["Tiananmen Square"], "q3": ["北京"]}, "en.jsonl.gz")
    challenge_load(spec_path=_spec(tmp_path, english), warn=warnings.append)
    assert warnings == []


@pytest.mark.django_db
def test_an_unknown_tokenization_is_refused_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"zh\.suite_options\.tokenization: 'chinese' is not one of whitespace, cjk"):
        challenge_load(spec_path=_spec(tmp_path, _gold(tmp_path, CHINESE), "suite_options: {tokenization: chinese}"))


def test_the_suite_scores_with_cmrc2018_em_f1_when_asked(tmp_path: Path) -> None:
    gold = _gold(tmp_path, {"q1": ["北京"], "q2": ["天安门广场"]})
    preds = {"q1": "北京。", "q2": "天安门广场东"}
    suite = SUITES["mrqa"]
    assert suite.score(str(gold), preds, MrqaOptions()).metrics == {"em": 0.0, "f1": 0.0}
    cjk = suite.score(str(gold), preds, MrqaOptions(tokenization="cjk"))
    # EM: "北京。" matches once "。" is deleted; F1: 1 and 10/11 (5 of 6 predicted characters).
    assert cjk.metrics == {"em": 50.0, "f1": pytest.approx(100 * (1 + 10 / 11) / 2)}
    assert [r["exact_match"] for r in cjk.per_example] == [1, 0]


def test_the_starting_kit_scores_dev_files_as_the_suite_does() -> None:
    assert _score_lines("mrqa", MrqaOptions(tokenization="cjk"), "dev/zh.jsonl.gz", "out/zh.json") == (
        "python -m scoring mrqa dev/zh.jsonl.gz out/zh.json --tokenization cjk",)
    assert _score_lines("mrqa", MrqaOptions(), "dev/zh.jsonl.gz", "out/zh.json") == (
        "python -m scoring mrqa dev/zh.jsonl.gz out/zh.json",)
