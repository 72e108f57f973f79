"""Writes for the organizer console: each action and its audit entry in one transaction.

Every service takes the acting user and checks the role itself (NotFound for anyone else, the
console's one answer), so no caller can skip it; the pages and the API check it first as well.
The reason is required and recorded; where the team is told (a disqualification, a hidden row)
it reads the same words, so the console's forms say so.  Re-running a submission is
``submissions.rerun.submission_rerun``, which records its entry the same way.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from leaderboard.accounts.models import Team
from leaderboard.challenges.audit import audit_reason_clean, audit_record
from leaderboard.challenges.models import Announcement, Challenge, Dataset, Phase, Split, TeamPhaseOverride
from leaderboard.challenges.selectors import CONSOLE_NOT_FOUND, dataset_label, user_is_organizer
from leaderboard.challenges.services import dataset_reveal, dataset_unreveal
from leaderboard.challenges.versions import board_changed
from leaderboard.console.selectors import runs_in_progress, submission_read_sealed_data
from leaderboard.core.errors import Conflict, NotFound, ServiceError
from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import reveal_closure

ANNOUNCEMENT_MAX = 2000


def _organizer_check(challenge: Challenge, actor: AbstractBaseUser) -> None:
    if not user_is_organizer(user=actor, challenge=challenge):
        raise NotFound(CONSOLE_NOT_FOUND)


def _submission_target(submission: Submission) -> tuple[str, dict[str, Any]]:
    return (f"submission {submission.pk} ({submission.team.name}, {submission.phase.name})",
            {"submission_id": submission.pk, "team_id": submission.team_id})


# --------------------------------------------------------------------------- a submission


def _submission_moderate(
    *, submission: Submission, actor: AbstractBaseUser, reason: str, action: str, changes: dict[str, str],
    refusal: str | None,
) -> Submission:
    challenge = submission.phase.challenge
    _organizer_check(challenge, actor)
    reason = audit_reason_clean(reason)
    if refusal:
        raise ServiceError(refusal)
    target, details = _submission_target(submission)
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(**changes)
        submission.refresh_from_db()
        # The team's board row may have to point at another of its submissions, or at this one again.
        board_entry_refresh(team=submission.team, phase=submission.phase)
        audit_record(challenge=challenge, actor=actor, action=action, target=target, reason=reason, details=details)
    return submission


def submission_hide(*, submission: Submission, actor: AbstractBaseUser, reason: str) -> Submission:
    """Take the submission off every public board (its team sees why on its page); the team's next
    submission under the ranking rule represents it meanwhile."""
    reason = audit_reason_clean(reason)
    return _submission_moderate(submission=submission, actor=actor, reason=reason, action="submission.hide",
                                changes={"hidden_reason": reason},
                                refusal="it is hidden already" if submission.hidden_reason else None)


def submission_unhide(*, submission: Submission, actor: AbstractBaseUser, reason: str) -> Submission:
    return _submission_moderate(submission=submission, actor=actor, reason=reason, action="submission.unhide",
                                changes={"hidden_reason": ""},
                                refusal=None if submission.hidden_reason else "it is not hidden")


def submission_disqualify(*, submission: Submission, actor: AbstractBaseUser, reason: str) -> Submission:
    """Shown unranked with the reason, where it is on a board; the team's other submissions rank
    instead when it has any (``board_entry_refresh``)."""
    reason = audit_reason_clean(reason)
    return _submission_moderate(submission=submission, actor=actor, reason=reason, action="submission.disqualify",
                                changes={"excluded_reason": f"disqualified: {reason}"},
                                refusal="it is excluded from the ranking already" if submission.excluded_reason
                                else None)


def submission_requalify(*, submission: Submission, actor: AbstractBaseUser, reason: str) -> Submission:
    return _submission_moderate(submission=submission, actor=actor, reason=reason, action="submission.requalify",
                                changes={"excluded_reason": ""},
                                refusal=None if submission.excluded_reason else "it is not excluded from the ranking")


# --------------------------------------------------------------------------- a team


def _team_moderate(
    *, team: Team, actor: AbstractBaseUser, reason: str, action: str, changes: dict[str, Any], refusal: str | None
) -> Team:
    _organizer_check(team.challenge, actor)
    reason = audit_reason_clean(reason)
    if refusal:
        raise ServiceError(refusal)
    with transaction.atomic():
        Team.objects.filter(pk=team.pk).update(**changes)
        team.refresh_from_db()
        board_changed(challenge_id=team.challenge_id)
        audit_record(challenge=team.challenge, actor=actor, action=action, target=f"team {team.name}",
                     reason=reason, details={"team_id": team.pk})
    return team


def team_disqualify(*, team: Team, actor: AbstractBaseUser, reason: str) -> Team:
    """Every row of the team stays on the boards, unranked, with the reason; the team reads it on its pages."""
    reason = audit_reason_clean(reason)
    return _team_moderate(team=team, actor=actor, reason=reason, action="team.disqualify",
                          changes={"disqualified_reason": reason},
                          refusal="the team is disqualified already" if team.disqualified_reason else None)


def team_approve(*, team: Team, actor: AbstractBaseUser, reason: str) -> Team:
    """Let a team of a challenge that approves its teams (``teams: {approval: required}``) submit."""
    return _team_moderate(team=team, actor=actor, reason=reason, action="team.approve",
                          changes={"approval_pending": False},
                          refusal=None if team.approval_pending else "the team is approved already")


def team_requalify(*, team: Team, actor: AbstractBaseUser, reason: str) -> Team:
    return _team_moderate(team=team, actor=actor, reason=reason, action="team.requalify",
                          changes={"disqualified_reason": ""},
                          refusal=None if team.disqualified_reason else "the team is not disqualified")


def team_hide(*, team: Team, actor: AbstractBaseUser, reason: str) -> Team:
    """Off every public board (the organizer view keeps it, unranked); the reason, kept in the audit
    entry, is shown to the team (``team_notices``)."""
    return _team_moderate(team=team, actor=actor, reason=reason, action="team.hide", changes={"hidden": True},
                          refusal="the team is hidden already" if team.hidden else None)


def team_unhide(*, team: Team, actor: AbstractBaseUser, reason: str) -> Team:
    return _team_moderate(team=team, actor=actor, reason=reason, action="team.unhide", changes={"hidden": False},
                          refusal=None if team.hidden else "the team is not hidden")


def team_phase_extend(
    *, team: Team, phase: Phase, actor: AbstractBaseUser, reason: str, closes_at: dt.datetime | None = None,
    quota_per_day: int | None = None, quota_total: int | None = None,
) -> TeamPhaseOverride | None:
    """Give one team a later deadline or larger quotas in a phase (None: the phase's own); with
    none of the three, the team's extension of the phase is removed.  Only extensions: a deadline
    before the phase's, or a quota below it, is refused (a team is never cut short by this)."""
    _organizer_check(team.challenge, actor)
    reason = audit_reason_clean(reason)
    if phase.challenge_id != team.challenge_id:
        raise NotFound(CONSOLE_NOT_FOUND)
    if closes_at is not None and closes_at <= phase.closes_at:
        raise ServiceError(f"the phase closes at {phase.closes_at:%Y-%m-%d %H:%M} UTC already; "
                           "an extension must end later", field="closes_at")
    for name, value, own in (("quota_per_day", quota_per_day, phase.quota_per_day),
                             ("quota_total", quota_total, phase.quota_total)):
        if value is not None and (own is None or value <= own):
            limit = "no limit" if own is None else f"{own}"
            raise ServiceError(f"{name.replace('_', ' ')}: the phase's is {limit}; an extension must be larger",
                               field=name)
    details: dict[str, Any] = {
        "team_id": team.pk, "phase": phase.slug, "closes_at": closes_at.isoformat() if closes_at else None,
        "quota_per_day": quota_per_day, "quota_total": quota_total,
    }
    with transaction.atomic():
        if closes_at is None and quota_per_day is None and quota_total is None:
            removed = TeamPhaseOverride.objects.filter(team=team, phase=phase).delete()[0]
            if not removed:
                raise ServiceError("give a later deadline or a larger quota (the team has no extension to remove)")
            override = None
        else:
            override, _ = TeamPhaseOverride.objects.update_or_create(
                team=team, phase=phase, defaults={"closes_at": closes_at, "quota_per_day": quota_per_day,
                                                  "quota_total": quota_total, "created_by_id": actor.pk},
            )
        audit_record(challenge=team.challenge, actor=actor, action="team.extend" if override else "team.extend_remove",
                     target=f"team {team.name}, phase {phase.name}", reason=reason, details=details)
    return override


# --------------------------------------------------------------------------- a Split III dataset


def _seal_change_check(dataset: Dataset) -> None:
    if dataset.split != Split.III:
        raise ServiceError(f"{dataset.name} is a Split {dataset.split} dataset: only Split III datasets are sealed")
    running = runs_in_progress(challenge=dataset.challenge)
    if running:
        # A run reads a sealed dataset under re-keyed ids, and its output is read back under the seal
        # of the moment it ends: a change in between would fail the run for no fault of its team.
        raise Conflict(f"{running} system run(s) of this challenge are in progress; change the seal once "
                       "they end (the console's queue page shows them)")


def dataset_reveal_audited(*, dataset: Dataset, actor: AbstractBaseUser, reason: str) -> Dataset:
    """Reveal a Split III dataset: its real name and scores, and the aggregates they free, become public."""
    _organizer_check(dataset.challenge, actor)
    reason = audit_reason_clean(reason)
    _seal_change_check(dataset)
    if dataset.revealed_at is not None:
        raise ServiceError(f"{dataset.name} is revealed already")
    with transaction.atomic():
        # Datasets whose scores would follow from averages published while they were all sealed
        # are revealed together (the preview lists them): one left sealed would be sealed in name only.
        together = reveal_closure(dataset=dataset)
        labels = ", ".join(f"{ds.name} ({dataset_label(ds, reveal_sealed=False)})" for ds in together)
        for ds in together:
            dataset_reveal(dataset=ds)
        audit_record(challenge=dataset.challenge, actor=actor, action="dataset.reveal",
                     target=f"dataset {labels}", reason=reason,
                     details={"dataset": dataset.slug, "together": [ds.slug for ds in together[1:]]})
    return dataset


def dataset_unreveal_audited(*, dataset: Dataset, actor: AbstractBaseUser, reason: str) -> Dataset:
    """Seal a revealed dataset again (a reveal too early): the alias and the withholding apply again."""
    _organizer_check(dataset.challenge, actor)
    reason = audit_reason_clean(reason)
    _seal_change_check(dataset)
    if dataset.revealed_at is None:
        raise ServiceError(f"{dataset.name} is sealed already")
    with transaction.atomic():
        dataset_unreveal(dataset=dataset)
        audit_record(challenge=dataset.challenge, actor=actor, action="dataset.unreveal",
                     target=f"dataset {dataset.name} ({dataset_label(dataset, reveal_sealed=False)})",
                     reason=reason, details={"dataset": dataset.slug})
    return dataset


# --------------------------------------------------------------------------- a hidden run's log

def submission_log_release_audited(*, submission: Submission, actor: AbstractBaseUser, reason: str) -> Submission:
    """Show a hidden run's log to its team, with a reason, in the audit log (what was disclosed: its
    size, and whether the run read sealed data).  Undone by ``submission_log_withdraw_audited``."""
    _organizer_check(submission.phase.challenge, actor)
    reason = audit_reason_clean(reason)
    with transaction.atomic():
        updated = Submission.objects.filter(pk=submission.pk, log_released_at__isnull=True).update(
            log_released_at=timezone.now(), log_released_by_id=actor.pk)
        if not updated:
            raise Conflict("its log is released already")
        target, details = _submission_target(submission)
        audit_record(challenge=submission.phase.challenge, actor=actor, action="submission.log_release",
                     target=target, reason=reason,
                     details={**details, "log_characters": len(submission.log or ""),
                              "read_sealed_data": submission_read_sealed_data(submission=submission)})
    submission.refresh_from_db(fields=["log_released_at", "log_released_by"])
    return submission


def submission_log_withdraw_audited(*, submission: Submission, actor: AbstractBaseUser, reason: str) -> Submission:
    """Hide a released log from the team again (what it read meanwhile may have been copied)."""
    _organizer_check(submission.phase.challenge, actor)
    reason = audit_reason_clean(reason)
    with transaction.atomic():
        updated = Submission.objects.filter(pk=submission.pk, log_released_at__isnull=False).update(
            log_released_at=None, log_released_by=None)
        if not updated:
            raise Conflict("its log is not released")
        target, details = _submission_target(submission)
        audit_record(challenge=submission.phase.challenge, actor=actor, action="submission.log_withdraw",
                     target=target, reason=reason, details=details)
    submission.refresh_from_db(fields=["log_released_at", "log_released_by"])
    return submission


# --------------------------------------------------------------------------- announcements


def announcement_create(*, challenge: Challenge, actor: AbstractBaseUser, text: str, reason: str) -> Announcement:
    """Shown on the challenge page to everyone, newest first, until withdrawn."""
    _organizer_check(challenge, actor)
    reason = audit_reason_clean(reason)
    text = (text or "").strip()
    if not text:
        raise ServiceError("write the announcement", field="text")
    if len(text) > ANNOUNCEMENT_MAX:
        raise ServiceError(f"the announcement is {len(text)} characters long; at most {ANNOUNCEMENT_MAX}", field="text")
    with transaction.atomic():
        announcement = Announcement.objects.create(challenge=challenge, text=text, created_by_id=actor.pk)
        audit_record(challenge=challenge, actor=actor, action="announcement.create",
                     target=f"announcement {announcement.pk}", reason=reason,
                     details={"announcement_id": announcement.pk, "text": text})
    return announcement


def announcement_withdraw(*, announcement: Announcement, actor: AbstractBaseUser, reason: str) -> Announcement:
    _organizer_check(announcement.challenge, actor)
    reason = audit_reason_clean(reason)
    if not announcement.is_active:
        raise ServiceError("the announcement is withdrawn already")
    with transaction.atomic():
        Announcement.objects.filter(pk=announcement.pk).update(is_active=False)
        announcement.refresh_from_db()
        audit_record(challenge=announcement.challenge, actor=actor, action="announcement.withdraw",
                     target=f"announcement {announcement.pk}", reason=reason,
                     details={"announcement_id": announcement.pk})
    return announcement
