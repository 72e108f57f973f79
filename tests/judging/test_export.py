"""The export is what ``python -m scoring metaeval`` reads, and metaeval finds in it the round's own
agreement; the agreement numbers equal the reference packages'."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from leaderboard.judging.models import Candidate
from leaderboard.judging.selectors import ExportFormat, round_agreement, round_judged, round_judgments_export
from leaderboard.judging.services import (
    adjudication_record,
)
from scoring.agreement import AgreementRow
from scoring.metaeval import (
    annotator_agreement,
    evaluate_metaeval,
    load_judgments,
    load_references,
    match_references,
)
from tests.builders.judging import MrcWorld, gold_path, judged_round


def metaeval_agreement(world: MrcWorld, path: Path) -> dict[str, dict]:
    candidates = match_references(load_judgments(path), load_references(gold_path(world)), path=str(path))
    return annotator_agreement(candidates)


def as_dict(rows: list[AgreementRow]) -> dict[str, dict]:
    return {r.group: {"candidates": r.items, "pearson": r.pearson, "alpha": r.alpha, "kappa": r.kappa} for r in rows}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("per_system", [False, True])
def test_metaeval_reads_the_export_and_finds_the_rounds_agreement(mrc_world: MrcWorld, tmp_path: Path,
                                                                 fmt: ExportFormat, per_system: bool) -> None:
    round, _, _ = judged_round(mrc_world)
    path = tmp_path / f"judgments.{fmt}"
    path.write_text(round_judgments_export(round=round, fmt=fmt, per_system=per_system), encoding="utf-8")
    ours = as_dict(round_agreement(round=round, per_system=per_system))
    theirs = metaeval_agreement(mrc_world, path)
    assert set(ours) == set(theirs) == {"DESCRIPTION", "ENTITY", "YES_NO", "overall"}
    for group, row in ours.items():
        assert theirs[group]["candidates"] == row["candidates"], group
        for key in ("pearson", "alpha", "kappa"):
            assert theirs[group][key] == pytest.approx(row[key], abs=1e-12), (group, key)
    assert ours["overall"]["pearson"] is not None and 0.3 < ours["overall"]["pearson"] < 1.0


def test_per_system_rows_count_a_merged_answer_once_per_system(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    once = as_dict(round_agreement(round=round))["overall"]["candidates"]
    per_system = as_dict(round_agreement(round=round, per_system=True))["overall"]["candidates"]
    # Every question has two candidates and three systems: one candidate is two systems' answer.
    assert (once, per_system) == (40, 60)
    lines = round_judgments_export(round=round, per_system=True).splitlines()
    assert len(lines) == 60 and {json.loads(line)["system"] for line in lines} == {"S1", "S2", "S3"}


def test_the_agreement_equals_scipy_sklearn_and_the_krippendorff_package(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    judged = [j for j in round_judged(round=round) if len(j.scores) == 2]
    first = [j.scores[0] for j in judged]
    second = [j.scores[1] for j in judged]
    overall = as_dict(round_agreement(round=round))["overall"]
    assert overall["pearson"] == pytest.approx(float(np.corrcoef(first, second)[0, 1]), abs=1e-12)
    assert overall["kappa"] == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)
    assert overall["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.array([first, second], dtype=float), level_of_measurement="ordinal"),
        abs=1e-12)


def test_metaeval_runs_on_the_export_with_the_systems_and_the_adjudicated_score(mrc_world: MrcWorld,
                                                                              tmp_path: Path) -> None:
    round, _, _ = judged_round(mrc_world)
    adjudicated = round_judged(round=round)[0].candidate
    adjudication_record(candidate=adjudicated, by=mrc_world.organizer, score=1, note="wrong entity")
    path = tmp_path / "judgments.jsonl"
    path.write_text(round_judgments_export(round=round), encoding="utf-8")
    judgments = load_judgments(path)
    mine = [j for j, line in zip(judgments, path.read_text().splitlines()) if json.loads(line)["candidate"] == adjudicated.pk]
    assert mine and all(j.score == 1.0 and len(j.annotator_scores) == 2 for j in mine)
    candidates = match_references(judgments, load_references(gold_path(mrc_world)), path=str(path))
    result = evaluate_metaeval(candidates, samples=10, overall_questions=5, overall_samples=10)
    systems = {row["system"]: row for row in result.metrics["systems"]["systems"]}
    assert set(systems) == {"S1", "S2", "S3"} and all(row["candidates"] == 20 for row in systems.values())
    assert result.metrics["overall_level"]["pairs"]["overall"] == 30  # 10 draws of 3 systems


def test_the_csv_neutralizes_a_formula_answer_and_the_jsonl_keeps_it(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    candidate = round_judged(round=round)[0].candidate
    Candidate.objects.filter(pk=candidate.pk).update(answer='=HYPERLINK("http://evil.example")')
    csv_text = round_judgments_export(round=round, fmt="csv", per_system=False)
    assert "'=HYPERLINK" in csv_text and '\n=HYPERLINK' not in csv_text
    first = json.loads(round_judgments_export(round=round, per_system=False).splitlines()[0])
    assert first["answer"] == '=HYPERLINK("http://evil.example")'
