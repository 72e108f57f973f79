"""A real run over a memory budget: its container's peak memory, measured by the engine, marks it.

A code bundle that holds ~120 MiB runs through the whole path (upload, queue, a compute worker that
states its hardware, the engine, finish) on the hidden test portion; the phase's track allows 64 MiB.
The track board marks the run over budget with the figure its team reads on its own page, and its
chart point carries the run's archive digest and the worker's hardware class.
"""

from __future__ import annotations

import pytest

from leaderboard.submissions.models import RunAttempt, Status
from tests.builders.systems import SYSTEMS, Platform, bundle

pytestmark = pytest.mark.django_db(transaction=True)

HOLD = '''
import time
held = bytearray(120 * 1024 * 1024)
for i in range(0, len(held), 4096):
    held[i] = 1  # touched: resident, so the cgroup counts it
time.sleep(1)
'''


def test_a_run_over_a_memory_budget_is_marked_over_with_its_measured_peak(platform: Platform) -> None:
    cast = platform.cast
    cast.test.budget_tracks = [{"name": "64 MiB", "peak_memory_mib": 64}, {"name": "Roomy", "peak_memory_mib": 250}]
    cast.test.save()
    trivial = (SYSTEMS / "trivial" / "run.py").read_text()
    pk = platform.submit(bundle(("run.py", HOLD + trivial)))
    submission = platform.wait_final(pk, timeout=180)
    assert submission.status == Status.FINISHED, f"{submission.failure_reason}\n{submission.log}\n{platform.logs()}"
    assert submission.peak_memory_mb is not None and 120 <= submission.peak_memory_mb < 250, submission.peak_memory_mb
    attempt = RunAttempt.objects.get(submission=submission, history=None)
    assert attempt.hardware_class.startswith("test host "), attempt.hardware_class
    html = cast.client("alice").get(f"/c/{cast.challenge.slug}/board/test/budgets/").content.decode()
    small = html[html.index("<h2>64 MiB"):html.index("<h2>Roomy")]
    assert "over budget" in small and f"peak memory {submission.peak_memory_mb} MiB" in small, small
    roomy = html[html.index("<h2>Roomy"):html.index("Cost against score")]
    assert "over budget" not in roomy
    assert attempt.hardware_class in html and submission.sha256[:19] in html
