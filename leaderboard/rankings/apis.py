"""REST API: challenges and their leaderboards, as the caller may see them."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts.selectors import user_is_organizer
from leaderboard.challenges.models import Challenge
from leaderboard.challenges.selectors import dataset_label
from leaderboard.rankings.selectors import board_get, board_payload


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
        return Response(
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
                        "board_public": p.board_public,
                    }
                    for p in challenge.phases.all()
                ],
                "datasets": [
                    {"name": dataset_label(d, reveal_sealed=is_organizer), "split": d.split, "sealed": d.is_sealed}
                    for d in challenge.datasets.all()
                ],
            }
        )


class LeaderboardApi(APIView):
    @extend_schema(responses=dict)
    def get(self, request: Request, slug: str, phase_slug: str) -> Response:
        return Response(board_payload(board_get(slug=slug, phase_slug=phase_slug, viewer=request.user)))
