"""Streaming a Data page file, shared by the HTML views and the API."""

from __future__ import annotations

import logging

from django.http import FileResponse, Http404

from leaderboard.challenges.downloads import ServedFile, file_download_record
from leaderboard.challenges.models import Challenge

logger = logging.getLogger(__name__)

MISSING_MESSAGE = "This file is missing on the server; please tell the organizers."


def download_response(*, method: str, challenge: Challenge, served: ServedFile) -> FileResponse:
    """Stream ``served`` from disk (never read whole) and count the download."""
    try:
        handle = served.open()
    except OSError:
        # The row says the file exists and the storage disagrees: a platform fault, not the caller's.
        logger.error("data file %s of %s is missing at %s", served.key, challenge.slug, served.path)
        raise Http404(MISSING_MESSAGE) from None
    if method == "GET":  # a HEAD request downloads nothing
        file_download_record(challenge=challenge, key=served.key)
    return FileResponse(handle, as_attachment=True, filename=served.filename, content_type=served.content_type)
