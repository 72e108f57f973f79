"""Preparing a run (a large image's check and load) takes longer than a run's lease: the worker
renews it meanwhile, from the claim on (no engine needed)."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.utils import timezone
from pytest_django import Settings

from leaderboard.submissions.models import Status, Submission
from tests.builders.cast import Cast
from workers.control_runs import LocalTransport
from workers.run_system import lease_kept

pytestmark = pytest.mark.django_db(transaction=True)  # the renewing thread has its own connection


def test_the_lease_is_renewed_while_the_worker_prepares_the_run(cast: Cast, settings: Settings) -> None:
    settings.RUN_HEARTBEAT_S = 0.05
    settings.RUN_LEASE_S = 60
    stale = timezone.now() + dt.timedelta(seconds=1)
    submission = Submission.objects.create(team=cast.alpha, phase=cast.test, kind="docker_image",
                                           status=Status.RUNNING, attempts=1, lease_expires_at=stale)
    with lease_kept(lambda: LocalTransport().heartbeat(submission.pk, 1), every=0.05):
        time.sleep(0.3)  # a slow docker load
    submission.refresh_from_db()
    assert submission.lease_expires_at is not None and submission.lease_expires_at > stale + dt.timedelta(seconds=30)


def test_a_failure_inside_raises_in_the_worker_as_it_would_without_the_lease(cast: Cast, settings: Settings) -> None:
    settings.RUN_HEARTBEAT_S = 0.05
    with pytest.raises(ValueError, match="is not the layer"), lease_kept(lambda: LocalTransport().heartbeat(0, 1), every=0.05):
        raise ValueError("layer 1 of 1 is not the layer the image's config names")
