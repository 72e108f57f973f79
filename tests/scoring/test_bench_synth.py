"""The benchmark's synthetic inputs are valid files of each format, and the benchmark runs end to end.

Times are never asserted here: at N=200 they measure interpreter start-up.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks import bench_scoring, synth

N = 200


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    return synth.generate_all(N, tmp_path_factory.mktemp("synth"))


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _lines(path: Path) -> list[Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _squad_qas(dataset: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(p["context"], qa) for a in dataset["data"] for p in a["paragraphs"] for qa in p["qas"]]


def test_the_same_seed_gives_the_same_bytes(tmp_path: Path) -> None:
    for kind in ("squad1", "mrqa", "dureader"):
        first = synth.generate(kind, 30, tmp_path / "a" / kind, seed=7)
        second = synth.generate(kind, 30, tmp_path / "b" / kind, seed=7)
        other = synth.generate(kind, 30, tmp_path / "c" / kind, seed=8)
        for role in first:
            assert first[role].read_bytes() == second[role].read_bytes()
        assert first["pred"].read_bytes() != other["pred"].read_bytes()


def test_squad1_has_three_span_golds_and_mostly_overlapping_predictions(inputs: dict[str, dict[str, Path]]) -> None:
    dataset = _load(inputs["squad1"]["dataset"])
    preds = _load(inputs["squad1"]["pred"])
    assert dataset["version"] == "1.1"
    qas = _squad_qas(dataset)
    assert len(qas) == N == len({qa["id"] for _, qa in qas})
    exact = 0
    for context, qa in qas:
        assert len(qa["answers"]) == 3
        for answer in qa["answers"]:
            assert 1 <= len(answer["text"].split()) <= 8
            assert context[answer["answer_start"]:].startswith(answer["text"])
        exact += preds.get(qa["id"]) in {a["text"] for a in qa["answers"]}
    assert all(isinstance(v, str) for v in preds.values())
    assert 0 < N - len(preds) < N * 0.1  # a few missing
    assert N * 0.2 < exact < N * 0.7  # some exact, not all


def test_squad2_is_half_unanswerable_with_an_na_prob_for_every_question(inputs: dict[str, dict[str, Path]]) -> None:
    dataset = _load(inputs["squad2"]["dataset"])
    preds = _load(inputs["squad2"]["pred"])
    na_prob = _load(inputs["squad2"]["na_prob"])
    qas = _squad_qas(dataset)
    ids = {qa["id"] for _, qa in qas}
    unanswerable = sum(not qa["answers"] for _, qa in qas)
    assert dataset["version"] == "v2.0" and len(qas) == N
    assert N * 0.35 < unanswerable < N * 0.65
    assert all(qa["is_impossible"] == (not qa["answers"]) for _, qa in qas)
    # evaluate-v2.0.py crashes on a missing prediction (spec 2.3), so all are predicted.
    assert set(preds) == ids == set(na_prob)
    assert all(0.0 <= p <= 1.0 for p in na_prob.values())
    assert "" in preds.values()


def test_mrqa_is_gzipped_json_lines_with_a_header(inputs: dict[str, dict[str, Path]]) -> None:
    path = inputs["mrqa"]["dataset"]
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    header, *lines = _lines(path)
    assert header == {"header": {"dataset": "SynthQA", "split": "dev"}}
    qas = [qa for line in lines for qa in line["qas"]]
    assert len(qas) == N == len({qa["qid"] for qa in qas})
    for line in lines:
        assert [t for t, _ in line["context_tokens"]] == line["context"].split()
    for qa in qas:
        assert len(qa["answers"]) == 3 and all(isinstance(a, str) for a in qa["answers"])
        assert len(qa["detected_answers"]) == 3
    preds = _load(inputs["mrqa"]["pred"])
    assert set(preds) < {qa["qid"] for qa in qas}


def _check_dureader_common(row: dict[str, Any]) -> None:
    # dureader_eval.py data_check (spec 4.1) on every line of both files.
    assert isinstance(row["question_id"], int)
    assert row["question_type"] in ("DESCRIPTION", "ENTITY", "YES_NO")
    assert isinstance(row["yesno_answers"], list)
    assert row["entity_answers"] and all(isinstance(e, list) for e in row["entity_answers"])
    assert all(isinstance(a, str) for a in row["answers"])


def test_dureader_lines_carry_every_field_both_scripts_require(inputs: dict[str, dict[str, Path]]) -> None:
    refs = _lines(inputs["dureader"]["ref"])
    preds = _lines(inputs["dureader"]["pred"])
    assert len(refs) == N == len({r["question_id"] for r in refs})
    types = Counter(r["question_type"] for r in refs)
    assert types["DESCRIPTION"] > types["ENTITY"] > types["YES_NO"] > 0
    assert {r["source"] for r in refs} == {"search", "zhidao"}
    for ref in refs:
        _check_dureader_common(ref)
        assert 1 <= len(ref["answers"]) <= 3
        assert all(20 <= len(a) <= 120 for a in ref["answers"])
        assert len(ref["entity_answers"]) == len(ref["answers"])
        if ref["question_type"] == "YES_NO":
            # MRC2018 indexes one label per reference answer (spec 5.5).
            assert len(ref["yesno_answers"]) == len(ref["answers"])
            assert set(ref["yesno_answers"]) <= {"Yes", "No", "Depends"}
        if ref["question_type"] == "ENTITY":
            assert all(ents for ents in ref["entity_answers"])
    by_id = {r["question_id"]: r for r in refs}
    assert 0 < len(preds) <= N
    for pred in preds:
        _check_dureader_common(pred)
        assert len(pred["answers"]) == 1 and len(pred["entity_answers"]) == 1  # spec 4.6
        assert pred["question_type"] == by_id[pred["question_id"]]["question_type"]
    # Candidates are long enough for 4-grams (MRC2018 BLEU divides by their count, spec 5.4).
    assert sum(len(p["answers"][0]) >= 4 for p in preds) > N / 2


def test_quac_has_ten_questions_per_dialog_four_references_and_line_per_dialog_predictions(
    inputs: dict[str, dict[str, Path]],
) -> None:
    dataset = _load(inputs["quac"]["dataset"])
    dialogs = [p for a in dataset["data"] for p in a["paragraphs"]]
    assert len(dialogs) == N // synth.QUAC_QUESTIONS_PER_DIALOG
    cannot = 0
    for dialog in dialogs:
        assert dialog["context"].endswith(" CANNOTANSWER")
        for qa in dialog["qas"]:
            assert qa["id"].startswith(dialog["id"] + "_q#")
            assert len(qa["answers"]) == 4 and qa["yesno"] in "xyn" and qa["followup"] in "ymn"
            for answer in qa["answers"]:
                assert dialog["context"][answer["answer_start"]:].startswith(answer["text"])
            cannot += sum(a["text"] == "CANNOTANSWER" for a in qa["answers"]) >= 2
    assert N * 0.1 < cannot < N * 0.3
    lines = _lines(inputs["quac"]["pred"])
    for line in lines:
        lengths = {len(line[key]) for key in ("qid", "best_span_str", "yesno", "followup")}
        assert len(lengths) == 1
        assert len({qid.split("_q#")[0] for qid in line["qid"]}) == 1  # filed by its first qid (spec 6.1)
    assert N * 0.9 < sum(len(line["qid"]) for line in lines) <= N


def test_coqa_has_fifteen_turns_per_story_and_four_golds(inputs: dict[str, dict[str, Path]]) -> None:
    dataset = _load(inputs["coqa"]["dataset"])
    stories = dataset["data"]
    assert len(stories) == math.ceil(N / synth.COQA_TURNS_PER_STORY)
    assert sum(len(s["questions"]) for s in stories) == N
    for story in stories:
        turns = [q["turn_id"] for q in story["questions"]]
        assert turns == list(range(1, len(turns) + 1))
        assert [a["turn_id"] for a in story["answers"]] == turns
        assert sorted(story["additional_answers"]) == ["0", "1", "2"]
        for answers in story["additional_answers"].values():
            assert [a["turn_id"] for a in answers] == turns
        assert story["source"] in {"mctest", "gutenberg", "race", "cnn", "wikipedia", "reddit", "science"}
    preds = _load(inputs["coqa"]["pred"])
    assert all(set(p) == {"id", "turn_id", "answer"} for p in preds)
    assert N * 0.9 < len(preds) <= N


def test_the_benchmark_runs_end_to_end_and_reports_every_command(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    status = bench_scoring.main(["--n", str(N), "--repeat", "1", "--out", str(tmp_path / "in"), "--json", str(out)])
    assert status == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    results = {r["name"]: r for r in report["results"]}
    assert list(results) == list(bench_scoring.COMMAND_NAMES)
    for name, r in results.items():
        # FAIL would mean a scorer rejected valid synthetic input (or the benchmark called it wrongly).
        assert r["status"] in ("PASS", "MISS", "N/A"), (name, r["detail"])
        if r["status"] != "N/A":
            assert r["ours_s"] > 0 and r["yardstick_s"] > 0 and r["ratio"] > 0
            assert len(r["ours_runs"]) == len(r["ours_cpu_runs"]) == 1
            assert r["cpu_ratio"] is None or r["cpu_ratio"] > 0


def test_a_scorer_that_fails_is_reported_as_fail_not_timed(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    missing.write_text("{not json", encoding="utf-8")
    command = bench_scoring.Command(
        "broken", "squad1", "squad1", lambda f: [str(f["dataset"]), str(f["pred"])],
        (("dataset", "json"),), 5, "-",
    )
    result = bench_scoring.measure(
        command, {"dataset": missing, "pred": missing}, repeat=1, timeout=60, available=("", "")
    )
    assert result.status == "FAIL" and result.ours_s is None
    assert "exit status" in result.detail


def test_an_unknown_sub_command_is_not_available() -> None:
    assert bench_scoring.availability("no-such-benchmark")[0] == "N/A"


def test_printed_json_accepts_notices_before_the_json() -> None:
    assert bench_scoring._printed_json(b'{\n "f1": 1.0\n}\n')
    assert bench_scoring._printed_json(b'Unanswered question x will receive score 0.\n{"f1": 1.0}\n')
    assert not bench_scoring._printed_json(b"b'{\"f1\": 1.0}'\n")
    assert not bench_scoring._printed_json(b"")


def test_only_rejects_unknown_commands() -> None:
    with pytest.raises(SystemExit):
        bench_scoring.parse_args(["--only", "squad1,squad3"])
    assert [c.name for c in bench_scoring.parse_args(["--only", "coqa,squad1"]).commands] == ["squad1", "coqa"]
