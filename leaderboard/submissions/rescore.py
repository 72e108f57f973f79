"""Scores that follow the gold: finished submissions scored again when a gold file changes.

A submission's scores are out of date when one of its per-dataset scores was computed against
another gold file than the dataset's current one for the phase's portion (``Score.gold_sha256``;
"" on scores written before the hash was recorded counts as another), or by another
``SCORING_VERSION``.  A gold change (``reload.dataset_gold_replace``, or a reload that replaces
gold) queues a rescore of every submission it leaves out of date; ``manage.py rescore`` queues the
out-of-date ones of a challenge, phase or dataset on demand (after a lost message, a rescore that
could not be done, a new scoring version).

A rescore reads what the submission stored, never runs a system again: a prediction file is
parsed again against the current question ids, a system run's answers are read from the copy
kept when it was scored (``storage.run_answers_store``).  A question the new gold adds is
unanswered (MRQA's script counts it 0), one it drops is ignored.

It is a task per submission, safe to run twice: it claims the submission by deleting exactly the
score rows it read, in the transaction that writes the new ones, so of two rescores one writes
and the other finds its rows gone and stops; one already up to date does nothing.  The replaced
scores go to the submission's ``ScoreHistory`` with the reason, and the board reads the new ones.
A replaced gold file stays stored (``RetiredGold``) while a score refers to it, and is deleted
once none does (``retired_gold_prune``, after each rescore).
"""

from __future__ import annotations

import enum
import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Prefetch

from leaderboard.challenges.models import (
    SYSTEM_KINDS,
    Challenge,
    Dataset,
    DatasetFile,
    Phase,
    RetiredGold,
    SubmissionKind,
)
from leaderboard.challenges.selectors import dataset_upload_names
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.base import DatasetResult, scoring_version_of
from leaderboard.core.enqueue import RESCORE_SUBMISSION, enqueue_on_commit
from leaderboard.sandbox.answers_json import JsonRejected, answers_decode
from leaderboard.sandbox.contract import SystemSettings
from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.models import QuestionScores, Score, ScoreHistory, Status, Submission
from leaderboard.submissions.scores import score_dataset, submission_aggregates
from leaderboard.submissions.storage import run_answers_name, run_answers_read
from leaderboard.submissions.uploads import DatasetTarget, UploadError, parse_upload
from scoring.errors import ScoringError

logger = logging.getLogger(__name__)

# Imported rows carry published numbers, not answers: nothing to score again.
RESCORABLE_KINDS: tuple[str, ...] = (SubmissionKind.PREDICTIONS, *SYSTEM_KINDS)


class Rescored(enum.StrEnum):
    """What a rescore did."""

    RESCORED = "rescored"
    UP_TO_DATE = "up to date"
    NOT_SCORED = "not a finished submission the platform scored"
    RACED = "left to another rescore (its scores, or the gold, changed meanwhile)"
    UNAVAILABLE = "cannot be rescored"


class RescoreUnavailable(Exception):
    """What the submission would be rescored from is not stored, or cannot be scored; says why."""


# --------------------------------------------------------------------------- what is out of date


def _current_gold(*, challenge_id: int, portion: str) -> dict[int, DatasetFile]:
    """Each dataset's gold for a portion now, by dataset id."""
    files = DatasetFile.objects.filter(dataset__challenge_id=challenge_id, portion=portion).select_related("dataset")
    return {f.dataset_id: f for f in files}


def _by_dataset(scores: Iterable[Score]) -> dict[int, list[Score]]:
    out: dict[int, list[Score]] = {}
    for score in scores:
        if score.dataset_id is not None:
            out.setdefault(score.dataset_id, []).append(score)
    return out


def stale_reasons(*, submission: Submission, scores: Sequence[Score], current: Mapping[int, DatasetFile]) -> list[str]:
    """Why the submission's scores are out of date ([] if they are not): one reason per dataset
    whose gold changed, and the scoring version.  Organizers' words (real dataset names)."""
    reasons = []
    for dataset_id, rows in _by_dataset(scores).items():
        gold = current.get(dataset_id)
        if gold is None:
            continue  # no gold for the portion any more: nothing to score it against
        recorded = {row.gold_sha256 for row in rows}
        if recorded != {gold.sha256}:
            what = "changed" if recorded - {""} else "was not recorded with its scores"
            reasons.append(f"gold of {gold.dataset.slug} ({gold.portion}) {what}")
    version = scoring_version_of(submission.phase.challenge.suite_options)
    if submission.scoring_version != version:
        reasons.append(f"scoring version {submission.scoring_version or '(none)'} replaced by {version}")
    return reasons


def rescore_problem(submission: Submission) -> str:
    """Why the answers to rescore from are not stored ("" when they are)."""
    if submission.kind in SYSTEM_KINDS:
        if submission.phase.protocol_modes:
            # Its answers were given turn by turn with the old gold shown as history: scored against
            # another gold they would measure a conversation that never happened.
            return ("it answered in the interactive protocol, with the old gold as its history; "
                    "run the system again to score it on the current gold")
        if not default_storage.exists(run_answers_name(submission.pk)):
            return ("the answers of its run were not kept (it was scored before runs' answers were stored); "
                    "run the system again to score it on the current gold")
        return ""
    if not submission.file:
        return "its prediction file was deleted by storage retention"
    if not default_storage.exists(str(submission.file.name)):
        return f"its prediction file {submission.file.name} is missing from storage"
    return ""


@dataclass(frozen=True)
class RescoreCandidate:
    """A submission whose scores are out of date, why, and why it cannot be rescored (if so)."""

    submission: Submission
    reasons: tuple[str, ...]
    problem: str = ""


def rescore_candidates(
    *, challenge: Challenge, phase: Phase | None = None, dataset: Dataset | None = None, portion: str | None = None
) -> list[RescoreCandidate]:
    """The challenge's finished, platform-scored submissions whose scores are out of date (of
    ``phase``, with scores on ``dataset``, in phases scoring ``portion``: each if given)."""
    submissions = Submission.objects.filter(phase__challenge=challenge, status=Status.FINISHED,
                                            kind__in=RESCORABLE_KINDS)
    if phase is not None:
        submissions = submissions.filter(phase=phase)
    if portion is not None:
        submissions = submissions.filter(phase__portion=portion)
    if dataset is not None:
        submissions = submissions.filter(pk__in=Score.objects.filter(dataset=dataset).values("submission_id"))
    submissions = submissions.select_related("phase__challenge", "team").prefetch_related(
        Prefetch("scores", queryset=Score.objects.select_related("dataset"))
    )
    current: dict[str, dict[int, DatasetFile]] = {}
    out = []
    for submission in submissions.order_by("pk"):
        gold = current.setdefault(submission.phase.portion, _current_gold(
            challenge_id=challenge.pk, portion=submission.phase.portion))
        reasons = stale_reasons(submission=submission, scores=list(submission.scores.all()), current=gold)
        if reasons:
            out.append(RescoreCandidate(submission, tuple(reasons), rescore_problem(submission)))
    return out


def rescore_enqueue(
    *, challenge: Challenge, phase: Phase | None = None, dataset: Dataset | None = None, portion: str | None = None
) -> list[RescoreCandidate]:
    """Queue a rescore (after the commit) of each out-of-date submission that can be rescored;
    return every out-of-date one, those that cannot be rescored with the reason."""
    candidates = rescore_candidates(challenge=challenge, phase=phase, dataset=dataset, portion=portion)
    for candidate in candidates:
        if not candidate.problem:
            enqueue_on_commit(RESCORE_SUBMISSION, candidate.submission.pk)
    return candidates


# --------------------------------------------------------------------------- the rescore


def _run_record(submission: Submission) -> dict[str, Any]:
    """What ran and how it ended, for a system's history entry ({} for a prediction file)."""
    if submission.kind not in SYSTEM_KINDS:
        return {}
    what: dict[str, Any] = (
        {"image_id": submission.image_digest} if submission.kind == SubmissionKind.DOCKER_IMAGE
        else {"bundle_sha256": submission.sha256,
              "base_image": SystemSettings.from_json(submission.phase.challenge.system_settings).base_image}
    )
    return {
        **what,
        "runtime": submission.runtime, "worker": submission.worker, "attempts": submission.attempts,
        "verdict": submission.verdict, "exit_code": submission.exit_code, "run_seconds": submission.run_seconds,
        "peak_memory_mb": submission.peak_memory_mb,
        "started_at": submission.started_at.isoformat() if submission.started_at else None,
        "finished_at": submission.finished_at.isoformat() if submission.finished_at else None,
    }


def score_history_record(*, submission: Submission, scores: Iterable[Score], reason: str) -> ScoreHistory:
    """Keep the submission's scores as they are now (before they are replaced or deleted).

    Inside the transaction that replaces them; ``submission`` as read before its primary score
    and version were updated.
    """
    return ScoreHistory.objects.create(
        submission=submission,
        reason=reason,
        scoring_version=submission.scoring_version,
        primary_score=submission.primary_score,
        image_digest=submission.image_digest,
        run=_run_record(submission),
        log=submission.log if submission.kind in SYSTEM_KINDS else "",
        scores=[
            {
                "dataset": score.dataset.slug if score.dataset is not None else None,
                # Kept by name too: a removed dataset's row is gone, and an upload may name it so.
                "dataset_name": score.dataset.name if score.dataset is not None else None,
                "metric": score.metric,
                "value": score.value,
                "gold_sha256": score.gold_sha256,
            }
            for score in scores
        ],
    )


def _removed_datasets(submission: Submission, *, scored: set[str]) -> list[DatasetTarget]:
    """Datasets the submission's upload answers that have since been removed (its history names
    them): read and dropped, so the upload parses as it did when it was accepted."""
    ghosts: dict[str, DatasetTarget] = {}
    for entry in ScoreHistory.objects.filter(submission=submission):
        for row in entry.scores or []:
            slug = row.get("dataset") if isinstance(row, dict) else None
            if slug and slug not in scored and slug not in ghosts:
                ghosts[slug] = DatasetTarget(slug, tuple(filter(None, [row.get("dataset_name")])), ())
    return list(ghosts.values())


def _stored_answers(submission: Submission, files: Sequence[DatasetFile]) -> dict[DatasetFile, Any]:
    """The submission's answers to each dataset's current questions, from what it stored."""
    problem = rescore_problem(submission)
    if problem:
        raise RescoreUnavailable(problem)
    if submission.kind in SYSTEM_KINDS:
        stored = run_answers_read(submission_id=submission.pk) or {}
        out = {}
        for f in files:
            if f.dataset.slug not in stored:
                raise RescoreUnavailable(f"the stored answers of its run have none for {f.dataset.slug}")
            where = f"{run_answers_name(submission.pk)}:{f.dataset.slug}.json"
            out[f] = answers_decode(stored[f.dataset.slug], where=where, qids=f.qids).by_qid
        return out
    with submission.file.open("rb") as fh:
        raw = fh.read()
    targets = [DatasetTarget(f.dataset.slug, dataset_upload_names(f.dataset), f.qids) for f in files]
    targets += _removed_datasets(submission, scored={f.dataset.slug for f in files})
    per_dataset = parse_upload(raw, filename=submission.original_name or "predictions", targets=targets,
                               max_expanded_bytes=settings.MAX_PREDICTION_ARCHIVE_BYTES)
    return {f: per_dataset[f.dataset.slug].by_qid for f in files}


def submission_rescore(submission_id: int) -> Rescored:
    """Score a finished submission again against the current gold if its scores are out of date.

    Safe to call twice, and concurrently: see the module's docstring.  What cannot be rescored
    (answers not stored, or the suite refuses them against the new gold) keeps its scores, and
    the gold they refer to stays stored; the organizers see why in the log and in ``rescore``.
    """
    submission = (Submission.objects.filter(pk=submission_id, status=Status.FINISHED, kind__in=RESCORABLE_KINDS)
                  .select_related("phase__challenge", "team").first())
    if submission is None:
        return Rescored.NOT_SCORED
    read = list(Score.objects.filter(submission=submission).select_related("dataset"))
    current = _current_gold(challenge_id=submission.phase.challenge_id, portion=submission.phase.portion)
    reasons = stale_reasons(submission=submission, scores=read, current=current)
    if not reasons:
        return Rescored.UP_TO_DATE
    files = [current[dataset_id] for dataset_id in _by_dataset(read) if dataset_id in current]
    try:
        answers = _stored_answers(submission, files)
        results = {f: score_dataset(submission=submission, dataset_file=f, predictions=a) for f, a in answers.items()}
    except RescoreUnavailable as exc:
        problem = str(exc)
    except (ScoringError, UploadError, JsonRejected, OSError) as exc:
        problem = f"its stored answers could not be scored against the current gold: {exc}"
    else:
        return _scores_replace(submission=submission, read=read, results=results, reason="; ".join(reasons))
    logger.warning("submission %s: not rescored (%s): %s", submission_id, "; ".join(reasons), problem)
    return Rescored.UNAVAILABLE


def _scores_replace(
    *, submission: Submission, read: list[Score], results: Mapping[DatasetFile, DatasetResult], reason: str
) -> Rescored:
    challenge = submission.phase.challenge
    suite = suite_for(challenge)
    rescored = {f.dataset_id for f in results}
    # A dataset without gold for the portion any more keeps its scores (nothing to score them against).
    kept = [s for s in read if s.dataset is not None and s.dataset_id not in rescored]
    replaced = [s for s in read if s.dataset is None or s.dataset_id in rescored]
    aggregates = _aggregates_after(submission, read, {f.dataset: r.metrics for f, r in results.items()})
    with transaction.atomic():
        # The claim: exactly the rows this rescore read are still there.  A rescore that got here
        # first replaced them (new rows, new ids), and this one leaves its result.
        deleted = Score.objects.filter(pk__in=[s.pk for s in replaced]).delete()[1].get(Score._meta.label, 0)
        if deleted != len(replaced) or Score.objects.filter(submission=submission).count() != len(kept):
            transaction.set_rollback(True)
            return Rescored.RACED
        # Scored against the gold of this moment?  A newer file queued a rescore of its own.
        if DatasetFile.objects.filter(pk__in=[f.pk for f in results]).count() != len(results):
            transaction.set_rollback(True)
            return Rescored.RACED
        updated = Submission.objects.filter(pk=submission.pk, status=Status.FINISHED).update(
            primary_score=aggregates.get(suite.primary_metric),
            scoring_version=scoring_version_of(challenge.suite_options)
        )
        if updated != 1:
            transaction.set_rollback(True)
            return Rescored.RACED
        score_history_record(submission=submission, scores=read, reason=reason)
        rows = [
            Score(submission=submission, dataset=f.dataset, metric=metric, value=value, gold_sha256=f.sha256)
            for f, result in results.items()
            for metric, value in result.metrics.items()
        ]
        rows += [Score(submission=submission, dataset=None, metric=m, value=v) for m, v in aggregates.items()]
        Score.objects.bulk_create(rows)
        QuestionScores.objects.filter(submission=submission, dataset_id__in=rescored).delete()
        QuestionScores.objects.bulk_create(
            [QuestionScores(submission=submission, dataset=f.dataset, records=r.per_example) for f, r in results.items()]
        )
        board_entry_refresh(team=submission.team, phase=submission.phase)
        transaction.on_commit(functools.partial(retired_gold_prune, challenge=challenge))
    logger.info("submission %s rescored: %s", submission.pk, reason)
    return Rescored.RESCORED


def _aggregates_after(
    submission: Submission, read: Sequence[Score], rescored: Mapping[Dataset, Mapping[str, float | None]]
) -> dict[str, float | None]:
    """The aggregates once the datasets of ``rescored`` have these metrics and the others keep theirs
    (one computation for the rescore and its preview)."""
    per_dataset: dict[Dataset, dict[str, float | None]] = {ds: dict(m) for ds, m in rescored.items()}
    ids = {ds.pk for ds in rescored}
    for score in read:
        if score.dataset is not None and score.dataset_id not in ids:
            per_dataset.setdefault(score.dataset, {})[score.metric] = score.value
    return submission_aggregates(submission=submission, per_dataset=per_dataset)


@dataclass(frozen=True)
class ScoreChange:
    """What rescoring one submission against a dataset's new gold would change: the dataset's
    metrics and the primary score (the board's value), before and after."""

    submission: Submission
    dataset: str
    before: dict[str, float | None]
    after: dict[str, float | None]
    primary_before: float | None
    primary_after: float | None

    @property
    def changed(self) -> bool:
        return self.before != self.after or self.primary_before != self.primary_after

    def delta(self, metric: str) -> float | None:
        old, new = self.before.get(metric), self.after.get(metric)
        return None if old is None or new is None else new - old


def rescore_preview(*, submission: Submission, dataset_file: DatasetFile, gold_path: str) -> ScoreChange:
    """What ``submission_rescore`` would write for ``dataset_file``'s dataset if the gold file at
    ``gold_path`` (same questions, not stored yet) replaced it; writes nothing.

    Reads the stored answers as the rescore does; RescoreUnavailable (saying why) when it could not
    rescore them.  The other datasets keep their scores, as they do in a rescore after one gold change.
    """
    read = list(Score.objects.filter(submission=submission).select_related("dataset"))
    current = _current_gold(challenge_id=submission.phase.challenge_id, portion=submission.phase.portion)
    # Read as the rescore reads the upload: against every dataset it was scored on (a single
    # target would read a multi-dataset upload as one flat map).
    files = [current[i] for i in _by_dataset(read) if i in current and i != dataset_file.dataset_id] + [dataset_file]
    try:
        answers = _stored_answers(submission, files)[dataset_file]
        result = score_dataset(submission=submission, dataset_file=dataset_file, predictions=answers,
                               gold_path=gold_path)
    except (ScoringError, UploadError, JsonRejected, OSError) as exc:
        raise RescoreUnavailable(f"its stored answers could not be scored against the new gold: {exc}") from None
    aggregates = _aggregates_after(submission, read, {dataset_file.dataset: result.metrics})
    primary = suite_for(submission.phase.challenge).primary_metric
    return ScoreChange(
        submission=submission, dataset=dataset_file.dataset.slug,
        before={s.metric: s.value for s in read if s.dataset_id == dataset_file.dataset_id},
        after=dict(result.metrics), primary_before=submission.primary_score, primary_after=aggregates.get(primary),
    )


# --------------------------------------------------------------------------- replaced gold files


def retired_gold_prune(*, challenge: Challenge | None = None) -> list[str]:
    """Delete the replaced gold files no score refers to any more; return their storage names.

    Not while a submission of the challenge is being scored: it may have read the old file's
    record before the change, and writes its scores (with the old hash) after.
    """
    retired = RetiredGold.objects.select_related("dataset")
    if challenge is not None:
        retired = retired.filter(dataset__challenge=challenge)
    busy = set(Submission.objects.filter(status=Status.SCORING).values_list("phase__challenge_id", flat=True))
    deleted = []
    for old in retired:
        if old.dataset.challenge_id in busy:
            continue
        scored_against = Score.objects.filter(dataset_id=old.dataset_id, gold_sha256=old.sha256,
                                              submission__phase__portion=old.portion)
        # The same bytes under the current record (a gold put back as it was) serve those scores.
        current = DatasetFile.objects.filter(dataset_id=old.dataset_id, portion=old.portion, sha256=old.sha256)
        if scored_against.exists() and not current.exists():
            continue
        name = str(old.gold.name)
        with transaction.atomic():
            if RetiredGold.objects.filter(pk=old.pk).delete()[0]:
                transaction.on_commit(functools.partial(default_storage.delete, name))
                deleted.append(name)
    if deleted:
        logger.info("replaced gold files no score refers to any more, deleted: %s", ", ".join(deleted))
    return deleted
