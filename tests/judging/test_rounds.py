"""Rounds: seeded, stratified sampling; answers collected and merged; judges assigned; judgments refused
where they must be; adjudication recorded."""

from __future__ import annotations

from collections import Counter

import pytest

from leaderboard.challenges.models import AuditEntry
from leaderboard.core.errors import Conflict, NotFound, ServiceError
from leaderboard.judging.items import allocation
from leaderboard.judging.models import Assignment, Candidate, Judge, Judgment, Round, RoundItem, RoundState
from leaderboard.judging.selectors import judge_next_item, judge_progress, round_disagreements, round_progress
from leaderboard.judging.services import (
    adjudication_record,
    judge_invite,
    judgment_give,
    round_close,
    round_create,
    round_open,
    round_publish,
)
from tests.builders.judging import MrcWorld, dureader_refs, mrc_predictions


def create(world: MrcWorld, **changes: object) -> Round:
    options: dict[str, object] = {"phase": world.dev, "by": world.organizer, "questions": 12,
                                  "systems": world.system_ids, "seed": 7, "stratify_by": "question_type"}
    options.update(changes)
    return round_create(**options)  # type: ignore[arg-type]


def opened(world: MrcWorld, **changes: object) -> tuple[Round, Judge, Judge]:
    jane = judge_invite(challenge=world.challenge, user=world.jane, by=world.organizer)
    jim = judge_invite(challenge=world.challenge, user=world.jim, by=world.organizer)
    return round_open(round=create(world, **changes), by=world.organizer), jane, jim


def items_of(round: Round) -> list[tuple[str, str]]:
    return list(RoundItem.objects.filter(round=round).order_by("position").values_list("qid", "question_type"))


def test_the_same_seed_draws_the_same_questions_in_the_same_order(mrc_world: MrcWorld) -> None:
    first, again, other = create(mrc_world), create(mrc_world), create(mrc_world, seed=8)
    assert items_of(first) == items_of(again)
    assert items_of(first) != items_of(other)
    assert len(items_of(first)) == 12


def test_a_stratified_sample_gives_each_question_type_its_proportional_share(mrc_world: MrcWorld) -> None:
    population = Counter(ref["question_type"] for ref in dureader_refs())
    types = sorted(population)
    expected = dict(zip(types, allocation([population[t] for t in types], 20)))
    for seed in (1, 2, 3):
        drawn = Counter(t for _, t in items_of(create(mrc_world, questions=20, seed=seed)))
        assert dict(drawn) == {t: n for t, n in expected.items() if n}
    # 35 DESCRIPTION, 10 ENTITY, 5 YES_NO of 50: 14, 4, 2 of 20.
    assert expected == {"DESCRIPTION": 14, "ENTITY": 4, "YES_NO": 2}


def test_asking_for_more_questions_than_there_are_takes_them_all(mrc_world: MrcWorld) -> None:
    assert len(items_of(create(mrc_world, questions=500))) == 50


def test_identical_answers_of_a_question_are_one_candidate_judged_once(mrc_world: MrcWorld) -> None:
    round = create(mrc_world, questions=50)
    index = {str(ref["question_id"]): i for i, ref in enumerate(dureader_refs())}
    gold, half = mrc_predictions("gold"), mrc_predictions("half")
    for item in RoundItem.objects.filter(round=round).prefetch_related("candidates__systems"):
        candidates = list(item.candidates.all())
        # Gamma's answer is Alpha's on even questions, Beta's on odd ones: two candidates, Gamma's merged.
        assert len(candidates) == 2, item.qid
        merged_with = "S1" if index[item.qid] % 2 == 0 else "S2"
        by_systems = {frozenset(s.label for s in c.systems.all()): c for c in candidates}
        assert set(by_systems) == {frozenset({merged_with, "S3"}), frozenset({"S2" if merged_with == "S1" else "S1"})}
        assert by_systems[frozenset({merged_with, "S3"})].answer == (gold if merged_with == "S1" else half)[
            item.qid]["answers"][0].strip()
        assert sorted(c.position for c in candidates) == [0, 1]


def test_the_opinion_label_is_part_of_a_yes_no_candidate_only(mrc_world: MrcWorld) -> None:
    round = create(mrc_world, questions=50)
    labels = Counter((c.item.question_type, bool(c.yesno)) for c in Candidate.objects.filter(item__round=round))
    assert labels[("YES_NO", True)] > 0
    assert not labels[("DESCRIPTION", True)] and not labels[("ENTITY", True)]


def test_candidates_are_shuffled_so_the_first_is_not_always_the_same_system(mrc_world: MrcWorld) -> None:
    round = create(mrc_world, questions=50)
    firsts = Counter(frozenset(s.label for s in c.systems.all())
                     for c in Candidate.objects.filter(item__round=round, position=0).prefetch_related("systems"))
    assert len(firsts) >= 3  # S1+S3, S2, S1, S2+S3 all come first somewhere


def test_the_item_keeps_question_evidence_and_references_from_the_files(mrc_world: MrcWorld) -> None:
    round = create(mrc_world, questions=50)
    refs = {str(r["question_id"]): r for r in dureader_refs()}
    for item in RoundItem.objects.filter(round=round):
        ref = refs[item.qid]
        assert item.question == ref["question"]
        assert [r["text"] for r in item.references] == ref["answers"]
        assert [d["title"] for d in item.evidence] == [d["title"] for d in ref["documents"]]
        # The answer-free inputs: no document says which paragraph holds the answer.
        assert all(set(d) == {"title", "paragraphs"} for d in item.evidence)


def test_the_top_k_of_the_board_are_its_best_rows(mrc_world: MrcWorld) -> None:
    round = create(mrc_world, systems=None, top_k=2)
    chosen = [s.submission_id for s in round.systems.order_by("label")]
    assert chosen == [mrc_world.systems["gold"].pk, mrc_world.systems["mixed"].pk]


@pytest.mark.parametrize("who", ["alice", "jane", "dave"])
def test_only_an_organizer_creates_a_round(mrc_world: MrcWorld, who: str) -> None:
    with pytest.raises(NotFound):
        create(mrc_world, by=getattr(mrc_world, who))


def test_creating_and_opening_a_round_are_audited(mrc_world: MrcWorld) -> None:
    round, _, _ = opened(mrc_world)
    actions = set(AuditEntry.objects.filter(challenge=mrc_world.challenge).values_list("action", flat=True))
    assert {"judging.round_create", "judging.round_open", "judging.judge_invite"} <= actions
    assert round.state == RoundState.OPEN


def test_opening_gives_every_item_two_judges(mrc_world: MrcWorld) -> None:
    round, jane, jim = opened(mrc_world)
    for item in RoundItem.objects.filter(round=round):
        assert set(Assignment.objects.filter(item=item).values_list("judge_id", flat=True)) == {jane.pk, jim.pk}


def test_a_round_with_too_few_judges_does_not_open(mrc_world: MrcWorld) -> None:
    judge_invite(challenge=mrc_world.challenge, user=mrc_world.jane, by=mrc_world.organizer)
    round = create(mrc_world)
    with pytest.raises(ServiceError, match="cannot get 2 judges"):
        round_open(round=round, by=mrc_world.organizer)
    round.refresh_from_db()
    assert round.state == RoundState.DRAFT and not Assignment.objects.filter(item__round=round).exists()


def test_a_member_of_a_team_cannot_be_a_judge(mrc_world: MrcWorld) -> None:
    with pytest.raises(ServiceError, match="on a team"):
        judge_invite(challenge=mrc_world.challenge, user=mrc_world.alice, by=mrc_world.organizer)


def test_a_judge_is_shown_each_of_its_candidates_once_then_nothing(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    total = Candidate.objects.filter(item__round=round).count()
    assert judge_progress(judge=jane, round=round).total == total
    seen = []
    while (candidate := judge_next_item(judge=jane, round=round)) is not None:
        seen.append(candidate.pk)
        judgment_give(judge=jane, candidate=candidate, score=4)
    assert len(seen) == len(set(seen)) == total
    assert judge_progress(judge=jane, round=round).done == total
    progress = round_progress(round=round)
    assert (progress.judgments, progress.needed, progress.items_complete) == (total, 2 * total, 0)


def test_a_second_judgment_of_the_same_candidate_is_refused(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    candidate = judge_next_item(judge=jane, round=round)
    assert candidate is not None
    judgment_give(judge=jane, candidate=candidate, score=3)
    with pytest.raises(Conflict, match="already"):
        judgment_give(judge=jane, candidate=candidate, score=5)
    assert list(Judgment.objects.filter(candidate=candidate).values_list("score", flat=True)) == [3]


def test_a_closed_round_takes_no_judgment(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    candidate = judge_next_item(judge=jane, round=round)
    assert candidate is not None
    round_close(round=round, by=mrc_world.organizer)
    with pytest.raises(Conflict, match="closed"):
        judgment_give(judge=jane, candidate=candidate, score=3)
    assert not Judgment.objects.exists()


def test_someone_not_judging_the_item_cannot_judge_it(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    candidate = judge_next_item(judge=jane, round=round)
    assert candidate is not None
    # A judge of the challenge given no item of this round (invited after it filled up).
    late = Judge.objects.create(challenge=mrc_world.challenge, user=mrc_world.dave)
    with pytest.raises(NotFound):
        judgment_give(judge=late, candidate=candidate, score=3)


def test_a_score_off_the_scale_is_refused(mrc_world: MrcWorld) -> None:
    round, jane, _ = opened(mrc_world)
    candidate = judge_next_item(judge=jane, round=round)
    assert candidate is not None
    for score in (0, 6):
        with pytest.raises(ServiceError, match="one of 1, 2, 3, 4, 5"):
            judgment_give(judge=jane, candidate=candidate, score=score)
    with pytest.raises(ServiceError, match="acceptable"):
        judgment_give(judge=jane, candidate=candidate, score=3, acceptable=True)


def test_a_judgment_records_how_long_it_took(mrc_world: MrcWorld) -> None:
    import datetime as dt  # noqa: PLC0415 (only this test needs it)

    round, jane, _ = opened(mrc_world)
    candidate = judge_next_item(judge=jane, round=round)
    assert candidate is not None and round.opened_at is not None
    shown = round.opened_at + dt.timedelta(seconds=1)
    judgment = judgment_give(judge=jane, candidate=candidate, score=2, shown_at=shown,
                             now=shown + dt.timedelta(seconds=42.5))
    assert judgment.seconds == pytest.approx(42.5)


def test_disagreements_over_the_margin_go_to_adjudication_which_is_recorded(mrc_world: MrcWorld) -> None:
    round, jane, jim = opened(mrc_world)
    far = judge_next_item(judge=jane, round=round)
    assert far is not None
    judgment_give(judge=jane, candidate=far, score=1)
    judgment_give(judge=jim, candidate=far, score=5)
    near = judge_next_item(judge=jane, round=round)
    assert near is not None
    judgment_give(judge=jane, candidate=near, score=3)
    judgment_give(judge=jim, candidate=near, score=4)  # differ by 1: not more than the margin
    assert [d.judged.candidate.pk for d in round_disagreements(round=round)] == [far.pk]
    with pytest.raises(NotFound):
        adjudication_record(candidate=far, by=mrc_world.jane, score=3)
    adjudication_record(candidate=far, by=mrc_world.organizer, score=2, note="half right")
    [d] = round_disagreements(round=round)
    assert d.judged.adjudication is not None and d.judged.adjudication.score == 2 and d.judged.human == 2.0
    assert AuditEntry.objects.filter(action="judging.adjudicate").count() == 1
    round_close(round=round, by=mrc_world.organizer)
    round_publish(round=round, by=mrc_world.organizer)
    with pytest.raises(Conflict, match="published"):
        adjudication_record(candidate=far, by=mrc_world.organizer, score=3)


def test_states_move_one_way(mrc_world: MrcWorld) -> None:
    round = create(mrc_world)
    with pytest.raises(Conflict):
        round_close(round=round, by=mrc_world.organizer)
    with pytest.raises(Conflict):
        round_publish(round=round, by=mrc_world.organizer)
