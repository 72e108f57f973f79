"""What an organizer can do from the console, each with what it will do said before it is done.

One table for the pages and the API: an action names its target (a submission, a team, a Split III
dataset, an announcement, or the challenge), the form that confirms it, the sentences a
confirmation shows, why it cannot be done now (if so) and the service that does it.  A GET of an
action's address shows the confirmation; only a POST with a reason does it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.models import User

from leaderboard.accounts.models import Team
from leaderboard.challenges.models import SYSTEM_KINDS, Announcement, Challenge, Dataset, Phase, Split
from leaderboard.challenges.selectors import dataset_label
from leaderboard.console import services
from leaderboard.console.forms import AnnouncementForm, ExtendForm, ReasonForm
from leaderboard.console.integrity import determinism_check_problem, determinism_check_start
from leaderboard.console.selectors import (
    CampaignSystem,
    console_announcement_get,
    console_campaign_system_get,
    console_dataset_get,
    console_phase_get,
    console_submission_get,
    console_team_get,
    runs_in_progress,
    submission_log_release_preview,
)
from leaderboard.core.errors import NotFound
from leaderboard.judging.gold import (
    GoldAdditionsPlan,
    gold_additions_preview,
    gold_additions_problem,
    round_gold_additions_apply,
)
from leaderboard.judging.models import Round, RoundState
from leaderboard.judging.selectors import round_get_organized
from leaderboard.judging.services import round_close, round_open, round_publish
from leaderboard.submissions.campaigns import CampaignPlan, campaign_plan, campaign_start
from leaderboard.submissions.lifecycle import submission_hold_release
from leaderboard.submissions.models import Submission
from leaderboard.submissions.rerun import submission_rerun, submission_rerun_problem
from leaderboard.submissions.selectors import submissions_held_for_review

T = TypeVar("T")

TEAM_READS = "The team reads this reason (on its submission's page), and it is kept in the audit log."
EVERYONE_READS = "Everyone who reads the board reads this reason, the team too; it is kept in the audit log."
TEAM_NOTICE = "The team reads this reason on its team page; it is kept in the audit log."

# Where each kind of target is found, in the challenge, by the key in the address.
TARGETS: dict[str, Callable[[Challenge, str], Any]] = {
    "submissions": lambda c, key: console_submission_get(challenge=c, pk=key),
    "teams": lambda c, key: console_team_get(challenge=c, pk=key),
    "datasets": lambda c, key: console_dataset_get(challenge=c, slug=key),
    "announcements": lambda c, key: console_announcement_get(challenge=c, pk=key),
    "phases": lambda c, key: console_phase_get(challenge=c, slug=key),
    "campaign-systems": lambda c, key: console_campaign_system_get(challenge=c, key=key),
    "rounds": lambda c, key: round_get_organized(challenge=c, round_id=_round_id(key)),
    "challenge": lambda c, key: c,
}


def _round_id(key: str) -> int:
    try:
        return int(key)
    except ValueError:
        raise NotFound("No such page, or not one you may see.") from None


@dataclass(frozen=True)
class Action:
    key: str
    target: str
    title: str
    # What will happen, in sentences, for the confirmation.
    consequences: Callable[[Any], list[str]]
    # Why it cannot be done now ("" if it can).
    problem: Callable[[Any], str]
    perform: Callable[[Any, User, dict[str, Any]], Any]
    form: type[ReasonForm] = ReasonForm
    reason_help: str = ""
    # The reason is shown to the team or the public: the page says so by the button.
    reason_is_public: bool = False


def target_name(target: Any) -> str:
    """How the confirmation names what an action is about (organizers' words: real names)."""
    if isinstance(target, Submission):
        return f"submission {target.pk} of {target.team.name} ({target.phase.name}, {target.get_kind_display()})"
    if isinstance(target, Team):
        return f"team {target.name}"
    if isinstance(target, Dataset):
        alias = dataset_label(target, reveal_sealed=False)
        return f"dataset {target.name}" + (f" (public name now: {alias})" if alias != target.name else "")
    if isinstance(target, Announcement):
        return f"announcement {target.pk}"
    if isinstance(target, Phase):
        return f"phase {target.name}"
    if isinstance(target, CampaignSystem):
        return f"submission {target.source.pk} of {target.source.team.name} in the {target.phase.name} campaign"
    if isinstance(target, Round):
        return f"human evaluation round {target.pk}" + (f" ({target.name})" if target.name else "") + \
            f" of {target.phase.name}"
    return f"challenge {target.title}"


def _once(target: Any, name: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per target object: an action page asks for its consequences and its problem
    of the same target (one object per request), and a campaign's plan or a gold change's preview
    (which scores every submission against the new gold) is not worth making twice."""
    key = f"_action_{name}"
    if key not in target.__dict__:
        target.__dict__[key] = compute()
    value: T = target.__dict__[key]
    return value


def _campaign_plan(phase: Phase) -> CampaignPlan:
    return _once(phase, "campaign_plan", lambda: campaign_plan(phase=phase))


def _gold_preview(round: Round) -> GoldAdditionsPlan:
    return _once(round, "gold_preview", lambda: gold_additions_preview(round=round))


def _campaign_consequences(phase: Phase) -> list[str]:
    if not phase.is_campaign:
        return []
    plan = _campaign_plan(phase)
    start = plan.to_start
    lines = [f"{len(start)} system{'s' if len(start) != 1 else ''} of the {plan.source_phase.name} phase run again, each "
             f"with its own archive (same image id or bundle sha256), on {', '.join(ds.name for ds in plan.datasets)}: "
             + (", ".join(f"{c.source.team.name} (submission {c.source.pk})" for c in start) or "none") + "."]
    refused = [c for c in plan.candidates if c.run is None and c.problem]
    if refused:
        lines.append("Recorded as not run again, with the reason: " + "; ".join(
            f"{c.source.team.name} (submission {c.source.pk}): {c.problem}" for c in refused) + ".")
    if plan.limits_changed:
        lines.append("Limits changed from the challenge's, recorded with each run: " + ", ".join(
            f"{name} {old} -> {new}" for name, (old, new) in plan.limits_changed.items()) + ".")
    lines.append(f"Runs go through the systems queue like any other, under the same sealing rules; the "
                 f"{plan.source_phase.name} boards are not changed. Teams see their campaign runs on their pages.")
    return lines


def _campaign_system_problem(target: CampaignSystem) -> str:
    plan = _campaign_plan(target.phase)
    candidate = next((c for c in plan.candidates if c.source.pk == target.source.pk), None)
    if plan.problem:
        return plan.problem
    if candidate is None:
        return f"the campaign does not take it (systems: {target.phase.campaign.get('systems', 'final')})"
    if candidate.run is not None:
        return "it was asked in this campaign already"
    return candidate.problem


def _campaign_problem(phase: Phase) -> str:
    if not phase.is_campaign:
        return "it is not an evaluation campaign"
    plan = _campaign_plan(phase)
    if plan.problem:
        return plan.problem
    if not [c for c in plan.candidates if c.run is None]:
        return "every system it takes was asked already"
    return ""


def _rerun_consequences(s: Submission) -> list[str]:
    system = s.kind in SYSTEM_KINDS
    was = "its scores" if s.status == "finished" else "its failure (verdict and full reason)"
    lines = [
        (f"The system runs again in a fresh container from its stored upload"
         f"{', pinned to image ' + s.image_digest[:19] + '…' if s.image_digest else ''}, with no attempts used."
         if system else "The prediction file is scored again from its stored upload, against the current gold."),
        f"Its current result, {was}, stays in its history (\"Earlier scores\" on its page, with the scoring "
        "version, the gold files' hashes and the image id); the audit entry keeps its run record and the tail of its log.",
        "Its scores are removed until the new evaluation finishes; meanwhile the board shows the team's next "
        "submission under the ranking rule, if any. Then the board uses the newest result.",
        "The team sees the new result on its page, not this reason.",
    ]
    if system:
        lines.append("It waits in the systems queue like any run; the queue page shows where.")
    return lines


def _extend_consequences(team: Team) -> list[str]:
    return [
        f"Team {team.name} may submit to the phase you choose until the new deadline, or with the larger "
        "quotas; every other team keeps the phase's own.",
        "Empty fields keep the phase's own value; with all three empty, the team's extension of that phase is removed.",
        "The team sees its deadline and quotas on its upload pages.",
    ]


def _seal_problem(dataset: Dataset, *, revealing: bool) -> str:
    if dataset.split != Split.III:
        return f"{dataset.name} is a Split {dataset.split} dataset: it was never sealed"
    if revealing and dataset.revealed_at is not None:
        return f"{dataset.name} is revealed already"
    if not revealing and dataset.revealed_at is None:
        return f"{dataset.name} is sealed already"
    running = runs_in_progress(challenge=dataset.challenge)
    if running:
        return (f"{running} system run(s) of this challenge are in progress; a run reads the dataset under the seal "
                "of its start and is read back under the seal of its end, so change it once they end")
    return ""


def _round_problem(round: Round, frm: str, verb: str) -> str:
    if round.state != frm:
        return f"the round is {round.get_state_display()}; only a {RoundState(frm).label} round can be {verb}"
    return ""


def _round_open_consequences(round: Round) -> list[str]:
    return [
        f"Each of its {round.items.count()} questions gets {round.judges_per_item} judge"
        f"{'s' if round.judges_per_item != 1 else ''} among the challenge's {round.phase.challenge.judges.count()} "
        "(the least loaded first; items of a sealed dataset go to organizers who judge only).",
        "The judges find the round on their judging page and judge from now"
        + (f" until {round.deadline:%Y-%m-%d %H:%M} UTC." if round.deadline else " until you close it."),
        "The questions, systems and candidates are fixed from now on.",
    ]


def _round_publish_consequences(round: Round) -> list[str]:
    return [
        f"The {round.phase.name} board shows a Human column for the round's {round.systems.count()} systems: "
        "each one's mean human score, its number of questions and its bootstrap interval, to everyone who reads "
        "the board, the teams too.",
        "Nothing of the round changes any more: no adjudication, no judgment. The judgments themselves stay "
        "organizer-side (the console's downloads).",
        "A later published round of the phase replaces this one on the board.",
    ]


def _fields(data: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: data.get(name) for name in names}


ACTIONS: dict[tuple[str, str], Action] = {
    (a.target, a.key): a
    for a in [
        Action(
            "rerun", "submissions", "Run again",
            consequences=_rerun_consequences, problem=submission_rerun_problem,
            perform=lambda s, who, d: submission_rerun(submission=s, by=who, reason=d["reason"]),
        ),
        Action(
            "determinism", "submissions", "Check determinism",
            consequences=lambda s: [
                "The system runs again on the same inputs; the answers of its current run are kept, and the "
                "console's integrity page compares the two runs question by question when the new one finishes.",
                *_rerun_consequences(s)[:4],
                "So the board loses this row while it runs: check before the deadline's board is published, "
                "or expect the row to come back with the new run's scores.",
            ],
            problem=determinism_check_problem,
            perform=lambda s, who, d: determinism_check_start(submission=s, by=who, reason=d["reason"]),
        ),
        Action(
            "campaign", "phases", "Start the evaluation campaign",
            consequences=_campaign_consequences, problem=_campaign_problem,
            perform=lambda p, who, d: campaign_start(phase=p, by=who, reason=d["reason"]),
        ),
        Action(
            "start", "campaign-systems", "Run one system in the campaign",
            consequences=lambda t: [
                f"Submission {t.source.pk} of {t.source.team.name} runs again, with its own archive (sha256 "
                f"{t.source.sha256[:12]}), on the {t.phase.name} campaign's data; the other systems are not asked.",
                "Its run goes through the systems queue like any other, under the same sealing rules; the "
                "original boards are not changed.",
            ],
            problem=_campaign_system_problem,
            perform=lambda t, who, d: campaign_start(phase=t.phase, by=who, source_ids=[t.source.pk],
                                                     reason=d["reason"]),
        ),
        Action(
            "release", "submissions", "Release the held run",
            consequences=lambda s: [
                "Its team's runs on hidden data ended by a platform failure more often today than the challenge "
                "allows (systems: platform_failures_per_day), and such runs are not counted: this run waited for "
                "your look. Check the failed runs' errors on their pages first.",
                "Released, it takes its place in the systems queue and runs like any other; the team's other held "
                "runs stay held.",
            ],
            problem=lambda s: "" if submissions_held_for_review(submission_ids=[s.pk]) else "it is not held for review",
            perform=lambda s, who, d: submission_hold_release(submission=s, actor=who, reason=d["reason"]),
        ),
        Action(
            "release-log", "submissions", "Release the log to the team",
            consequences=lambda s: [
                *submission_log_release_preview(s),
                "Who released it and when are shown beside the log; the audit log keeps your reason, and you can "
                "withdraw the release from this console.",
            ],
            problem=lambda s: ("its log is released already" if s.log_released_at else
                               "it has no log" if not s.log else ""),
            perform=lambda s, who, d: services.submission_log_release_audited(submission=s, actor=who,
                                                                              reason=d["reason"]),
        ),
        Action(
            "withdraw-log", "submissions", "Withdraw the log's release",
            consequences=lambda s: [
                "The team no longer reads the log (its page and the API say the log is withheld).",
                "What it read meanwhile may have been copied: withdrawing stops showing it, nothing more.",
            ],
            problem=lambda s: "" if s.log_released_at else "its log is not released",
            perform=lambda s, who, d: services.submission_log_withdraw_audited(submission=s, actor=who,
                                                                               reason=d["reason"]),
        ),
        Action(
            "hide", "submissions", "Hide from the public boards",
            consequences=lambda s: [
                "It represents its team on no board (nor in the organizer view): the team's next submission "
                "under the ranking rule does, if it has one. The console's submission list marks it hidden.",
                "The team sees that it is hidden, and why, on the submission's page.",
            ],
            problem=lambda s: "it is hidden already" if s.hidden_reason else "",
            perform=lambda s, who, d: services.submission_hide(submission=s, actor=who, reason=d["reason"]),
            reason_help=TEAM_READS,
        ),
        Action(
            "unhide", "submissions", "Show on the boards again",
            consequences=lambda s: ["It can represent its team on the boards again, under the ranking rule."],
            problem=lambda s: "" if s.hidden_reason else "it is not hidden",
            perform=lambda s, who, d: services.submission_unhide(submission=s, actor=who, reason=d["reason"]),
        ),
        Action(
            "disqualify", "submissions", "Disqualify",
            consequences=lambda s: [
                "It no longer ranks: the team's other finished submissions represent it on the board; if it has "
                "none, this one is shown unranked with \"disqualified:\" and your reason, to everyone.",
                "The team sees the reason on the submission's page.",
            ],
            problem=lambda s: "it is excluded from the ranking already" if s.excluded_reason else "",
            perform=lambda s, who, d: services.submission_disqualify(submission=s, actor=who, reason=d["reason"]),
            reason_help=EVERYONE_READS, reason_is_public=True,
        ),
        Action(
            "requalify", "submissions", "Rank again",
            consequences=lambda s: [f"Its exclusion (\"{s.excluded_reason}\") is lifted: it ranks again."],
            problem=lambda s: "" if s.excluded_reason else "it is not excluded from the ranking",
            perform=lambda s, who, d: services.submission_requalify(submission=s, actor=who, reason=d["reason"]),
        ),
        Action(
            "approve", "teams", "Approve the team",
            consequences=lambda t: [f"{t.name} may submit from now on; its team page no longer says it waits."],
            problem=lambda t: "" if t.approval_pending else "the team is approved already",
            perform=lambda t, who, d: services.team_approve(team=t, actor=who, reason=d["reason"]),
        ),
        Action(
            "disqualify", "teams", "Disqualify the team",
            consequences=lambda t: [
                f"Every row of {t.name} stays on the boards, unranked, marked \"disqualified:\" with your reason, "
                "for everyone to read; the other teams' ranks close up.",
                "The team reads the reason on its team page and on its submissions' pages.",
            ],
            problem=lambda t: "the team is disqualified already" if t.disqualified_reason else "",
            perform=lambda t, who, d: services.team_disqualify(team=t, actor=who, reason=d["reason"]),
            reason_help=EVERYONE_READS, reason_is_public=True,
        ),
        Action(
            "requalify", "teams", "Lift the disqualification",
            consequences=lambda t: [f"{t.name} ranks again on every board."],
            problem=lambda t: "" if t.disqualified_reason else "the team is not disqualified",
            perform=lambda t, who, d: services.team_requalify(team=t, actor=who, reason=d["reason"]),
        ),
        Action(
            "hide", "teams", "Hide the team from the public boards",
            consequences=lambda t: [
                f"{t.name} leaves every public board, export and API answer; the organizer view lists it, unranked.",
                "The team reads that it is hidden, and why, on its team page.",
            ],
            problem=lambda t: "the team is hidden already" if t.hidden else "",
            perform=lambda t, who, d: services.team_hide(team=t, actor=who, reason=d["reason"]),
            reason_help=TEAM_NOTICE,
        ),
        Action(
            "unhide", "teams", "Show the team on the boards again",
            consequences=lambda t: [f"{t.name} appears on the public boards again."],
            problem=lambda t: "" if t.hidden else "the team is not hidden",
            perform=lambda t, who, d: services.team_unhide(team=t, actor=who, reason=d["reason"]),
        ),
        Action(
            "extend", "teams", "Extend a deadline or a quota",
            consequences=_extend_consequences, problem=lambda t: "",
            perform=lambda t, who, d: services.team_phase_extend(
                team=t, actor=who, **_fields(d, "phase", "reason", "closes_at", "quota_per_day", "quota_total")),
            form=ExtendForm,
        ),
        Action(
            "reveal", "datasets", "Reveal",
            # The confirmation shows the reveal preview (console_action.html), computed by the boards' rules.
            consequences=lambda ds: [
                f"\"{dataset_label(ds, reveal_sealed=False)}\" becomes \"{ds.name}\" everywhere: boards, exports, "
                "the API, the challenge and data pages, teams' submission pages.",
                "Its per-dataset scores, and the aggregates that were withheld because one of its scores would "
                "follow from them, become public: the table below lists each one.",
                "Systems run from now on read it under its real name and its own question ids.",
            ],
            problem=lambda ds: _seal_problem(ds, revealing=True),
            perform=lambda ds, who, d: services.dataset_reveal_audited(dataset=ds, actor=who, reason=d["reason"]),
        ),
        Action(
            "unreveal", "datasets", "Seal again",
            consequences=lambda ds: [
                f"\"{ds.name}\" is shown as \"{ds.sealed_alias or 'Hidden'}\" again, and its per-dataset scores and "
                "the aggregates a score of it would follow from are withheld again, from teams and the public.",
                "What was public meanwhile may have been copied: sealing again stops showing it, nothing more.",
            ],
            problem=lambda ds: _seal_problem(ds, revealing=False),
            perform=lambda ds, who, d: services.dataset_unreveal_audited(dataset=ds, actor=who, reason=d["reason"]),
        ),
        Action(
            "open", "rounds", "Open the round for judging",
            consequences=_round_open_consequences, problem=lambda r: _round_problem(r, RoundState.DRAFT, "opened"),
            perform=lambda r, who, d: round_open(round=r, by=who, reason=d["reason"]),
        ),
        Action(
            "close", "rounds", "Close the round",
            consequences=lambda r: [
                "Judges can no longer judge its answers; what they judged so far stays.",
                "Disagreements can still be adjudicated; then the round can be published.",
            ],
            problem=lambda r: _round_problem(r, RoundState.OPEN, "closed"),
            perform=lambda r, who, d: round_close(round=r, by=who, reason=d["reason"]),
        ),
        Action(
            "publish", "rounds", "Publish the round's human scores",
            consequences=_round_publish_consequences,
            problem=lambda r: _round_problem(r, RoundState.CLOSED, "published"),
            perform=lambda r, who, d: round_publish(round=r, by=who, reason=d["reason"]),
            reason_help="Kept in the audit log with your name and the time; the board shows the scores, not this.",
        ),
        Action(
            "gold-answers", "rounds", "Add the accepted answers to the gold",
            consequences=lambda r: [
                *[line.strip() for line in _gold_preview(r).lines()],
                "Each dataset's gold is replaced as by a reload: the old file is kept while scores refer to it, "
                "every scored submission is rescored in the background, and its earlier scores stay in its "
                "history; the boards then show F1 against the adjudicated gold.",
            ] if not gold_additions_problem(r) else [],
            problem=lambda r: gold_additions_problem(r) or (
                "" if _gold_preview(r).has_additions else "nothing to add: no accepted answer is "
                "missing from the gold (or each is held: its dataset is sealed)"),
            perform=lambda r, who, d: round_gold_additions_apply(round=r, by=who, reason=d["reason"]),
        ),
        Action(
            "announce", "challenge", "Post an announcement",
            consequences=lambda c: ["Shown at the top of the challenge page, to everyone, until you withdraw it."],
            problem=lambda c: "",
            perform=lambda c, who, d: services.announcement_create(challenge=c, actor=who, text=d["text"],
                                                                  reason=d["reason"]),
            form=AnnouncementForm,
        ),
        Action(
            "withdraw", "announcements", "Withdraw the announcement",
            consequences=lambda a: [f"\"{a.text[:120]}\" is no longer shown on the challenge page."],
            problem=lambda a: "" if a.is_active else "it is withdrawn already",
            perform=lambda a, who, d: services.announcement_withdraw(announcement=a, actor=who, reason=d["reason"]),
        ),
    ]
}


def action_get(*, challenge: Challenge, target: str, key: str, action: str) -> tuple[Action, Any]:
    """The action and its target in the challenge; NotFound for an unknown one, as for a foreign id."""
    found = ACTIONS.get((target, action))
    if found is None:
        raise NotFound("No such page, or not one you may see.")
    return found, TARGETS[target](challenge, key)


def action_perform(*, action: Action, target: Any, actor: User, data: dict[str, Any]) -> Any:
    return action.perform(target, actor, data)
