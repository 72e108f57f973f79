"""REST API for teams' scripts: submit predictions, follow a submission, read its scores."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts.models import Team
from leaderboard.accounts.selectors import team_of_user, user_is_organizer
from leaderboard.challenges.models import Challenge, Phase
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import (
    submission_queue_position,
    submission_visible_scores,
    submissions_of_team,
)
from leaderboard.submissions.services import submission_create_predictions
from leaderboard.submissions.system_services import submission_create_system


class SubmissionOutput(serializers.Serializer[Submission]):
    id = serializers.IntegerField()
    phase = serializers.CharField(source="phase.slug")
    team = serializers.CharField(source="team.name")
    kind = serializers.CharField()
    status = serializers.CharField()
    failure_reason = serializers.CharField()
    failure_cause = serializers.CharField()
    description = serializers.CharField()
    sha256 = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    primary_score = serializers.FloatField(allow_null=True)
    image_digest = serializers.CharField()
    attempts = serializers.IntegerField()
    exit_code = serializers.IntegerField(allow_null=True)
    run_seconds = serializers.FloatField(allow_null=True)
    runtime = serializers.CharField()


def submission_payload(submission: Submission, *, is_organizer: bool) -> dict[str, Any]:
    data = dict(SubmissionOutput(submission).data)
    data["queue_position"] = submission_queue_position(submission=submission)
    data["scores"] = [
        {"dataset": s.dataset, "metric": s.metric, "value": s.value, "sealed": s.sealed}
        for s in submission_visible_scores(submission=submission, is_organizer=is_organizer)
    ]
    return data


class SubmissionInput(serializers.Serializer[Any]):
    phase = serializers.SlugField()
    file = serializers.FileField()
    description = serializers.CharField(max_length=300, required=False, default="")
    dataset = serializers.CharField(required=False, allow_blank=True, default="")


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

    @extend_schema(request=SubmissionInput, responses={201: SubmissionOutput})
    def post(self, request: Request, slug: str) -> Response:
        data = SubmissionInput(data=request.data)
        team, phase = _team_and_phase(request, slug, data)
        submission = submission_create_predictions(
            team=team,
            phase=phase,
            user=request.user,  # type: ignore[arg-type]
            upload=data.validated_data["file"],
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
            description=data.validated_data["description"],
            dataset_hint=data.validated_data["dataset"] or None,
        )
        return Response(submission_payload(submission, is_organizer=False), status=status.HTTP_201_CREATED)


class SystemInput(serializers.Serializer[Any]):
    phase = serializers.SlugField()
    kind = serializers.ChoiceField(choices=["docker_image", "code_bundle"])
    file = serializers.FileField(help_text="`docker save` archive (tar, optionally gzipped) or a zip with run.py/run.sh")
    description = serializers.CharField(max_length=300, required=False, default="")


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
            user=request.user,  # type: ignore[arg-type]
            upload=data.validated_data["file"],
            kind=data.validated_data["kind"],
            description=data.validated_data["description"],
        )
        return Response(submission_payload(submission, is_organizer=False), status=status.HTTP_201_CREATED)


def _visible_submission(request: Request, pk: int) -> tuple[Submission, bool]:
    """The submission if the caller's team owns it or the caller organizes; 404 otherwise."""
    submission = get_object_or_404(Submission.objects.select_related("phase__challenge", "team"), pk=pk)
    challenge = submission.phase.challenge
    is_organizer = user_is_organizer(user=request.user, challenge=challenge)
    team = team_of_user(user=request.user, challenge=challenge)
    if not is_organizer and (team is None or team.pk != submission.team_id):
        raise Http404("no such submission")
    return submission, is_organizer


class SubmissionLogApi(APIView):
    """The run's log (stdout and stderr, capped): for the owning team and organizers only."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: {"type": "object", "properties": {"log": {"type": "string"}}}})
    def get(self, request: Request, pk: int) -> Response:
        submission, _ = _visible_submission(request, pk)
        return Response({"id": submission.pk, "status": submission.status, "log": submission.log})


class SubmissionDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=SubmissionOutput)
    def get(self, request: Request, pk: int) -> Response:
        submission, is_organizer = _visible_submission(request, pk)
        return Response(submission_payload(submission, is_organizer=is_organizer))
