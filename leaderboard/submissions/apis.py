"""REST API for teams' scripts: submit predictions, follow a submission, read its scores."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts.models import Team
from leaderboard.accounts.selectors import team_of_user
from leaderboard.challenges.models import Challenge, Phase
from leaderboard.core.caching import viewer_dependent
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.core.middleware import request_received_at
from leaderboard.core.signed_in import authenticated_user
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.models import Submission
from leaderboard.submissions.score_slices import DatasetBreakdown, submission_breakdowns
from leaderboard.submissions.selectors import (
    run_attempts_of,
    submission_get_visible,
    submission_queue_position,
    submission_run_report,
    submission_visible_primary_score,
    submission_visible_scores,
    submissions_of_team,
)


class SubmissionOutput(serializers.Serializer[Submission]):
    id = serializers.IntegerField()
    phase = serializers.CharField(source="phase.slug")
    team = serializers.CharField(source="team.name")
    kind = serializers.CharField()
    status = serializers.CharField()
    failure_cause = serializers.CharField()
    verdict = serializers.CharField(help_text="how the run ended, in a fixed vocabulary ('' while it has not)")
    description = serializers.CharField()
    sha256 = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    image_digest = serializers.CharField()
    attempts = serializers.IntegerField()
    runtime = serializers.CharField()


class RunFields(serializers.Serializer[Any]):
    """What the caller may see of how the submission ended (see submission_run_report)."""

    failure_reason = serializers.CharField(
        help_text="in full on public data and for organizers; on hidden data, and for an error in the organizers' "
                  "gold, a sentence of the fixed vocabulary")
    exit = serializers.CharField(help_text="the exit code, or on hidden data only zero, non-zero or killed")
    run_seconds = serializers.FloatField(allow_null=True, help_text="whole seconds on hidden data")
    peak_memory_mb = serializers.IntegerField(allow_null=True)
    log_available = serializers.BooleanField()
    log_live = serializers.BooleanField(
        help_text="the log (GET .../log/) is what the running system printed so far, not its whole log")
    held_for_review = serializers.CharField(
        help_text="why a queued run on hidden data waits for an organizer's review before it runs ('' if it "
                  "does not); on hidden data a run the platform failed shows no figure (run time, memory, exit, "
                  "start and end), only its verdict")


def _moment(value: dt.datetime | None) -> str | None:
    return None if value is None else serializers.DateTimeField().to_representation(value)


def submission_payload(submission: Submission, *, is_organizer: bool, breakdowns: bool = False) -> dict[str, Any]:
    """The submission as the caller may see it; with ``breakdowns`` (one submission's answer, not a list,
    since each costs a bootstrap when first asked) its scores by slice too."""
    data = dict(SubmissionOutput(submission).data)
    report = submission_run_report(submission=submission, is_organizer=is_organizer)
    # Every figure from the report, which decides what this caller may see of them.
    data.update(
        failure_reason=report.reason,
        exit=report.exit,
        run_seconds=report.run_seconds,
        peak_memory_mb=report.peak_memory_mb,
        log_available=report.log is not None,
        log_live=report.log_live,
        held_for_review=report.held,
    )
    if not report.full and data["attempts"] > 1:
        # An attempt stopped by the platform is neither counted nor held: on hidden data how many
        # there were is a bit per run its team would read for free.
        data["attempts"] = 1
    if report.figures_withheld:
        # A run on hidden data not charged to its team (yet): not even when it started and ended.
        data["started_at"] = data["finished_at"] = None
    elif not report.full:
        # Their difference is the run time plus a steady overhead: to the microsecond it would
        # tell the team what whole seconds of run_seconds hide (a channel a system controls).
        for field in ("started_at", "finished_at"):
            moment = getattr(submission, field)
            data[field] = None if moment is None else serializers.DateTimeField().to_representation(
                moment.replace(microsecond=0))
    # Each attempt as this caller may see it (worker, host and traceback for organizers only).
    data["run_attempts"] = [
        {"number": a.number, "end": a.end, "verdict": a.verdict, "claimed_at": _moment(a.claimed_at),
         "ended_at": _moment(a.ended_at), "exit": a.exit, "run_seconds": a.run_seconds,
         "peak_memory_mb": a.peak_memory_mb, "reason": a.reason,
         **({"worker": a.worker, "host": a.host, "detail": a.detail, "log_recorded": a.log_recorded}
            if is_organizer else {})}
        for a in run_attempts_of(submission=submission, is_organizer=is_organizer)
    ]
    data["queue_position"] = submission_queue_position(submission=submission)
    scores = submission_visible_scores(submission=submission, is_organizer=is_organizer)
    data["scores"] = [
        {"dataset": s.dataset, "metric": s.metric, "label": s.label, "value": s.value, "sealed": s.sealed}
        for s in scores
    ]
    # The ranking average is itself an aggregate: withheld where the board withholds it.
    data["primary_score"] = submission_visible_primary_score(submission=submission, scores=scores)
    if breakdowns:
        data["breakdowns"] = breakdowns_payload(
            submission_breakdowns(submission=submission, viewer_is_organizer=is_organizer))
    return data


def breakdowns_payload(breakdowns: list[DatasetBreakdown]) -> list[dict[str, Any]]:
    """Per dataset, its slice families as the caller may see them: a family hidden from the caller has
    no slices and says why; an organizer's has them, with ``hidden_from_team`` and the note."""
    return [
        {"dataset": b.dataset, "metric": b.metric, "questions": b.questions, "hidden_data": b.hidden_data,
         "note": b.note,
         "families": [
             {"family": f.name, "shown": f.shown, "hidden_from_team": f.hidden_from_team, "note": f.note,
              "slices": [{"slice": s.label, "questions": s.questions, "score": s.score, "ci95": [s.ci_low, s.ci_high]}
                         for s in f.slices]}
             for f in b.families
         ]}
        for b in breakdowns
    ]


ALLOW_DUPLICATE_HELP = ("send the file even if the team already submitted the same file (same sha256) to this phase; "
                        "without it such an upload is refused with 409, nothing counted, and duplicate_of names "
                        "the earlier submission")


class DuplicateOutput(serializers.Serializer[Any]):
    detail = serializers.CharField(help_text="which earlier submission holds the same file, and how to send it anyway")
    field = serializers.CharField()
    duplicate_of = serializers.IntegerField(help_text="the earlier submission's id")


class SubmissionInput(serializers.Serializer[Any]):
    phase = serializers.SlugField()
    file = serializers.FileField()
    description = serializers.CharField(max_length=300, required=False, default="")
    dataset = serializers.CharField(required=False, allow_blank=True, default="")
    allow_duplicate = serializers.BooleanField(required=False, default=False, help_text=ALLOW_DUPLICATE_HELP)


def _team_and_phase(request: Request, slug: str, data: serializers.Serializer[Any]) -> tuple[Team, Phase]:
    """The caller's team in the challenge and the phase the (validated) input names."""
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    team = team_of_user(user=request.user, challenge=challenge)
    if team is None:
        raise ServiceError("you are not in a team for this challenge; create or join one first")
    data.is_valid(raise_exception=True)
    phase = challenge.phases.filter(slug=data.validated_data["phase"]).first()
    if phase is None:
        raise NotFound(f"no phase {data.validated_data['phase']!r} in this challenge", field="phase")
    return team, phase


class SubmissionListCreateApi(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(responses=SubmissionOutput(many=True))
    def get(self, request: Request, slug: str) -> Response:
        challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
        team = team_of_user(user=request.user, challenge=challenge)
        if team is None:
            return Response([])
        return Response([submission_payload(s, is_organizer=False) for s in submissions_of_team(team=team)])

    @extend_schema(request=SubmissionInput, responses={201: SubmissionOutput, 409: DuplicateOutput})
    def post(self, request: Request, slug: str) -> Response:
        data = SubmissionInput(data=request.data)
        team, phase = _team_and_phase(request, slug, data)
        submission = submission_create_predictions(
            team=team,
            phase=phase,
            user=authenticated_user(request),
            upload=data.validated_data["file"],
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
            description=data.validated_data["description"],
            dataset_hint=data.validated_data["dataset"] or None,
            now=request_received_at(request),
            allow_duplicate=data.validated_data["allow_duplicate"],
        )
        return Response(submission_payload(submission, is_organizer=False), status=status.HTTP_201_CREATED)


class SystemInput(serializers.Serializer[Any]):
    phase = serializers.SlugField()
    kind = serializers.ChoiceField(choices=["docker_image", "code_bundle"])
    file = serializers.FileField(help_text="`docker save` archive (tar, optionally gzipped) or a zip with run.py/run.sh")
    description = serializers.CharField(max_length=300, required=False, default="")
    track = serializers.CharField(max_length=40, required=False, default="", help_text=(
        "a budget track of the phase this system is meant for: refused at once if its size is over the track's"))


class SystemCreateApi(APIView):
    """Submit a system: it runs sandboxed on the phase's hidden inputs, and its output is scored."""

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=SystemInput, responses={201: SubmissionOutput})
    def post(self, request: Request, slug: str) -> Response:
        data = SystemInput(data=request.data)
        team, phase = _team_and_phase(request, slug, data)
        submission = submission_create_system(
            team=team,
            phase=phase,
            user=authenticated_user(request),
            upload=data.validated_data["file"],
            kind=data.validated_data["kind"],
            description=data.validated_data["description"],
            now=request_received_at(request),
            track=data.validated_data["track"],
        )
        return Response(submission_payload(submission, is_organizer=False), status=status.HTTP_201_CREATED)


def _visible_submission(request: Request, pk: int) -> tuple[Submission, bool]:
    """The submission if the caller's team owns it or the caller organizes; one 404 otherwise."""
    return submission_get_visible(user=request.user, pk=pk)


class SubmissionLogApi(APIView):
    """The run's log (stdout and stderr, capped): for the owning team and organizers only.

    A run on hidden data keeps its log from its team (``log`` is null, ``note`` says why)
    until an organizer releases it.  ``platform_notes`` are the platform's own messages about
    the run (bytes cut from the log, a container that could not start), never part of ``log``,
    shown under the same rule; ``log_cut_at`` is where in ``log`` bytes were cut, if they were.
    While the system runs, ``live`` is true and ``log`` is what it printed so far (capped as the
    log is; ``live_at``: when that came), under the same rule: a run on hidden data shows none.
    """

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: {"type": "object", "properties": {
        "id": {"type": "integer"}, "status": {"type": "string"}, "log": {"type": "string", "nullable": True},
        "note": {"type": "string"}, "platform_notes": {"type": "array", "items": {"type": "string"}},
        "log_cut_at": {"type": "integer", "nullable": True}, "live": {"type": "boolean"},
        "live_at": {"type": "string", "format": "date-time", "nullable": True}}}})
    def get(self, request: Request, pk: int) -> Response:
        submission, is_organizer = _visible_submission(request, pk)
        report = submission_run_report(submission=submission, is_organizer=is_organizer)
        return Response({"id": submission.pk, "status": submission.status, "log": report.log, "note": report.log_note,
                         "platform_notes": list(report.log_notes), "log_cut_at": report.log_cut,
                         "live": report.log_live, "live_at": _moment(report.log_live_at)})


class SubmissionDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=SubmissionOutput)
    def get(self, request: Request, pk: int) -> Response:
        submission, is_organizer = _visible_submission(request, pk)
        # What the scores show depends on who asks (an organizer sees sealed ones).
        return viewer_dependent(Response(submission_payload(submission, is_organizer=is_organizer, breakdowns=True)))
