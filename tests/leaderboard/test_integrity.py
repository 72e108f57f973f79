"""The console's integrity signals: copies between teams, membership changes, who may see them.

The predictions are real systems' (tests/builders/integrity.py) on the demo's hidden XQuAD-en test
portion (53 questions), scored as any upload is (``submission_evaluate``).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from leaderboard.accounts.models import MembershipEvent, Team
from leaderboard.accounts.services import team_create, team_join, team_leave
from leaderboard.challenges.models import AuditEntry
from leaderboard.console.integrity import (
    DETERMINISM_ACTION,
    determinism_result,
    integrity_duplicates,
    integrity_membership_changes,
)
from leaderboard.submissions.evaluation import submission_evaluate, submission_run_finish
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import Status, Submission
from scoring.copying import MIN_BOTH_WRONG
from tests.builders.cast import Cast, upload
from tests.builders.console import bundle, gold_outputs, outcome, run_as_worker
from tests.builders.integrity import changed, system_answers, with_gold
from tests.builders.systems import system_phases

pytestmark = pytest.mark.django_db


def _scored(cast: Cast, team: Team, user: User, answers: dict[str, str]) -> Submission:
    submission = submission_create_predictions(team=team, phase=cast.test, user=user,
                                               upload=upload({"xquad-en": answers}),
                                               limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    submission_evaluate(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


@pytest.fixture
def teams(cast: Cast) -> dict[str, Submission]:
    """Alpha: the baseline made stronger; Charlie's: Alpha's file with 5 answers changed; Delta
    (dave): the window system made as strong, built apart."""
    delta = team_create(challenge=cast.challenge, owner=cast.dave, name="Delta")
    alpha_answers = with_gold(system_answers("baseline"), 0.25, seed=1)
    return {
        "alpha": _scored(cast, cast.alpha, cast.alice, alpha_answers),
        "copy": _scored(cast, cast.charlies, cast.charlie, changed(alpha_answers, 5)),
        "delta": _scored(cast, delta, cast.dave, with_gold(system_answers("window"), 0.3, seed=2)),
    }


def _pairs(cast: Cast) -> dict[frozenset[str], object]:
    return {frozenset((p.a.team.name, p.b.team.name)): p for p in integrity_duplicates(phase=cast.test)}


def test_a_team_uploading_another_teams_predictions_with_a_few_answers_changed_is_flagged(
    cast: Cast, teams: dict[str, Submission]
) -> None:
    pairs = integrity_duplicates(phase=cast.test)
    first = pairs[0]
    assert {first.a.team.name, first.b.team.name} == {"Alpha", "Charlie's"}, [p.explanation for p in pairs]
    assert first.flagged
    assert first.overall.both_wrong >= MIN_BOTH_WRONG
    assert first.overall.same_wrong >= first.overall.both_wrong - 5
    assert "questions both got wrong" in first.explanation and "independent systems share about" in first.explanation


def test_two_independent_baselines_of_similar_score_are_not_flagged(cast: Cast, teams: dict[str, Submission]) -> None:
    alpha, delta = teams["alpha"].primary_score, teams["delta"].primary_score
    assert alpha is not None and delta is not None and abs(alpha - delta) < 10, (alpha, delta)
    pairs = _pairs(cast)
    for other in ("Alpha", "Charlie's"):
        pair = pairs[frozenset((other, "Delta"))]
        # Not vacuous: enough questions both got wrong to judge, and still few identical.
        assert pair.overall.both_wrong >= MIN_BOTH_WRONG, pair.explanation  # type: ignore[attr-defined]
        assert not pair.flagged, pair.explanation  # type: ignore[attr-defined]


def test_the_integrity_page_explains_the_flag_and_links_both_submissions(
    cast: Cast, teams: dict[str, Submission]
) -> None:
    page = cast.client("oscar").get("/c/demo/console/integrity/")
    assert page.status_code == 200
    html = page.content.decode()
    copied = integrity_duplicates(phase=cast.test)[0].overall
    assert f"identical on {copied.same_wrong} of {copied.both_wrong} questions both got wrong" in html
    for s in (teams["alpha"], teams["copy"]):
        assert f'href="/c/demo/submissions/{s.pk}/"' in html
    assert 'class="flagged"' in html
    home = cast.client("oscar").get("/c/demo/console/").content.decode()
    assert 'id="integrity-link"' in home and "/c/demo/console/integrity/" in home


@pytest.mark.parametrize("who", [None, "bob", "charlie", "dave"])
def test_the_integrity_page_is_404_to_teams_and_the_public(cast: Cast, who: str | None,
                                                           teams: dict[str, Submission]) -> None:
    page = cast.client(who).get("/c/demo/console/integrity/")
    assert page.status_code == 404
    assert b"identical on" not in page.content and b"Charlie&#x27;s #" not in page.content


def test_moves_between_teams_and_changes_before_a_deadline_are_listed(cast: Cast) -> None:
    team_leave(team=cast.alpha, user=cast.bob)
    team_join(user=cast.bob, join_code=cast.charlies.join_code)
    near = cast.test.closes_at - dt.timedelta(days=2)
    cast.dev.closes_at = near + dt.timedelta(days=30)  # a phase closing long after the change: not listed
    cast.dev.save()
    MembershipEvent.objects.filter(user=cast.bob, team=cast.charlies).update(at=near)
    signals = integrity_membership_changes(challenge=cast.challenge)
    movers = {m.user: m.teams for m in signals.movers}
    assert movers == {"bob": ["Alpha", "Charlie's"]}
    close = [(c.user, c.team.name, c.phase.slug) for c in signals.near_deadline]
    assert close == [("bob", "Charlie's", "test")]
    assert signals.near_deadline[0].hours_before == 48
    # A day's window leaves it out.
    assert integrity_membership_changes(challenge=cast.challenge, days=1).near_deadline == []
    html = cast.client("oscar").get("/c/demo/console/integrity/").content.decode()
    assert "Alpha → Charlie&#x27;s" in html and "48 h later" in html


def test_the_determinism_action_reruns_keeps_the_first_answers_and_counts_what_differs(cast: Cast) -> None:
    system_phases(cast)
    run = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                   kind="code_bundle")
    first = run_as_worker(run)
    assert first.status == Status.FINISHED
    oscar = cast.client("oscar")
    confirm = oscar.get(f"/c/demo/console/submissions/{run.pk}/determinism/").content.decode()
    assert "compares the two runs question by question" in confirm and "the board loses this row" in confirm
    done = oscar.post(f"/c/demo/console/submissions/{run.pk}/determinism/", {"reason": "scores jumped"})
    assert done.status_code == 302 and done["Location"] == "/c/demo/console/integrity/#determinism"
    entry = AuditEntry.objects.get(action=DETERMINISM_ACTION)
    assert entry.reason == "scores jumped" and entry.details["submission_id"] == run.pk
    assert AuditEntry.objects.filter(action="submission.rerun", details__submission_id=run.pk).exists()
    pending = determinism_result(entry=entry)
    assert pending is not None and pending.state == "running"
    # The second run answers three XQuAD-en questions otherwise (the outputs as the system writes them).
    plan = submission_run_claim(run.pk, worker="systems@host-a:101")
    assert plan is not None
    outputs = gold_outputs(plan)
    xquad = json.loads(outputs["xquad-en"])
    for qid in sorted(xquad)[:3]:
        xquad[qid] = "something else"
    outputs["xquad-en"] = json.dumps(xquad).encode()
    submission_run_finish(run.pk, attempt=plan.attempt, outcome=outcome(outputs=outputs))
    result = determinism_result(entry=entry)
    assert result is not None and result.state == "compared"
    assert result.differ == 3 and result.per_dataset[1][1:] == (3, 53), result.per_dataset
    page = oscar.get("/c/demo/console/integrity/").content.decode()
    assert "3 of 72 answers differ (XQuAD-en: 3 of 53)" in page


def test_a_prediction_file_has_no_determinism_check(cast: Cast, teams: dict[str, Submission]) -> None:
    response = cast.client("oscar").post(f"/c/demo/console/submissions/{teams['alpha'].pk}/determinism/",
                                         {"reason": "curious"})
    assert response.status_code == 409
    assert not AuditEntry.objects.filter(action=DETERMINISM_ACTION).exists()
