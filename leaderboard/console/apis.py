"""The organizer console for scripts: the same reads and actions as the pages, with a token.

404 (as JSON) for anyone but the challenge's organizers, whatever the address, as the pages
answer; answers are never cached.  An action's address answers GET with what it will do (for a
reveal, what becomes public) and does it on POST with a ``reason``, validated by the pages' forms.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import Announcement, AuditEntry, Challenge, Dataset, TeamPhaseOverride
from leaderboard.challenges.selectors import announcements_shown, challenge_get_organized, dataset_label
from leaderboard.console.actions import ACTIONS, TARGETS, action_get, action_perform, target_name
from leaderboard.console.selectors import (
    AUDIT_PER_PAGE,
    SUBMISSIONS_PER_PAGE,
    RevealPreview,
    audit_entries,
    console_submissions,
    console_teams,
    dataset_reveal_preview,
    queue_report,
    submission_filters_parse,
)
from leaderboard.core.caching import viewer_dependent
from leaderboard.core.errors import Conflict
from leaderboard.core.signed_in import authenticated_user
from leaderboard.submissions.models import RunAttempt, ScoreHistory, Submission


def _organized(request: Request, slug: str) -> Challenge:
    return challenge_get_organized(user=request.user, slug=slug)


def _private(response: Response) -> Response:
    return viewer_dependent(response, confidential=True)


class ConsoleSubmissionOutput(serializers.Serializer[Submission]):
    id = serializers.IntegerField()
    team = serializers.CharField(source="team.name")
    team_id = serializers.IntegerField()
    phase = serializers.CharField(source="phase.slug")
    kind = serializers.CharField()
    status = serializers.CharField()
    verdict = serializers.CharField()
    failure_reason = serializers.CharField(help_text="in full: the organizers' view, whatever data the run read")
    failure_cause = serializers.CharField()
    primary_score = serializers.FloatField(allow_null=True, help_text="unwithheld: the organizers' view")
    scoring_version = serializers.CharField()
    image_digest = serializers.CharField()
    attempts = serializers.IntegerField()
    worker = serializers.CharField()
    run_seconds = serializers.FloatField(allow_null=True)
    exit_code = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    hidden_reason = serializers.CharField(help_text="set: on no public board (the team sees why)")
    excluded_reason = serializers.CharField(help_text="set: unranked with this reason (a disqualification among them)")
    page = serializers.SerializerMethodField(help_text="the submission's page: full reason, log, earlier scores")
    log = serializers.SerializerMethodField(help_text="the run's log in the API")

    def get_page(self, submission: Submission) -> str:
        return reverse("submission-detail", args=[submission.phase.challenge.slug, submission.pk])

    def get_log(self, submission: Submission) -> str:
        return reverse("api-submission-log", args=[submission.pk])


class AuditOutput(serializers.Serializer[AuditEntry]):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField(source="actor.username", default=None)
    action = serializers.CharField()
    target = serializers.CharField()
    reason = serializers.CharField()
    details = serializers.JSONField(help_text="ids, and what an action replaced (a re-run: the earlier run's record)")


class AnnouncementOutput(serializers.Serializer[Announcement]):
    id = serializers.IntegerField()
    text = serializers.CharField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", default=None)
    is_active = serializers.BooleanField()


def _page_of(items: Any, page: str | None, per_page: int, serializer: type[serializers.Serializer[Any]]) -> dict[str, Any]:
    found = Paginator(items, per_page).get_page(page)
    return {"count": found.paginator.count, "page": found.number, "pages": found.paginator.num_pages,
            "results": serializer(found.object_list, many=True).data}


def _paged(name: str, item: serializers.Serializer[Any]) -> serializers.Serializer[Any]:
    return inline_serializer(name, fields={
        "count": serializers.IntegerField(), "page": serializers.IntegerField(), "pages": serializers.IntegerField(),
        "results": item,
    })


PAGE = OpenApiParameter("page", int, required=False, description="1, 2, ...; 50 a page")


class ConsoleSubmissionsApi(APIView):
    """Every team's submissions of the challenge, newest first, 50 a page: organizers only."""

    @extend_schema(
        responses=_paged("ConsoleSubmissionPage", ConsoleSubmissionOutput(many=True)),
        parameters=[
            OpenApiParameter("phase", str, required=False, description="a phase's slug"),
            OpenApiParameter("team", int, required=False, description="a team's id"),
            OpenApiParameter("status", str, required=False),
            OpenApiParameter("kind", str, required=False),
            PAGE,
        ],
    )
    def get(self, request: Request, slug: str) -> Response:
        challenge = _organized(request, slug)
        filters = submission_filters_parse(challenge=challenge, params=request.query_params)
        submissions = console_submissions(challenge=challenge, filters=filters).select_related("phase__challenge")
        return _private(Response(_page_of(submissions, request.query_params.get("page"), SUBMISSIONS_PER_PAGE,
                                          ConsoleSubmissionOutput)))


def _attempts(attempts: tuple[RunAttempt, ...]) -> list[dict[str, Any]]:
    """Ended attempts of a run, for the organizers: who ran each, when, and how it ended."""
    return [{"number": a.number, "end": a.end, "worker": a.worker, "host": a.host, "claimed_at": a.claimed_at,
             "ended_at": a.ended_at, "reason": a.reason} for a in attempts]


class ConsoleQueueApi(APIView):
    """What waits (in order, per queue) and what runs where; each worker's last heartbeat."""

    @extend_schema(responses=dict)
    def get(self, request: Request, slug: str) -> Response:
        challenge = _organized(request, slug)
        report = queue_report(challenge=challenge)
        return _private(Response({
            "as_of": report.now,
            "queues": [
                {"queue": q.key, "name": q.name, "waiting_in_all": q.total,
                 "waiting": [{"position": w.position, "submission": w.submission.pk, "team": w.submission.team.name,
                              "phase": w.submission.phase.slug, "kind": w.submission.kind,
                              "queued_at": w.submission.queued_at, "due_at": w.due_at,
                              "earlier_attempts": _attempts(w.earlier)} for w in q.waiting]}
                for q in report.queues
            ],
            "workers": [
                {"worker": w.name, "last_heartbeat": w.last_heartbeat,
                 "running": [{"submission": r.submission.pk if r.submission else None,
                              "team": r.submission.team.name if r.submission else None,
                              "other_challenge": r.submission is None, "status": r.status,
                              "started_at": r.started_at, "attempt": r.attempts, "last_heartbeat": r.last_heartbeat,
                              "lease_age_s": r.lease_age_s, "lease_expires_at": r.lease_expires_at,
                              "earlier_attempts": _attempts(r.earlier)}
                             for r in w.running]}
                for w in report.workers
            ],
        }))


class ConsoleTeamsApi(APIView):
    """The challenge's teams with their standing (disqualified, hidden, why) and extensions."""

    @extend_schema(responses=dict)
    def get(self, request: Request, slug: str) -> Response:
        challenge = _organized(request, slug)
        return _private(Response([
            {"id": row.team.pk, "name": row.team.name, "kind": row.team.kind, "members": row.members,
             "submissions": row.submissions, "disqualified_reason": row.team.disqualified_reason,
             "hidden": row.team.hidden, "hidden_reason": row.hidden_reason,
             "extensions": [_override(o) for o in row.overrides]}
            for row in console_teams(challenge=challenge)
        ]))


def _override(o: TeamPhaseOverride) -> dict[str, Any]:
    return {"phase": o.phase.slug, "closes_at": o.closes_at, "quota_per_day": o.quota_per_day,
            "quota_total": o.quota_total}


class ConsoleAuditApi(APIView):
    """The audit log: every organizer action, newest first, 50 a page."""

    @extend_schema(responses=_paged("AuditPage", AuditOutput(many=True)), parameters=[PAGE])
    def get(self, request: Request, slug: str) -> Response:
        challenge = _organized(request, slug)
        return _private(Response(_page_of(audit_entries(challenge=challenge), request.query_params.get("page"),
                                          AUDIT_PER_PAGE, AuditOutput)))


class ActionInput(serializers.Serializer[Any]):
    """What an action takes: always ``reason``; ``extend`` and ``announce`` take more."""

    reason = serializers.CharField(help_text="why: kept in the audit log (and shown to the team where the action says)")
    phase = serializers.SlugField(required=False, help_text="extend: the phase's slug")
    closes_at = serializers.DateTimeField(required=False, help_text="extend: the team's deadline, UTC (...Z)")
    quota_per_day = serializers.IntegerField(required=False, help_text="extend")
    quota_total = serializers.IntegerField(required=False, help_text="extend")
    text = serializers.CharField(required=False, help_text="announce: what the challenge page shows")


def _result(target: Any) -> dict[str, Any]:
    """The target as it is after the action."""
    if isinstance(target, Submission):
        target.refresh_from_db()
        history = ScoreHistory.objects.filter(submission=target).count()
        return {**ConsoleSubmissionOutput(target).data, "earlier_results": history}
    if isinstance(target, Team):
        target.refresh_from_db()
        return {"id": target.pk, "name": target.name, "disqualified_reason": target.disqualified_reason,
                "hidden": target.hidden, "extensions": [_override(o) for o in target.phase_overrides.all()]}
    if isinstance(target, Dataset):
        target.refresh_from_db()
        return {"slug": target.slug, "name": target.name, "public_name": dataset_label(target, reveal_sealed=False),
                "revealed_at": target.revealed_at}
    if isinstance(target, Announcement):
        return dict(AnnouncementOutput(target).data)
    return {}


def _preview(preview: RevealPreview) -> dict[str, Any]:
    return {
        "public_name_now": preview.alias, "public_name_after": preview.dataset.name,
        "submissions_scored": preview.submissions_scored, "still_sealed": preview.still_sealed,
        "boards": [
            {"phase": b.phase.slug, "board_public": b.board_public, "ranked_by_now": b.ranked_by_before,
             "ranked_by_after": b.ranked_by_after,
             "rows": [{"team": r.team, "rank_now": r.rank_before, "rank_after": r.rank_after,
                       "becomes_public": dict(r.newly_shown)} for r in b.rows]}
            for b in preview.boards
        ],
    }


def _do(request: Request, challenge: Challenge, target: str, key: str, action: str) -> Response:
    found, obj = action_get(challenge=challenge, target=target, key=key, action=action)
    problem = found.problem(obj)
    if problem:
        raise Conflict(problem)
    form = found.form(request.data, challenge=challenge)
    if not form.is_valid():
        errors = {field: [str(e) for e in errs] for field, errs in form.errors.items()}
        lines = [f"{field}: {msgs[0]}" for field, msgs in errors.items()]
        return _private(Response({"detail": "; ".join(lines), "errors": errors}, status=status.HTTP_400_BAD_REQUEST))
    result = action_perform(action=found, target=obj, actor=authenticated_user(request), data=form.service_kwargs())
    entry = AuditEntry.objects.filter(challenge=challenge, actor_id=request.user.pk).first()
    return _private(Response({
        "action": found.key, "target": target_name(obj),
        "result": _result(result if isinstance(result, Announcement) else obj),
        "audit": AuditOutput(entry).data if entry else None,
    }, status=status.HTTP_201_CREATED if found.key == "announce" else status.HTTP_200_OK))


_TARGET_PARAM = OpenApiParameter("target", str, OpenApiParameter.PATH, enum=sorted(set(TARGETS) - {"challenge"}))
_ACTION_PARAM = OpenApiParameter("action", str, OpenApiParameter.PATH,
                                 enum=sorted({a.key for a in ACTIONS.values() if a.target != "challenge"}),
                                 description="submissions: rerun, release, release-log, withdraw-log, hide, unhide, disqualify, requalify; teams: "
                                             "disqualify, requalify, hide, unhide, extend; datasets: reveal, "
                                             "unreveal; announcements: withdraw")
_KEY_PARAM = OpenApiParameter("key", str, OpenApiParameter.PATH,
                              description="a submission's or team's or announcement's id, a dataset's slug")


class ConsoleActionApi(APIView):
    """An organizer action: GET says what it will do (for a reveal, what becomes public); POST does it
    and records it in the audit log.  409 when it cannot be done now, with why."""

    @extend_schema(parameters=[_TARGET_PARAM, _KEY_PARAM, _ACTION_PARAM], responses=dict)
    def get(self, request: Request, slug: str, target: str, key: str, action: str) -> Response:
        challenge = _organized(request, slug)
        found, obj = action_get(challenge=challenge, target=target, key=key, action=action)
        problem = found.problem(obj)
        body: dict[str, Any] = {
            "action": found.key, "title": found.title, "target": target_name(obj),
            "consequences": found.consequences(obj), "problem": problem or None,
            "fields": list(found.form(challenge=challenge).fields),
            "reason_is_public": found.reason_is_public,
        }
        if found.key == "reveal" and not problem:
            body["preview"] = _preview(dataset_reveal_preview(dataset=obj))
        return _private(Response(body))

    @extend_schema(parameters=[_TARGET_PARAM, _KEY_PARAM, _ACTION_PARAM], request=ActionInput, responses=dict)
    def post(self, request: Request, slug: str, target: str, key: str, action: str) -> Response:
        return _do(request, _organized(request, slug), target, key, action)


class ConsoleAnnouncementsApi(APIView):
    """The announcements on the challenge page (GET: the shown ones); POST ``text`` and ``reason`` adds one."""

    @extend_schema(responses=AnnouncementOutput(many=True))
    def get(self, request: Request, slug: str) -> Response:
        challenge = _organized(request, slug)
        # djangorestframework-stubs type a serializer's instance as one object even with many=True.
        shown = AnnouncementOutput(announcements_shown(challenge=challenge), many=True)  # type: ignore[arg-type]
        return _private(Response(shown.data))

    @extend_schema(request=inline_serializer("AnnouncementInput", fields={
        "text": serializers.CharField(), "reason": serializers.CharField()}), responses={201: dict})
    def post(self, request: Request, slug: str) -> Response:
        return _do(request, _organized(request, slug), "challenge", "", "announce")
