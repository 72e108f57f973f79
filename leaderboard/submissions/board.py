"""Board rows and stored aggregates: which submission represents a team on a phase's board.

Every write a board shows ends in ``board_entry_refresh`` (scores, a choice, a moderation, a
rerun), which raises the challenge's board version; ``aggregates_refresh`` and
``board_entries_refresh`` redo every row after a spec changed the ranking scope or rule.
"""

from __future__ import annotations

from django.db import transaction

from leaderboard.accounts.models import Team, TeamKind
from leaderboard.challenges.models import (
    Challenge,
    Dataset,
    IncompleteRows,
    Phase,
    RankingRule,
    SubmissionKind,
)
from leaderboard.challenges.selectors import phase_ranking_scope
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.versions import board_changed
from leaderboard.submissions.models import BoardEntry, Score, Status, Submission
from leaderboard.submissions.selectors import submissions_answering_all


def board_changed_if_shown(submission_id: int) -> None:
    """A board row may point at a submission that is not finished (a baseline's last run, an imported
    row that failed): a change of its status is on the board too."""
    challenge_id = (BoardEntry.objects.filter(submission_id=submission_id)
                    .values_list("phase__challenge_id", flat=True).first())
    if challenge_id is not None:
        board_changed(challenge_id=challenge_id)


def board_entry_refresh(*, team: Team, phase: Phase) -> BoardEntry | None:
    """Point the team's board row at the submission the challenge's ranking rule picks."""
    # A submission an organizer hid never represents its team; a disqualified one (shown unranked,
    # with the reason) only when the team has no other.
    finished = Submission.objects.filter(team=team, phase=phase, status=Status.FINISHED, hidden_reason="")
    if finished.filter(excluded_reason="").exists():
        finished = finished.filter(excluded_reason="")
    rule = phase.challenge.ranking_rule
    chosen: Submission | None
    if rule == RankingRule.BEST:
        # primary_score is the same full-coverage average for every submission (a ranked dataset
        # not answered counts 0), so a prediction file over Split II cannot hide a complete run.
        # The id breaks ties of equal times (imported rows keep theirs): PostgreSQL, unlike SQLite's
        # rowid order, returns equal rows in no fixed order.
        best = finished.filter(primary_score__isnull=False).order_by("-primary_score", "created_at", "id")
        chosen = best.first()
        if (phase.challenge.ranking_scope or {}).get("incomplete") == IncompleteRows.UNRANKED and chosen is not None:
            # Incomplete rows are shown unranked: a complete submission, if any, is the one that ranks.
            ranked = phase_ranking_scope(phase=phase).datasets
            complete = submissions_answering_all(submissions=best, datasets=ranked)
            chosen = next((s for s in best if s.pk in complete), chosen)
    elif rule == RankingRule.SELECTED:
        chosen = finished.filter(is_selected=True).first() or finished.order_by("-created_at", "-id").first()
    else:
        chosen = finished.order_by("-created_at", "-id").first()
    if chosen is None:
        # Published systems whose run failed still appear, marked as failed: a baseline's
        # last run, or an imported row of any team (a failed run in a results export).
        fallback = Submission.objects.filter(team=team, phase=phase, hidden_reason="")
        if team.kind != TeamKind.BASELINE:
            fallback = fallback.filter(kind=SubmissionKind.IMPORTED)
        chosen = fallback.order_by("-created_at", "-id").first()
    if chosen is None:
        BoardEntry.objects.filter(team=team, phase=phase).delete()
        entry = None
    else:
        entry, _ = BoardEntry.objects.update_or_create(team=team, phase=phase, defaults={"submission": chosen})
    # Every write a board shows ends here (scores, a choice, a moderation, a rerun): its snapshot
    # is made again, whether or not the row points elsewhere (the same row may have new scores).
    board_changed(challenge_id=phase.challenge_id)
    return entry


def board_entries_refresh(*, challenge: Challenge) -> None:
    """Choose every team's board row again (the challenge's ranking rule changed)."""
    pairs = (Submission.objects.filter(phase__challenge=challenge).values_list("team_id", "phase_id").distinct())
    teams = {t.pk: t for t in Team.objects.filter(pk__in={t for t, _ in pairs})}
    phases = {p.pk: p for p in Phase.objects.filter(challenge=challenge).select_related("challenge")}
    for team_id, phase_id in pairs:
        board_entry_refresh(team=teams[team_id], phase=phases[phase_id])


def aggregates_refresh(*, challenge: Challenge) -> int:
    """Recompute every stored aggregate of the challenge from its per-dataset scores, and the
    board rows that rank on them; returns how many submissions were recomputed.

    Aggregates are stored when scores are written, under the ranking scope of that moment;
    ``challenge_load`` calls this when a spec changes the scope, so no board keeps ranking
    on the old average.
    """
    suite = suite_for(challenge)
    per_submission: dict[int, dict[Dataset, dict[str, float | None]]] = {}
    for score in Score.objects.filter(submission__phase__challenge=challenge, dataset__isnull=False).select_related(
        "dataset"
    ):
        if score.dataset is not None:  # always (dataset__isnull=False); narrows the type
            per_submission.setdefault(score.submission_id, {}).setdefault(score.dataset, {})[score.metric] = score.value
    ranked_of: dict[int, list[Dataset]] = {}
    with transaction.atomic():
        for submission in Submission.objects.filter(pk__in=per_submission).select_related("phase__challenge"):
            per_dataset = per_submission[submission.pk]
            if submission.phase_id not in ranked_of:
                ranked_of[submission.phase_id] = phase_ranking_scope(phase=submission.phase).datasets
            aggregates = suite.aggregate(per_dataset, ranked=ranked_of[submission.phase_id])
            Score.objects.filter(submission=submission, dataset=None).delete()
            Score.objects.bulk_create(
                [Score(submission=submission, dataset=None, metric=m, value=v) for m, v in aggregates.items()]
            )
            if submission.status == Status.FINISHED:
                Submission.objects.filter(pk=submission.pk).update(primary_score=aggregates.get(suite.primary_metric))
        for team_id, phase_id in {(s.team_id, s.phase_id) for s in Submission.objects.filter(pk__in=per_submission)}:
            board_entry_refresh(team=Team.objects.get(pk=team_id), phase=Phase.objects.get(pk=phase_id))
    return len(per_submission)
