"""A round's results are metaeval's on the round's export, and equal an independent computation:
numpy/scipy for the correlations, the krippendorff package for alpha, sklearn for kappa, numpy's
generator with the same seed for the overall level's draws."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr
from sklearn.metrics import cohen_kappa_score

from leaderboard.judging.models import Round
from leaderboard.judging.results import (
    TableFormat,
    phase_human_scores,
    round_human_scores,
    round_references_export,
    round_results,
    round_results_tables,
)
from leaderboard.judging.selectors import round_agreement, round_judgments_export
from leaderboard.judging.services import adjudication_record, round_close, round_create, round_publish
from scoring.metaeval import (
    METRICS,
    evaluate_metaeval,
    load_judgments,
    load_references,
    match_references,
    parse_judgments,
    parse_references,
)
from tests.builders.judging import REPO, MrcWorld, gold_path, judged_round


def records(round: Round) -> list[dict]:
    return [json.loads(line) for line in round_judgments_export(round=round).splitlines()]


@pytest.mark.parametrize("fmt", ["markdown", "csv", "latex"])
def test_metaeval_on_the_rounds_two_files_prints_the_results_pages_tables(mrc_world: MrcWorld, tmp_path: Path,
                                                                         fmt: TableFormat) -> None:
    round, _, _ = judged_round(mrc_world)
    item = round.items.first()
    assert item is not None
    candidate = item.candidates.first()
    assert candidate is not None
    adjudication_record(candidate=candidate, by=mrc_world.organizer, score=2)
    results = round_results(round=round)
    assert results is not None and results.overall_questions == 10  # half of 20 questions
    judgments, references = tmp_path / "judgments.jsonl", tmp_path / "references.jsonl"
    judgments.write_text(round_judgments_export(round=round), encoding="utf-8")
    references.write_text(round_references_export(round=round), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "scoring", "metaeval", str(judgments), str(references), "--format", fmt,
         "--seed", str(round.seed), "--overall-questions", "10"],
        cwd=REPO, capture_output=True, text=True, check=True)
    # CSV rows end in CRLF; the command's stdout is a text stream, so compare line by line.
    assert out.stdout.strip().splitlines() == round_results_tables(results=results, fmt=fmt).strip().splitlines()


def test_the_rounds_references_score_as_the_gold_file_does(mrc_world: MrcWorld, tmp_path: Path) -> None:

    round, _, _ = judged_round(mrc_world)
    path = tmp_path / "judgments.jsonl"
    path.write_text(round_judgments_export(round=round), encoding="utf-8")
    refs = tmp_path / "references.jsonl"
    refs.write_text(round_references_export(round=round), encoding="utf-8")
    ours = evaluate_metaeval(match_references(load_judgments(path), load_references(refs)), overall_questions=10)
    gold = evaluate_metaeval(match_references(load_judgments(path), load_references(gold_path(mrc_world))),
                             overall_questions=10)
    assert ours.metrics["pearson"] == gold.metrics["pearson"]
    assert ours.metrics["overall_level"] == gold.metrics["overall_level"]


def test_agreement_equals_scipy_sklearn_and_krippendorff_on_every_group(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    results = round_results(round=round)
    assert results is not None
    rows = records(round)
    for group, got in results.metrics["agreement"].items():
        chosen = [r for r in rows if group == "overall" or r["question_type"] == group]
        first = [r["scores"][0] for r in chosen]
        second = [r["scores"][1] for r in chosen]
        assert got["candidates"] == len(chosen)
        assert got["pearson"] == pytest.approx(pearsonr(first, second).statistic, abs=1e-12)
        assert got["kappa"] == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)
        assert got["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=np.array([first, second], float),
                                                                level_of_measurement="ordinal"), abs=1e-12)
    # The page's table 1 counts a system's answer once per system, as round_agreement(per_system) does.
    overall = {r.group: r for r in round_agreement(round=round, per_system=True)}["overall"]
    assert results.metrics["agreement"]["overall"]["pearson"] == pytest.approx(overall.pearson, abs=1e-12)


def test_question_level_correlation_equals_numpy_on_the_per_candidate_values(mrc_world: MrcWorld) -> None:

    round, _, _ = judged_round(mrc_world)
    results = round_results(round=round)
    assert results is not None
    refs = parse_references((("r", i, json.loads(line)) for i, line in
                             enumerate(round_references_export(round=round).splitlines(), start=1)))
    again = evaluate_metaeval(match_references(parse_judgments(round_judgments_export(round=round)), refs),
                              seed=round.seed, overall_questions=10)
    human = np.array([r["human"] for r in again.per_example])
    for metric in ("ROUGE-L", "ROUGE-L-adapted", "BLEU-4", "F1"):
        values = np.array([r[metric] for r in again.per_example], dtype=float)
        assert results.metrics["pearson"][metric]["overall"] == pytest.approx(np.corrcoef(human, values)[0, 1],
                                                                              abs=1e-12)


def test_overall_level_equals_an_independent_draw_with_the_same_seed(mrc_world: MrcWorld) -> None:
    """The paper's Table 3 for ROUGE-L (a mean-type metric): N questions per draw without
    replacement, the same questions for every system, 100 draws, Pearson over the pairs."""
    round, _, _ = judged_round(mrc_world)
    results = round_results(round=round, overall_questions=8)
    assert results is not None
    rows = records(round)
    refs = parse_references((("r", i, json.loads(line)) for i, line in
                             enumerate(round_references_export(round=round).splitlines(), start=1)))
    scored = evaluate_metaeval(match_references(parse_judgments(round_judgments_export(round=round)), refs),
                               overall_questions=8).per_example
    rouge = {(r["system"], r["id"]): r["ROUGE-L"] for r in scored}
    human = {(r["system"], r["question_id"]): float(r.get("score", np.mean(r["scores"]))) for r in rows}
    qids = list(dict.fromkeys(r["question_id"] for r in rows))
    systems = list(dict.fromkeys(r["system"] for r in rows))
    rng = np.random.default_rng(round.seed)
    h, m = [], []
    for _ in range(100):
        drawn = [qids[i] for i in rng.choice(len(qids), size=8, replace=False)]
        for s in systems:
            h.append(np.mean([human[s, q] for q in drawn]))
            m.append(np.mean([rouge[s, q] for q in drawn]))
    assert results.metrics["overall_level"]["pairs"]["overall"] == 300
    assert results.metrics["overall_level"]["pearson"]["ROUGE-L"]["overall"] == pytest.approx(
        np.corrcoef(h, m)[0, 1], abs=1e-12)
    assert set(results.metrics["overall_level"]["pearson"]) == set(METRICS)


def test_human_scores_rank_beside_the_board_with_kendalls_tau(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    results = round_results(round=round)
    assert results is not None
    rows = records(round)
    for row in results.systems:
        mine = [float(r.get("score", np.mean(r["scores"]))) for r in rows if r["system"] == row.system.label]
        assert row.human is not None and row.human.n == 20
        assert row.human.mean == pytest.approx(np.mean(mine), abs=1e-12)
        assert row.human.low <= row.human.mean <= row.human.high
        assert row.board_score == row.system.submission.primary_score
    humans = [r.human.mean for r in results.systems if r.human]
    boards = [r.board_score for r in results.systems]
    assert results.board_tau == pytest.approx(kendalltau(humans, boards).statistic, abs=1e-12)
    assert sorted(r.board_rank or 0 for r in results.systems) == [1, 2, 3]  # an unranked one (None) fails


def test_the_board_column_reads_the_same_interval_as_the_results_page(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    results = round_results(round=round)
    assert results is not None
    scores = round_human_scores(round=round)
    for row in results.systems:
        got = scores[row.system.submission_id]
        assert row.human is not None
        assert (got.mean, got.low, got.high, got.n) == (row.human.mean, row.human.low, row.human.high, row.human.n)


def test_only_a_published_round_has_human_scores_for_the_phase(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    assert phase_human_scores(phase_id=mrc_world.dev.pk) == {}
    round_close(round=round, by=mrc_world.organizer)
    assert phase_human_scores(phase_id=mrc_world.dev.pk) == {}
    round_publish(round=round, by=mrc_world.organizer)
    assert set(phase_human_scores(phase_id=mrc_world.dev.pk)) == set(mrc_world.system_ids)


def test_a_round_without_judgments_has_no_results(mrc_world: MrcWorld) -> None:
    round = round_create(phase=mrc_world.dev, by=mrc_world.organizer, questions=5, systems=mrc_world.system_ids,
                         seed=3)
    assert round_results(round=round) is None
