"""Meta-evaluation: Pearson, the paired bootstrap of correlations, sweeps, word level, loaders and CLI."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from scoring.agreement import pearson
from scoring.charmetrics import mrc_bleu, sum_bleu_stats
from scoring.cli import main
from scoring.errors import InputFormatError
from scoring.metaeval import (
    METRICS,
    Candidate,
    Judgment,
    Reference,
    bootstrap_correlation_difference,
    evaluate_metaeval,
    load_judgments,
    load_references,
    match_references,
    overall_level,
    prepare,
    sweep,
    to_units,
    word_tokens,
)
from scoring.mrc2018 import bleu_stats_with_bonus, rouge_l_with_bonus
from tests.builders.shared import shared_path
from tests.scoring.helpers import assert_one_line_error, run_cli

DATA = Path(__file__).parent / "data"
JUDGMENTS = DATA / "metaeval_judgments.jsonl"
REFS = DATA / "metaeval_refs.jsonl"

# --- Pearson -----------------------------------------------------------------------------------


def test_pearson_on_known_numbers() -> None:
    # Deviations (-2,-1,0,1,2) and (-2,0,1,0,1): r = 6 / sqrt(10 * 6) = sqrt(0.6).
    assert pearson([1, 2, 3, 4, 5], [2, 4, 5, 4, 5]) == pytest.approx(math.sqrt(0.6), abs=1e-15)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0, abs=1e-15)
    assert pearson([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0, abs=1e-15)
    assert pearson([1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 3.0, 2.0, 5.0, 4.0]) == pytest.approx(0.8, abs=1e-15)


def test_pearson_is_none_where_undefined_and_skips_nan_pairs() -> None:
    assert pearson([1, 2, 3], [0.1, 0.1, 0.1]) is None  # a constant metric (0.1 * 3 is not exact: still None)
    assert pearson([1], [2]) is None
    assert pearson([1, 2, 3, float("nan")], [2, 4, 6, 1]) == pytest.approx(1.0)


# --- word level (Yang et al. 2018, section 3) --------------------------------------------------

SKIP_CAND = "Skipping rope is an aerobic exercise."
SKIP_GOLD = ("Skipping rope is a kind of aerobic exercise with low intensity.",
             "Skipping rope can be regarded as an aerobic exercise only when skipping for a long time.")
QIN_CAND = "Qin unified China in 221 BC after the war against other kingdoms which lasted ten years."
QIN_GOLD = "Qin unified China in ten years, from 230 BC to 221 BC."
QIN_ENTITIES = ("ten years", "230 BC", "221 BC")


def test_word_tokens_keep_the_period() -> None:
    # "Include period symbol and omit lemmatization" (footnote 1): 7 tokens, 6 bigrams.
    assert word_tokens(SKIP_CAND) == ["skipping", "rope", "is", "an", "aerobic", "exercise", "."]
    assert len(word_tokens(QIN_GOLD)) == 14 and len(word_tokens(QIN_CAND)) == 17


def test_example_1_adapted_p2_for_a_yes_no_answer() -> None:
    cand, *refs = to_units([SKIP_CAND, *SKIP_GOLD], "word")
    plain = bleu_stats_with_bonus(cand, refs)
    assert (plain.correct[1], plain.guess[1]) == (4, 6)  # vanilla P2 4/6 = 0.67
    adapted = bleu_stats_with_bonus(cand, refs, yn_label="Yes", yn_refs=["Yes", "Depends"], alpha=1.0)
    assert adapted.correct[1] / adapted.guess[1] == pytest.approx(7 / 9, abs=1e-15)  # (4 + 3) / (6 + 3)
    assert round(adapted.correct[1] / adapted.guess[1], 2) == 0.78


def test_example_2_adapted_p2_for_an_entity_answer() -> None:
    cand, ref, *entities = to_units([QIN_CAND, QIN_GOLD, *QIN_ENTITIES], "word")
    plain = bleu_stats_with_bonus(cand, [ref])
    assert (plain.correct[1], plain.guess[1]) == (5, 16)  # vanilla 0.31
    adapted = bleu_stats_with_bonus(cand, [ref], entities=entities, beta=1.0)
    assert adapted.correct[1] / adapted.guess[1] == pytest.approx(7 / 18, abs=1e-15)  # (5 + 2) / (16 + 2)
    assert round(adapted.correct[1] / adapted.guess[1], 2) == 0.39


def test_example_3_adapted_rouge_l_for_a_yes_no_answer() -> None:
    # Footnote 2: section 3 uses the harmonic mean, i.e. gamma = 1.
    cand, *refs = to_units([SKIP_CAND, *SKIP_GOLD], "word")
    vanilla = rouge_l_with_bonus(cand, refs, gamma=1.0)
    # The paper's own counts (LCS 6, |c| 7, |r| 12) give P 6/7, R 6/12 and 2PR/(P+R) = 0.632; it prints
    # 0.59, which is what the counts without the period give (LCS 5, |c| 6, |r| 11: 0.588). Its claim
    # that vanilla ROUGE-L favours this answer over "exercise with low intensity" by only 0.09 is that
    # 0.59 minus the trivial answer's 0.50; by its counts the margin is 0.13.
    assert vanilla == pytest.approx(2 * (6 / 7) * (6 / 12) / (6 / 7 + 6 / 12), abs=1e-15)
    assert round(vanilla, 3) == 0.632
    adapted = rouge_l_with_bonus(cand, refs, yn_label="Yes", yn_refs=["Yes", "Depends"], alpha=1.0, gamma=1.0)
    p, r = 12 / 13, 12 / 18  # the paper's adapted P 0.92 and R 0.67
    assert adapted == pytest.approx(2 * p * r / (p + r), abs=1e-15)
    # The paper prints 0.78: the harmonic mean of P and R already rounded to 0.92 and 0.67.
    assert round(adapted, 3) == 0.774
    trivial, *refs = to_units(["exercise with low intensity", *SKIP_GOLD], "word")
    assert rouge_l_with_bonus(trivial, refs, gamma=1.0) == pytest.approx(0.5)


def test_example_4_adapted_rouge_l_for_an_entity_answer() -> None:
    cand, ref, *entities = to_units([QIN_CAND, QIN_GOLD, *QIN_ENTITIES], "word")
    vanilla = rouge_l_with_bonus(cand, [ref], gamma=1.0)
    assert vanilla == pytest.approx(2 * (7 / 17) * (7 / 14) / (7 / 17 + 7 / 14), abs=1e-15)
    adapted = rouge_l_with_bonus(cand, [ref], entities=entities, beta=1.0, gamma=1.0)
    p, r = 11 / 21, 11 / 18  # entity length sum 4: "221 BC" and "ten years" occur in the candidate
    assert adapted == pytest.approx(2 * p * r / (p + r), abs=1e-15)
    assert (round(vanilla, 2), round(adapted, 2)) == (0.45, 0.56)


def test_an_entity_occurs_only_as_contiguous_words() -> None:
    cand, ref, entity = to_units(["BC 221 and 221 BCE", "221 BC", "221 BC"], "word")
    assert entity not in cand
    cand, ref, entity = to_units(["in 221 BC.", "221 BC", "221 BC"], "word")
    assert entity in cand and len(entity) == 2


def test_prepare_at_word_level_scores_em_f1_with_squad_rules() -> None:
    reference = Reference("q", "DESCRIPTION", ("The Library of Congress",), (), ())
    candidate = prepare(Judgment("q", "library of Congress!", 5.0), reference, level="word")
    assert candidate.fixed["EM"] == 1.0 and candidate.fixed["F1"] == 1.0
    assert candidate.fixed["DeepRead-P"] == 1.0 and candidate.fixed["DeepRead-R"] == 1.0


# --- paired bootstrap --------------------------------------------------------------------------


def _synthetic(n: int = 80, seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, size=n).astype(float)
    good = human + rng.normal(0.0, 0.5, size=n)  # tracks the judgments
    noise = rng.normal(0.0, 1.0, size=n)  # does not
    return human, good, noise


def test_bootstrap_is_reproducible_with_a_seed() -> None:
    human, good, noise = _synthetic()
    weak = good + 3 * noise
    one = bootstrap_correlation_difference(human, good, weak, seed=3)
    assert one == bootstrap_correlation_difference(human, good, weak, seed=3)
    other = bootstrap_correlation_difference(human, good, weak, seed=4)
    assert (other.ci_low, other.ci_high) != (one.ci_low, one.ci_high)
    good_r, weak_r = pearson(human, good), pearson(human, weak)
    assert good_r is not None and weak_r is not None
    assert one.samples == 100 and one.difference == pytest.approx(good_r - weak_r)


def test_a_clearly_better_metric_wins_every_resample() -> None:
    human, good, noise = _synthetic()
    test = bootstrap_correlation_difference(human, good, noise, names=("good", "noise"))
    assert test.wins == 100 and test.undefined == 0
    assert test.p_value == pytest.approx(1 / 101)  # the smallest p 100 resamples can give
    assert test.ci_low is not None and test.ci_low > 0.5
    reverse = bootstrap_correlation_difference(human, noise, good)
    assert reverse.wins == 0 and reverse.p_value == 1.0


def test_the_bootstrap_draws_what_a_plain_loop_draws() -> None:
    human, good, noise = _synthetic(n=30)
    test = bootstrap_correlation_difference(human, good, noise, samples=50, seed=11, level=0.9)
    rng = np.random.default_rng(11)
    diffs = []
    for _ in range(50):
        idx = rng.integers(0, 30, size=30)
        diffs.append(np.corrcoef(human[idx], good[idx])[0, 1] - np.corrcoef(human[idx], noise[idx])[0, 1])
    assert test.wins == sum(d > 0 for d in diffs)
    assert test.ci_low == pytest.approx(float(np.quantile(diffs, 0.05)), abs=1e-12)


def test_identical_metrics_never_win() -> None:
    human, good, _ = _synthetic(n=20)
    test = bootstrap_correlation_difference(human, good, good.copy())
    assert test.difference == 0.0 and test.wins == 0 and test.p_value == 1.0


# --- the judgment file -------------------------------------------------------------------------


def candidates() -> list[Candidate]:
    return match_references(load_judgments(JUDGMENTS), load_references(REFS))


def test_the_judgment_file_covers_every_type_and_kind() -> None:
    judgments = load_judgments(JUDGMENTS)
    assert len(judgments) == 60
    kinds = {json.loads(line)["kind"] for line in JUDGMENTS.read_text(encoding="utf-8").splitlines()}
    assert {"exact", "partial", "wrong", "yesno_flipped", "entity_wrong"} <= kinds
    assert {j.question_type for j in judgments} == {"YES_NO", "ENTITY", "DESCRIPTION"}
    assert {j.score for j in judgments} == {1.0, 2.0, 3.0, 4.0, 5.0}


def test_correlations_on_the_judgment_file() -> None:
    result = evaluate_metaeval(candidates())
    metrics = result.metrics
    assert metrics["candidates"] == {"YES_NO": 21, "ENTITY": 21, "DESCRIPTION": 18, "overall": 60}
    assert set(metrics["pearson"]) == set(METRICS)
    r = metrics["pearson"]
    # The bonuses change nothing on DESCRIPTION and help where they apply, as in the paper's Table 2.
    assert r["ROUGE-L-adapted"]["DESCRIPTION"] == r["ROUGE-L"]["DESCRIPTION"]
    for qtype in ("YES_NO", "ENTITY", "overall"):
        assert r["ROUGE-L-adapted"][qtype] > r["ROUGE-L"][qtype]
        assert r["BLEU-4-adapted"][qtype] > r["BLEU-4"][qtype]
    assert r["EM"]["YES_NO"] is None  # no yes/no candidate matches a reference exactly: EM is constant
    assert len(metrics["bootstrap"]) == 2 * 4
    assert len(result.per_example) == 60 and result.per_example[0]["human"] == 5.0


def test_sweep_shape() -> None:
    cands = candidates()
    rows = sweep(cands, parameter="alpha", values=[0.0, 1.0, 2.0, 4.0], beta=1.0)
    assert [row["alpha"] for row in rows] == [0.0, 1.0, 2.0, 4.0]
    for row in rows:
        assert set(row) == {"alpha", "ROUGE-L-adapted", "BLEU-4-adapted"}
        assert list(row["ROUGE-L-adapted"]) == ["YES_NO", "ENTITY", "DESCRIPTION", "overall"]
    # alpha only moves yes/no candidates; at 0 the yes/no bonus is gone.
    assert len({row["ROUGE-L-adapted"]["ENTITY"] for row in rows}) == 1
    plain = evaluate_metaeval(cands, compare=()).metrics["pearson"]
    assert rows[0]["ROUGE-L-adapted"]["YES_NO"] == pytest.approx(plain["ROUGE-L"]["YES_NO"])
    beta_rows = sweep(cands, parameter="beta", values=[0.0, 2.0], alpha=2.0)
    assert beta_rows[0]["ROUGE-L-adapted"]["ENTITY"] == pytest.approx(plain["ROUGE-L"]["ENTITY"])


def test_csv_judgments_load_like_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "judgments.csv"
    rows = [json.loads(line) for line in JUDGMENTS.read_text(encoding="utf-8").splitlines()]
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, ["question_id", "question_type", "answer", "yesno_answer", "score", "kind"])
        writer.writeheader()
        writer.writerows(rows)
    from_csv = load_judgments(path)
    from_json = load_judgments(JUDGMENTS)
    assert [(j.qid, j.answer, j.score, j.question_type, j.yesno) for j in from_csv] == [
        (j.qid, j.answer, j.score, j.question_type, j.yesno) for j in from_json]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"question_id": 181588, "answer": "x", "score": 6}, "outside the 1-5 scale"),
        ({"question_id": 181588, "answer": "x"}, "missing field 'score'"),
        ({"question_id": 181588, "answer": "x", "score": 3, "yesno_answer": "yes"}, "one of Yes, No, Depends"),
        ({"answer": "x", "score": 3}, "missing field 'question_id'"),
    ],
)
def test_bad_judgments_are_named(tmp_path: Path, line: dict[str, Any], message: str) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=message):
        load_judgments(path)


def test_a_question_type_that_contradicts_the_reference_is_refused() -> None:
    judgment = Judgment("181588", "可以。", 3.0, question_type="ENTITY", line=4)
    with pytest.raises(InputFormatError, match="differs from the reference's 'YES_NO'"):
        match_references([judgment], load_references(REFS))


# --- command line ------------------------------------------------------------------------------


def test_the_command_runs_on_the_judgment_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "table.md"
    code, out, err = run_cli(capsys, "metaeval", JUDGMENTS, REFS, "--sweep-alpha", "0,1,2", "--sweep-beta", "0,1",
                             "--table", table, "--seed", "1")
    assert code == 0, err
    assert out["level"] == "char" and out["alpha"] == 2.0 and out["beta"] == 1.0
    assert out["candidates"]["overall"] == 60
    assert [row["alpha"] for row in out["sweeps"]["alpha"]] == [0.0, 1.0, 2.0]
    assert out["bootstrap"][0]["seed"] == 1 and out["bootstrap"][0]["samples"] == 100
    text = table.read_text(encoding="utf-8")
    assert "| ROUGE-L-adapted |" in text and "Sweep of beta" in text
    code, again, _ = run_cli(capsys, "metaeval", JUDGMENTS, REFS, "--seed", "1",
                             "--compare", "ROUGE-L-adapted:ROUGE-L", "--compare", "BLEU-4-adapted:BLEU-4")
    assert again["bootstrap"] == out["bootstrap"]


def test_the_command_reads_a_released_dureader_file(capsys: pytest.CaptureFixture[str]) -> None:
    demo = shared_path("data", "dureader-demo", "search.dev.json")
    code, out, err = run_cli(capsys, "metaeval", JUDGMENTS, demo, "--samples", "10")
    assert code == 0, err
    _, own, _ = run_cli(capsys, "metaeval", JUDGMENTS, REFS, "--samples", "10")
    assert out["pearson"] == own["pearson"]


def test_the_command_names_an_unknown_question(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"question_id": "nope", "answer": "x", "score": 3}) + "\n", encoding="utf-8")
    assert_one_line_error(capsys, ["metaeval", path, REFS], "not in the reference file", "'nope'")


# --- overall score level (Table 3) and annotator agreement (Table 1) ---------------------------------


def _with_systems(tmp_path: Path, **extra: Any) -> Path:
    """The judgment file with each question's three candidates given to systems s0, s1, s2 in file order."""
    seen: dict[Any, int] = {}
    lines = []
    for line in JUDGMENTS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        position = seen.get(row["question_id"], 0)
        seen[row["question_id"]] = position + 1
        lines.append(json.dumps({**row, "system": f"s{position}", **extra}))
    path = tmp_path / "systems.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _system_candidates(tmp_path: Path) -> list[Candidate]:
    return match_references(load_judgments(_with_systems(tmp_path)), load_references(REFS))


def test_the_overall_level_pairs_every_sample_with_every_system(tmp_path: Path) -> None:
    cands = _system_candidates(tmp_path)
    level, warnings = overall_level(cands, questions=10, samples=20, seed=3)
    assert level["systems"] == ["s0", "s1", "s2"]
    assert level["common_questions"] == {"YES_NO": 7, "overall": 20, "ENTITY": 7, "DESCRIPTION": 6}
    assert level["pairs"]["overall"] == 20 * 3
    # A question type with fewer common questions than a sample draws has no correlation, and says so.
    assert level["pairs"]["ENTITY"] == 0 and level["pearson"]["ROUGE-L"]["ENTITY"] is None
    assert any("ENTITY: 7 question(s)" in w for w in warnings)
    r = level["pearson"]["ROUGE-L-adapted"]["overall"]
    assert r is not None and r > 0.5  # the exact answers' system is judged best and scores best
    assert overall_level(cands, questions=10, samples=20, seed=3)[0] == level
    assert overall_level(cands, questions=10, samples=20, seed=4)[0]["pearson"] != level["pearson"]


def test_overall_bleu_is_the_corpus_bleu_of_the_sample_and_rouge_its_mean(tmp_path: Path) -> None:
    cands = _system_candidates(tmp_path)
    # One sample of every question: each system's overall scores are over all its candidates.
    level, _ = overall_level(cands, questions=20, samples=1)
    by_system: dict[str, list[Candidate]] = {}
    for c in cands:
        by_system.setdefault(str(c.judgment.system), []).append(c)
    human = [float(np.mean([c.judgment.score for c in cs])) for cs in by_system.values()]
    corpus = [mrc_bleu(sum_bleu_stats(c.bleu for c in cs), lic2019_guards=True) for cs in by_system.values()]
    rouge = [float(np.mean([c.fixed["ROUGE-L"] for c in cs])) for cs in by_system.values()]
    sentence_mean = [float(np.mean([c.fixed["BLEU-4"] for c in cs])) for cs in by_system.values()]
    assert level["pearson"]["BLEU-4"]["overall"] == pytest.approx(pearson(human, corpus))
    assert level["pearson"]["ROUGE-L"]["overall"] == pytest.approx(pearson(human, rouge))
    # Not the mean of sentence BLEU: the two differ here, so the check above can fail.
    assert pearson(human, corpus) != pytest.approx(pearson(human, sentence_mean))


def test_the_overall_level_refuses_a_missing_system_or_a_repeated_answer(tmp_path: Path) -> None:
    path = _with_systems(tmp_path)
    rows = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(rows[0])
    del first["system"]
    (tmp_path / "missing.jsonl").write_text("\n".join([json.dumps(first), *rows[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="'system' is missing") as missing:
        evaluate_metaeval(match_references(load_judgments(tmp_path / "missing.jsonl"), load_references(REFS)),
                          path="missing.jsonl")
    assert "line 1" in str(missing.value) and "181588" in str(missing.value)
    second = {**json.loads(rows[1]), "system": json.loads(rows[0])["system"]}
    (tmp_path / "twice.jsonl").write_text("\n".join([rows[0], json.dumps(second), *rows[2:]]) + "\n",
                                          encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"answers this question twice \(first on line 1\)"):
        evaluate_metaeval(match_references(load_judgments(tmp_path / "twice.jsonl"), load_references(REFS)))


def test_annotator_scores_give_the_agreement_and_their_mean(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in JUDGMENTS.read_text(encoding="utf-8").splitlines()]
    rng = np.random.default_rng(5)
    second = [min(5, max(1, int(r["score"]) + int(rng.integers(-1, 2)))) for r in rows]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps({**{k: v for k, v in r.items() if k != "score"},
                                        "scores": [r["score"], s]}) + "\n"
                            for r, s in zip(rows, second, strict=True)), encoding="utf-8")
    judgments = load_judgments(path)
    assert judgments[0].score == (rows[0]["score"] + second[0]) / 2
    metrics = evaluate_metaeval(match_references(judgments, load_references(REFS)), compare=()).metrics
    assert metrics["agreement"]["overall"]["candidates"] == 60
    want = float(np.corrcoef([r["score"] for r in rows], second)[0, 1])
    assert metrics["agreement"]["overall"]["pearson"] == pytest.approx(want)
    assert "overall_level" not in metrics  # no system named
    assert "agreement" not in evaluate_metaeval(candidates(), compare=()).metrics


@pytest.mark.parametrize(("scores", "message"), [([4, 6], "outside the 1-5 scale"), ([], "non-empty list"),
                                                 ("4;x", "separated by ';'"), ({"a": 1}, "non-empty list")])
def test_bad_annotator_scores_are_named(tmp_path: Path, scores: object, message: str) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"question_id": 181588, "answer": "x", "scores": scores}) + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=message) as error:
        load_judgments(path)
    assert "line 1" in str(error.value)


def test_csv_annotator_scores_and_systems(tmp_path: Path) -> None:
    path = tmp_path / "j.csv"
    path.write_text("question_id,answer,scores,system\n181588,可以。,4;5,alpha\n", encoding="utf-8")
    (judgment,) = load_judgments(path)
    assert (judgment.annotator_scores, judgment.score, judgment.system) == ((4.0, 5.0), 4.5, "alpha")


def test_the_command_reports_the_overall_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "table.md"
    code, out, err = run_cli(capsys, "metaeval", _with_systems(tmp_path), REFS, "--samples", "10",
                             "--overall-questions", "6", "--overall-samples", "50", "--table", table)
    assert code == 0, err
    level = out["overall_level"]
    assert level["questions_per_sample"] == 6 and level["samples"] == 50 and level["pairs"]["overall"] == 150
    assert "Overall score level: 6 questions per sample, 50 samples, 3 systems" in table.read_text(encoding="utf-8")


# --- agreement, systems and table formats -------------------------------------------------------


def _with_annotators(tmp_path: Path) -> Path:
    """Systems s0..s2 as :func:`_with_systems`, and two annotators: the file's score, and one off by -1/0/+1."""
    seen: dict[Any, int] = {}
    lines = []
    for i, line in enumerate(JUDGMENTS.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        position = seen.get(row["question_id"], 0)
        seen[row["question_id"]] = position + 1
        first = row.pop("score")
        second = min(5, max(1, first + (i % 3) - 1))
        lines.append(json.dumps({**row, "system": f"s{position}", "scores": [first, second]}))
    path = tmp_path / "annotators.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


_SMALL = ("--samples", "10", "--overall-questions", "6", "--overall-samples", "20")


def test_the_agreement_table_has_alpha_and_kappa_beside_the_pearson(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _with_annotators(tmp_path)
    code, out, err = run_cli(capsys, "metaeval", path, REFS, *_SMALL)
    assert code == 0, err
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for group in ("YES_NO", "overall"):
        mine = [r["scores"] for r in rows if group == "overall" or r["question_type"] == group]
        first, second = [s[0] for s in mine], [s[1] for s in mine]
        agreement = out["agreement"][group]
        assert agreement["candidates"] == len(mine)
        assert agreement["pearson"] == pytest.approx(stats.pearsonr(first, second).statistic, abs=1e-12)
        assert agreement["alpha"] == pytest.approx(
            krippendorff.alpha(reliability_data=[first, second], level_of_measurement="ordinal"), abs=1e-12)
        assert agreement["kappa"] == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)


def test_the_system_summary_ranks_systems_by_people_and_by_each_metric(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _with_annotators(tmp_path)
    code, out, err = run_cli(capsys, "metaeval", path, REFS, *_SMALL, "--seed", "3")
    assert code == 0, err
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    summary = out["systems"]
    assert [s["system"] for s in summary["systems"]] == ["s0", "s1", "s2"]
    for system in summary["systems"]:
        scores = [sum(r["scores"]) / 2 for r in rows if r["system"] == system["system"]]
        human = system["human"]
        assert human["mean"] == pytest.approx(np.mean(scores)) and human["n"] == len(scores) == system["candidates"]
        assert human["low"] <= human["mean"] <= human["high"] and (human["seed"], human["samples"]) == (3, 1000)
    means = [s["human"]["mean"] for s in summary["systems"]]
    assert sorted(s["human_rank"] for s in summary["systems"]) == [1, 2, 3]
    assert summary["systems"][int(np.argmax(means))]["human_rank"] == 1
    for metric in METRICS:
        values = [s["metrics"][metric] for s in summary["systems"]]
        assert summary["kendall_tau"][metric] == pytest.approx(stats.kendalltau(means, values).statistic, abs=1e-12)
    # The overall ROUGE-L of a system is the mean of its per-candidate ROUGE-L.
    _, again, _ = run_cli(capsys, "metaeval", path, REFS, *_SMALL, "--seed", "3",
                          "--per-example", tmp_path / "pe.json")
    records = json.loads((tmp_path / "pe.json").read_text(encoding="utf-8"))
    s0 = [r["ROUGE-L"] for r in records if r["system"] == "s0"]
    assert summary["systems"][0]["metrics"]["ROUGE-L"] == pytest.approx(np.mean(s0))


@pytest.mark.parametrize("fmt", ["markdown", "csv", "latex"])
def test_the_command_prints_its_tables_in_each_format(
        fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _with_annotators(tmp_path)
    assert main(["metaeval", str(path), str(REFS), *_SMALL]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert main(["metaeval", str(path), str(REFS), *_SMALL, "--format", fmt]) == 0
    text = capsys.readouterr().out
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    alpha = f"{metrics['agreement']['overall']['alpha']:.3f}"
    tau = f"{metrics['systems']['kendall_tau']['EM']:.3f}"
    rouge = f"{metrics['pearson']['ROUGE-L']['overall']:.3f}"
    for number in (alpha, tau, rouge):
        assert number in text
    if fmt == "markdown":
        assert "| group | candidates | Pearson r | alpha | kappa |" in text
        assert f"| overall | 60 | {metrics['agreement']['overall']['pearson']:.3f} | {alpha} |" in text
        assert "## Kendall's tau-b between the human ranking" in text and "YES\\_NO (n=21)" in text
    elif fmt == "csv":
        blocks = [block.splitlines() for block in text.split("\r\n\r\n") if block.strip()]
        agreement = next(b for b in blocks if b[0].startswith('"Agreement between annotators'))
        assert agreement[1] == "group,candidates,Pearson r,alpha,kappa"
        assert agreement[-2].startswith("overall,60,") and alpha in agreement[-2]
    else:
        for key in ("pearson", "bootstrap", "agreement", "overall", "systems", "ranking"):
            assert rf"\label{{tab:metaeval-{key}}}" in text
        assert text.count(r"\begin{table}") == text.count(r"\end{table}") == 6
        assert r"YES\_NO (n=21)" in text and r"\toprule" in text
