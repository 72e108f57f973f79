"""Not-answerable questions and their difficulty (Nakanishi et al. 2018): builder, levels, vectors, balanced accuracy.

The builder is checked against the paper's Table 3 dev row on the real SQuAD
v1.1 dev file and, rule by rule, on a tiny hand-built file; ``ave_word_sim`` on
2-d vectors whose cosines are known by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scoring.errors import InputFormatError
from scoring.naq import (
    STOP_WORDS,
    Thresholds,
    ave_word_sim,
    ave_word_sims,
    build_naqs,
    content_words,
)
from scoring.squad import squad_questions
from scoring.unanswerable import balanced_detection, evaluate_unanswerable
from scoring.wordvec import WordVectors, load_glove, write_glove
from tests.builders.shared import shared_path
from tests.scoring.helpers import assert_one_line_error
from tests.scoring.helpers import run_cli as _cli

P0 = "Paris is the capital of France. The Seine flows through it."
P1 = "Berlin is the capital of Germany. The Spree flows through it."
P2 = "Rome is the capital of Italy, and paris is also a name."
SOLO = "Monaco is a city-state."


def _qa(qid: str, question: str, *answers: str) -> dict[str, Any]:
    return {"id": qid, "question": question, "answers": [{"text": a, "answer_start": 0} for a in answers]}


def tiny() -> dict[str, Any]:
    """One article of three paragraphs, one of a single paragraph."""
    return {"version": "1.1", "data": [
        {"title": "Capitals", "paragraphs": [
            {"context": P0, "qas": [
                _qa("q0a", "What is the capital of France?", "Paris"),  # -> P1: kept
                _qa("q0b", "Which city is the capital?", "Paris", "Berlin"),  # -> P1: "Berlin" is there: dropped
            ]},
            {"context": P1, "qas": [
                _qa("q1a", "Which river flows through Berlin?", "Spree", "The Spree"),  # -> P2: kept
            ]},
            {"context": P2, "qas": [
                _qa("q2a", "What is the capital of Italy?", "Rome"),  # -> P0 (the first): kept
                _qa("q2b", "Which river?", "Seine"),  # -> P0: dropped
                _qa("q2c", "Which city, lower-cased?", "paris"),  # -> P0 has "Paris" only: kept (case-sensitive)
                {"id": "q2d", "question": "Already unanswerable?", "answers": [], "is_impossible": True},
            ]},
        ]},
        {"title": "Monaco", "paragraphs": [{"context": SOLO, "qas": [_qa("s0", "What is Monaco?", "city-state")]}]},
    ]}


def _qas(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [qa for article in document["data"] for p in article["paragraphs"] for qa in p["qas"]]


# --------------------------------------------------------------------------- builder


@pytest.mark.shared
def test_squad_v1_dev_gives_the_papers_table_3_dev_row() -> None:
    dataset = json.loads(shared_path("data", "squad-v1.1", "dev-v1.1.json").read_text(encoding="utf-8"))
    build = build_naqs(dataset, mixed=True)
    assert (len(build.naqs), build.passages) == (9762, 2065)
    assert build.source_questions == 10570 and build.dropped == 808
    qas = _qas(build.document)
    assert len(qas) == 10570 + 9762 and len({qa["id"] for qa in qas}) == len(qas)
    for naq, context in zip(build.naqs, build.contexts):
        assert naq["is_impossible"] is True and naq["answers"] == []
        assert not any(a["text"] in context for a in naq["plausible_answers"])
    alone = build_naqs(dataset, mixed=False)
    assert len(_qas(alone.document)) == 9762
    assert sum(len(a["paragraphs"]) for a in alone.document["data"]) == 2065


def test_questions_move_to_the_next_paragraph_and_the_last_ones_to_the_first() -> None:
    build = build_naqs(tiny(), mixed=False)
    moved = {qa["naq_source_id"]: context for qa, context in zip(build.naqs, build.contexts)}
    assert moved == {"q0a": P1, "q1a": P2, "q2a": P0, "q2c": P0}
    # Dropped: an answer (any of them) occurs verbatim in the new passage.
    assert build.dropped == 2
    # Not moved: a question with no answer to keep; an article of one paragraph has no neighbour.
    assert build.not_moved == 1 and build.single_paragraph_articles == 1
    assert build.passages == 3
    assert [p["context"] for a in build.document["data"] for p in a["paragraphs"]] == [P0, P1, P2]


def test_a_naq_is_squad2_unanswerable_with_its_answers_kept_as_plausible() -> None:
    build = build_naqs(tiny(), mixed=False)
    naq = next(qa for qa in build.naqs if qa["naq_source_id"] == "q1a")
    assert naq == {
        "id": "q1a_naq", "question": "Which river flows through Berlin?", "answers": [], "is_impossible": True,
        "plausible_answers": [{"text": "Spree", "answer_start": 0}, {"text": "The Spree", "answer_start": 0}],
        "naq_source_id": "q1a",
    }
    assert squad_questions(build.document)  # a valid SQuAD document


def test_mixed_output_keeps_the_originals_before_the_naqs_of_each_passage() -> None:
    source = tiny()
    build = build_naqs(source, mixed=True)
    first = build.document["data"][0]["paragraphs"][0]
    assert [qa["id"] for qa in first["qas"]] == ["q0a", "q0b", "q2a_naq", "q2c_naq"]
    assert first["qas"][0]["is_impossible"] is False
    assert [qa["id"] for qa in _qas(build.document)].count("q2d") == 1
    assert build.document["data"][1]["paragraphs"][0]["qas"][0]["id"] == "s0"
    assert source == tiny(), "the input is left as it was"


def test_a_new_id_that_is_already_taken_is_an_error() -> None:
    dataset = tiny()
    dataset["data"][0]["paragraphs"][1]["qas"].append(_qa("q0a_naq", "?", "x"))
    with pytest.raises(InputFormatError, match="'q0a_naq' is already taken"):
        build_naqs(dataset)
    assert len(build_naqs(dataset, id_suffix="-naq").naqs) == 5


def test_a_paragraph_without_a_string_context_is_rejected_naming_it() -> None:
    dataset = tiny()
    del dataset["data"][0]["paragraphs"][1]["context"]
    with pytest.raises(InputFormatError, match=r"data\[0\]\.paragraphs\[1\]"):
        build_naqs(dataset)


# --------------------------------------------------------------------------- levels


def test_level_boundaries_belong_to_the_harder_level() -> None:
    paper = Thresholds()
    cases = {0.0: "LEVEL1", 0.4999: "LEVEL1", 0.5: "LEVEL2", 0.6999: "LEVEL2", 0.7: "LEVEL3", 1.0: "LEVEL3"}
    assert {score: paper.level(score) for score in cases} == cases
    released = Thresholds(0.5, 0.8)
    assert (released.level(0.7), released.level(0.7999), released.level(0.8)) == ("LEVEL2", "LEVEL2", "LEVEL3")
    for low, high in ((0.8, 0.5), (-0.1, 0.5), (0.5, 1.5)):
        with pytest.raises(ValueError):
            Thresholds(low, high)


VECTORS_2D = {
    "cat": [1.0, 0.0],
    "dog": [0.6, 0.8],  # cos(cat, dog) = 0.6
    "car": [0.0, 2.0],  # cos(cat, car) = 0, cos(dog, car) = 0.8; length does not matter
    "tree": [-1.0, 0.0],  # cos(tree, dog) = -0.6, cos(tree, car) = 0
    "zero": [0.0, 0.0],  # no direction: out of vocabulary
}


def test_ave_word_sim_on_hand_made_vectors() -> None:
    vectors = WordVectors.from_mapping(VECTORS_2D)
    passage = "A dog (and a car)."
    # cat: max(0.6, 0) = 0.6; tree: max(-0.6, 0) = 0; "the", "and" are stop words, "unicorn" has no vector.
    assert ave_word_sim("The cat and the tree, unicorn?", passage, vectors) == pytest.approx(0.3)
    # A repeated word counts each time; dog matches itself (1.0).
    assert ave_word_sim("Cat cat DOG?", passage, vectors) == pytest.approx((0.6 + 0.6 + 1.0) / 3)
    # Nothing to compare: 0.
    assert ave_word_sim("What is it?", passage, vectors) == 0.0
    assert ave_word_sim("cat", "zero unicorn", vectors) == 0.0


def test_the_batched_scores_equal_the_formula_computed_word_by_word() -> None:
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(40)]
    vectors = WordVectors.from_mapping({w: rng.standard_normal(5).tolist() for w in words})
    pairs = [(" ".join(rng.choice(words, size=rng.integers(0, 6))), " ".join(rng.choice(words, size=12)))
             for _ in range(30)]
    pairs += [(q, pairs[0][1]) for q, _ in pairs[:5]]  # several questions on one passage

    def by_hand(question: str, passage: str) -> float:
        q, p = content_words(question), content_words(passage)
        if not q:
            return 0.0
        best = [max(0.0, max(_cos(unit[a], unit[b]) for b in p)) for a in q]
        return sum(best) / len(best)

    unit = {w: vectors.unit[vectors.index[w]] for w in words}
    assert ave_word_sims(pairs, vectors).tolist() == pytest.approx([by_hand(q, p) for q, p in pairs])


def _cos(a: Any, b: Any) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_words_are_lower_cased_stripped_of_punctuation_and_stop_words() -> None:
    assert content_words('Which (company) produces "the" iPod? Tesla\'s, U.S.') == ["company", "produces", "ipod",
                                                                                      "tesla's", "us"]
    assert len(STOP_WORDS) == 153 and {"the", "what", "wouldn"} <= STOP_WORDS


def test_glove_files_are_read_with_only_the_words_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "vectors.txt"
    path.write_text("cat 1 0\ndog 0.6 0.8\ncat 5 5\nnew york 0 1\n", encoding="utf-8")
    vectors = load_glove(path)
    assert sorted(vectors.index) == ["cat", "dog", "new york"]
    assert vectors.unit[vectors.index["cat"]].tolist() == [1.0, 0.0]  # the first "cat" wins
    assert list(load_glove(path, keep={"dog"}).index) == ["dog"]
    (tmp_path / "w2v.txt").write_text("2 2\ncat 1 0\ndog 0 3\n", encoding="utf-8")
    assert sorted(load_glove(tmp_path / "w2v.txt").index) == ["cat", "dog"]
    (tmp_path / "bad.txt").write_text("cat 1 0\ndog 0.6\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="expected 2 components") as info:
        load_glove(tmp_path / "bad.txt")
    assert info.value.line == 2


# --------------------------------------------------------------------------- vectors


def _corpus_file(tmp_path: Path) -> Path:
    """A SQuAD file whose sentences repeat, so every word passes --min-count 2."""
    animals = "Cats and dogs are pets that live in houses with people."
    cars = "Cars and trucks drive on roads, and trucks carry goods on roads."
    paragraphs = [{"context": f"{animals} {cars} Paragraph {i} repeats.", "qas": [
        _qa(f"q{i}", "Which pets live in houses?", "Cats"), _qa(f"r{i}", "What drives on roads?", "Cars")]}
        for i in range(6)]
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}), "utf-8")
    return path


def test_trained_vectors_are_glove_text_and_the_same_on_every_run(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _corpus_file(tmp_path)
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    for out in (first, second):
        code, summary, err = _cli(capsys, "naq-vectors", corpus, out, "--dim", "4", "--window", "3")
        assert code == 0, err
    assert first.read_bytes() == second.read_bytes()
    lines = first.read_text(encoding="utf-8").splitlines()
    assert summary["words"] == len(lines) > 5 and summary["dim"] == 4
    for line in lines:
        word, *numbers = line.split(" ")
        assert word == word.lower() and word not in STOP_WORDS and len(numbers) == 4
        assert all(math.isfinite(float(x)) for x in numbers)
    vectors = load_glove(first)
    assert {"cats", "dogs", "trucks", "roads"} <= set(vectors.index)
    code, _, _ = _cli(capsys, "naq-vectors", corpus, tmp_path / "c.txt", "--dim", "4", "--window", "3", "--seed", "1")
    assert code == 0


def test_write_glove_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "v.txt"
    write_glove(path, ["a", "b"], np.array([[0.5, -0.25], [1.0, 2.0]]))
    assert path.read_text() == "a 0.500000 -0.250000\nb 1.000000 2.000000\n"


# --------------------------------------------------------------------------- command line


def test_naq_build_writes_squad2_with_levels_that_unanswerable_scores(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    source, vectors = tmp_path / "tiny.json", tmp_path / "vectors.txt"
    source.write_text(json.dumps(tiny()), encoding="utf-8")
    write_glove(vectors, ["capital", "city", "river", "paris", "rome"],
                np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [0.6, 0.8], [0.6, 0.8]]))
    out, rows = tmp_path / "naq.json", tmp_path / "rows.json"
    code, summary, err = _cli(capsys, "naq-build", source, out, "--vectors", vectors, "--per-example", rows)
    assert code == 0, err
    assert summary["naq_questions"] == 4 and summary["naq_passages"] == 3 and summary["mode"] == "mixed"
    assert sum(summary["levels"].values()) == 4
    per_naq = json.loads(rows.read_text())
    document = json.loads(out.read_text())
    naqs = {qa["id"]: qa for qa in _qas(document) if qa.get("naq_source_id")}
    assert {r["id"]: (r["level"], r["ave_word_sim"]) for r in per_naq} == {
        qid: (qa["level"], qa["ave_word_sim"]) for qid, qa in naqs.items()}
    # "What is the capital of Italy?" on P0: capital -> capital (1.0), italy has no vector: LEVEL3.
    assert naqs["q2a_naq"]["ave_word_sim"] == pytest.approx(1.0) and naqs["q2a_naq"]["level"] == "LEVEL3"
    # The same file with the released code's upper bound.
    code, released, _ = _cli(capsys, "naq-build", source, tmp_path / "r.json", "--vectors", vectors,
                             "--thresholds", "0.5", "0.8", "--alone")
    assert code == 0 and released["thresholds"] == [0.5, 0.8] and released["output_questions"] == 4

    predictions = {qa["id"]: ("" if qa.get("is_impossible") else qa["answers"][0]["text"]) for qa in _qas(document)}
    (tmp_path / "pred.json").write_text(json.dumps(predictions), encoding="utf-8")
    code, scores, _ = _cli(capsys, "unanswerable", out, tmp_path / "pred.json")
    assert code == 0 and scores["detection_accuracy"] == 100.0
    for level in scores["levels"].values():
        assert level["balanced_detection_accuracy"] == 100.0
        assert level["balanced_total"] == 2 * level["unanswerable_total"]
    code, reseeded, _ = _cli(capsys, "unanswerable", out, tmp_path / "pred.json", "--balance-seed", "5")
    assert code == 0 and reseeded == scores  # every prediction right: the draw cannot show


def test_vectors_that_miss_most_words_are_warned_about(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, vectors = tmp_path / "tiny.json", tmp_path / "cased.txt"
    source.write_text(json.dumps(tiny()), encoding="utf-8")
    vectors.write_text("Capital 1 0\nRiver 0 1\n\n", encoding="utf-8")
    code, summary, err = _cli(capsys, "naq-build", source, tmp_path / "out.json", "--vectors", vectors)
    assert code == 0 and summary["question_words_with_vectors"] == 0.0
    assert summary["levels"] == {"LEVEL1": 4, "LEVEL2": 0, "LEVEL3": 0}
    assert "only 0% of the question words have a vector" in err


def test_bad_thresholds_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        _cli(capsys, "naq-build", tmp_path / "in.json", tmp_path / "out.json", "--thresholds", "0.8", "0.5")
    assert info.value.code == 2
    assert "need 0 <= low <= high <= 1" in capsys.readouterr().err


def test_a_missing_vectors_file_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "tiny.json"
    source.write_text(json.dumps(tiny()), encoding="utf-8")
    assert_one_line_error(capsys, ["naq-build", source, tmp_path / "out.json", "--vectors", tmp_path / "none.txt"],
                          "none.txt", "file not found")


# --------------------------------------------------------------------------- balanced accuracy


def _record(qid: str, has_ans: bool, correct: bool) -> dict[str, Any]:
    return {"id": qid, "has_ans": has_ans, "detection_correct": correct}


def test_balanced_accuracy_on_a_constructed_case() -> None:
    # A level of 4 NAQs, 3 detected; 4 answerable questions in all, each answered: all are drawn.
    level = [_record(f"u{i}", False, i < 3) for i in range(4)]
    answerable = [_record(f"a{i}", True, True) for i in range(4)]
    assert balanced_detection(level, answerable, seed=0, label="L") == {
        "balanced_total": 8, "balanced_detection_accuracy": 87.5}
    # More answerable questions than NAQs, all answered: whichever 4 are drawn, 7 of 8.
    many = [_record(f"a{i}", True, True) for i in range(50)]
    assert balanced_detection(level, many, seed=3, label="L")["balanced_detection_accuracy"] == 87.5
    # Fewer answerable questions (2, both wrongly abstained on) than NAQs (4, all detected): 2 of each.
    detected = [_record(f"u{i}", False, True) for i in range(4)]
    wrong = [_record("a0", True, False), _record("a1", True, False)]
    assert balanced_detection(detected, wrong, seed=0, label="L") == {
        "balanced_total": 4, "balanced_detection_accuracy": 50.0}
    assert balanced_detection(level, [], seed=0, label="L") == {}
    assert balanced_detection(answerable, many, seed=0, label="L") == {}


def test_the_balanced_draw_depends_on_the_seed_but_not_on_the_order() -> None:
    # Answerable questions alternate right and wrong, so the draw shows in the number.
    dataset = {"data": [{"paragraphs": [{"context": "c", "qas": [
        *({"id": f"a{i}", "question": "?", "answers": [{"text": "x", "answer_start": 0}]} for i in range(40)),
        *({"id": f"u{i}", "question": "?", "answers": [], "level": "LEVEL1"} for i in range(5)),
    ]}]}]}
    predictions = {f"a{i}": ("x" if i % 2 else "") for i in range(40)} | {f"u{i}": "" for i in range(5)}

    def balanced(document: dict[str, Any], seed: int) -> float:
        result = evaluate_unanswerable(document, predictions, balance_seed=seed).metrics
        return float(result["levels"]["LEVEL1"]["balanced_detection_accuracy"])

    reordered = json.loads(json.dumps(dataset))
    reordered["data"][0]["paragraphs"][0]["qas"].reverse()
    assert balanced(dataset, 0) == balanced(reordered, 0)
    assert len({balanced(dataset, seed) for seed in range(8)}) > 1
    for seed in range(8):
        assert 50.0 <= balanced(dataset, seed) <= 100.0
