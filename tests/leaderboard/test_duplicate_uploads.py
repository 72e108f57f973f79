"""The same prediction file sent twice to one phase by one team: asked before it costs quota.

One rule (``intake.duplicate_refuse``) for the web form and the API: a 409 naming the earlier
submission, nothing counted or stored; a confirmation (the form's box, the API's ``allow_duplicate``)
sends it.  A cancelled or platform-failed earlier copy cost nothing and gave no score: no question.
"""

from __future__ import annotations

import html
import io
import json
import re

import pytest
from django.conf import settings
from django.test import Client

from leaderboard.accounts.services import api_token_create
from leaderboard.challenges.models import Phase
from leaderboard.core.errors import DuplicateUpload
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.models import FailureCause, Status, Submission
from leaderboard.submissions.selectors import quota_usage
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.console import bundle


def named(content: bytes, name: str = "preds.json") -> io.BytesIO:
    file = io.BytesIO(content)
    file.name = name
    return file


PREDS = json.dumps(gold_predictions(wrong_every=4)).encode()


def first(cast: Cast) -> Submission:
    return submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(PREDS),
                                         limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)


def test_the_service_refuses_the_same_file_again_naming_the_earlier_one_and_counts_nothing(cast: Cast) -> None:
    earlier = first(cast)
    used = quota_usage(team=cast.alpha, phase=cast.dev).used_today
    with pytest.raises(DuplicateUpload) as refused:
        # Another member, another file name, the same bytes.
        submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.bob, upload=upload(PREDS, name="b.json"),
                                      limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    assert refused.value.status_code == 409 and refused.value.duplicate_of == earlier.pk
    assert f"your submission {earlier.pk} to the Dev phase" in refused.value.message
    assert quota_usage(team=cast.alpha, phase=cast.dev).used_today == used == 1
    assert Submission.objects.filter(team=cast.alpha).count() == 1
    # Confirmed: taken, and counted like any other.
    again = submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.bob, upload=upload(PREDS),
                                          limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES, allow_duplicate=True)
    assert again.sha256 == earlier.sha256 and quota_usage(team=cast.alpha, phase=cast.dev).used_today == 2


def test_another_phase_team_or_file_is_no_duplicate_nor_is_a_copy_that_cost_nothing(cast: Cast) -> None:
    earlier = first(cast)
    # The same bytes to the other phase, by the other team, and a different file: each taken.
    submission_create_predictions(team=cast.charlies, phase=cast.dev, user=cast.charlie, upload=upload(PREDS),
                                  limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    other = json.dumps(gold_predictions(wrong_every=5)).encode()
    submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(other),
                                  limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    for status, cause in ((Status.CANCELLED, ""), (Status.FAILED, FailureCause.PLATFORM)):
        Submission.objects.filter(team=cast.alpha, sha256=earlier.sha256).update(status=status, failure_cause=cause)
        taken = first(cast)  # the earlier copy neither counted nor scored: sending it again is no duplicate
        Submission.objects.filter(pk=taken.pk).delete()
    # A copy the team's own file failed (it counted): asked again.
    Submission.objects.filter(team=cast.alpha, sha256=earlier.sha256).update(
        status=Status.FAILED, failure_cause=FailureCause.PARTICIPANT)
    with pytest.raises(DuplicateUpload):
        first(cast)


def test_a_system_sent_again_is_taken_without_a_question(cast: Cast) -> None:
    Phase.objects.filter(pk=cast.test.pk).update(allowed_kinds=["code_bundle"])
    cast.test.refresh_from_db()
    for _ in range(2):  # a run is not a pure function of its bundle: sending it again is meant
        submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, kind="code_bundle",
                                 upload=bundle())
    assert Submission.objects.filter(team=cast.alpha, kind="code_bundle").count() == 2


def test_the_web_form_asks_and_a_ticked_box_sends_it(cast: Cast) -> None:
    earlier = first(cast)
    alice = cast.client("alice")
    page = alice.get("/c/demo/submit/").content.decode()
    assert 'type="checkbox"' not in page  # no box until there is something to confirm
    refused = alice.post("/c/demo/submit/", {"phase": cast.dev.pk, "file": named(PREDS)})
    assert refused.status_code == 409
    text = html.unescape(refused.content.decode())
    assert f"the same as your submission {earlier.pk} to the Dev phase" in text and "Nothing was counted" in text
    assert re.search(r'<input type="checkbox" name="allow_duplicate" id="allow-duplicate"', text), text
    assert Submission.objects.filter(team=cast.alpha).count() == 1
    sent = alice.post("/c/demo/submit/", {"phase": cast.dev.pk, "file": named(PREDS), "allow_duplicate": "on"})
    assert sent.status_code == 302 and Submission.objects.filter(team=cast.alpha).count() == 2


def test_the_api_answers_409_with_the_earlier_id_and_takes_it_when_told(cast: Cast) -> None:
    earlier = first(cast)
    token = api_token_create(user=cast.alice, name="script")[1]
    api = Client(HTTP_AUTHORIZATION=f"Token {token}")
    refused = api.post("/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": named(PREDS)})
    assert refused.status_code == 409
    body = refused.json()
    assert body["duplicate_of"] == earlier.pk and body["field"] == "file" and "allow_duplicate=true" in body["detail"]
    sent = api.post("/api/v1/challenges/demo/submissions/", {"phase": "dev", "file": named(PREDS),
                                                              "allow_duplicate": "true"})
    assert sent.status_code == 201, sent.content
    assert "allow_duplicate" in api.get("/api/schema/").content.decode()
