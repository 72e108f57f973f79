"""The baseline system shipped in readerboard/baseline (deploy/images/baseline/baseline.py), without Docker.

The module is loaded by path (it lives in an image's build context, not in a package). Its pieces are
checked on handmade text, then it runs as a subprocess under the container contract (manifest in
READERBOARD_INPUT, one JSON file per dataset in READERBOARD_OUTPUT) on the committed demo dev data,
answers stripped, and is scored with the scoring library.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from scoring import mrqa

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "deploy" / "images" / "baseline" / "baseline.py"
DEMO = REPO / "deploy" / "demo" / "data"
DUREADER_ANSWER_FIELDS = {"answers", "yesno_answers", "entity_answers", "answer_spans", "match_scores",
                          "fake_answers", "answer_docs", "segmented_answers"}


@pytest.fixture(scope="module")
def baseline() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readerboard_baseline", BASELINE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answers_for(baseline: ModuleType, paragraphs: list[str], questions: list[str], zh: bool = False) -> list[str]:
    passage = baseline.Passage(paragraphs, zh)
    idf = baseline.Idf(passage.units)
    return [passage.answer(q, idf) for q in questions]


def run_baseline(input_dir: Path, output_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "READERBOARD_INPUT": str(input_dir), "READERBOARD_OUTPUT": str(output_dir)}
    return subprocess.run([sys.executable, str(BASELINE)], env=env, capture_output=True, text=True, timeout=120)


def write_manifest(input_dir: Path, datasets: list[dict[str, str]]) -> None:
    manifest = {"challenge": "demo", "phase": "dev", "portion": "dev", "datasets": datasets, "limits": {}}
    (input_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


# --------------------------------------------------------------------------- pieces


def test_sentences_split_on_end_punctuation_not_on_abbreviations(baseline: ModuleType) -> None:
    text = 'He said "Stop." Then U.S. troops left! Why? [PAR] A new paragraph\nwith a line break.'
    assert [text[s:e] for s, e in baseline.split_sentences(text)] == [
        'He said "Stop."', "Then U.S. troops left!", "Why?", "A new paragraph", "with a line break."]
    assert baseline.split_sentences("") == [] and baseline.split_sentences("  \n ") == []


def test_chinese_sentences_split_on_full_width_punctuation(baseline: ModuleType) -> None:
    text = "第一句。第二句！！第三句？\n第四句"
    assert [text[s:e] for s, e in baseline.split_sentences(text, zh=True)] == ["第一句。", "第二句！！", "第三句？", "第四句"]


def test_the_span_is_the_obvious_answer_next_to_the_question_words(baseline: ModuleType) -> None:
    context = ("The weather was mild that spring. The Eiffel Tower was completed in 1889 for the World Fair. "
               "Paris has many museums.")
    assert answers_for(baseline, [context], [
        "When was the Eiffel Tower completed?",
        "Which city has many museums?",
        "What was the weather like that spring?",
    ]) == ["1889", "Paris", "mild"]


def test_the_span_holds_no_question_word_and_at_most_max_span_words(baseline: ModuleType) -> None:
    sentence = "In 1066 the Norman army led by William the Conqueror defeated the English army at Hastings."
    idf = baseline.Idf([baseline.terms(sentence)])
    span = baseline.choose_span("Who led the Norman army?", sentence, idf)
    assert span == "William the Conqueror"
    for question in ("Where did the Norman army defeat the English?", "When did the English army lose?"):
        span = baseline.choose_span(question, sentence, idf)
        assert span and span in sentence and len(span.split()) <= baseline.MAX_SPAN
        assert not set(baseline.terms(span)) & set(baseline.terms(question))


def test_the_earliest_sentence_wins_a_tie(baseline: ModuleType) -> None:
    idf = baseline.Idf([["apple"], ["apple"], ["pear"]])
    assert baseline.best_sentence({"apple"}, [["pear"], ["apple"], ["apple"]], idf) == 1


def test_empty_contexts_get_empty_answers(baseline: ModuleType) -> None:
    assert answers_for(baseline, [""], ["What is it?"]) == [""]
    assert answers_for(baseline, [" \n "], ["What is it?"]) == [""]
    assert answers_for(baseline, [], ["什么?"], zh=True) == [""]
    assert baseline.choose_span("What?", "...", baseline.Idf([])) == "..."


def test_chinese_picks_the_matching_sentence_by_characters(baseline: ModuleType) -> None:
    paragraphs = ["北京是中国的首都。上海是中国最大的城市，人口超过两千万。广州在南方。", "今天天气很好。"]
    [answer] = answers_for(baseline, paragraphs, ["中国最大的城市是哪个"], zh=True)
    assert answer.startswith("上海是中国最大的城市") and len(answer) <= baseline.ZH_MAX_CHARS
    long = ["无关的开头。" + "中国最大的城市是上海" + "很长" * 200]
    [answer] = answers_for(baseline, long, ["中国最大的城市是哪个"], zh=True)
    assert answer.startswith("中国最大的城市是上海") and len(answer) == baseline.ZH_MAX_CHARS
    assert baseline.is_chinese("".join(paragraphs)) and not baseline.is_chinese("An English context.")


def test_a_bad_record_does_not_stop_the_others(baseline: ModuleType, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl.gz"
    lines = [
        json.dumps({"header": {"dataset": "Bad", "split": "dev"}}),
        json.dumps({"context": "Rome is the capital of Italy.", "qas": [{"qid": "q1", "question": "What is the capital of Italy?"}]}),
        '{"context": "broken JSON", "qas": [{"qid": "q2", "question": "Lost?"}',
        json.dumps({"context": "No question id here.", "qas": [{"question": "Where is the id?"}]}),
        json.dumps({"context": None, "qas": [{"qid": "q3", "question": None}]}),
        json.dumps({"context": "Oslo is in Norway.", "qas": [{"qid": "q4", "question": "Where is Oslo?"}]}),
    ]
    path.write_bytes(gzip.compress("\n".join(lines).encode("utf-8")))
    predictions = baseline.run_dataset(str(path), "mrqa")
    assert predictions == {"q1": "Rome", "q2": "", "q3": "", "q4": "Norway"}
    assert "unreadable record" in capsys.readouterr().err


def test_a_truncated_file_keeps_the_records_read_before(baseline: ModuleType, tmp_path: Path) -> None:
    record = json.dumps({"context": "Oslo is in Norway.", "qas": [{"qid": "q1", "question": "Where is Oslo?"}]})
    data = gzip.compress(("\n".join([record] * 2000) + "\n").encode("utf-8"))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) * 3 // 4])
    assert baseline.run_dataset(str(path), "mrqa") == {"q1": "Norway"}


def test_every_dataset_file_is_written_even_when_one_is_missing(tmp_path: Path) -> None:
    input_dir, output_dir = tmp_path / "in", tmp_path / "out"
    input_dir.mkdir()
    output_dir.mkdir()
    (input_dir / "dr.jsonl").write_text(json.dumps(
        {"question_id": 7, "question": "北京是哪个国家的首都", "question_type": "ENTITY",
         "documents": [{"title": "t", "paragraphs": ["北京是中国的首都。"]}]}, ensure_ascii=False) + "\n",
        encoding="utf-8")
    write_manifest(input_dir, [
        {"name": "Missing", "input": "missing.jsonl.gz", "output": "missing.json", "format": "mrqa"},
        {"name": "DR", "input": "dr.jsonl", "output": "dr.json", "format": "dureader"},
    ])
    result = run_baseline(input_dir, output_dir)
    assert result.returncode == 1, result.stderr
    assert json.loads((output_dir / "missing.json").read_text()) == {}
    assert json.loads((output_dir / "dr.json").read_text(encoding="utf-8")) == {"7": "北京是中国的首都。"}
    assert "Missing" in result.stderr and "DR: 1 questions" in result.stdout


def test_no_manifest_is_a_clear_failure(tmp_path: Path) -> None:
    result = run_baseline(tmp_path, tmp_path)
    assert result.returncode == 2 and "manifest.json" in result.stderr


# --------------------------------------------------------------------------- end to end on the demo data


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("baseline")
    input_dir, output_dir = root / "in", root / "out"
    input_dir.mkdir()
    output_dir.mkdir()
    datasets = []
    for gold in sorted((DEMO / "mrqa").glob("*.dev.jsonl.gz")):
        name = gold.name.removesuffix(".dev.jsonl.gz")
        mrqa.strip_answers(gold, input_dir / f"{name}.jsonl.gz")
        datasets.append({"name": name, "input": f"{name}.jsonl.gz", "output": f"{name}.json", "format": "mrqa"})
    with open(DEMO / "dureader" / "search.dev.jsonl", encoding="utf-8") as src:
        stripped = [{k: v for k, v in json.loads(line).items() if k not in DUREADER_ANSWER_FIELDS}
                    for line in src if line.strip()]
    (input_dir / "search.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in stripped), encoding="utf-8")
    datasets.append({"name": "search", "input": "search.jsonl", "output": "search.json", "format": "dureader"})
    write_manifest(input_dir, datasets)
    assert "answers" not in (input_dir / "search.jsonl").read_text(encoding="utf-8")
    return output_dir, run_baseline(input_dir, output_dir)


def test_the_demo_dev_data_is_answered_and_scores_in_a_sane_band(
        demo_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    output_dir, result = demo_run
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    f1: dict[str, float] = {}
    for gold_path in sorted((DEMO / "mrqa").glob("*.dev.jsonl.gz")):
        name = gold_path.name.removesuffix(".dev.jsonl.gz")
        assert f"baseline: {name}: " in result.stdout
        predictions: dict[str, Any] = json.loads((output_dir / f"{name}.json").read_text(encoding="utf-8"))
        gold = mrqa.load_mrqa_gold(gold_path)
        assert set(predictions) == set(gold.questions), name
        assert all(isinstance(a, str) for a in predictions.values())
        f1[name] = mrqa.evaluate_mrqa(gold, predictions).metrics["f1"]
        assert 0 <= f1[name] < 90, (name, f1[name])
    assert 5 < f1["SQuAD"] < 90 and 5 < f1["XQuAD-en"] < 90, f1
    assert 5 < sum(f1.values()) / len(f1) < 90, f1


def test_the_demo_dureader_data_is_answered_and_scores_in_a_sane_band(
        demo_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    output_dir, result = demo_run
    assert result.returncode == 0, result.stderr
    predictions = json.loads((output_dir / "search.json").read_text(encoding="utf-8"))
    gold_path = DEMO / "dureader" / "search.dev.jsonl"
    with open(gold_path, encoding="utf-8") as fh:
        qids = [json.loads(line)["question_id"] for line in fh if line.strip()]
    assert set(predictions) == {str(q) for q in qids}
    assert all(predictions.values())  # every demo question has documents
    pred_path = tmp_path / "pred.jsonl"
    pred_path.write_text("".join(json.dumps({"question_id": q, "answers": [predictions[str(q)]]}, ensure_ascii=False)
                                 + "\n" for q in qids), encoding="utf-8")
    scored = subprocess.run([sys.executable, "-m", "scoring", "mrc2018", str(pred_path), str(gold_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert scored.returncode == 0, scored.stderr
    rouge = json.loads(scored.stdout)["ROUGE-L"]
    assert 5 < rouge < 90, rouge
