"""Who may use the organizer console: every page and every action, pages and API, for every role.

The role is per challenge: oscar organizes "demo" (``Challenge.staff``), root is a site administrator
(superuser: an organizer of every challenge).  Everyone else gets a 404 with the same body whatever
the address, and changes nothing: the public, dave (signed in, no team), bob and charlie
(participants of this very challenge, on two teams), olga (organizer of another challenge) and stan
(Django's staff flag, no role: the flag alone grants nothing).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from leaderboard.accounts.services import api_token_obtain
from leaderboard.challenges.models import Announcement, AuditEntry, Dataset
from leaderboard.judging.models import Adjudication, Candidate, Judge, Round, RoundItem
from leaderboard.submissions.models import Submission
from tests.builders.console import FAILED_LOG, ConsoleWorld

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "dave", "bob", "charlie", "olga", "stan", "oscar", "root")
ORGANIZERS = {"oscar", "root"}


@dataclass(frozen=True)
class Step:
    """One action: where (target, key) and what it takes besides the reason."""

    target: str
    key: str
    action: str
    data: dict[str, object]

    @property
    def html(self) -> str:
        if self.target == "challenge":
            return "/c/demo/console/announce/"
        return f"/c/demo/console/{self.target}/{self.key}/{self.action}/"

    @property
    def api(self) -> str:
        if self.target == "challenge":
            return "/api/v1/challenges/demo/console/announcements/"
        return f"/api/v1/challenges/demo/console/{self.target}/{self.key}/{self.action}/"


@dataclass
class Matrix:
    world: ConsoleWorld
    notice: Announcement
    steps: list[Step]
    round: Round

    def html_client(self, role: str) -> Client:
        return self.world.client(role) if role != "stan" else _logged_in(self._stan())

    def api_client(self, role: str) -> Client:
        if role == "anonymous":
            return Client()
        user = self._stan() if role == "stan" else self.world.user(role)
        return Client(HTTP_AUTHORIZATION=f"Token {api_token_obtain(user=user)}")

    def _stan(self) -> User:
        return User.objects.get(username="stan")


def _unmasked(response) -> str:  # type: ignore[no-untyped-def]
    """The page without its CSRF token (masked anew on every page)."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", response.content.decode())


def _logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def matrix(console_world: ConsoleWorld) -> Matrix:  # noqa: F811
    w = console_world
    User.objects.create_user("stan", password="stan-pw", is_staff=True)
    notice = Announcement.objects.create(challenge=w.cast.challenge, text="Welcome", created_by=w.cast.oscar)
    # A round of human evaluation with one question and one answer (made as rows: the demo's suite
    # has no judging rounds, and its pages and actions are the console's like any other).
    judged = Round.objects.create(phase=w.cast.dev, guideline="Judge.", questions=1, seed=1, judges_per_item=1)
    Judge.objects.create(challenge=w.cast.challenge, user=w.cast.dave)
    public = Dataset.objects.filter(challenge=w.cast.challenge).exclude(split="III").first()
    assert public is not None
    item = RoundItem.objects.create(round=judged, dataset=public, qid="q1", position=0, gold_sha256="0" * 64)
    Candidate.objects.create(item=item, answer="an answer", key="k", position=0)
    a, t, charlies = w.alpha_dev.pk, w.alpha_test.pk, w.cast.charlies.pk
    # In an order in which each can be done: hide before unhide, reveal before sealing again.
    steps = [
        Step("submissions", str(w.charlie_run.pk), "rerun", {}),
        Step("submissions", str(t), "hide", {}),
        Step("submissions", str(t), "unhide", {}),
        Step("submissions", str(a), "disqualify", {}),
        Step("submissions", str(a), "requalify", {}),
        Step("teams", str(charlies), "disqualify", {}),
        Step("teams", str(charlies), "requalify", {}),
        Step("teams", str(charlies), "hide", {}),
        Step("teams", str(charlies), "unhide", {}),
        Step("teams", str(charlies), "extend", {"phase": "dev", "closes_at": "2099-06-01 00:00"}),
        Step("datasets", "coqa", "reveal", {}),
        Step("datasets", "coqa", "unreveal", {}),
        Step("challenge", "", "announce", {"text": "Test phase extended"}),
        Step("announcements", str(notice.pk), "withdraw", {}),
        Step("rounds", str(judged.pk), "open", {}),
        Step("rounds", str(judged.pk), "close", {}),
        Step("rounds", str(judged.pk), "publish", {}),
    ]
    return Matrix(w, notice, steps, judged)


def console_pages(m: Matrix) -> list[str]:
    return ["/c/demo/console/", "/c/demo/console/submissions/", "/c/demo/console/submissions/?status=failed",
            "/c/demo/console/queue/", "/c/demo/console/teams/", "/c/demo/console/audit/", "/c/demo/console/integrity/",
            "/c/demo/console/campaigns/", "/c/demo/console/judging/", "/c/demo/console/judging/new/",
            f"/c/demo/console/judging/{m.round.pk}/", f"/c/demo/console/judging/{m.round.pk}/results/",
            f"/c/demo/console/judging/{m.round.pk}/download/judgments.jsonl",
            f"/c/demo/console/judging/{m.round.pk}/download/references.jsonl",
            *[s.html for s in m.steps]]


def console_posts(m: Matrix) -> list[tuple[str, dict[str, str]]]:
    """Forms posted outside the actions table: a judge invited, a candidate adjudicated, a round made."""
    candidate = Candidate.objects.get(item__round=m.round)
    return [("/c/demo/console/judging/", {"user": "stan"}),
            (f"/c/demo/console/judging/{m.round.pk}/adjudicate/{candidate.pk}/", {f"c{candidate.pk}-score": "3"}),
            ("/c/demo/console/judging/new/", {"phase": "dev", "systems_from": "top", "top_k": "1", "questions": "1",
                                              "judges_per_item": "1", "scale": "five_point"})]


def console_api_reads(m: Matrix) -> list[str]:
    base = "/api/v1/challenges/demo/console"
    return [f"{base}/submissions/", f"{base}/submissions/?status=failed", f"{base}/queue/", f"{base}/teams/",
            f"{base}/audit/", f"{base}/announcements/", *[s.api for s in m.steps if s.target != "challenge"]]


def state(m: Matrix) -> tuple:
    """Everything an action could change."""
    w = m.world
    return (
        list(Submission.objects.order_by("pk").values_list("pk", "status", "attempts", "hidden_reason",
                                                            "excluded_reason")),
        list(w.cast.challenge.teams.order_by("pk").values_list("pk", "disqualified_reason", "hidden")),
        Dataset.objects.get(pk=w.coqa.pk).revealed_at,
        list(Round.objects.order_by("pk").values_list("pk", "state")), Judge.objects.count(),
        Adjudication.objects.count(),
        list(Announcement.objects.order_by("pk").values_list("pk", "is_active")),
        AuditEntry.objects.count(),
    )


@pytest.mark.parametrize("role", sorted(set(ROLES) - ORGANIZERS))
def test_console_pages_and_actions_are_404_to_everyone_else_and_change_nothing(matrix: Matrix, role: str) -> None:
    before = state(matrix)
    html, api = matrix.html_client(role), matrix.api_client(role)
    unknown_page = html.get("/c/no-such-challenge/console/")
    unknown_api = api.get("/api/v1/challenges/no-such-challenge/console/queue/")
    for url in console_pages(matrix):
        response = html.get(url)
        assert response.status_code == 404, (role, url, response.status_code)
        assert _unmasked(response) == _unmasked(unknown_page), (role, url)  # one answer: nothing confirmed
    for url in console_api_reads(matrix):
        response = api.get(url)
        assert response.status_code == 404, (role, url, response.status_code)
        assert response.json() == unknown_api.json(), (role, url)
    for url, data in console_posts(matrix):
        assert html.post(url, data).status_code == 404, (role, url)
    for step in matrix.steps:
        reasoned: dict[str, object] = {"reason": "trying", **step.data}
        assert html.post(step.html, reasoned).status_code == 404, (role, step)
        response = api.post(step.api, json.dumps(reasoned), content_type="application/json")
        assert response.status_code == 404, (role, step, response.status_code)
        for leaked in ("CoQA", FAILED_LOG.splitlines()[0], "Charlie's", "Alpha"):
            assert leaked not in response.content.decode(), (role, step, leaked)
    assert state(matrix) == before, role


@pytest.mark.parametrize("role", sorted(ORGANIZERS))
def test_organizers_read_every_console_page(matrix: Matrix, role: str) -> None:
    html, api = matrix.html_client(role), matrix.api_client(role)
    for url in console_pages(matrix):
        response = html.get(url)
        assert response.status_code == 200, (role, url, response.status_code)
        assert "no-store" in response["Cache-Control"], url  # hidden data: no cache keeps it
    for url in console_api_reads(matrix):
        response = api.get(url)
        assert response.status_code == 200, (role, url, response.status_code)
        assert "no-store" in response["Cache-Control"], url
    # The failed run of the other team, with its full reason, and the sealed dataset's real name.
    listed = html.get("/c/demo/console/submissions/?status=failed").content.decode()
    assert "exited with code 3" in listed and "Charlie&#x27;s" in listed
    assert "CoQA" in html.get("/c/demo/console/").content.decode()


@pytest.mark.parametrize("role", sorted(ORGANIZERS))
def test_organizers_take_every_action_on_the_pages_each_recorded(matrix: Matrix, role: str) -> None:
    client = matrix.html_client(role)
    for n, step in enumerate(matrix.steps, start=1):
        confirm = client.get(step.html)
        assert confirm.status_code == 200 and b"What will happen" in confirm.content, step
        assert AuditEntry.objects.count() == n - 1, "a GET must do nothing"
        refused = client.post(step.html, step.data)  # no reason: the form again, nothing done
        assert refused.status_code == 400 and AuditEntry.objects.count() == n - 1, step
        done = client.post(step.html, {"reason": f"step {n}", **step.data})
        assert done.status_code == 302, (step, done.status_code, done.content[:2000])
        entry = AuditEntry.objects.first()
        assert AuditEntry.objects.count() == n and entry is not None, step
        assert entry.actor is not None and entry.actor.username == role and entry.reason == f"step {n}", step
        # Twice is refused (409), never done twice; a re-run is queued and an announcement may repeat.
        if step.action not in ("rerun", "announce", "extend"):
            assert client.post(step.html, {"reason": "again", **step.data}).status_code == 409, step


@pytest.mark.parametrize("role", sorted(ORGANIZERS))
def test_organizers_take_every_action_through_the_api_with_a_token(matrix: Matrix, role: str) -> None:
    api = matrix.api_client(role)
    for n, step in enumerate(matrix.steps, start=1):
        if step.target != "challenge":
            said = api.get(step.api).json()
            assert said["consequences"] and said["problem"] is None, step
        assert api.post(step.api, json.dumps(step.data), content_type="application/json").status_code == 400, step
        response = api.post(step.api, json.dumps({"reason": f"api {n}", **step.data}), content_type="application/json")
        assert response.status_code in (200, 201), (step, response.status_code, response.content)
        body = response.json()
        assert body["audit"]["actor"] == role and body["audit"]["reason"] == f"api {n}", step
    audit = api.get("/api/v1/challenges/demo/console/audit/").json()
    assert audit["count"] == len(matrix.steps)
    assert [e["action"] for e in audit["results"]][-1] == "submission.rerun"


def test_the_console_is_404_under_another_challenges_slug_to_its_organizer(matrix: Matrix) -> None:
    w = matrix.world
    olga = matrix.html_client("olga")
    assert olga.get("/c/other/console/").status_code == 200  # her own challenge
    # An id of "demo" under her slug: not found, as any id that is not there.
    for url in (f"/c/other/console/submissions/{w.charlie_run.pk}/rerun/", f"/c/other/console/teams/{w.cast.alpha.pk}/hide/",
                "/c/other/console/datasets/coqa/reveal/"):
        assert olga.get(url).status_code == 404, url
        assert olga.post(url, {"reason": "mine?"}).status_code == 404, url
    assert not AuditEntry.objects.exists()


def test_the_matrix_covers_every_console_route(matrix: Matrix) -> None:
    def routes(resolver: URLResolver, prefix: str = ""):  # type: ignore[no-untyped-def]
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                yield from routes(entry, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                yield prefix + str(entry.pattern)

    console_routes = {r for r in routes(get_resolver()) if "console" in r}
    covered = {resolve(url.split("?")[0]).route for url in (*console_pages(matrix), *console_api_reads(matrix))}
    covered |= {resolve(s.api).route for s in matrix.steps}
    covered |= {resolve(url).route for url, _ in console_posts(matrix)}
    assert console_routes <= covered, console_routes - covered


def test_the_django_admin_is_for_site_administrators(matrix: Matrix) -> None:
    for role, expected in (("oscar", 302), ("stan", 302), ("root", 200)):
        response = matrix.html_client(role).get("/admin/challenges/challenge/")
        assert response.status_code == expected, role
    page = matrix.html_client("root").get(f"/admin/challenges/challenge/{matrix.world.cast.challenge.pk}/change/")
    assert b"Organizers" in page.content and b"organizer console" in page.content
