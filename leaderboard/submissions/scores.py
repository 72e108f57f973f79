"""Scores: one dataset scored by its suite, and a submission's scores written with their aggregates.

``predictions_check`` is the one check of a dataset's answers before anything is stored (the rule
a system's output meets too); ``scores_write`` replaces the scores, finishes the submission and
refreshes its board row, recording the gold each dataset was scored against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard.challenges.models import Dataset, DatasetFile, Phase
from leaderboard.challenges.selectors import phase_ranking_scope
from leaderboard.challenges.spec import suite_options_of
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.base import DatasetResult, Suite, scoring_version_of
from leaderboard.core.enqueue import RESCORE_SUBMISSION, enqueue_on_commit
from leaderboard.sandbox.answers_json import Answers, answers_refusal
from leaderboard.submissions.attempts import run_attempt_end
from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.models import AttemptEnd, QuestionScores, Score, Status, Submission, Verdict
from leaderboard.submissions.uploads import UploadError, check_qids
from scoring.errors import ScoringError


def predictions_check(suite: Suite, answers: Answers, *, qids: Sequence[str], where: str) -> None:
    """What the platform can take of each answer (``answers_refusal``: the rule a system's output
    meets too, in the same words), the suite's answer format, then the qids; each fails as an
    UploadError naming ``where``."""
    refused = answers_refusal(answers.by_qid, where=where)
    if refused is not None:
        raise UploadError(refused.message)
    try:
        suite.check_predictions(answers.by_qid, where=where)
    except ScoringError as exc:
        raise UploadError(str(exc)) from None
    check_qids(answers, qids=qids, where=where)


def score_dataset(
    *, submission: Submission, dataset_file: DatasetFile, predictions: Any, gold_path: str | None = None
) -> DatasetResult:
    """Score ``predictions`` on the dataset with the challenge's suite and options.

    ``gold_path``: another gold file of the dataset to score against than the stored one (a gold
    change's plan scores against the file before it is stored: ``rescore.rescore_preview``).
    """
    suite = suite_for(submission.phase.challenge)
    return suite.score(gold_path or dataset_file.gold.path, predictions, suite_options_of(submission.phase.challenge))


def submission_aggregates(
    *, submission: Submission, per_dataset: Mapping[Dataset, Mapping[str, float | None]]
) -> dict[str, float | None]:
    """The aggregates stored with these per-dataset metrics: one definition for scoring and rescoring."""
    suite = suite_for(submission.phase.challenge)
    # The ranking average covers the challenge's ranking scope (MRQA 2019: Splits II and III)
    # among the phase's datasets, whichever of them this submission answered: the others count 0,
    # so primary_score is the same average for every row (best-of selection compares on it).
    ranked = phase_ranking_scope(phase=submission.phase).datasets
    return suite.aggregate(per_dataset, ranked=ranked)


def gold_sha256_current(*, phase: Phase, datasets: Iterable[Dataset]) -> dict[Dataset, str]:
    """The sha256 of each dataset's gold for the phase's portion now ("" where it has none)."""
    shas = dict(
        DatasetFile.objects.filter(dataset__in=list(datasets), portion=phase.portion).values_list("dataset_id", "sha256")
    )
    return {ds: shas.get(ds.pk, "") for ds in datasets}


def scores_write(
    *, submission: Submission, results: Mapping[Dataset, DatasetResult], gold: Mapping[Dataset, str] | None = None
) -> None:
    """Replace the submission's scores in one transaction and finish it (idempotent).

    ``gold``: the sha256 of the gold file each dataset was scored against, recorded on its
    scores (default: the current gold, for callers that score what they just read).
    """
    suite = suite_for(submission.phase.challenge)
    aggregates = submission_aggregates(submission=submission, per_dataset={ds: r.metrics for ds, r in results.items()})
    scored_against = dict(gold) if gold is not None else gold_sha256_current(phase=submission.phase,
                                                                           datasets=list(results))
    with transaction.atomic():
        Score.objects.filter(submission=submission).delete()
        QuestionScores.objects.filter(submission=submission).delete()
        rows = [
            Score(submission=submission, dataset=ds, metric=metric, value=value, gold_sha256=scored_against.get(ds, ""))
            for ds, result in results.items()
            for metric, value in result.metrics.items()
        ]
        rows += [Score(submission=submission, dataset=None, metric=m, value=v) for m, v in aggregates.items()]
        Score.objects.bulk_create(rows)
        QuestionScores.objects.bulk_create(
            [QuestionScores(submission=submission, dataset=ds, records=r.per_example) for ds, r in results.items()]
        )
        finished = Submission.objects.filter(pk=submission.pk, status=Status.SCORING).update(
            status=Status.FINISHED,
            verdict=Verdict.FINISHED,
            lease_expires_at=None,
            primary_score=aggregates.get(suite.primary_metric),
            scoring_version=scoring_version_of(submission.phase.challenge.suite_options),
            finished_at=timezone.now(),
        )
        if not finished:
            # Cancelled or claimed elsewhere meanwhile: keep the database as it was.
            transaction.set_rollback(True)
            return
        # A run's attempt ends scored (a rescore finds it ended already: no change).
        run_attempt_end(submission_id=submission.pk, number=submission.attempts, end=AttemptEnd.SCORED,
                        verdict=Verdict.FINISHED)
        board_entry_refresh(team=submission.team, phase=submission.phase)
        current = gold_sha256_current(phase=submission.phase, datasets=list(results))
        if any(scored_against.get(ds, "") != sha for ds, sha in current.items()):
            # The gold changed while this was being scored: the rescore that the change queued
            # found it unfinished and left it, so it is queued again here.
            enqueue_on_commit(RESCORE_SUBMISSION, submission.pk)
