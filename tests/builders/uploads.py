"""Prediction uploads through each channel (web form, API with session or token)."""

from __future__ import annotations

import html
import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass

from django.test import Client

from leaderboard.accounts.services import api_token_obtain
from leaderboard.challenges.models import Phase
from tests.builders.cast import Cast, gold_predictions

CHANNELS = ("web", "api-token", "api-session")


@dataclass
class Outcome:
    status: int
    message: str


def post(cast: Cast, channel: str, content: bytes, *, name: str = "preds.json", phase: Phase | None = None,
         user: str = "alice", extra: dict | None = None) -> Outcome:
    """Upload through one channel; the message is the form error (web) or the JSON detail (API)."""
    phase = phase or cast.dev
    file = io.BytesIO(content)
    file.name = name
    if channel == "web":
        client = cast.client(user)
        response = client.post("/c/demo/submit/", {"phase": phase.pk, "file": file, "description": "", **(extra or {})})
        page = html.unescape(response.content.decode("utf-8"))
        return Outcome(response.status_code, page)
    if channel == "api-token":
        client = Client(HTTP_AUTHORIZATION=f"Token {api_token_obtain(user=getattr(cast, user))}")
    else:
        client = cast.client(user)
    response = client.post("/api/v1/challenges/demo/submissions/", {"phase": phase.slug, "file": file, **(extra or {})})
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    data = response.json()
    if response.status_code < 400:
        return Outcome(response.status_code, json.dumps(data))
    assert isinstance(data, dict) and isinstance(data.get("detail"), str), data
    return Outcome(response.status_code, data["detail"])


def zip_of(members: Mapping[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def first_qids(n: int, dataset: str = "squad") -> list[str]:
    return list(gold_predictions()[dataset])[:n]
