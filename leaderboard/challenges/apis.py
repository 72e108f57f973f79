"""REST API of a challenge's Data page: the same listing as the page, and the files themselves.

File endpoints take token auth (scripts) as well as the session; whoever may not download a
file gets the page's one 404 message, whether the file exists or not.
"""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts.selectors import viewer_of
from leaderboard.challenges.data_page import (
    DataFile,
    DataListing,
    data_file_get,
    data_listing_get,
    starting_kit_get,
)
from leaderboard.challenges.downloads import KIT_KEY, NO_FILE_MESSAGE
from leaderboard.challenges.http import download_response
from leaderboard.challenges.models import Challenge, Phase
from leaderboard.challenges.selectors import Viewer

VIEWER_MESSAGES = {
    Viewer.ANONYMOUS: "Log in and join a team in this challenge to download.",
    Viewer.OUTSIDER: "Join a team in this challenge to download.",
    Viewer.MEMBER: "",
    Viewer.ORGANIZER: "",
}


class DataFileOutput(serializers.Serializer[DataFile]):
    key = serializers.CharField(help_text='"<kind>/<dataset>" or "starting-kit"; empty when nothing can be downloaded')
    kind = serializers.CharField(help_text="train, dev, test-inputs, starting-kit or no-download")
    dataset = serializers.CharField(source="label", help_text="the dataset's name (its alias while sealed)")
    split = serializers.CharField()
    what = serializers.CharField()
    filename = serializers.CharField()
    size_bytes = serializers.IntegerField(allow_null=True)
    sha256 = serializers.CharField()
    n_questions = serializers.IntegerField(allow_null=True)
    opens_at = serializers.DateTimeField(allow_null=True, help_text="from when teams of the challenge may download")
    available = serializers.BooleanField(help_text="whether the caller may download it now")
    url = serializers.SerializerMethodField()
    downloads = serializers.IntegerField(allow_null=True, help_text="organizers only")
    last_download_at = serializers.DateTimeField(allow_null=True, help_text="organizers only")

    def get_url(self, obj: DataFile) -> str | None:
        if not obj.available:
            return None
        request = self.context["request"]
        slug = self.context["slug"]
        if obj.key == KIT_KEY:
            path = reverse("api-data-kit", kwargs={"slug": slug})
        else:
            path = reverse("api-data-file", kwargs={"slug": slug, "kind": obj.kind, "dataset_slug": obj.dataset_slug})
        return str(request.build_absolute_uri(path))


class DataSectionOutput(serializers.Serializer[Any]):
    title = serializers.CharField()
    phase: serializers.SlugRelatedField[Phase] = serializers.SlugRelatedField(slug_field="slug", read_only=True,
                                                                           allow_null=True)
    files = DataFileOutput(many=True)


class DataListingOutput(serializers.Serializer[DataListing]):
    challenge: serializers.SlugRelatedField[Challenge] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    viewer = serializers.CharField(help_text="organizer, member, outsider or anonymous")
    may_download = serializers.BooleanField()
    message = serializers.SerializerMethodField()
    sections = DataSectionOutput(many=True)
    starting_kit = DataFileOutput(source="kit", allow_null=True,
                                  help_text="null where the challenge has no data (a board of published results)")

    def get_message(self, obj: DataListing) -> str:
        return VIEWER_MESSAGES[obj.viewer]


FILE_RESPONSES = {
    (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="the file, as an attachment"),
    404: OpenApiResponse(description=NO_FILE_MESSAGE),
}


def _challenge_or_no_file(slug: str) -> Challenge:
    challenge = Challenge.objects.filter(slug=slug, is_public=True).first()
    if challenge is None:
        raise Http404(NO_FILE_MESSAGE)
    return challenge


class DataListApi(APIView):
    """What teams may download, per phase and dataset, with sizes, sha256 and download URLs."""

    @extend_schema(responses=DataListingOutput)
    def get(self, request: Request, slug: str) -> Response:
        challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
        viewer, _ = viewer_of(user=request.user, challenge=challenge)
        listing = data_listing_get(challenge=challenge, viewer=viewer)
        return Response(DataListingOutput(listing, context={"request": request, "slug": slug}).data)


class DataFileApi(APIView):
    """One data file (kind train, dev or test-inputs), streamed."""

    @extend_schema(responses=FILE_RESPONSES)
    def get(self, request: Request, slug: str, kind: str, dataset_slug: str) -> FileResponse:
        challenge = _challenge_or_no_file(slug)
        viewer, _ = viewer_of(user=request.user, challenge=challenge)
        served = data_file_get(challenge=challenge, viewer=viewer, kind=kind, dataset_slug=dataset_slug)
        if served is None:
            raise Http404(NO_FILE_MESSAGE)
        return download_response(method=request.method or "GET", challenge=challenge, served=served)


class StartingKitApi(APIView):
    """The challenge's starting kit (zip), under the same rule as the dev data."""

    @extend_schema(responses=FILE_RESPONSES)
    def get(self, request: Request, slug: str) -> FileResponse:
        challenge = _challenge_or_no_file(slug)
        viewer, _ = viewer_of(user=request.user, challenge=challenge)
        served = starting_kit_get(challenge=challenge, viewer=viewer)
        if served is None:
            raise Http404(NO_FILE_MESSAGE)
        return download_response(method=request.method or "GET", challenge=challenge, served=served)
