"""A round on hidden data (the cast's MRQA test phase: XQuAD-en, and CoQA sealed as Hidden-07): items of
a sealed dataset reach organizer-judges only, decided by ``judge_may_see``; the extractive scale."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from leaderboard.accounts.services import team_create
from leaderboard.challenges.models import Dataset
from leaderboard.challenges.services import dataset_reveal
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.judging.models import Assignment, Candidate, Judge, Judgment, Round, RoundItem, Scale
from leaderboard.judging.selectors import judge_may_see, judge_next_item
from leaderboard.judging.services import judge_invite, judgment_give, round_create, round_open
from leaderboard.submissions.intake import submission_create_system
from leaderboard.submissions.models import Status
from tests.builders.cast import Cast
from tests.builders.console import bundle, run_as_worker
from tests.builders.systems import system_phases


@pytest.fixture
def hidden_round(cast: Cast, django_capture_on_commit_callbacks) -> Round:  # type: ignore[no-untyped-def]
    system_phases(cast)
    with django_capture_on_commit_callbacks(execute=True):
        run = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                       kind="code_bundle")
        run = run_as_worker(run)
    assert run.status == Status.FINISHED, run.failure_reason
    return round_create(phase=cast.test, by=cast.oscar, questions=12, systems=[run.pk], seed=5,
                        stratify_by="dataset")


def items(round: Round, slug: str) -> list[RoundItem]:
    return list(RoundItem.objects.filter(round=round, dataset__slug=slug).select_related("dataset", "round__phase__challenge"))


def test_an_extractive_round_samples_both_datasets_on_the_three_way_scale(cast: Cast, hidden_round: Round) -> None:
    assert hidden_round.scale == Scale.CORRECT_PARTLY_WRONG and hidden_round.values == (1, 2, 3)
    assert items(hidden_round, "coqa") and items(hidden_round, "xquad-en")


def test_only_organizers_may_see_a_sealed_datasets_items(cast: Cast, hidden_round: Round) -> None:
    dave = judge_invite(challenge=cast.challenge, user=cast.dave, by=cast.oscar)
    oscar = judge_invite(challenge=cast.challenge, user=cast.oscar, by=cast.oscar)
    sealed, public = items(hidden_round, "coqa")[0], items(hidden_round, "xquad-en")[0]
    assert (judge_may_see(judge=dave, item=sealed), judge_may_see(judge=dave, item=public)) == (False, True)
    assert (judge_may_see(judge=oscar, item=sealed), judge_may_see(judge=oscar, item=public)) == (True, True)
    dataset_reveal(dataset=Dataset.objects.get(challenge=cast.challenge, slug="coqa"))
    sealed.dataset.refresh_from_db()
    assert judge_may_see(judge=dave, item=sealed)


def test_a_judge_who_joins_a_team_is_shown_nothing(cast: Cast, hidden_round: Round) -> None:
    dave = judge_invite(challenge=cast.challenge, user=cast.dave, by=cast.oscar)
    public = items(hidden_round, "xquad-en")[0]
    team_create(challenge=cast.challenge, owner=cast.dave, name="Dave's")
    assert not judge_may_see(judge=dave, item=public)


def test_a_round_with_sealed_items_opens_only_with_enough_organizer_judges(cast: Cast, hidden_round: Round) -> None:
    judge_invite(challenge=cast.challenge, user=cast.dave, by=cast.oscar)
    judge_invite(challenge=cast.challenge, user=cast.oscar, by=cast.oscar)
    with pytest.raises(ServiceError, match="sealed dataset go to organizers only"):
        round_open(round=hidden_round, by=cast.oscar)
    judge_invite(challenge=cast.challenge, user=cast.root, by=cast.oscar)
    round_open(round=hidden_round, by=cast.oscar)
    dave = Judge.objects.get(user=cast.dave)
    assert not Assignment.objects.filter(judge=dave, item__dataset__slug="coqa").exists()
    assert Assignment.objects.filter(judge=dave, item__dataset__slug="xquad-en").exists()


def test_nothing_of_the_sealed_dataset_reaches_a_judge_who_is_not_an_organizer(cast: Cast, hidden_round: Round) -> None:
    for user in (cast.dave, cast.oscar, cast.root):
        judge_invite(challenge=cast.challenge, user=user, by=cast.oscar)
    round_open(round=hidden_round, by=cast.oscar)
    dave = Judge.objects.get(user=cast.dave)
    sealed_texts = [i.question for i in items(hidden_round, "coqa")]
    sealed_answers = [c.answer for c in Candidate.objects.filter(item__round=hidden_round, item__dataset__slug="coqa")]
    client = cast.client("dave")
    page = reverse("judge", kwargs={"slug": cast.challenge.slug, "round_id": hidden_round.pk})
    pages = 0
    while True:
        html = client.get(page).content.decode()
        assert "CoQA" not in html and "coqa" not in html.lower()
        assert not any(text and text in html for text in sealed_texts)
        assert not any(len(answer) > 3 and f">{answer}<" in html for answer in sealed_answers)
        token = re.search(r'name="token" value="([^"]+)"', html)
        if token is None:
            break
        assert client.post(page, {"token": token.group(1), "score": "3", "acceptable_asked": "1"}).status_code == 302
        pages += 1
    assigned = Candidate.objects.filter(item__round=hidden_round, item__assignments__judge=dave)
    assert pages == assigned.count() > 0
    assert set(assigned.values_list("item__dataset__slug", flat=True)) == {"xquad-en"}
    sealed = Candidate.objects.filter(item__dataset__slug="coqa").first()
    assert sealed is not None
    with pytest.raises(NotFound):
        judgment_give(judge=dave, candidate=sealed, score=3)


def test_an_organizer_judge_sees_the_sealed_dataset_by_its_name(cast: Cast, hidden_round: Round) -> None:
    for user in (cast.oscar, cast.root):
        judge_invite(challenge=cast.challenge, user=user, by=cast.oscar)
    round_open(round=hidden_round, by=cast.oscar)
    oscar = Judge.objects.get(user=cast.oscar)
    client = cast.client("oscar")
    page = reverse("judge", kwargs={"slug": cast.challenge.slug, "round_id": hidden_round.pk})
    while (candidate := judge_next_item(judge=oscar, round=hidden_round)) is not None:
        if candidate.item.dataset.slug == "coqa":
            assert "CoQA" in client.get(page).content.decode()
            return
        judgment_give(judge=oscar, candidate=candidate, score=3)
    pytest.fail("no CoQA item reached the organizer")


def test_the_three_way_page_has_its_keys_and_records_acceptable(cast: Cast, hidden_round: Round) -> None:
    for user in (cast.dave, cast.oscar, cast.root):
        judge_invite(challenge=cast.challenge, user=user, by=cast.oscar)
    round_open(round=hidden_round, by=cast.oscar)
    client = cast.client("dave")
    page = reverse("judge", kwargs={"slug": cast.challenge.slug, "round_id": hidden_round.pk})
    html = client.get(page).content.decode()
    assert all(f'data-key="{k}"' in html for k in "cpwa") and "acceptable answer" in html
    token = re.search(r'name="token" value="([^"]+)"', html)
    assert token is not None
    client.post(page, {"token": token.group(1), "score": "1", "acceptable_asked": "1", "acceptable": "1"})
    judgment = Judgment.objects.get(judge__user=cast.dave)
    assert (judgment.score, judgment.acceptable) == (1, True)
