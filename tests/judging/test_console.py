"""The console's human evaluation pages: organizers only; a round created, judged, adjudicated and
published through them; the results page and its downloads are metaeval's tables."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from leaderboard.challenges.models import AuditEntry
from leaderboard.judging.models import Adjudication, Judge, Round, RoundState
from leaderboard.judging.results import round_results, round_results_tables
from leaderboard.judging.selectors import round_disagreements
from tests.builders.judging import MrcWorld, judged_round


def pages(world: MrcWorld, round: Round) -> list[str]:
    slug = world.challenge.slug
    return [
        reverse("console-rounds", args=[slug]), reverse("console-round-new", args=[slug]),
        reverse("console-round", args=[slug, round.pk]), reverse("console-round-results", args=[slug, round.pk]),
        reverse("console-round-download", args=[slug, round.pk, "judgments.jsonl"]),
        reverse("console-round-download", args=[slug, round.pk, "tables.md"]),
        reverse("console-action", args=[slug, "rounds", round.pk, "close"]),
    ]


@pytest.mark.parametrize("who", [None, "alice", "jane", "dave"])
def test_the_pages_are_404_to_anyone_but_an_organizer(mrc_world: MrcWorld, who: str | None) -> None:
    round, _, _ = judged_round(mrc_world)  # jane judges it
    client = mrc_world.client(who)
    for url in pages(mrc_world, round):
        assert client.get(url).status_code == 404, url
    item = round.items.first()
    assert item is not None
    cand = item.candidates.first()
    assert cand is not None
    url = reverse("console-round-adjudicate", args=[mrc_world.challenge.slug, round.pk, cand.pk])
    assert client.post(url, {f"c{cand.pk}-score": "3"}).status_code == 404
    assert not Adjudication.objects.exists()
    assert client.post(reverse("console-rounds", args=[mrc_world.challenge.slug]), {"user": "dave"}).status_code == 404
    assert not Judge.objects.filter(user=mrc_world.dave).exists()


def test_an_organizer_sees_every_page_and_the_nav_links_them(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    client = mrc_world.client("organizer")
    for url in pages(mrc_world, round):
        assert client.get(url).status_code == 200, url
    home = client.get(reverse("console", args=[mrc_world.challenge.slug])).content.decode()
    assert f'href="{reverse("console-rounds", args=[mrc_world.challenge.slug])}"' in home
    assert ">Human evaluation<" in home


def test_a_round_goes_from_the_form_to_published_through_the_console(mrc_world: MrcWorld) -> None:
    slug = mrc_world.challenge.slug
    client = mrc_world.client("organizer")
    form = client.get(reverse("console-round-new", args=[slug])).content.decode()
    assert "perfectly answers the question" in form  # the paper's guideline, prefilled for MRC2018
    # Invite by e-mail and by username.
    assert client.post(reverse("console-rounds", args=[slug]), {"user": "JANE@example.org"}).status_code == 302
    assert client.post(reverse("console-rounds", args=[slug]), {"user": "jim"}).status_code == 302
    refused = client.post(reverse("console-rounds", args=[slug]), {"user": "alice"})  # on a team
    assert refused.status_code == 400 and "is on a team" in refused.content.decode()
    response = client.post(reverse("console-round-new", args=[slug]), {
        "phase": "dev", "systems_from": "chosen", "submissions": mrc_world.system_ids, "questions": 12,
        "seed": 7, "stratify_by": "question_type", "judges_per_item": 2, "scale": "five_point",
        "guideline": form.split('name="guideline"')[1].split(">", 1)[1].split("</textarea>")[0],
        "disagreement_margin": "1",
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    round = Round.objects.get()
    assert (round.items.count(), round.systems.count(), round.seed, round.state) == (12, 3, 7, RoundState.DRAFT)
    assert round.guideline.startswith("Score the answer")
    open_url = reverse("console-action", args=[slug, "rounds", round.pk, "open"])
    assert "gets 2 judges" in client.get(open_url).content.decode()
    assert client.post(open_url, {"reason": "pilot"}).status_code == 302
    round.refresh_from_db()
    assert round.state == RoundState.OPEN
    assert AuditEntry.objects.filter(action="judging.round_open", reason="pilot").exists()
    # Judges judge on their page: jane gives 5, jim 1, so every candidate is a disagreement.
    for who, score in (("jane", "5"), ("jim", "1")):
        judge_client = mrc_world.client(who)
        url = reverse("judge", args=[slug, round.pk])
        while "judgment-form" in (page := judge_client.get(url).content.decode()):
            token = page.split('name="token" value="')[1].split('"')[0]
            assert judge_client.post(url, {"token": token, "score": score}).status_code == 302
    round_page = client.get(reverse("console-round", args=[slug, round.pk])).content.decode()
    assert "jane" in round_page and "jim" in round_page and "48 of 48 judgments" in round_page
    first = round_disagreements(round=round)[0].judged.candidate
    response = client.post(reverse("console-round-adjudicate", args=[slug, round.pk, first.pk]),
                           {f"c{first.pk}-score": "4", f"c{first.pk}-note": "covers the key point"})
    assert response.status_code == 302
    assert Adjudication.objects.get().score == 4 and Adjudication.objects.get().by == mrc_world.organizer
    for action in ("close", "publish"):
        url = reverse("console-action", args=[slug, "rounds", round.pk, action])
        assert client.post(url, {"reason": "done"}).status_code == 302
    round.refresh_from_db()
    assert round.state == RoundState.PUBLISHED
    # A published round takes no adjudication.
    again = client.post(reverse("console-round-adjudicate", args=[slug, round.pk, first.pk]),
                        {f"c{first.pk}-score": "2"})
    assert again.status_code == 302 and Adjudication.objects.count() == 1


def test_the_results_page_and_downloads_show_metaevals_tables(mrc_world: MrcWorld) -> None:
    round, _, _ = judged_round(mrc_world)
    slug = mrc_world.challenge.slug
    client = mrc_world.client("organizer")
    page = client.get(reverse("console-round-results", args=[slug, round.pk])).content.decode()
    results = round_results(round=round)
    assert results is not None
    for key in ("pearson", "bootstrap", "agreement", "overall", "systems", "ranking"):
        assert f'id="table-{key}"' in page, key
    overall = results.metrics["pearson"]["ROUGE-L-adapted"]["overall"]
    assert f"<td>{overall:.3f}</td>" in page
    markdown = client.get(reverse("console-round-download", args=[slug, round.pk, "tables.md"]))
    assert markdown.content.decode() == round_results_tables(results=results, fmt="markdown")
    latex = client.get(reverse("console-round-download", args=[slug, round.pk, "tables.tex"]) + "?n=5")
    assert "Overall score level: 5 questions per sample" in latex.content.decode()
    lines = client.get(reverse("console-round-download", args=[slug, round.pk, "judgments.jsonl"])).content.decode()
    assert len(lines.splitlines()) == 60 and json.loads(lines.splitlines()[0])["system"].startswith("S")
    assert client.get(reverse("console-round-download", args=[slug, round.pk, "secrets.txt"])).status_code == 404
