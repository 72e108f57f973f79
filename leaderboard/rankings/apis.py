"""REST API: challenges and their leaderboards, as the caller may see them."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.challenges.models import Challenge, Dataset, Split
from leaderboard.challenges.selectors import dataset_label, datasets_public_order, user_is_organizer
from leaderboard.core.caching import viewer_dependent
from leaderboard.core.errors import ServiceError
from leaderboard.rankings.selectors import ORGANIZER, PUBLIC
from leaderboard.rankings.snapshots import board_access_get
from leaderboard.rankings.views import board_json_served


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


class ChallengeDetailApi(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request, slug: str) -> Response:
        challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
        is_organizer = user_is_organizer(user=request.user, challenge=challenge)
        response = Response(
            {
                "slug": challenge.slug,
                "title": challenge.title,
                "metric_suite": challenge.metric_suite,
                "ranking_rule": challenge.ranking_rule,
                "phases": [
                    {
                        "slug": p.slug,
                        "name": p.name,
                        "kind": p.kind,
                        "opens_at": p.opens_at,
                        "closes_at": p.closes_at,
                        "quota": {"per_day": p.quota_per_day, "total": p.quota_total,
                                  "concurrent": p.quota_concurrent},
                        "allowed_kinds": p.allowed_kinds,
                        # The interactive protocol's modes ([]: systems run in batch); the first ranks.
                        "protocol": p.protocol_modes,
                        "board_public": p.board_public,
                    }
                    for p in challenge.phases.all()
                ],
                # The dataset's state, and separately what the caller may see of its scores:
                # a sealed dataset is named by its alias here even for organizers (this is
                # a public address; the organizer view of a board names it).
                "datasets": [
                    {"name": dataset_label(d, reveal_sealed=False), "split": d.split, "state": dataset_state(d),
                     "visible_to_you": is_organizer or not d.is_sealed}
                    for d in datasets_public_order(challenge.datasets.all())
                ],
            }
        )
        return viewer_dependent(response)


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
