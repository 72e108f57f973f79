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

from leaderboard.accounts.selectors import team_of_user, user_is_organizer
from leaderboard.challenges.models import Challenge
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import (
    submission_queue_position,
    submission_visible_scores,
    submissions_of_team,
)
from leaderboard.submissions.services import submission_create_predictions


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
    finished_at = serializers.DateTimeField(allow_null=True)
    primary_score = serializers.FloatField(allow_null=True)


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
        challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
        team = team_of_user(user=request.user, challenge=challenge)
        if team is None:
            raise ServiceError("you are not in a team for this challenge; create or join one first")
        data = SubmissionInput(data=request.data)
        data.is_valid(raise_exception=True)
        phase = challenge.phases.filter(slug=data.validated_data["phase"]).first()
        if phase is None:
            raise NotFound(f"no phase {data.validated_data['phase']!r} in this challenge", field="phase")
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


class SubmissionDetailApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=SubmissionOutput)
    def get(self, request: Request, pk: int) -> Response:
        submission = get_object_or_404(Submission.objects.select_related("phase__challenge", "team"), pk=pk)
        challenge = submission.phase.challenge
        is_organizer = user_is_organizer(user=request.user, challenge=challenge)
        team = team_of_user(user=request.user, challenge=challenge)
        if not is_organizer and (team is None or team.pk != submission.team_id):
            raise Http404("no such submission")
        return Response(submission_payload(submission, is_organizer=is_organizer))
