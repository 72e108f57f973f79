"""Reads about a challenge's datasets that boards, submission pages and the API share.

Sealed Split III datasets are shown under their alias, and their scores withheld,
until the organizers reveal them; so are the aggregates from which a sealed score
follows (``aggregates_published``).  What the ranking average covers is decided here
too (``ranking_scope_get``).  These rules are written once, here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet
from django.utils.text import slugify

from leaderboard.challenges.disclosure import Average, averages_to_publish
from leaderboard.challenges.models import (
    SYSTEM_KINDS,
    Announcement,
    Challenge,
    Dataset,
    DatasetFile,
    IncompleteRows,
    Phase,
    SealedAggregates,
    Split,
    SubmissionKind,
    TeamPhaseOverride,
)
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.base import Column, Suite
from leaderboard.challenges.suites.columns import phase_aggregate_columns
from leaderboard.core.enqueue import DEFAULT_RUN_QUEUE
from leaderboard.core.errors import NotFound
from leaderboard.sandbox.contract import SystemSettings, limits_stated
from scoring.dialogs import Mode

SPLITS = ("I", "II", "III")
# Shown where an aggregate is withheld from everyone but the organizers.
AGGREGATE_SEALED_NOTE = "sealed until the organizers reveal it"


# One answer for "no such challenge" and "not yours": the console's addresses confirm nothing.
CONSOLE_NOT_FOUND = "No such page, or not one you may see."


class Viewer(StrEnum):
    """Who looks at a challenge's pages (``accounts.selectors.viewer_of`` says which); the Data page's
    rules (``downloads``) decide by it."""

    ORGANIZER = "organizer"
    MEMBER = "member"  # of a team registered in this challenge
    OUTSIDER = "outsider"  # logged in, no team here
    ANONYMOUS = "anonymous"


def user_is_organizer(*, user: AbstractBaseUser | AnonymousUser, challenge: Challenge) -> bool:
    """The organizer role: the challenge's staff (``Challenge.staff``, several per challenge, made by a
    site administrator), and site administrators (superusers) for every challenge.  Django's
    ``is_staff`` plays no part: the role is per challenge."""
    if not user.is_authenticated:
        return False
    if getattr(user, "is_superuser", False):
        return True
    return challenge.staff.filter(pk=user.pk).exists()


def challenge_get_organized(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Challenge:
    """The challenge at ``slug`` if ``user`` organizes it, public or not; NotFound otherwise, with one
    message whether it does not exist or is someone else's.  Every console page and API call starts here."""
    challenge = Challenge.objects.filter(slug=slug).first()
    if challenge is None or not user_is_organizer(user=user, challenge=challenge):
        raise NotFound(CONSOLE_NOT_FOUND)
    return challenge


def dataset_label(dataset: Dataset, *, reveal_sealed: bool) -> str:
    if dataset.is_sealed and not reveal_sealed:
        return dataset.sealed_alias or "Hidden"
    return dataset.name


def dataset_run_key(dataset: Dataset) -> str:
    """The name a system run gives a dataset's files (``/input/<key><suffix>``, ``/output/<key>.json``)
    and a prediction upload's member for it: the run plan, the pages' examples and the starting
    kit all call this one function, so that what a participant reads is what a run writes."""
    return slugify(dataset_label(dataset, reveal_sealed=False)) or f"dataset-{dataset.pk}"


def dataset_upload_names(dataset: Dataset) -> tuple[str, ...]:
    """What a prediction upload may call a dataset besides its slug: its name, and the name a system
    run gives its output (``dataset_run_key``, which the starting kit's manifests use)."""
    return (dataset.name, dataset_run_key(dataset))


def sealed_input_example(*, challenge: Challenge) -> str:
    """A sealed dataset's input file name as a run reads it (``hidden-128898.jsonl.gz``), for the
    contract's example; "" when the challenge has none.  The alias is public: boards show it."""
    sealed = [ds for ds in challenge.datasets.all() if ds.is_sealed]
    if not sealed:
        return ""
    first = datasets_public_order(sealed)[0]
    return dataset_run_key(first) + suite_for(challenge).gold_suffix


def datasets_ordered(datasets: Iterable[Dataset], *, reveal_sealed: bool) -> list[Dataset]:
    """The one order datasets are listed in, for a viewer: every page, API answer, export, kit,
    manifest and breakdown takes it from here (whatever order its query returned).

    ``reveal_sealed`` (the organizers' view): the organizer's order (``Dataset.order``, then slug).
    Anyone else: the datasets that are not sealed in the organizer's order, then the sealed ones
    by alias.  Aliases are derived from the challenge's secret (HMAC), so their order carries nothing
    about the real names; the spec's order of the sealed ones (often alphabetical by real name)
    would let anyone who knows the candidates match aliases to names.  Ties (an organizer gave two
    the same alias) break on the alias's HMAC of the secret, not on the pk or the slug, whose order
    follows the spec's."""
    ordered = sorted(datasets, key=lambda ds: (ds.order, ds.slug))
    if reveal_sealed:
        return ordered
    sealed = [ds for ds in ordered if ds.is_sealed]
    aliases = [ds.sealed_alias or "Hidden" for ds in sealed]
    # The secret is read only on a tie: a board's query count does not grow with its datasets.
    key = _sealed_alias if len(set(aliases)) == len(aliases) else _sealed_alias_and_tie
    return [ds for ds in ordered if not ds.is_sealed] + sorted(sealed, key=key)


def _sealed_alias(dataset: Dataset) -> str:
    return dataset.sealed_alias or "Hidden"


def _sealed_alias_and_tie(dataset: Dataset) -> tuple[str, str]:
    secret = dataset.challenge.secret.encode("ascii")
    tie = hmac.new(secret, b"order:" + dataset.slug.encode("utf-8"), hashlib.sha256).hexdigest()
    return (_sealed_alias(dataset), tie)


def datasets_public_order(datasets: Iterable[Dataset]) -> list[Dataset]:
    """``datasets_ordered`` for anyone but the organizers."""
    return datasets_ordered(datasets, reveal_sealed=False)


def dataset_positions(datasets: Iterable[Dataset], *, reveal_sealed: bool) -> dict[int, int]:
    """Each dataset's place (by pk) in ``datasets_ordered``: a sort key for rows that carry a dataset."""
    return {ds.pk: i for i, ds in enumerate(datasets_ordered(datasets, reveal_sealed=reveal_sealed))}


def metric_split(metric: str) -> str | None:
    """The split a per-split aggregate ("split_III_f1") averages over; None for the others."""
    return next((split for split in SPLITS if metric.startswith(f"split_{split}_")), None)


@dataclass(frozen=True)
class RankingScope:
    datasets: list[Dataset]
    # What the ranking average covers, for a board's header: "over Splits II and III".
    description: str
    # How a row ranks that did not answer all of ``datasets`` (IncompleteRows).
    incomplete: str = IncompleteRows.ZERO


def ranking_scope_get(*, challenge: Challenge, datasets: Sequence[Dataset], reveal_sealed: bool = False) -> RankingScope:
    """The datasets (of ``datasets``) that the ranking average covers, per ``Challenge.ranking_scope``.

    A phase with none of its datasets in the scope (a dev phase of Split I data only)
    ranks on all of them rather than on nothing, and says so.
    """
    scope = challenge.ranking_scope or {}
    incomplete = str(scope.get("incomplete") or IncompleteRows.ZERO)
    if scope.get("splits"):
        splits = [s for s in SPLITS if s in scope["splits"]]
        chosen = [ds for ds in datasets if ds.split in splits]
        named = ("Split " if len(splits) == 1 else "Splits ") + _and(splits)
    elif scope.get("datasets"):
        chosen = [ds for ds in datasets if ds.slug in scope["datasets"]]
        named = _and([dataset_label(ds, reveal_sealed=reveal_sealed) for ds in chosen])
    else:
        return RankingScope(list(datasets), "over every dataset of this phase" if len(datasets) > 1 else "",
                            incomplete)
    if not chosen:
        return RankingScope(list(datasets), "over every dataset of this phase (none is in the ranking scope)",
                            incomplete)
    return RankingScope(chosen, f"over {named}", incomplete)


def phase_datasets(*, phase: Phase) -> list[Dataset]:
    """The datasets of a phase: those that have its portion, in the organizer's order (a board's columns).

    A dataset given to one phase (``Dataset.phase_only``: a campaign's new data) is that phase's only;
    an evaluation campaign has no other, so the boards, runs and uploads of the original phases do
    not change when a campaign adds data.
    """
    return [
        ds for ds in Dataset.objects.filter(challenge_id=phase.challenge_id).order_by("order", "slug")
        if phase_has_dataset(phase, ds)
    ]


def phase_has_dataset(phase: Phase, dataset: Dataset) -> bool:
    """Whether ``dataset`` is one of ``phase``'s: the one rule of ``phase_datasets``, for the callers
    that hold the datasets already."""
    if phase.portion not in dataset.portions:
        return False
    if dataset.phase_only:
        return dataset.phase_only == phase.slug
    return not phase.is_campaign


def phase_dataset_files(*, phase: Phase) -> QuerySet[DatasetFile]:
    """The gold files of the phase's portion of its datasets (``phase_has_dataset``'s rule, in a query):
    what its runs read, its uploads answer and its boards score."""
    files = DatasetFile.objects.filter(dataset__challenge_id=phase.challenge_id, portion=phase.portion)
    if phase.is_campaign:
        return files.filter(dataset__phase_only=phase.slug)
    return files.filter(Q(dataset__phase_only="") | Q(dataset__phase_only=phase.slug))


def phase_ranking_scope(*, phase: Phase, reveal_sealed: bool = False) -> RankingScope:
    """What every row of the phase's board ranks on: the same datasets for every row.

    The ranking average covers these datasets whichever of them a submission answered
    (a prediction file never answers Split III); one it did not answer counts 0, or
    leaves the row unranked (``RankingScope.incomplete``).  Scoring, best-of selection,
    imports, boards and the sealing rule all take the ranked datasets from here.
    """
    return ranking_scope_get(challenge=phase.challenge, datasets=phase_datasets(phase=phase),
                             reveal_sealed=reveal_sealed)


def phase_prediction_targets(*, phase: Phase) -> list[tuple[Dataset, DatasetFile]]:
    """Datasets a prediction file must cover in this phase: those with gold for its portion.

    Split III datasets are left out: teams never see their questions, so only
    containerised systems can be run on them.
    """
    files = (
        phase_dataset_files(phase=phase)
        .exclude(dataset__split=Split.III)
        .select_related("dataset")
        .order_by("dataset__order", "dataset__slug")
    )
    return [(f.dataset, f) for f in files]


def phase_system_settings(*, phase: Phase) -> SystemSettings:
    """How the phase's systems run: the challenge's settings, with the limits and the runtime an
    evaluation campaign changed (``Phase.campaign``, checked at the load)."""
    system = SystemSettings.from_json(phase.challenge.system_settings)
    campaign = phase.campaign or {}
    if campaign.get("limits"):
        system = replace(system, limits=replace(system.limits, **campaign["limits"]))
    if campaign.get("runtime"):
        system = replace(system, runtime=campaign["runtime"])
    return system


def challenge_run_queue(challenge: Challenge) -> str:
    """The broker queue the challenge's system runs wait in (its ``system.queue``)."""
    try:
        return SystemSettings.from_json(challenge.system_settings).queue
    except ValueError:  # refused when the challenge was loaded; the default rather than an error here
        return DEFAULT_RUN_QUEUE


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def aggregates_published(
    *, challenge: Challenge, suite: Suite, datasets: Collection[Dataset], metrics: Sequence[str],
    ranked: Sequence[Dataset] | None = None,
) -> set[str]:
    """Which of these aggregate metrics anyone but the organizers may see.

    ``datasets`` are those the scores were computed on (a submission's scored
    datasets): each aggregate is a mean over some of them (``suite.averaged_over``),
    and none may be published from which a still-sealed per-dataset value follows,
    given every visible dataset's values (``disclosure.averages_to_publish``; the
    ranking metric has first claim).  With ``sealed_aggregates: all`` nothing that
    covers a sealed dataset is published.  The same rule serves boards and a team's
    own submission pages, so both show the same numbers.

    ``ranked``: the datasets the ranking average covers (``phase_ranking_scope``), some of
    which the submission may not have answered.  Those count 0, a value everyone knows
    (the board shows a row's coverage), so they are not sealed here: only the sealed
    datasets the submission was scored on hold a value to protect.
    """
    ordered = sorted(datasets, key=lambda ds: (ds.order, ds.slug))
    sealed = {ds.pk for ds in ordered if ds.is_sealed}
    if not sealed:
        return set(metrics)
    if ranked is None:
        ranked = ranking_scope_get(challenge=challenge, datasets=ordered).datasets
    averages = []
    for metric in sorted(metrics, key=lambda m: m != suite.primary_metric):
        scope = suite.averaged_over(metric, ordered, ranked=ranked)
        if scope is None:
            continue  # not an aggregate this suite defines: nothing known about it, so withheld
        family, over = scope
        averages.append(Average(metric, family, frozenset(ds.pk for ds in over)))
    strict = challenge.sealed_aggregates == SealedAggregates.ALL
    return averages_to_publish(averages, sealed=sealed, strict=strict)


def aggregate_applies(metric: str, datasets: Sequence[Dataset]) -> bool:
    """Whether a board shows the aggregate column ``metric``: a per-split macro only where the phase
    has datasets of that split."""
    split = metric_split(metric)
    return split is None or any(ds.split == split for ds in datasets)


def averages_covered(*, suite: Suite, columns: Sequence[Column], datasets: Sequence[Dataset],
                     ranked: Sequence[Dataset], reveal: bool) -> list[str]:
    """Which datasets each average column covers, one sentence each, from the suite's own definition
    of it (``averaged_over``, what ``aggregate`` computes), and the phase's datasets it leaves out.

    The one wording of it: the board's header, the submission page and the starting kit's README
    all say this ("Macro F1: the mean of F1 over ... ; SQuAD (Split I) is not in it.")."""
    labels = {c.metric: c.label for c in suite.dataset_columns}

    def named(group: Sequence[Dataset]) -> str:
        return _and_words([f"{dataset_label(ds, reveal_sealed=reveal)} (Split {ds.split})" for ds in group])

    lines = []
    for column in columns:
        averaged = suite.averaged_over(column.metric, datasets, ranked=ranked)
        if averaged is None or not averaged[1] or not column.label:
            continue
        metric, covered = averaged
        line = f"{column.label}: the mean of {labels.get(metric, metric)} over {named(covered)}"
        left_out = [ds for ds in datasets if ds not in covered]
        if left_out:
            line += f"; {named(left_out)} {'is' if len(left_out) == 1 else 'are'} not in it"
        lines.append(line + ".")
    return lines


def phase_averages_covered(*, phase: Phase, reveal: bool = False) -> list[str]:
    """``averages_covered`` for the averages a phase's board shows, over the datasets it shows (a
    sealed one by its alias unless ``reveal``): what a submission page and a starting kit say."""
    challenge = phase.challenge
    suite = suite_for(challenge)
    datasets = datasets_ordered(phase_datasets(phase=phase), reveal_sealed=reveal)
    scope = ranking_scope_get(challenge=challenge, datasets=datasets, reveal_sealed=reveal)
    columns = [c for c in phase_aggregate_columns(suite, phase) if aggregate_applies(c.metric, datasets)]
    return averages_covered(suite=suite, columns=columns, datasets=datasets, ranked=scope.datasets, reveal=reveal)


def _and_words(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


class PhaseState(StrEnum):
    UPCOMING = "upcoming"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True)
class PhaseStatus:
    """Where a phase stands at a moment, for people: the same boundaries as the submission
    check (open from ``opens_at`` inclusive to ``closes_at`` exclusive)."""

    state: PhaseState
    # When an upcoming phase opens, an open one closes, a closed one closed.
    at: dt.datetime
    # Time until ``at``; None once closed.
    left: dt.timedelta | None

    @property
    def no_closing_date(self) -> bool:
        """An open phase whose close is a placeholder (``NO_DATE_AFTER`` away): none is shown."""
        return self.state == PhaseState.OPEN and (self.left or dt.timedelta()) >= NO_DATE_AFTER

    @property
    def text(self) -> str:
        """For the phase table and the home page: open, 3 days 4 h left / open until 2030-12-31 /
        open, no closing date set / opens in 2 days 1 h / opens on 2027-03-01 / closed."""
        if self.state == PhaseState.CLOSED:
            return "closed"
        left = self.left or dt.timedelta()
        if self.state == PhaseState.OPEN:
            if self.no_closing_date:
                return "open, no closing date set"
            return f"open until {self.at:%Y-%m-%d}" if left >= DATE_AFTER else f"open, {duration_text(left)} left"
        return f"opens on {self.at:%Y-%m-%d}" if left >= DATE_AFTER else f"opens in {duration_text(left)}"


# Further away than this, a count of days is noise ("1,490 days left"): the date says more.
DATE_AFTER = dt.timedelta(days=60)
# A close this far off is a placeholder for "none" (specs must give one; organizers write 2099):
# "26,327 days left" would be a promise nobody made.
NO_DATE_AFTER = dt.timedelta(days=3650)


def phase_status(phase: Phase, *, now: dt.datetime) -> PhaseStatus:
    if now < phase.opens_at:
        return PhaseStatus(PhaseState.UPCOMING, phase.opens_at, phase.opens_at - now)
    if now < phase.closes_at:
        return PhaseStatus(PhaseState.OPEN, phase.closes_at, phase.closes_at - now)
    return PhaseStatus(PhaseState.CLOSED, phase.closes_at, None)


@dataclass(frozen=True)
class ChallengeStatus:
    """Where a challenge stands, for the home page: from its phases' ``phase_status``, the one rule."""

    state: PhaseState
    # "Development: open, 3 days 4 h left"; "closed on 2019-08-12".
    text: str


def challenge_status(phases: Iterable[Phase], *, now: dt.datetime) -> ChallengeStatus:
    """Open while a phase is open, with the next deadline (the open phase that closes first); else
    upcoming, with the first opening; else closed, with the last close."""
    statuses = [(p, phase_status(p, now=now)) for p in phases]
    for state in (PhaseState.OPEN, PhaseState.UPCOMING):
        of_state = [(p, st) for p, st in statuses if st.state == state]
        if of_state:
            phase, status = min(of_state, key=lambda ps: ps[1].at)
            return ChallengeStatus(state, f"{phase.name}: {status.text}")
    if not statuses:
        return ChallengeStatus(PhaseState.UPCOMING, "no phase yet")
    last = max(st.at for _, st in statuses)
    return ChallengeStatus(PhaseState.CLOSED, f"closed on {last:%Y-%m-%d}")


def duration_text(delta: dt.timedelta | None) -> str:
    """Rounded down, so a deadline is never further away than it reads."""
    seconds = max(0, int((delta or dt.timedelta()).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, minutes = rest // 3600, rest % 3600 // 60
    if days >= 10:
        return f"{days:,} days"
    if days:
        unit = "day" if days == 1 else "days"
        return f"{days} {unit} {hours} h" if hours else f"{days} {unit}"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min" if minutes else "less than a minute"


def modes_text(labels: Sequence[str]) -> str:
    """A turn-by-turn phase's modes in words, the first one marked as its board's ranking mode:
    "gold history (ranks its board), own history, adversarial history".  Said apart from the
    phase's name (a phase may be called as a mode is), on the challenge page and in the kit."""
    if not labels:
        return ""
    first, *rest = labels
    return ", ".join([f"{first} (ranks its board)", *rest])


@dataclass(frozen=True)
class InteractivePhase:
    name: str
    modes: list[Mode]

    @property
    def modes_text(self) -> str:
        return modes_text([m.label for m in self.modes])


def interactive_phases(phases: Iterable[Phase]) -> list[InteractivePhase]:
    """The phases whose systems answer turn by turn, with their modes, for the contract."""
    return [InteractivePhase(p.name, [Mode(m) for m in p.protocol_modes]) for p in phases if p.protocol_modes]


# How a participant calls each kind, in a sentence ("takes prediction files").
_KIND_WORDS = {SubmissionKind.PREDICTIONS: "prediction files", SubmissionKind.DOCKER_IMAGE: "Docker images",
               SubmissionKind.CODE_BUNDLE: "code bundles", SubmissionKind.IMPORTED: "imported results"}


def kinds_text(kinds: Iterable[str]) -> str:
    """``allowed_kinds`` in a participant's words: "Docker images or code bundles"."""
    words = [_KIND_WORDS.get(SubmissionKind(k), k) if k in SubmissionKind.values else k for k in kinds]
    if not words:
        return "nothing"
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def phase_takes_text(phase: Phase, phases: Sequence[Phase]) -> str:
    """What the phases table says a phase takes: its kinds, or for a campaign whose systems it runs."""
    if not phase.is_campaign:
        return kinds_text(phase.allowed_kinds)
    source = next((p.name for p in phases if p.slug == phase.campaign.get("of")), phase.campaign.get("of"))
    return f"no uploads: a campaign re-running {source}'s systems"


def phase_takes(phase: Phase, kinds: Iterable[str]) -> bool:
    """Whether ``phase`` takes a submission of any of ``kinds``: the one rule behind the upload
    links, the phases an upload form lists, and the refusal of an upload (intake, web and API)."""
    return any(k in phase.allowed_kinds for k in kinds)


def phase_refusal(phase: Phase, kind: str) -> str:
    """Why ``phase`` refuses a ``kind`` upload, in the participant's words ("" when it takes it)."""
    if phase_takes(phase, [kind]):
        return ""
    return f"The {phase.name} phase takes {kinds_text(phase.allowed_kinds)}, not {kinds_text([kind])}."


def batch_system_phases(phases: Iterable[Phase]) -> bool:
    """Whether any phase runs systems in batch (reading /input, writing /output), for the contract."""
    return any(not p.protocol_modes and any(k in SYSTEM_KINDS for k in p.allowed_kinds) for p in phases)


def system_contract_of(*, challenge: Challenge, phases: Sequence[Phase]) -> dict[str, object]:
    """What the contract section ("How your system runs") shows, for the challenge page and the
    system upload page alike: the settings, which protocols the phases run, and the limits that
    bind those protocols (``limits_stated``: no output size for a protocol that writes none)."""
    system = SystemSettings.from_json(challenge.system_settings)
    interactive = interactive_phases(phases)
    batch = batch_system_phases(phases)
    return {"system": system, "interactive": interactive, "batch": batch,
            "limits_terms": limits_stated(system.limits, batch=batch or not interactive, interactive=bool(interactive)),
            "sealed_input_example": sealed_input_example(challenge=challenge)}


# --------------------------------------------------------------------------- what the challenge page shows


def announcements_shown(*, challenge: Challenge) -> QuerySet[Announcement]:
    """What the challenge page shows everyone: the organizers' active announcements, newest first."""
    return Announcement.objects.filter(challenge=challenge, is_active=True)


def team_extension_open(*, team_id: int, now: dt.datetime) -> bool:
    """Whether an organizer's extension lets the team submit to some phase after its close, now."""
    return TeamPhaseOverride.objects.filter(team_id=team_id, closes_at__gt=now, phase__opens_at__lte=now).exists()


def storage_budget_bytes(*, challenge: Challenge) -> int:
    """What each team of the challenge may keep stored (its uploads), in bytes."""
    return SystemSettings.from_json(challenge.system_settings).storage_mb_per_team * 2**20
