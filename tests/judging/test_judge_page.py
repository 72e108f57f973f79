"""The judge's page: judges only (a 404 like a missing page for anyone else), blind, one candidate at a
time, keyboard shortcuts, progress; a POST records the judgment and shows the next."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from leaderboard.judging.models import Judge, Judgment, Round, RoundSystem
from leaderboard.judging.selectors import judge_next_item
from leaderboard.judging.services import judge_invite, judgment_give, round_close, round_create, round_open
from tests.builders.judging import SUBMISSION_IDS_FROM, MrcWorld


def opened(world: MrcWorld, **changes: object) -> tuple[Round, Judge, Judge]:
    jane = judge_invite(challenge=world.challenge, user=world.jane, by=world.organizer)
    jim = judge_invite(challenge=world.challenge, user=world.jim, by=world.organizer)
    options: dict[str, object] = {"phase": world.dev, "by": world.organizer, "questions": 6,
                                  "systems": world.system_ids, "seed": 3}
    options.update(changes)
    return round_open(round=round_create(**options), by=world.organizer), jane, jim  # type: ignore[arg-type]


def url(world: MrcWorld, round: Round) -> str:
    return reverse("judge", kwargs={"slug": world.challenge.slug, "round_id": round.pk})


def token(html: str) -> str:
    match = re.search(r'name="token" value="([^"]+)"', html)
    assert match, "no judgment form on the page"
    return match.group(1)


def without_csrf(content: bytes) -> bytes:
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"", content)


def test_a_judge_sees_the_question_evidence_references_and_one_answer(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    candidate = judge_next_item(judge=jane, round=round)
    assert candidate is not None
    response = mrc_world.client("jane").get(url(mrc_world, round))
    assert response.status_code == 200
    html = response.content.decode()
    item = candidate.item
    assert item.question in html
    assert item.references[0]["text"][:20] in html
    assert item.evidence[0]["paragraphs"][0][:20] in html
    assert candidate.answer[:20] in html
    total = sum(i.candidates.count() for i in round.items.all())
    assert f"0 of {total} done" in html
    # Keyboard: 1-5 on the buttons, and the script that presses them.
    assert all(f'data-key="{k}"' in html for k in "12345") and "keydown" in html
    assert response["Cache-Control"].count("no-store") == 1


def test_the_page_names_no_team_no_label_no_submission(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    client = mrc_world.client("jane")
    secrets = [t.name for t in mrc_world.teams.values()] + [f"S{i}" for i in (1, 2, 3)]
    ids = [str(s.pk) for s in mrc_world.systems.values()]
    for _ in range(4):  # several candidates, several questions
        html = client.get(url(mrc_world, round)).content.decode()
        for secret in secrets:
            assert not re.search(rf"\b{re.escape(secret)}\b", html), secret
        for pk in ids:  # not as text, nor in any attribute
            assert int(pk) > SUBMISSION_IDS_FROM and pk not in html, pk
        assert "submission" not in html.lower()
        client.post(url(mrc_world, round), {"token": token(html), "score": "3"})
    assert RoundSystem.objects.filter(round=round).count() == 3  # the labels exist; the page never shows them


def test_a_judge_never_sees_another_judges_score(mrc_world: MrcWorld) -> None:
    round, jane, jim = opened(mrc_world)
    candidate = judge_next_item(judge=jim, round=round)
    assert candidate is not None and candidate == judge_next_item(judge=jane, round=round)
    judgment_give(judge=jim, candidate=candidate, score=5)
    html = mrc_world.client("jane").get(url(mrc_world, round)).content.decode()
    assert candidate.answer[:20] in html  # jane is shown the very candidate jim judged
    assert "0 of" in html  # her own progress, not jim's
    assert "Your" not in html and "judged 5" not in html and "jim" not in html


def test_posting_records_the_judgment_and_shows_the_next(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    client = mrc_world.client("jane")
    first = judge_next_item(judge=jane, round=round)
    assert first is not None
    response = client.post(url(mrc_world, round), {"token": token(client.get(url(mrc_world, round)).content.decode()),
                                                   "score": "4"})
    assert response.status_code == 302 and response["Location"] == url(mrc_world, round)
    judgment = Judgment.objects.get(judge=jane)
    assert (judgment.candidate_id, judgment.score) == (first.pk, 4)
    assert judgment.seconds is not None and judgment.seconds >= 0
    html = client.get(url(mrc_world, round)).content.decode()
    assert "1 of" in html
    assert judge_next_item(judge=jane, round=round) != first


def test_the_same_form_sent_twice_records_one_judgment(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    client = mrc_world.client("jane")
    form = {"token": token(client.get(url(mrc_world, round)).content.decode()), "score": "4"}
    assert client.post(url(mrc_world, round), form).status_code == 302
    again = client.post(url(mrc_world, round), {**form, "score": "1"})
    assert again.status_code == 409 and "already" in again.content.decode()
    assert list(Judgment.objects.values_list("score", flat=True)) == [4]


def test_a_forged_token_is_a_missing_page(mrc_world: MrcWorld) -> None:
    round, _, _ = opened(mrc_world)
    response = mrc_world.client("jane").post(url(mrc_world, round), {"token": "x:y", "score": "4"})
    assert response.status_code == 404 and not Judgment.objects.exists()


def test_a_closed_round_refuses_the_judgment_on_the_page(mrc_world: MrcWorld) -> None:
    round, _, _ = opened(mrc_world)
    client = mrc_world.client("jane")
    form = {"token": token(client.get(url(mrc_world, round)).content.decode()), "score": "2"}
    round_close(round=round, by=mrc_world.organizer)
    response = client.post(url(mrc_world, round), form)
    assert response.status_code == 409 and not Judgment.objects.exists()


@pytest.mark.parametrize("who", ["dave", "alice", "organizer"])
def test_anyone_but_a_judge_gets_the_missing_page(mrc_world: MrcWorld, who: str) -> None:
    round, _, _ = opened(mrc_world)
    client = mrc_world.client(who)
    missing = client.get(reverse("judge", kwargs={"slug": mrc_world.challenge.slug, "round_id": round.pk + 999}))
    response = client.get(url(mrc_world, round))
    assert response.status_code == missing.status_code == 404
    assert without_csrf(response.content) == without_csrf(missing.content)
    assert client.post(url(mrc_world, round), {"score": "3"}).status_code == 404


def test_the_anonymous_public_is_sent_to_log_in(mrc_world: MrcWorld) -> None:
    round, _, _ = opened(mrc_world)
    response = Client().get(url(mrc_world, round))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_a_draft_round_is_not_there_for_its_judges(mrc_world: MrcWorld) -> None:
    judge_invite(challenge=mrc_world.challenge, user=mrc_world.jane, by=mrc_world.organizer)
    draft = round_create(phase=mrc_world.dev, by=mrc_world.organizer, questions=3, systems=mrc_world.system_ids)
    assert mrc_world.client("jane").get(url(mrc_world, draft)).status_code == 404


def test_when_all_is_judged_the_page_says_so(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world, questions=1)
    while (candidate := judge_next_item(judge=jane, round=round)) is not None:
        judgment_give(judge=jane, candidate=candidate, score=3)
    html = mrc_world.client("jane").get(url(mrc_world, round)).content.decode()
    assert 'id="all-done"' in html and 'name="token"' not in html
