"""Who sees what: every role against every page and API endpoint that shows scores, files or logs.

The cast (see conftest): anonymous public, dave (no team), bob (member of Alpha, alice's team),
charlie (the other team), oscar (organizer) and root (superuser).  Alpha and Charlie's have one
submission each on the dev phase (scored from real uploads) and one on the test phase, scored
as a containerised run would be: on XQuAD-en and on the sealed Split III dataset CoQA
("Hidden-07"), whose name and per-dataset scores only organizers may see before the reveal,
and only in the organizer view of a board: public addresses show the public view to everyone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib import admin
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver
from pytest_django import DjangoCaptureOnCommitCallbacks

from leaderboard.challenges.models import Challenge, Dataset, DatasetFile
from leaderboard.challenges.services import dataset_reveal
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Status, Submission
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.console import ALPHA_TEST, _scored_run
from tests.builders.responses import ClientResponse, body, text

ROLES = ("anonymous", "dave", "bob", "charlie", "oscar", "root")
ORGANIZERS = {"oscar", "root"}
PARTICIPANTS_AND_PUBLIC = ("anonymous", "dave", "bob", "charlie")

CHARLIE_TEST = {"xquad-en": {"f1": 77.75, "em": 66.0}, "coqa": {"f1": 64.5678, "em": 62.3456}}


def sealed_strings() -> list[str]:
    """How a sealed CoQA score could show up: two decimals (pages) or full repr (JSON, CSV)."""
    values = [ALPHA_TEST["coqa"][m] for m in ("f1", "em")] + [CHARLIE_TEST["coqa"][m] for m in ("f1", "em")]
    return [f"{v:.2f}" for v in values] + [repr(v) for v in values]


@dataclass
class World:
    cast: Cast
    alpha_dev: Submission
    charlie_dev: Submission
    alpha_test: Submission
    charlie_test: Submission
    alpha_test_bytes: bytes

    def client(self, role: str) -> Client:
        return self.cast.client(None if role == "anonymous" else role)


@pytest.fixture
def world(cast: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks) -> World:
    with django_capture_on_commit_callbacks(execute=True):
        alpha_dev = submission_create_predictions(
            team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(gold_predictions()),
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
        )
        charlie_dev = submission_create_predictions(
            team=cast.charlies, phase=cast.dev, user=cast.charlie, upload=upload(gold_predictions(wrong_every=3)),
            limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
        )
    alpha_test, alpha_bytes = _scored_run(cast, team=cast.alpha, user=cast.bob, scores=ALPHA_TEST)
    charlie_test, _ = _scored_run(cast, team=cast.charlies, user=cast.charlie, scores=CHARLIE_TEST)
    for s in (alpha_dev, charlie_dev):
        s.refresh_from_db()
        assert s.status == Status.FINISHED, s.failure_reason
    return World(cast, alpha_dev, charlie_dev, alpha_test, charlie_test, alpha_bytes)


# Pages and endpoints everyone may read while the board is public.
def public_urls(phase: str) -> dict[str, str]:
    return {
        f"board page ({phase})": f"/c/demo/board/{phase}/",
        f"board CSV ({phase})": f"/c/demo/board/{phase}/export.csv",
        f"board JSON ({phase})": f"/c/demo/board/{phase}/export.json",
        f"board SVG ({phase})": f"/c/demo/board/{phase}/chart.svg",
        f"API leaderboard ({phase})": f"/api/v1/challenges/demo/phases/{phase}/leaderboard/",
    }


PUBLIC_URLS = {
    "challenge page": "/c/demo/",
    "API challenge detail": "/api/v1/challenges/demo/",
    **public_urls("dev"),
    **public_urls("test"),
}
# The organizer view of the test board: everything, for organizers only.
ORGANIZER_URLS = {
    "organizer board page": "/c/demo/board/test/organizer/",
    "organizer board CSV": "/c/demo/board/test/organizer/export.csv",
    "organizer board JSON": "/c/demo/board/test/organizer/export.json",
    "organizer board SVG": "/c/demo/board/test/organizer/chart.svg",
    "organizer API leaderboard": "/api/v1/challenges/demo/phases/test/leaderboard/?view=organizer",
}
# Where the sealed dataset appears at all (the dev portion has no CoQA; the chart leaves sealed columns out).
SHOWS_TEST_DATASETS = {
    "challenge page", "API challenge detail", "board page (test)", "board CSV (test)", "board JSON (test)",
    "API leaderboard (test)",
}


def private_urls(w: World) -> dict[str, str]:
    """Pages of the test-phase submission of Alpha (alice's and bob's team)."""
    pk = w.alpha_test.pk
    return {
        "submission list": "/c/demo/submissions/",
        "submission detail": f"/c/demo/submissions/{pk}/",
        "submission file": f"/c/demo/submissions/{pk}/file/",
        "API submission detail": f"/api/v1/submissions/{pk}/",
        "API submission list": "/api/v1/challenges/demo/submissions/",
    }


# Expected status of each private URL per role (302: sent to log in, or to the team page).
PRIVATE_STATUS = {
    "anonymous": {"submission list": 302, "submission detail": 302, "submission file": 302,
                  "API submission detail": 401, "API submission list": 401},
    "dave": {"submission list": 302, "submission detail": 404, "submission file": 404,
             "API submission detail": 404, "API submission list": 200},
    "bob": {"submission list": 200, "submission detail": 200, "submission file": 200,
            "API submission detail": 200, "API submission list": 200},
    "charlie": {"submission list": 200, "submission detail": 404, "submission file": 404,
                "API submission detail": 404, "API submission list": 200},
    "oscar": {"submission list": 302, "submission detail": 200, "submission file": 200,
              "API submission detail": 200, "API submission list": 200},
    "root": {"submission list": 302, "submission detail": 200, "submission file": 200,
             "API submission detail": 200, "API submission list": 200},
}


def responses(w: World, role: str) -> Iterator[tuple[str, ClientResponse]]:
    client = w.client(role)
    for name, url in {**PUBLIC_URLS, **private_urls(w)}.items():
        yield name, client.get(url)


@pytest.mark.parametrize("role", ROLES)
def test_public_pages_answer_every_role(world: World, role: str) -> None:
    client = world.client(role)
    for name, url in PUBLIC_URLS.items():
        response = client.get(url)
        assert response.status_code == 200, (name, response.status_code)
        body(response)


@pytest.mark.parametrize("role", ROLES)
def test_private_pages_answer_each_role_as_expected(world: World, role: str) -> None:
    client = world.client(role)
    for name, url in private_urls(world).items():
        response = client.get(url)
        assert response.status_code == PRIVATE_STATUS[role][name], (name, response.status_code)
        if response.status_code == 302:
            expected = "/accounts/login/" if role == "anonymous" else "/c/demo/team/"
            assert response["Location"].startswith(expected), (name, response["Location"])
        if response.status_code in (302, 401, 404):
            # Nothing about the submission leaks in a refusal.
            assert str(world.alpha_test.sha256[:16]) not in text(response)


@pytest.mark.parametrize("role", ["dave", "charlie"])
def test_it_hides_other_teams_submissions_everywhere(world: World, role: str) -> None:
    client = world.client(role)
    for sub in (world.alpha_dev, world.alpha_test):
        for url in (f"/c/demo/submissions/{sub.pk}/", f"/c/demo/submissions/{sub.pk}/file/",
                    f"/api/v1/submissions/{sub.pk}/"):
            response = client.get(url)
            assert response.status_code == 404, url
            assert "Alpha" not in text(response)
    listed = client.get("/api/v1/challenges/demo/submissions/").json()
    assert {s["id"] for s in listed}.isdisjoint({world.alpha_dev.pk, world.alpha_test.pk})
    page = client.get("/c/demo/submissions/")
    if page.status_code == 200:
        assert f"/c/demo/submissions/{world.alpha_test.pk}/" not in text(page)


def test_bob_cannot_see_charlies_submissions_either(world: World) -> None:
    client = world.client("bob")
    for url in (f"/c/demo/submissions/{world.charlie_test.pk}/", f"/c/demo/submissions/{world.charlie_test.pk}/file/",
                f"/api/v1/submissions/{world.charlie_test.pk}/"):
        assert client.get(url).status_code == 404, url
    listed = client.get("/api/v1/challenges/demo/submissions/").json()
    assert {s["id"] for s in listed} == {world.alpha_dev.pk, world.alpha_test.pk}


def test_a_submission_is_not_reachable_under_another_challenges_slug(world: World) -> None:
    Challenge.objects.create(slug="other", title="Other", metric_suite="mrqa")
    assert world.client("bob").get(f"/c/other/submissions/{world.alpha_test.pk}/").status_code == 404
    assert world.client("oscar").get(f"/c/other/submissions/{world.alpha_test.pk}/file/").status_code == 404


@pytest.mark.parametrize("role", ["bob", "oscar", "root"])
def test_the_file_is_downloaded_as_uploaded_by_its_team_and_organizers(world: World, role: str) -> None:
    response = world.client(role).get(f"/c/demo/submissions/{world.alpha_test.pk}/file/")
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    assert body(response) == world.alpha_test_bytes


@pytest.mark.parametrize("role", PARTICIPANTS_AND_PUBLIC)
def test_sealed_split_III_name_and_scores_stay_hidden_from_participants_and_public(world: World, role: str) -> None:
    forbidden = sealed_strings()
    for name, response in responses(world, role):
        content = text(response)
        assert "coqa" not in content.lower(), f"{role} sees the sealed dataset's name on {name}"
        for value in forbidden:
            assert value not in content, f"{role} sees sealed score {value} on {name}"
        if response.status_code == 200 and (name in SHOWS_TEST_DATASETS or (
            name in {"submission detail", "API submission detail"}
        )):
            assert "Hidden-07" in content, f"{role}: the alias is missing on {name}"


def test_the_team_sees_its_own_split_III_scores_as_sealed(world: World) -> None:
    client = world.client("alice")
    api = client.get(f"/api/v1/submissions/{world.alpha_test.pk}/").json()
    sealed = [s for s in api["scores"] if s["dataset"] == "Hidden-07"]
    assert {s["metric"] for s in sealed} == {"f1", "em"}
    assert all(s["sealed"] and s["value"] is None for s in sealed)
    xquad = {s["metric"]: s["value"] for s in api["scores"] if s["dataset"] == "XQuAD-en"}
    assert xquad == {"f1": 81.25, "em": 70.5}
    # A macro average over the one sealed dataset of Split III *is* its score: sealed too;
    # and so is the macro average over XQuAD-en and it (2 x macro - 81.25), with the ranking score.
    overall = {s["metric"]: s for s in api["scores"] if s["dataset"] == "Overall"}
    for metric in ("split_III_macro_f1", "split_III_macro_em", "macro_f1", "macro_em"):
        assert overall[metric]["sealed"] and overall[metric]["value"] is None, metric
    assert api["primary_score"] is None
    assert overall["split_II_macro_f1"]["value"] == 81.25 and not overall["split_II_macro_f1"]["sealed"]
    page = text(client.get(f"/c/demo/submissions/{world.alpha_test.pk}/"))
    assert "sealed until the reveal" in page and "81.25" in page
    listed = text(client.get("/c/demo/submissions/"))
    assert f"{(81.25 + 67.8912) / 2:.2f}" not in listed and "sealed" in listed


@pytest.mark.parametrize("role", sorted(ORGANIZERS))
def test_organizers_see_sealed_names_and_scores_in_the_organizer_view(world: World, role: str) -> None:
    shown = dict(responses(world, role))
    client = world.client(role)
    shown.update({name: client.get(url) for name, url in ORGANIZER_URLS.items()})
    for name in {"submission detail", "API submission detail", *ORGANIZER_URLS} - {"organizer board SVG"}:
        content = text(shown[name])
        assert shown[name].status_code == 200, name
        assert "CoQA" in content, f"{role}: CoQA missing on {name}"
        assert "Hidden-07" not in content, name
    # The challenge page is a public address: its public view, organizers included (what they
    # share or screenshot there shows the alias); the real name is on the organizer board.
    assert "Hidden-07" in text(shown["challenge page"]) and "CoQA" not in text(shown["challenge page"])
    for name in ("organizer board page", "submission detail"):
        assert "67.89" in text(shown[name]), name
    for name in ("organizer board JSON", "organizer API leaderboard", "organizer board CSV", "API submission detail"):
        assert "67.8912" in text(shown[name]), name
    rows = shown["organizer API leaderboard"].json()["rows"]
    assert [r["CoQA F1"] for r in rows] == [67.8912, 64.5678]
    # Every aggregate too, with the ones the public does not see listed.
    assert [r["Macro F1"] for r in rows] == [(81.25 + 67.8912) / 2, (77.75 + 64.5678) / 2]
    assert set(shown["organizer API leaderboard"].json()["withheld"]) == {"Macro F1", "Macro EM", "Split III F1"}
    page = text(shown["organizer board page"])
    assert "Organizer view: do not share this page or its exports." in page
    assert "organizer-view" in shown["organizer board CSV"]["Content-Disposition"]
    assert "organizer-view" in shown["organizer board JSON"]["Content-Disposition"]
    # The API's dataset list names the sealed dataset by its alias even for organizers, and
    # says separately that they may see it.
    datasets = {d["name"]: d for d in shown["API challenge detail"].json()["datasets"]}
    assert datasets["Hidden-07"]["state"] == "sealed" and datasets["Hidden-07"]["visible_to_you"] is True


@pytest.mark.parametrize("role", sorted(ORGANIZERS))
def test_public_addresses_give_organizers_the_body_everyone_gets(world: World, role: str) -> None:
    organizer, public = world.client(role), world.client("anonymous")
    for name, url in {**public_urls("dev"), **public_urls("test")}.items():
        mine, theirs = organizer.get(url), public.get(url)
        assert mine.status_code == theirs.status_code == 200, name
        if name.startswith("board page"):
            # The site's header names who is logged in; the page's content is the same.
            assert _main(text(mine)) == _main(text(theirs)), name
        else:
            assert body(mine) == body(theirs), name
        assert "CoQA" not in text(mine) and "67.89" not in text(mine), name
        assert "organizer-view" not in mine.get("Content-Disposition", ""), name
        if name.startswith("API"):
            assert "private" in mine["Cache-Control"], name
            assert {"Authorization", "Cookie"} <= {v.strip() for v in mine["Vary"].split(",")}, name


def _main(page: str) -> str:
    return page[page.index("<main>"):page.index("</main>")]


@pytest.mark.parametrize("role", PARTICIPANTS_AND_PUBLIC)
def test_the_organizer_view_is_404_to_everyone_else(world: World, role: str) -> None:
    client = world.client(role)
    for name, url in ORGANIZER_URLS.items():
        response = client.get(url)
        assert response.status_code == 404, (role, name)
        assert "CoQA" not in text(response) and "67.89" not in text(response), (role, name)
    assert client.get("/api/v1/challenges/demo/phases/test/leaderboard/?view=everything").status_code == 400
    # The refusal reads like an unknown board: nothing is confirmed.
    refused = client.get(ORGANIZER_URLS["organizer API leaderboard"])
    unknown = client.get("/api/v1/challenges/nope/phases/test/leaderboard/?view=organizer")
    assert refused.status_code == unknown.status_code == 404 and refused.json() == unknown.json()


@pytest.mark.parametrize("role", PARTICIPANTS_AND_PUBLIC)
def test_after_the_reveal_everyone_sees_the_name_and_scores(world: World, role: str) -> None:
    dataset_reveal(dataset=Dataset.objects.get(challenge=world.cast.challenge, slug="coqa"))
    client = world.client(role)
    board = client.get("/api/v1/challenges/demo/phases/test/leaderboard/").json()
    assert [r["CoQA F1"] for r in board["rows"]] == [67.8912, 64.5678]
    assert all("Hidden-07 F1" not in r for r in board["rows"])
    for url in ("/c/demo/board/test/", "/c/demo/board/test/export.csv", "/c/demo/board/test/chart.svg"):
        content = text(client.get(url))
        assert "CoQA" in content and "Hidden-07" not in content, url
        assert "67.89" in content, url
    assert "CoQA" in text(client.get("/c/demo/"))
    if role == "bob":
        api = client.get(f"/api/v1/submissions/{world.alpha_test.pk}/").json()
        coqa = {s["metric"]: (s["value"], s["sealed"]) for s in api["scores"] if s["dataset"] == "CoQA"}
        assert coqa == {"f1": (67.8912, False), "em": (61.2345, False)}
        assert "67.89" in text(client.get(f"/c/demo/submissions/{world.alpha_test.pk}/"))


# --- anonymous teams ---------------------------------------------------------------------------

BOARD_VIEWS = (
    "/c/demo/board/{p}/", "/c/demo/board/{p}/export.csv", "/c/demo/board/{p}/export.json",
    "/c/demo/board/{p}/chart.svg", "/api/v1/challenges/demo/phases/{p}/leaderboard/",
)


@pytest.mark.parametrize("role", ROLES)
def test_an_anonymous_team_is_named_only_to_its_members_and_organizers(world: World, role: str) -> None:
    alpha = world.cast.alpha
    alpha.is_anonymous = True
    alpha.affiliation = "Institute of Secrets"
    alpha.save()
    # Public addresses show the public view, to organizers too: they read the name in the organizer view.
    sees_name = role == "bob"
    client = world.client(role)
    for phase in ("dev", "test"):
        for template in BOARD_VIEWS:
            url = template.format(p=phase)
            content = text(client.get(url))
            if sees_name:
                assert "Alpha" in content, (role, url)
                if not url.endswith(".svg"):
                    assert "Institute of Secrets" in content, (role, url)
            else:
                assert "Alpha" not in content and "Institute of Secrets" not in content, (role, url)
                assert "Anonymous" in content, (role, url)
        rows = client.get(f"/c/demo/board/{phase}/export.json").json()["rows"]
        assert rows[0]["team"] == ("Alpha" if sees_name else "Anonymous")
        assert rows[1]["team"] == "Charlie's"
        if role in ORGANIZERS:
            for url in (f"/c/demo/board/{phase}/organizer/", f"/c/demo/board/{phase}/organizer/export.csv",
                        f"/api/v1/challenges/demo/phases/{phase}/leaderboard/?view=organizer"):
                content = text(client.get(url))
                assert "Alpha" in content and "Institute of Secrets" in content, (role, url)


# --- boards that are not public ----------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_a_non_public_board_is_404_at_public_addresses_and_organizers_use_their_view(world: World, role: str) -> None:
    world.cast.test.board_public = False
    world.cast.test.save()
    client = world.client(role)
    for template in BOARD_VIEWS:
        url = template.format(p="test")
        response = client.get(url)
        assert response.status_code == 404, (role, url)
        assert "Alpha" not in text(response) and "81.25" not in text(response)
    for url in ORGANIZER_URLS.values():
        response = client.get(url)
        assert response.status_code == (200 if role in ORGANIZERS else 404), (role, url)
    # The dev board stays public, and the challenge page links the hidden board's organizer view only.
    assert client.get("/c/demo/board/dev/").status_code == 200
    page = text(client.get("/c/demo/"))
    assert 'href="/c/demo/board/test/"' not in page
    assert ("/c/demo/board/test/organizer/" in page) == (role in ORGANIZERS)


# --- gold files are never served ---------------------------------------------------------------


def _patterns(resolver: URLResolver, prefix: str = "") -> Iterator[tuple[str, object]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from _patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.callback


def test_no_route_serves_gold_or_private_storage() -> None:
    routes = list(_patterns(get_resolver()))
    assert routes, "the URL conf is empty?"
    for route, callback in routes:
        assert getattr(callback, "__name__", "") not in {"serve", "static_serve"}, route
        if route.startswith("admin/"):
            continue  # the admin's model pages, checked below
        if route.startswith("internal/"):
            # Compute workers fetch a run's answer-free inputs and its system here, with a worker
            # token and only for runs they claimed (tests/workers/test_compute_hosts.py); never gold.
            assert getattr(callback, "worker_token_required", False), route
            continue
        lowered = route.lower()
        for word in ("gold", "media", "private", "datasetfile", "dataset_file", "inputs"):
            assert word not in lowered, route
    # The admin shows a gold file's fingerprint, never the file (no FileField, so no link).
    gold_admin = admin.site._registry.get(DatasetFile)
    if gold_admin is not None:
        shown = set(gold_admin.get_fields(RequestFactory().get("/admin/"))) | set(gold_admin.list_display)
        assert not shown & {"gold", "inputs"}, shown
    # mypy reads the settings module's STORAGES as dict[str, object] (its two entries differ).
    default = settings.STORAGES["default"]
    assert isinstance(default, dict) and not default["OPTIONS"].get("base_url")
    # Static files are served from elsewhere: no collectstatic or static finder reaches private storage.
    private = Path(settings.PRIVATE_STORAGE_ROOT).resolve()
    assert not private.is_relative_to(Path(settings.STATIC_ROOT).resolve())
    assert not any(private.is_relative_to(Path(d).resolve()) for d in getattr(settings, "STATICFILES_DIRS", []))


@pytest.mark.parametrize("role", ROLES)
def test_gold_files_cannot_be_fetched_over_http(world: World, role: str) -> None:
    client = world.client(role)
    gold = DatasetFile.objects.get(dataset__slug="coqa", portion="test")
    gold_bytes = Path(gold.gold.path).read_bytes()
    assert Path(gold.gold.path).is_relative_to(Path(settings.PRIVATE_STORAGE_ROOT))
    for name in (gold.gold.name, gold.inputs.name, world.alpha_test.file.name):
        for url in (
            f"/{name}", f"/media/{name}", f"/private/{name}", f"/static/{name}", f"/static/../private/{name}",
            f"/static/%2e%2e/private/{name}", f"/static/..%2fprivate/{name}", f"/c/demo/{name}",
        ):
            response = client.get(url)
            assert response.status_code == 404, (url, response.status_code)
            assert gold_bytes not in body(response)


@pytest.mark.parametrize("role", ROLES)
def test_admin_pages_for_gold_files_show_no_file(world: World, role: str) -> None:
    client = world.client(role)
    gold = DatasetFile.objects.get(dataset__slug="coqa", portion="test")
    gold_bytes = Path(gold.gold.path).read_bytes()
    for url in ("/admin/challenges/datasetfile/", f"/admin/challenges/datasetfile/{gold.pk}/change/"):
        response = client.get(url)
        if role == "root":
            assert response.status_code == 200, url
            page = text(response)
            assert gold.sha256 in page
            assert gold.gold.name is not None and gold.inputs.name is not None
            assert gold.gold.name not in page and gold.inputs.name not in page
            assert Path(gold.gold.name).name not in page
        else:
            # oscar organizes the challenge but is not staff: the admin is for site staff only.
            assert response.status_code == 302 and "/admin/login/" in response["Location"], url
        assert gold_bytes not in body(response)
    if role == "root":
        # Nor can a gold file be added (uploaded unvalidated) through the admin.
        assert client.get("/admin/challenges/datasetfile/add/").status_code == 403
