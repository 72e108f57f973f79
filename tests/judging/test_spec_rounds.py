"""A round set up in the spec (``phases[].human_eval``): its values checked at the load, the round
created from them with the judges it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command

from leaderboard.challenges.human_eval import human_eval_parse
from leaderboard.challenges.spec import SpecError
from leaderboard.core.errors import ServiceError
from leaderboard.judging.models import Judge, Round, RoundSystem, Scale
from leaderboard.judging.spec_rounds import round_create_from_spec
from leaderboard.submissions.reload import challenge_load
from tests.builders.judging import MRC_SPEC, MrcWorld


def spec_with(tmp_path: Path, human_eval: Any) -> Path:
    """The MRC2018 demo spec, its dev phase with ``human_eval``, its files named absolutely."""
    spec = yaml.safe_load(MRC_SPEC.read_text())
    for ds in spec["datasets"]:
        ds["files"] = {portion: str((MRC_SPEC.parent / path).resolve()) for portion, path in ds["files"].items()}
    next(p for p in spec["phases"] if p["slug"] == "dev")["human_eval"] = human_eval
    path = tmp_path / f"mrc-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize(("raw", "message"), [
    ({"scale": "ten_point"}, "h.scale: 'ten_point' is not one of five_point, correct_partly_wrong"),
    ({"questions": 0}, "h.questions: expected a whole number from 1 to 5000"),
    ({"top": True}, "h.top: expected a whole number"),
    ({"deadline": "2026-12-20 12:00"}, "h.deadline: expected a time in UTC with a Z"),
    ({"judges": "jane"}, "h.judges: expected a list of usernames"),
    ({"judge": ["jane"]}, "h.judge: unknown key"),
    ({"disagreement_margin": -1}, "h.disagreement_margin: expected a number, 0 or more"),
])
def test_each_value_is_checked(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ServiceError, match=message.replace("(", r"\(")):
        human_eval_parse(raw, where="h", suite="mrc2018")


def test_strata_by_question_type_need_a_suite_with_typed_questions() -> None:
    assert human_eval_parse({"stratify_by": "question_type"}, where="h", suite="mrc2018") == {
        "stratify_by": "question_type"}
    with pytest.raises(ServiceError, match="the mrqa suite's questions have no type; stratify by dataset"):
        human_eval_parse({"stratify_by": "question_type"}, where="h", suite="mrqa")
    assert human_eval_parse({"stratify_by": "none", "deadline": "2026-12-20T12:00:00Z"}, where="h", suite="mrqa") == {
        "stratify_by": "", "deadline": "2026-12-20T12:00:00Z"}


def test_a_bad_value_fails_the_load_and_names_the_key(mrc_world: MrcWorld, tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"mrc2018-demo\.phases\[0\]\.human_eval\.scale"):
        challenge_load(spec_path=spec_with(tmp_path, {"scale": "ten"}))


def test_the_round_is_created_from_the_spec_with_its_judges(mrc_world: MrcWorld, tmp_path: Path) -> None:
    challenge_load(spec_path=spec_with(tmp_path, {
        "name": "Pilot", "top": 2, "questions": 10, "seed": 11, "stratify_by": "question_type",
        "judges_per_item": 2, "deadline": "2099-01-01T00:00:00Z", "judges": ["jane", "jim"]}))
    mrc_world.dev.refresh_from_db()
    assert mrc_world.dev.human_eval["top"] == 2
    made = round_create_from_spec(phase=mrc_world.dev, by=mrc_world.organizer)
    r = made.round
    assert (r.name, r.questions, r.seed, r.scale, r.state) == ("Pilot", 10, 11, Scale.FIVE_POINT, "draft")
    assert r.items.count() == 10 and RoundSystem.objects.filter(round=r).count() == 2
    # The board's top two: Alpha (the references themselves) and Gamma (half of them), not Beta.
    assert {s.submission.team.name for s in RoundSystem.objects.filter(round=r)} == {"Alpha", "Gamma"}
    assert made.invited == ["jane", "jim"] and Judge.objects.filter(challenge=mrc_world.challenge).count() == 2
    again = round_create_from_spec(phase=mrc_world.dev, by=mrc_world.organizer)
    assert again.invited == [] and again.judging_already == ["jane", "jim"]
    assert [i.qid for i in again.round.items.order_by("position")] == [i.qid for i in r.items.order_by("position")]


def test_the_command_and_its_refusals(mrc_world: MrcWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    challenge_load(spec_path=spec_with(tmp_path, {"top": 3, "questions": 6, "judges": ["nobody"]}))
    with pytest.raises(CommandError, match="no user called 'nobody'"):
        call_command("judging_round_create", mrc_world.challenge.slug, "dev", "--by", "organizer")
    assert not Round.objects.exists(), "a refused round left a draft behind"
    with pytest.raises(CommandError):
        call_command("judging_round_create", mrc_world.challenge.slug, "dev", "--by", "alice")
    challenge_load(spec_path=spec_with(tmp_path, {"top": 3, "questions": 6}))
    call_command("judging_round_create", mrc_world.challenge.slug, "dev", "--by", "organizer")
    assert "draft, 6 questions, 3 systems, 2 judges per answer" in capsys.readouterr().out
