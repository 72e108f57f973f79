"""Evaluation campaigns: a campaign phase and its own dataset loaded into a running challenge, archived
systems of the test phase asked again, their runs driven through the services a worker calls.

The real containers (an image, a bundle, an interactive system) are in tests/sandbox/test_campaign_runs.py;
here: the spec's rules, which datasets each phase has, what the plan takes and refuses, that starting twice
asks nothing twice, the consent rule, the original board unchanged byte for byte, and retention.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client

from leaderboard.accounts.selectors import team_in_campaigns
from leaderboard.accounts.services import team_campaign_choice_set
from leaderboard.challenges.models import AuditEntry, CampaignConsent, Challenge, Dataset, DatasetFile, Phase
from leaderboard.challenges.selectors import phase_datasets
from leaderboard.challenges.spec import SpecError
from leaderboard.core.errors import PermissionDenied, ServiceError
from leaderboard.sandbox.contract import RunPlan
from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.campaigns import PREDICTIONS_PROBLEM, campaign_plan, campaign_start
from leaderboard.submissions.evaluation import submission_evaluate, submission_run_finish
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.models import CampaignRun, Status, Submission
from leaderboard.submissions.reload import challenge_load
from leaderboard.submissions.storage import KEEP_SHARED, storage_retention_plan, team_storage_usage
from leaderboard.submissions.worker_api import submission_run_claim_next
from tests.builders.campaigns import mrqa_campaign_spec, quac_campaign_spec
from tests.builders.cast import Cast, gold_predictions, mrqa_gold, upload
from tests.builders.runs import outcome
from tests.builders.systems import TEST_LIMITS, bundle

pytestmark = pytest.mark.django_db

def spec_of(tmp_path: Path, *, campaign: dict[str, Any] | None = None, **changes: Any) -> Path:
    return mrqa_campaign_spec(tmp_path, campaign=campaign, **changes)


def finish_run(submission: Submission, *, wrong_every: int = 0) -> Submission:
    """Claim the queued run as a worker would and finish it with the gold answers of what it read."""
    claim = submission_run_claim_next(queue="cpu", worker="tok/host:1")
    assert claim.plan is not None and claim.plan.submission_id == submission.pk
    submission_run_finish(submission.pk, attempt=claim.plan.attempt,
                          outcome=outcome(outputs=gold_answers(claim.plan, wrong_every=wrong_every)))
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


def gold_answers(plan: RunPlan, *, wrong_every: int = 0) -> dict[str, bytes]:
    out = {}
    for ds in plan.datasets:
        path = DatasetFile.objects.get(dataset__slug=ds.slug, portion="test").gold.path
        gold = mrqa_gold(Path(path))
        keyed = ds.qids_for_system(list(gold))
        out[ds.slug] = json.dumps({sq: ("no idea" if wrong_every and i % wrong_every == 0 else gold[q][0])
                                   for i, (sq, q) in enumerate(keyed.items())}).encode()
    return out


@pytest.fixture
def ran(cast: Cast, tmp_path: Path) -> Cast:
    """Alpha's system ran on the test phase; Charlie's uploaded a prediction file there."""
    challenge_load(spec_path=spec_of(tmp_path))
    cast.test.refresh_from_db()
    system = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, kind="code_bundle",
                                      upload=upload(bundle(("run.py", "print('hi')\n")), "system.zip"))
    finish_run(system, wrong_every=4)
    predictions = submission_create_predictions(team=cast.charlies, phase=cast.test, user=cast.charlie,
                                                upload=upload(gold_predictions("test")), limit_bytes=2**26)
    submission_evaluate(predictions.pk)  # its task, sent after a commit this test never makes
    predictions.refresh_from_db()
    assert predictions.status == Status.FINISHED, predictions.failure_reason
    return cast


def boards(cast: Cast) -> dict[str, bytes]:
    """What the public reads of the original phases: their pages and exports."""
    client = Client()
    out = {}
    for phase in ("dev", "test"):
        for path in ("", "export.json", "export.csv"):
            response = client.get(f"/c/{cast.challenge.slug}/board/{phase}/{path}")
            assert response.status_code == 200, (phase, path)
            out[f"{phase}/{path}"] = response.content
    return out


def test_the_spec_refuses_a_campaign_without_a_source_or_with_uploads(tmp_path: Path, cast: Cast) -> None:
    cases = {
        "is not another phase of this spec": {"of": "nope"},
        "expected a mapping like {of: test": {"systems": "all"},
        "is not one of final": {"of": "test", "systems": "some"},
    }
    for message, campaign in cases.items():
        with pytest.raises(SpecError, match=message):
            challenge_load(spec_path=spec_of(tmp_path, campaign=campaign))
    path = spec_of(tmp_path, campaign={"of": "test"})
    spec = yaml.safe_load(path.read_text())
    spec["phases"][2]["allowed_kinds"] = ["code_bundle"]
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match="a campaign takes no uploads"):
        challenge_load(spec_path=path)
    spec["phases"][2].pop("allowed_kinds")
    spec["datasets"][-1]["phase"] = "fersh"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match="datasets\\[3\\].phase: no phase with slug 'fersh'"):
        challenge_load(spec_path=path)
    with pytest.raises(SpecError, match="campaigns.consent"):
        challenge_load(spec_path=spec_of(tmp_path, campaigns={"consent": "maybe"}))


def test_a_campaign_dataset_is_its_phase_s_alone(ran: Cast, tmp_path: Path) -> None:
    before = {p.slug: [d.slug for d in phase_datasets(phase=p)] for p in ran.challenge.phases.all()}
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test"}))
    fresh = Phase.objects.get(challenge=ran.challenge, slug="fresh")
    assert fresh.allowed_kinds == [] and fresh.campaign == {"of": "test", "systems": "final", "limits": {}}
    after = {p.slug: [d.slug for d in phase_datasets(phase=p)] for p in ran.challenge.phases.all()}
    assert after == {**before, "fresh": ["duorc-selfrc"]}
    # Nothing of it on the data page (sealed, and no phase offers its inputs), no upload to it.
    page = Client().get(f"/c/{ran.challenge.slug}/data/").content.decode()
    assert "DuoRC" not in page and "duorc" not in page
    refused = ran.client("alice").post(f"/api/v1/challenges/{ran.challenge.slug}/systems/",
                                       {"phase": "fresh", "kind": "code_bundle",
                                        "file": upload(bundle(("run.py", "")), "s.zip")})
    assert refused.status_code == 400 and "takes nothing" in refused.content.decode(), refused.content


def test_a_campaign_runs_the_archived_system_on_its_data_only_and_the_original_boards_stay_byte_for_byte(
    ran: Cast, tmp_path: Path
) -> None:
    original = boards(ran)
    source = Submission.objects.get(team=ran.alpha, phase=ran.test)
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test"}))
    fresh = Phase.objects.get(challenge=ran.challenge, slug="fresh")
    assert boards(ran) == original, "loading a campaign changed an original board"

    plan = campaign_plan(phase=fresh)
    assert [(c.source.team.name, c.problem) for c in plan.candidates] == [
        ("Alpha", ""), ("Charlie's", PREDICTIONS_PROBLEM)]
    with pytest.raises(PermissionDenied):
        campaign_start(phase=fresh, by=ran.alice)
    made = campaign_start(phase=fresh, by=ran.oscar)
    assert len(made) == 2 and campaign_start(phase=fresh, by=ran.oscar) == [], "a second start asks again"
    record = CampaignRun.objects.get(phase=fresh, source=source)
    run = record.run
    assert run is not None and run.status == Status.QUEUED and run.team == ran.alpha
    # What ran, by its digest: the same stored file, not a copy.
    assert (run.file.name, run.sha256, run.image_digest, run.kind) == (
        source.file.name, source.sha256, source.image_digest, source.kind)
    refused = CampaignRun.objects.get(phase=fresh, source__team=ran.charlies)
    assert refused.run is None and refused.problem == PREDICTIONS_PROBLEM

    run = finish_run(run)
    plan_read = RunPlan.from_json(run.run_plan or {})
    assert [ds.slug for ds in plan_read.datasets] == ["duorc-selfrc"], "a campaign run read other data"
    assert run.primary_score == pytest.approx(100.0)
    export = Client().get(f"/c/{ran.challenge.slug}/board/fresh/export.json").json()
    assert [row["team"] for row in export["rows"]] == ["Alpha"], export["rows"]
    assert boards(ran) == original, "the campaign's run changed an original board"
    # The team sees its campaign run, sealed as any hidden run is.
    page = ran.client("alice").get(f"/c/{ran.challenge.slug}/submissions/{run.pk}/").content.decode()
    assert f"an evaluation campaign's run of <a href=\"/c/{ran.challenge.slug}/submissions/{source.pk}/\">" in page
    assert "DuoRC" not in page


def test_changed_limits_reach_the_run_and_are_recorded(ran: Cast, tmp_path: Path) -> None:
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test", "limits": {"time_limit_s": 40}}))
    fresh = Phase.objects.get(challenge=ran.challenge, slug="fresh")
    [record, _] = campaign_start(phase=fresh, by=ran.oscar)
    assert record.limits_changed == {"time_limit_s": [TEST_LIMITS["time_limit_s"], 40.0]}
    claim = submission_run_claim_next(queue="cpu", worker="tok/host:1")
    assert claim.plan is not None and claim.plan.limits.time_limit_s == 40.0
    assert claim.plan.limits.memory_mb == TEST_LIMITS["memory_mb"]
    with pytest.raises(SpecError, match="campaign.limits"):
        challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test", "limits": {"time_limit_s": "long"}}))


def test_consent_follows_the_terms_and_the_team_s_word(ran: Cast, tmp_path: Path) -> None:
    team = ran.alpha
    assert team_in_campaigns(team), "opt_out is the default: not said means run"
    team_campaign_choice_set(team=team, actor=ran.alice, choice="out")
    assert not team_in_campaigns(team)
    with pytest.raises(ServiceError):
        team_campaign_choice_set(team=team, actor=ran.bob, choice="in")  # not the owner
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test"}))
    fresh = Phase.objects.get(challenge=ran.challenge, slug="fresh")
    [alpha, _] = campaign_plan(phase=fresh).candidates
    assert alpha.problem == "its team opted out of evaluation campaigns"

    Challenge.objects.filter(pk=ran.challenge.pk).update(campaign_consent=CampaignConsent.OPT_IN)
    team.refresh_from_db()
    team_campaign_choice_set(team=team, actor=ran.alice, choice="")
    assert not team_in_campaigns(Challenge.objects.get(pk=ran.challenge.pk).teams.get(pk=team.pk))
    Challenge.objects.filter(pk=ran.challenge.pk).update(campaign_consent=CampaignConsent.REQUIRED)
    team = Challenge.objects.get(pk=ran.challenge.pk).teams.get(pk=team.pk)
    with pytest.raises(ServiceError, match="cannot opt out"):
        team_campaign_choice_set(team=team, actor=ran.alice, choice="out")
    assert team_in_campaigns(team)


def test_the_team_page_says_and_saves_the_team_s_word(ran: Cast) -> None:
    client = ran.client("alice")
    page = client.get(f"/c/{ran.challenge.slug}/team/").content.decode()
    assert "you have not said: evaluation campaigns may run your archived systems again" in page
    response = client.post(f"/c/{ran.challenge.slug}/team/", {"action": "campaigns", "campaign_choice": "out"},
                           follow=True)
    assert "you opted out: evaluation campaigns will not run" in response.content.decode()
    ran.alpha.refresh_from_db()
    assert ran.alpha.campaign_choice == "out"


def test_a_pruned_archive_is_reported_and_a_shared_file_is_kept_by_retention(ran: Cast, tmp_path: Path) -> None:
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test", "systems": "all"}))
    fresh = Phase.objects.get(challenge=ran.challenge, slug="fresh")
    source = Submission.objects.get(team=ran.alpha, phase=ran.test)
    used = team_storage_usage(team=ran.alpha).used_bytes
    [record] = [r for r in campaign_start(phase=fresh, by=ran.oscar) if r.run is not None]
    assert record.run is not None
    finish_run(record.run)
    assert team_storage_usage(team=ran.alpha).used_bytes == used, "a campaign run's shared file counted twice"
    # The source leaves the board (hidden by an organizer): retention would free its upload, but the
    # campaign's queued run names the same file.
    Submission.objects.filter(pk=source.pk).update(hidden_reason="test", created_at=source.created_at - dt.timedelta(days=90))
    board_entry_refresh(team=ran.alpha, phase=ran.test)
    plan = storage_retention_plan(older_than_days=1, keep_newest=0, challenge=ran.challenge)
    assert source.file.name not in [item.name for item in plan.free] and plan.kept.get(KEEP_SHARED) == 1, plan

    # Another system whose upload retention did free: reported with the reason, never dropped.
    other = submission_create_system(team=ran.alpha, phase=ran.test, user=ran.alice, kind="code_bundle",
                                     upload=upload(bundle(("run.py", "print(2)\n")), "two.zip"))
    finish_run(other)
    Submission.objects.filter(pk=other.pk).update(file="")
    plan_now = campaign_plan(phase=fresh)
    pruned = next(c for c in plan_now.candidates if c.source.pk == other.pk)
    assert "deleted by storage retention" in pruned.problem
    [record] = campaign_start(phase=fresh, by=ran.oscar)
    assert record.run is None and "deleted by storage retention" in record.problem


def test_a_campaign_without_data_cannot_start(ran: Cast, tmp_path: Path) -> None:
    path = spec_of(tmp_path, campaign={"of": "test"})
    spec = yaml.safe_load(path.read_text())
    spec["datasets"][-1] = copy.deepcopy(spec["datasets"][-1]) | {"files": {}, "portions": ["test"]}
    path.write_text(yaml.safe_dump(spec))
    challenge_load(spec_path=path)
    fresh = Phase.objects.get(challenge=ran.challenge, slug="fresh")
    assert Dataset.objects.get(slug="duorc-selfrc").phase_only == "fresh"
    with pytest.raises(ServiceError, match="has no dataset with test gold yet"):
        campaign_start(phase=fresh, by=ran.oscar)


def test_the_console_shows_the_plan_and_starts_it_with_a_reason_and_the_board_says_what_ran(
    ran: Cast, tmp_path: Path
) -> None:
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test"}))
    slug = ran.challenge.slug
    assert ran.client("alice").get(f"/c/{slug}/console/campaigns/").status_code == 404
    assert ran.client("alice").get(f"/c/{slug}/console/phases/fresh/campaign/").status_code == 404
    oscar = ran.client("oscar")
    page = oscar.get(f"/c/{slug}/console/campaigns/").content.decode()
    assert "Fresh domains 2026" in page and "DuoRC.SelfRC" in page and "not started" in page
    assert "will not run: " + PREDICTIONS_PROBLEM in page
    confirm = oscar.get(f"/c/{slug}/console/phases/fresh/campaign/").content.decode()
    assert "1 system of the Test phase run again" in confirm and "Alpha (submission" in confirm, confirm
    assert oscar.post(f"/c/{slug}/console/phases/fresh/campaign/", {"reason": ""}).status_code == 400
    done = oscar.post(f"/c/{slug}/console/phases/fresh/campaign/", {"reason": "new domains"}, follow=True)
    assert done.redirect_chain[-1][0] == f"/c/{slug}/console/campaigns/"
    run = CampaignRun.objects.get(phase__slug="fresh", run__isnull=False).run
    assert run is not None and f"run {run.pk}</a>: queued" in done.content.decode()
    again = oscar.post(f"/c/{slug}/console/phases/fresh/campaign/", {"reason": "again"})
    assert again.status_code == 409 and CampaignRun.objects.count() == 2
    assert AuditEntry.objects.filter(challenge=ran.challenge, action="campaign_run").count() == 2

    finish_run(run)
    board = Client().get(f"/c/{slug}/board/fresh/").content.decode()
    note = board[board.index('id="campaign-note"'):]
    note = note[:note.index("</p>")]
    assert "opened 2026-12-01 UTC" in note and "1 system run again" in note and PREDICTIONS_PROBLEM in note
    assert "Charlie" not in note, "the board names a team its campaign did not run"
    # The campaign's board links to its source; the source's board does not link to the campaign.
    assert f'href="/c/{slug}/board/test/"' in board
    assert "/board/fresh/" not in Client().get(f"/c/{slug}/board/test/").content.decode()
    detail = Client().get(f"/c/{slug}/").content.decode()
    assert "no uploads: a campaign re-running Test&#x27;s systems" in detail


def test_the_command_says_what_would_run_then_runs_it(ran: Cast, tmp_path: Path) -> None:
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test"}))
    out = StringIO()
    call_command("campaign_run", ran.challenge.slug, "fresh", "--by", "oscar", "--dry-run", stdout=out)
    assert "would run" in out.getvalue() and PREDICTIONS_PROBLEM in out.getvalue()
    assert not CampaignRun.objects.exists()
    with pytest.raises(CommandError, match="its campaigns: fresh"):
        call_command("campaign_run", ran.challenge.slug, "test", "--by", "oscar")
    with pytest.raises(CommandError, match="only the challenge's organizers"):
        call_command("campaign_run", ran.challenge.slug, "fresh", "--by", "alice")
    call_command("campaign_run", ran.challenge.slug, "fresh", "--by", "oscar", stdout=out)
    assert "1 run(s) queued, 1 recorded as not run again" in out.getvalue()


def test_a_campaign_of_turn_by_turn_systems_must_run_them_turn_by_turn(tmp_path: Path) -> None:
    path = quac_campaign_spec(tmp_path, modes=["gold", "own"], campaign=True)
    spec = yaml.safe_load(path.read_text())
    spec["phases"][1].pop("protocol")
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match=r"phases\[1\].protocol: the systems of 'test' answer turn by turn"):
        challenge_load(spec_path=path)
    fresh = challenge_load(spec_path=quac_campaign_spec(tmp_path, modes=["gold", "own"], campaign=True)).phases.get(
        slug="fresh")
    assert fresh.protocol_modes == ["gold", "own"] and fresh.allowed_kinds == []
    assert [d.slug for d in phase_datasets(phase=fresh)] == ["quac-again"]


def test_a_changed_runtime_reaches_the_run_and_is_recorded(ran: Cast, tmp_path: Path) -> None:
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test", "runtime": "runsc"}))
    fresh = Phase.objects.get(challenge=ran.challenge, slug="fresh")
    [record, _] = campaign_start(phase=fresh, by=ran.oscar)
    assert record.limits_changed == {"runtime": ["the worker's default", "runsc"]}
    claim = submission_run_claim_next(queue="cpu", worker="tok/host:1")
    assert claim.plan is not None and claim.plan.runtime == "runsc"
    with pytest.raises(SpecError, match="campaign.runtime: 'kata' is not one of runc, runsc"):
        challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test", "runtime": "kata"}))


def test_the_console_runs_one_chosen_system(ran: Cast, tmp_path: Path) -> None:
    challenge_load(spec_path=spec_of(tmp_path, campaign={"of": "test", "systems": "all"}))
    slug = ran.challenge.slug
    other = submission_create_system(team=ran.alpha, phase=ran.test, user=ran.alice, kind="code_bundle",
                                     upload=upload(bundle(("run.py", "print(2)\n")), "two.zip"))
    finish_run(other)
    oscar = ran.client("oscar")
    page = oscar.get(f"/c/{slug}/console/campaigns/").content.decode()
    url = f"/c/{slug}/console/campaign-systems/fresh.{other.pk}/start/"
    assert f'href="{url}"' in page
    assert "runs again, with its own archive" in oscar.get(url).content.decode()
    assert ran.client("alice").get(url).status_code == 404
    done = oscar.post(url, {"reason": "only the newer one"})
    assert done.status_code == 302
    [record] = CampaignRun.objects.filter(phase__slug="fresh")
    assert record.source_id == other.pk and record.run is not None
    assert oscar.post(url, {"reason": "again"}).status_code == 409
    foreign = f"/c/{slug}/console/campaign-systems/fresh.{Submission.objects.filter(phase__slug='dev').count() + 9999}/start/"
    assert oscar.get(foreign).status_code == 404
