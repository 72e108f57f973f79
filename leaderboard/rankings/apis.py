"""REST API: challenges and their leaderboards, as the caller may see them."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts.selectors import team_of_user
from leaderboard.challenges.models import Challenge, Dataset, Phase, Split
from leaderboard.challenges.selectors import dataset_label, datasets_public_order, user_is_organizer
from leaderboard.core.caching import viewer_dependent
from leaderboard.core.errors import ServiceError
from leaderboard.rankings.selectors import ORGANIZER, PUBLIC
from leaderboard.rankings.snapshots import board_access_get
from leaderboard.rankings.views import board_json_served
from leaderboard.submissions.selectors import QuotaUsage, quota_usage


def dataset_state(dataset: Dataset) -> str:
    """"sealed" (Split III, not revealed yet), "revealed" (Split III, revealed) or "public"."""
    if dataset.is_sealed:
        return "sealed"
    return "revealed" if dataset.split == Split.III else "public"


class ChallengeListApi(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        return Response(
            [
                {"slug": c.slug, "title": c.title, "metric_suite": c.metric_suite}
                for c in Challenge.objects.filter(is_public=True)
            ]
        )


class PhaseQuotaOutput(serializers.Serializer[Phase]):
    per_day = serializers.IntegerField(source="quota_per_day", allow_null=True, help_text="null: no limit")
    total = serializers.IntegerField(source="quota_total", allow_null=True, help_text="null: no limit")
    concurrent = serializers.IntegerField(source="quota_concurrent", allow_null=True,
                                          help_text="submissions being evaluated at once; null: no limit")


class TeamQuotaOutput(serializers.Serializer[QuotaUsage]):
    """The caller's team's use of a phase's quota (submissions.selectors.quota_usage: what counts)."""

    used_today = serializers.IntegerField(help_text="counted submissions in the last 24 hours")
    used_total = serializers.IntegerField(help_text="counted submissions in the phase")
    active = serializers.IntegerField(help_text="submissions being evaluated now")
    per_day = serializers.IntegerField(allow_null=True, help_text="the team's daily limit (an extension included)")
    total = serializers.IntegerField(allow_null=True, help_text="the team's total limit (an extension included)")
    concurrent = serializers.IntegerField(allow_null=True)
    left_today = serializers.IntegerField(allow_null=True, help_text="null: no daily limit")
    left_total = serializers.IntegerField(allow_null=True, help_text="null: no total limit")
    refusal = serializers.SerializerMethodField(help_text="why a submission now would be refused by the quota "
                                                          "('' if it would not)")
    closes_at = serializers.DateTimeField(allow_null=True, help_text="the team's own deadline when the organizers "
                                                                     "extended the phase for it; null: the phase's")

    def get_refusal(self, usage: QuotaUsage) -> str:
        return usage.refusal() or ""


class PhaseOutput(serializers.Serializer[Phase]):
    slug = serializers.SlugField()
    name = serializers.CharField()
    kind = serializers.CharField(help_text="dev or test")
    opens_at = serializers.DateTimeField()
    closes_at = serializers.DateTimeField()
    quota = PhaseQuotaOutput(source="*")
    allowed_kinds = serializers.ListField(child=serializers.CharField(),
                                          help_text="what it takes: predictions, docker_image, code_bundle")
    protocol = serializers.ListField(source="protocol_modes", child=serializers.CharField(),
                                     help_text="the interactive protocol's modes, the first the one that ranks; "
                                               "[]: systems run in batch")
    board_public = serializers.BooleanField()
    your_quota = serializers.SerializerMethodField(help_text="the caller's team's quota in this phase; null when "
                                                             "the caller is in no team of the challenge")

    @extend_schema_field(TeamQuotaOutput(allow_null=True))
    def get_your_quota(self, phase: Phase) -> dict[str, Any] | None:
        team = self.context["team"]
        return None if team is None else dict(TeamQuotaOutput(quota_usage(team=team, phase=phase)).data)


class DatasetStateOutput(serializers.Serializer[Dataset]):
    name = serializers.SerializerMethodField(help_text="a sealed dataset's alias, for everyone (a public address)")
    split = serializers.CharField()
    state = serializers.SerializerMethodField(help_text="sealed, revealed or public")
    visible_to_you = serializers.SerializerMethodField(help_text="whether the caller may see its scores")

    def get_name(self, dataset: Dataset) -> str:
        return dataset_label(dataset, reveal_sealed=False)

    def get_state(self, dataset: Dataset) -> str:
        return dataset_state(dataset)

    def get_visible_to_you(self, dataset: Dataset) -> bool:
        return bool(self.context["is_organizer"]) or not dataset.is_sealed


class ChallengeDetailOutput(serializers.Serializer[Challenge]):
    slug = serializers.SlugField()
    title = serializers.CharField()
    metric_suite = serializers.CharField()
    ranking_rule = serializers.CharField()
    your_team = serializers.SerializerMethodField(help_text="the caller's team in the challenge; null if none")
    phases = PhaseOutput(many=True, source="phases.all")
    # The dataset's state, and separately what the caller may see of its scores: a sealed dataset is
    # named by its alias here even for organizers (this is a public address; the organizer view of a
    # board names it).
    datasets = serializers.SerializerMethodField()

    def get_your_team(self, challenge: Challenge) -> str | None:
        team = self.context["team"]
        return None if team is None else str(team.name)

    @extend_schema_field(DatasetStateOutput(many=True))
    def get_datasets(self, challenge: Challenge) -> list[dict[str, Any]]:
        return [dict(DatasetStateOutput(d, context=self.context).data)
                for d in datasets_public_order(challenge.datasets.all())]


class ChallengeDetailApi(APIView):
    @extend_schema(responses=ChallengeDetailOutput)
    def get(self, request: Request, slug: str) -> Response:
        challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
        context = {"is_organizer": user_is_organizer(user=request.user, challenge=challenge),
                   "team": team_of_user(user=request.user, challenge=challenge)}
        return viewer_dependent(Response(ChallengeDetailOutput(challenge, context=context).data))


class LeaderboardApi(APIView):
    """The public board whoever asks; ``?view=organizer`` is the organizer view (404 to anyone else)."""

    @extend_schema(
        responses=dict,
        parameters=[OpenApiParameter("view", str, enum=[PUBLIC, ORGANIZER], required=False)],
    )
    def get(self, request: Request, slug: str, phase_slug: str) -> HttpResponse:
        view = request.query_params.get("view") or PUBLIC
        if view not in (PUBLIC, ORGANIZER):
            raise ServiceError(f"view must be {PUBLIC!r} or {ORGANIZER!r}, not {view!r}", field="view")
        # The same answer as the board's JSON export: from the snapshot, with its ETag (a 304 if unchanged).
        # An address one may not see raises NotFound: the API answers it as a 404, like every service error.
        return board_json_served(request._request, board_access_get(
            slug=slug, phase_slug=phase_slug, viewer=request.user, view=view))
