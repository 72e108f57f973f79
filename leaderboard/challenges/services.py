"""Writes for challenges: reading and applying a spec, gold files, reveals.

A load (``submissions/reload.py: challenge_load``) reads and checks a spec here (``challenge_spec_read``) and
writes the challenge's own rows here (``challenge_spec_apply``); what the rows of other apps must do about it
(rescore, re-run, the scores of removed datasets, averages and board rows) it applies from the ``SpecChanges``
returned.  So too a gold file: replaced here (``dataset_file_put``; the old one is retired while scores refer to
it), its scores follow there (``dataset_gold_replace``).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from leaderboard.challenges.budget_tracks import budget_tracks_parse
from leaderboard.challenges.human_eval import human_eval_parse
from leaderboard.challenges.models import (
    BREAKDOWN_MIN_QUESTIONS,
    SYSTEM_KINDS,
    CampaignConsent,
    Challenge,
    Dataset,
    DatasetFile,
    FilePortion,
    IncompleteRows,
    MetricSuite,
    Phase,
    PhaseKind,
    RankingRule,
    RetiredGold,
    SealedAggregates,
    Split,
    SubmissionKind,
)
from leaderboard.challenges.selectors import phase_datasets, ranking_scope_get
from leaderboard.challenges.spec import (
    SpecError,
    dataset_tags_parse,
    mrqa_header_check,
    spec_check,
    suite_options_of,
)
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.mrqa import MrqaOptions
from leaderboard.challenges.versions import board_changed
from leaderboard.core.errors import ServiceError
from leaderboard.sandbox.contract import Limits, SystemSettings
from scoring import inputs
from scoring.cmrc2018 import cjk_share
from scoring.dialogs import DIALOG_FORMATS, QUESTION_FORMATS, Mode
from scoring.errors import ScoringError
from scoring.mrqa import load_mrqa_gold


def _parse_utc(value: Any, where: str) -> dt.datetime:
    # YAML turns unquoted timestamps into datetimes; strings are parsed here.  Naive
    # values are refused: a deadline without a zone is how "midnight" goes wrong.
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise SpecError(f"{where}: {value!r} is not an ISO 8601 date-time") from None
    else:
        raise SpecError(f"{where}: expected a date-time like 2019-07-29T23:59:59Z, found {value!r}")
    if parsed.tzinfo is None:
        raise SpecError(f"{where}: {value!r} has no time zone; write it in UTC with a trailing Z")
    return parsed.astimezone(dt.UTC)


def _get(spec: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    if key not in spec:
        raise SpecError(f"{where}: missing key {key!r}")
    value = spec[key]
    if not isinstance(value, kind):
        raise SpecError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, found {value!r}")
    return value


def _choice(value: str, choices: type[Any], where: str) -> str:
    allowed = [c.value for c in choices]
    if value not in allowed:
        raise SpecError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return value


@dataclass(frozen=True)
class ChallengeSpec:
    """A spec read and its challenge-level keys checked, nothing written (``challenge_spec_read``)."""

    raw: Mapping[str, Any]
    base_dir: Path  # gold files are named relative to the spec's directory
    slug: str
    suite: str
    systems: dict[str, Any]
    ranking_scope: dict[str, Any]
    sealed_aggregates: str
    max_team_size: int | None
    breakdown_min_questions: int
    campaign_consent: str = CampaignConsent.OPT_OUT


def spec_read(spec_path: Path) -> dict[str, Any]:
    try:
        spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SpecError(f"{spec_path}: cannot read the spec ({exc})") from None
    if not isinstance(spec, dict):
        raise SpecError(f"{spec_path}: expected a mapping at the top level")
    return spec


def challenge_spec_read(spec_path: Path) -> ChallengeSpec:
    """Read a YAML spec and check its keys and the challenge's own values; writes nothing.

    A phase's and a dataset's values are checked as they are written (``challenge_spec_apply``).
    """
    spec = spec_read(spec_path)
    spec_check(spec, spec_path=spec_path)
    slug = _get(spec, "slug", "challenge")
    suite = _choice(_get(spec, "metric_suite", slug), MetricSuite, f"{slug}.metric_suite")
    try:
        # Validated here so a typo in a limit fails the load, not a run weeks later.
        systems = SystemSettings.from_json(spec.get("systems")).as_json() if spec.get("systems") else {}
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{slug}.systems: {exc}") from None
    ranking_scope = _ranking_scope(spec.get("ranking"), spec.get("datasets"), f"{slug}.ranking")
    # "all" by default: under "isolating" rows rank on the full average, so two rows with the same
    # visible scores rank apart and probe submissions bisect a sealed score.
    # Without a sealed dataset the two are the same.
    sealed_aggregates = _choice(
        str(spec.get("sealed_aggregates", SealedAggregates.ALL)), SealedAggregates, f"{slug}.sealed_aggregates"
    )
    return ChallengeSpec(
        raw=spec, base_dir=spec_path.parent, slug=slug, suite=suite, systems=systems, ranking_scope=ranking_scope,
        sealed_aggregates=sealed_aggregates,
        max_team_size=_max_team_size(spec.get("max_team_size"), f"{slug}.max_team_size"),
        breakdown_min_questions=_breakdown_min_questions(spec.get("breakdowns"), f"{slug}.breakdowns"),
        campaign_consent=_choice(str((spec.get("campaigns") or {}).get("consent", CampaignConsent.OPT_OUT)),
                                 CampaignConsent, f"{slug}.campaigns.consent"),
    )


@dataclass(frozen=True)
class SpecChanges:
    """What a load changed that the rows of other apps follow (``submissions/reload.py`` applies it)."""

    challenge: Challenge
    # Loaded datasets the spec no longer has.  Still there: removing one removes its scores (kept in
    # each submission's history first), so that is the caller's (``datasets_remove``).
    datasets_removed: tuple[str, ...] = ()
    splits_changed: bool = False  # per-split averages were computed under the old splits
    options_changed: bool = False  # every score was computed under the old suite options
    rule_changed: bool = False  # each team's board row was chosen by the old ranking rule
    # Stored ranking averages were computed under the old scope, or over other datasets (a dataset
    # added to a phase counts 0 for the submissions made before it; a removed one no longer counts).
    scope_changed: bool = False
    # (dataset, portion) whose gold file was replaced: the old one is retired while scores refer to it.
    gold_replaced: tuple[tuple[Dataset, str], ...] = ()


def challenge_spec_apply(
    *, spec: ChallengeSpec, warn: Callable[[str], None] | None = None,
    reveal_check: Callable[[Challenge, list[Any]], None] | None = None,
) -> SpecChanges:
    """Create or update the challenge, its phases, datasets and gold files as ``spec`` says; safe to run again.

    Gold files named in the spec are validated with the challenge's metric suite and stored only
    when their content changed; a replaced one is retired, not deleted.  ``warn`` receives what the
    organizer should know but that does not stop the load.  ``reveal_check(challenge, dataset_specs)``
    runs once the challenge and its phases are written and before any dataset is: whether a reveal
    gives a sealed score away depends on what was scored, which this app does not read.

    Nothing of another app is written: what must follow is in the ``SpecChanges`` returned.  Call it
    inside the transaction that applies them, so a refusal here (a gold that no longer scores against
    itself, incomplete rows without a rule) undoes them too.
    """
    slug, raw = spec.slug, spec.raw
    previous = Challenge.objects.filter(slug=slug).first()
    previous_ranked = _ranked_datasets(previous)
    challenge, _ = Challenge.objects.update_or_create(
        slug=slug,
        defaults={
            "title": raw.get("title", slug),
            "description": raw.get("description", ""),
            "metric_suite": spec.suite,
            "suite_options": raw.get("suite_options") or {},
            "ranking_rule": _choice(raw.get("ranking_rule", RankingRule.BEST), RankingRule, f"{slug}.ranking_rule"),
            "is_public": bool(raw.get("is_public", True)),
            "system_settings": spec.systems,
            "ranking_scope": spec.ranking_scope,
            "sealed_aggregates": spec.sealed_aggregates,
            "max_team_size": spec.max_team_size,
            "breakdown_min_questions": spec.breakdown_min_questions,
            "campaign_consent": spec.campaign_consent,
        },
    )
    for username in raw.get("staff", []) or []:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise SpecError(f"{slug}.staff: no user called {username!r}; create the account first")
        challenge.staff.add(user)
    for order, phase_spec in enumerate(_get(raw, "phases", slug, list)):
        _phase_load(challenge, phase_spec, order)
    dataset_specs = _get(raw, "datasets", slug, list)
    if reveal_check is not None:
        reveal_check(challenge, dataset_specs)
    previous_splits = dict(Dataset.objects.filter(challenge=challenge).values_list("slug", "split"))
    loaded: list[Dataset] = []
    gold_replaced: list[tuple[Dataset, str]] = []
    for order, ds_spec in enumerate(dataset_specs):
        dataset, replaced = _dataset_load(challenge, ds_spec, order, spec.base_dir, warn=warn)
        loaded.append(dataset)
        gold_replaced += [(dataset, portion) for portion in replaced]
    kept = {ds.slug for ds in loaded}
    removed = tuple(ds_slug for ds_slug in previous_splits if ds_slug not in kept)
    options_changed = previous is not None and previous.suite_options != challenge.suite_options
    if options_changed:
        # Every stored gold must still score against itself under the new options.
        _gold_recheck(challenge, without=removed)
    if "incomplete" not in spec.ranking_scope:
        _incomplete_rows_check(challenge, without=removed)
    ranked_now = _ranked_datasets(challenge, without=removed)
    # Names, aliases, splits, settings: any of them may be on a board.
    board_changed(challenge_id=challenge.pk)
    return SpecChanges(
        challenge=challenge,
        datasets_removed=removed,
        splits_changed=any(ds.slug in previous_splits and previous_splits[ds.slug] != ds.split for ds in loaded),
        options_changed=options_changed,
        rule_changed=previous is not None and previous.ranking_rule != challenge.ranking_rule,
        scope_changed=previous is not None and (previous.ranking_scope != spec.ranking_scope
                                                or ranked_now != previous_ranked),
        gold_replaced=tuple(gold_replaced),
    )


def _gold_recheck(challenge: Challenge, *, without: Collection[str] = ()) -> None:
    """Check every scored gold file of the challenge again with its (new) suite options (but those of
    the datasets ``without``, which the load removes)."""
    suite = suite_for(challenge)
    records = DatasetFile.objects.filter(dataset__challenge=challenge).exclude(portion=FilePortion.TRAIN)
    if without:
        records = records.exclude(dataset__slug__in=without)
    for record in records.select_related("dataset"):
        try:
            gold = Path(record.gold.path)
            suite.inspect_gold(gold.read_bytes(), filename=gold.name, self_check=suite_options_of(challenge))
        except ScoringError as exc:
            raise SpecError(f"{challenge.slug}.suite_options: the gold of {record.dataset.slug} ({record.portion}) "
                            f"no longer scores against itself with these options: {exc}") from None


def _max_team_size(value: object, where: str) -> int | None:
    """The spec's ``max_team_size``: a whole number of members, at least 1; absent for no limit.

    Teams already larger when it is lowered keep their members; they only cannot grow.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"{where}: {value!r} is not a number of members (a whole number, at least 1)")
    return value


def _breakdown_min_questions(value: object, where: str) -> int:
    """The spec's ``breakdowns: {min_questions: N}``: on hidden data, teams see no family of slices with
    one smaller than N questions (a whole number, at least 1); absent: 50."""
    if value is None:
        return BREAKDOWN_MIN_QUESTIONS
    if not isinstance(value, dict):
        raise SpecError(f"{where}: expected a mapping like {{min_questions: {BREAKDOWN_MIN_QUESTIONS}}}, "
                        f"found {value!r}")
    minimum = value.get("min_questions", BREAKDOWN_MIN_QUESTIONS)
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
        raise SpecError(f"{where}.min_questions: {minimum!r} is not a number of questions (a whole number, "
                        "at least 1)")
    return minimum


def _ranked_datasets(challenge: Challenge | None, *, without: Collection[str] = ()) -> dict[str, list[str]]:
    """Each phase's ranked datasets (slugs), to tell whether a reload changed what rows rank on
    (once the datasets ``without`` are removed)."""
    if challenge is None:
        return {}
    return {phase.slug: [ds.slug for ds in _phase_ranked(phase, without=without)]
            for phase in challenge.phases.select_related("challenge")}


def _phase_datasets_kept(phase: Phase, *, without: Collection[str]) -> list[Dataset]:
    """``phase_datasets`` once the datasets ``without`` are removed."""
    return [ds for ds in phase_datasets(phase=phase) if ds.slug not in without]


def _phase_ranked(phase: Phase, *, without: Collection[str]) -> list[Dataset]:
    """``phase_ranking_scope(phase=phase).datasets`` once the datasets ``without`` are removed."""
    return ranking_scope_get(challenge=phase.challenge, datasets=_phase_datasets_kept(phase, without=without)).datasets


def _incomplete_rows_check(challenge: Challenge, *, without: Collection[str] = ()) -> None:
    """Refuse a phase whose rows could not all answer what it ranks on, unless the spec says how they rank.

    A prediction file never covers Split III (teams never see its questions; only systems run
    on them), so in a phase that takes prediction files and ranks on Split III datasets, some
    rows are incomplete by construction: the organizer must choose whether they count 0 there
    or are shown unranked, rather than learn it from the board.  The datasets ``without`` (which the
    load removes) are left out.
    """
    for order, phase in enumerate(challenge.phases.order_by("order")):
        if SubmissionKind.PREDICTIONS not in phase.allowed_kinds:
            continue
        hidden = [ds.slug for ds in _phase_ranked(phase, without=without) if ds.split == Split.III]
        if not hidden:
            continue
        others = [ds.slug for ds in _phase_datasets_kept(phase, without=without) if ds.split != Split.III]
        raise SpecError(
            f"{challenge.slug}.phases[{order}] ({phase.slug}): this phase takes prediction files, but its ranking "
            f"average covers the Split III dataset(s) {', '.join(hidden)}, which a prediction file cannot answer "
            "(teams never see their questions; only systems run on them), so a prediction row would be ranked "
            "against systems on fewer datasets. Say how such rows rank: ranking: {incomplete: zero} (a dataset "
            "a row did not answer counts 0, as MRQA's script counts an unanswered question) or ranking: "
            "{incomplete: unranked} (such rows are shown unranked); or rank this phase on "
            + (f"its other datasets (ranking: {{splits: [...]}} without III: {', '.join(others)})" if others
               else "datasets a prediction file can answer")
            + ", or take only systems in it (allowed_kinds: [docker_image, code_bundle])"
        )


@dataclass(frozen=True)
class DatasetSpec:
    """What a reload plan needs of a dataset in a spec: its slug, fields and gold files."""

    slug: str
    where: str  # the spec key, for messages ("mrqa-demo.datasets[2]")
    fields: Mapping[str, Any]  # name, split, tags
    files: Mapping[str, Path]  # portion -> path


@dataclass(frozen=True)
class SpecTargets:
    """What a spec asks the challenge to be, in the terms a reload plan compares with what is loaded."""

    slug: str
    suite: str
    phases: tuple[tuple[str, dict[str, Any]], ...]  # (slug, the fields a load writes)
    datasets: tuple[DatasetSpec, ...]
    challenge_fields: dict[str, Any]  # the challenge's own scoring and ranking settings


def spec_targets(spec: Mapping[str, Any], *, base_dir: Path) -> SpecTargets:
    """Parse ``spec`` (checked with ``spec_check``) into what the challenge would become; writes nothing."""
    slug = _get(spec, "slug", "challenge")
    suite = _choice(_get(spec, "metric_suite", slug), MetricSuite, f"{slug}.metric_suite")
    phases = [_phase_fields(slug, p, order, suite=suite) for order, p in enumerate(_get(spec, "phases", slug, list))]
    datasets: list[DatasetSpec] = []
    for order, ds in enumerate(_get(spec, "datasets", slug, list)):
        where = f"{slug}.datasets[{order}]"
        if not isinstance(ds, dict):
            raise SpecError(f"{where}: expected a mapping, found {ds!r}")
        ds_slug = _get(ds, "slug", where)
        files: dict[Any, Any] = ds["files"] if isinstance(ds.get("files"), dict) else {}
        datasets.append(DatasetSpec(
            slug=ds_slug, where=where,
            # Tags too, so the plan says what a reload changes of them ("tags: {} -> {...}").
            fields={"name": ds.get("name", ds_slug), "split": str(ds.get("split")),
                    "tags": dataset_tags_parse(ds.get("tags"), where=f"{where}.tags")},
            files={str(portion): (base_dir / str(rel)).resolve() for portion, rel in files.items()},
        ))
    challenge_fields = {
        "metric_suite": suite,
        "suite_options": spec.get("suite_options") or {},
        "ranking_rule": _choice(spec.get("ranking_rule", RankingRule.BEST), RankingRule, f"{slug}.ranking_rule"),
        "breakdown_min_questions": _breakdown_min_questions(spec.get("breakdowns"), f"{slug}.breakdowns"),
    }
    return SpecTargets(slug=slug, suite=suite, phases=tuple(phases), datasets=tuple(datasets),
                       challenge_fields=challenge_fields)


def _ranking_scope(ranking: Any, datasets: Any, where: str) -> dict[str, Any]:
    """``ranking: {splits: [II, III]}`` or ``{datasets: [slug, ...]}`` (absent: every dataset ranks),
    optionally with ``incomplete: zero | unranked`` (how a row ranks that did not answer every
    ranked dataset; stored only when the spec says it, see ``_incomplete_rows_check``).

    Checked against the spec's own splits and dataset slugs, so a typo fails the load
    rather than silently ranking on nothing.
    """
    if ranking is None or ranking == {}:
        return {}
    shape = "{splits: [II, III]} or {datasets: [slug, ...]}, optionally with incomplete: zero or unranked"
    if not isinstance(ranking, dict) or not set(ranking) <= {"splits", "datasets", "incomplete"}:
        raise SpecError(f"{where}: expected {shape}, found {ranking!r}")
    incomplete: dict[str, str] = {}
    if "incomplete" in ranking:
        value = ranking["incomplete"]
        if value not in IncompleteRows.values:
            raise SpecError(
                f"{where}.incomplete: {value!r} is not one of zero (a dataset a row did not answer counts 0), "
                "unranked (a row that did not answer every ranked dataset is shown unranked)"
            )
        incomplete = {"incomplete": str(value)}
    scoped = {k: v for k, v in ranking.items() if k != "incomplete"}
    if not scoped:
        return incomplete
    if len(scoped) != 1:
        raise SpecError(f"{where}: expected {shape}, found {ranking!r}")
    return {**_ranking_datasets(scoped, datasets, where), **incomplete}


def _ranking_datasets(ranking: dict[str, Any], datasets: Any, where: str) -> dict[str, list[str]]:
    ((key, values),) = ranking.items()
    if not isinstance(values, list) or not values:
        raise SpecError(f"{where}.{key}: expected a non-empty list, found {values!r}")
    names = [str(v) for v in values]
    if key == "splits":
        for name in names:
            _choice(name, Split, f"{where}.splits")
        return {"splits": names}
    known = [d.get("slug") for d in datasets or [] if isinstance(d, dict)]
    for name in names:
        if name not in known:
            raise SpecError(f"{where}.datasets: no dataset with slug {name!r} in this spec (it has {', '.join(map(str, known))})")
    return {"datasets": names}


def _phase_load(challenge: Challenge, spec: Mapping[str, Any], order: int) -> Phase:
    slug, fields = _phase_fields(challenge.slug, spec, order, suite=challenge.metric_suite)
    phase, _ = Phase.objects.update_or_create(challenge=challenge, slug=slug, defaults=fields)
    return phase


def _phase_fields(challenge_slug: str, spec: Mapping[str, Any], order: int, *, suite: str) -> tuple[str, dict[str, Any]]:
    """A phase's slug and the fields a load writes, checked: also what a reload plan compares."""
    where = f"{challenge_slug}.phases[{order}]"
    kind = _choice(_get(spec, "kind", where), PhaseKind, f"{where}.kind")
    quota = spec.get("quota") or {}
    campaign = _campaign(spec.get("campaign"), where=f"{where}.campaign")
    # A campaign takes no uploads (spec_check refuses allowed_kinds on one); its runs are systems.
    allowed = [] if campaign else spec.get("allowed_kinds", [SubmissionKind.PREDICTIONS.value])
    for k in allowed:
        _choice(k, SubmissionKind, f"{where}.allowed_kinds")
    modes = _protocol_modes(spec.get("protocol"), [SubmissionKind.DOCKER_IMAGE] if campaign else allowed,
                            suite=suite, where=f"{where}.protocol")
    opens_at = _parse_utc(_get(spec, "opens_at", where, (str, dt.datetime)), f"{where}.opens_at")
    closes_at = _parse_utc(_get(spec, "closes_at", where, (str, dt.datetime)), f"{where}.closes_at")
    if closes_at <= opens_at:
        raise SpecError(f"{where}: closes_at must be after opens_at")
    return _get(spec, "slug", where), {
        "name": spec.get("name", spec["slug"]),
        "kind": kind,
        "portion": _choice(spec.get("portion", kind), PhaseKind, f"{where}.portion"),
        "opens_at": opens_at,
        "closes_at": closes_at,
        "quota_per_day": quota.get("per_day"),
        "quota_total": quota.get("total"),
        "quota_concurrent": quota.get("concurrent"),
        "allowed_kinds": list(allowed),
        "protocol_modes": modes,
        "board_public": bool(spec.get("board_public", True)),
        "order": order,
        "budget_tracks": _budget_tracks(spec.get("budget_tracks"), where=f"{where}.budget_tracks"),
        "campaign": campaign,
        "human_eval": _human_eval(spec.get("human_eval"), where=f"{where}.human_eval", suite=suite),
    }


def _human_eval(value: Any, *, where: str, suite: str) -> dict[str, Any]:
    try:
        return human_eval_parse(value, where=where, suite=suite)
    except ServiceError as exc:
        raise SpecError(exc.message) from None


def _campaign(value: Any, *, where: str) -> dict[str, Any]:
    """A phase's ``campaign`` as stored ({} for a phase of uploads); its source is checked by spec_check.

    Limits the organizer changes are checked as the challenge's own (``SystemSettings``), so a typo
    fails the load rather than the campaign's runs."""
    if value is None:
        return {}
    limits = value.get("limits") or {}
    if not isinstance(limits, dict):
        raise SpecError(f"{where}.limits: expected a mapping like {{time_limit_s: 1200}}, found {limits!r}")
    defaults = Limits()
    for name, limit in limits.items():
        whole = isinstance(getattr(defaults, name), int)
        if isinstance(limit, bool) or not isinstance(limit, int if whole else (int, float)) or limit <= 0:
            raise SpecError(f"{where}.limits.{name}: expected a {'whole ' if whole else ''}number above 0, "
                            f"found {limit!r}")
    runtime = value.get("runtime")
    if runtime is not None and runtime not in CAMPAIGN_RUNTIMES:
        raise SpecError(f"{where}.runtime: {runtime!r} is not one of {', '.join(CAMPAIGN_RUNTIMES)}")
    return {"of": str(value["of"]), "systems": str(value.get("systems", "final")), "limits": dict(limits),
            **({"runtime": runtime} if runtime else {})}


# The runtimes a campaign may run its systems under instead of the challenge's (systems.runtime).
CAMPAIGN_RUNTIMES = ("runc", "runsc")


def _budget_tracks(value: Any, *, where: str) -> list[dict[str, Any]]:
    try:
        return budget_tracks_parse(value, where=where)
    except ServiceError as exc:
        raise SpecError(exc.message) from None


def _protocol_modes(value: Any, allowed: Sequence[str], *, suite: str, where: str) -> list[str]:
    """The interactive protocol's modes a phase runs its systems in (Siblini et al.; none: batch)."""
    if value is None:
        return []
    names = ", ".join(m.value for m in Mode)
    if not isinstance(value, list) or not value or len(set(map(str, value))) != len(value):
        raise SpecError(f"{where}: expected a list of distinct modes ({names}), found {value!r}")
    for mode in value:
        _choice(mode, Mode, where)
    if suite in QUESTION_FORMATS and value != [Mode.SINGLE]:
        raise SpecError(f"{where}: {suite} questions stand alone, so they are asked one per request: "
                        "protocol: [single] (the other modes are about a dialog's history)")
    if suite not in DIALOG_FORMATS | QUESTION_FORMATS:
        raise SpecError(f"{where}: the interactive protocol runs dialogs (or single questions), and this "
                        f"challenge's metric suite {suite!r} has neither (it runs with "
                        f"{', '.join(sorted(DIALOG_FORMATS | QUESTION_FORMATS))})")
    if value[0] == Mode.ADVERSARIAL:
        raise SpecError(f"{where}: the first mode ranks, and the adversarial history holds the current turn's gold "
                        "answer (a system that copies it scores 100): list it after a mode that can rank")
    if any(kind not in SYSTEM_KINDS for kind in allowed):
        raise SpecError(f"{where}: a phase in the interactive protocol takes systems only (allowed_kinds: "
                        "[docker_image, code_bundle]): a prediction file has seen every question at once")
    return [str(mode) for mode in value]


def _dataset_load(
    challenge: Challenge, spec: Mapping[str, Any], order: int, base_dir: Path,
    *, warn: Callable[[str], None] | None = None,
) -> tuple[Dataset, list[str]]:
    """Create or update a dataset and store its gold files; returns it with the portions whose gold was replaced."""
    where = f"{challenge.slug}.datasets[{order}]"
    split = _choice(str(_get(spec, "split", where)), Split, f"{where}.split")
    alias = spec.get("sealed_alias", "")
    if split == Split.III and not alias:
        # Derived from the challenge's secret: a number by position would tell the dataset's
        # place in the spec and how many sealed datasets there are.
        alias = inputs.alias_for(challenge.secret.encode("ascii"), _get(spec, "slug", where))
    files = spec.get("files") or {}
    if not isinstance(files, dict):
        raise SpecError(f"{where}.files: expected a mapping like {{dev: path, test: path}}, found {files!r}")
    for portion in files:
        _choice(str(portion), FilePortion, f"{where}.files")
        if portion == FilePortion.TRAIN and split != Split.I:
            raise SpecError(f"{where}.files.train: training files belong to Split I datasets only "
                            f"({spec.get('slug')} is Split {split})")
    dataset, _ = Dataset.objects.update_or_create(
        challenge=challenge,
        slug=_get(spec, "slug", where),
        defaults={
            "name": spec.get("name", spec["slug"]),
            "split": split,
            "sealed_alias": alias,
            "description": spec.get("description", ""),
            # As the spec says now: a tag removed from the spec is removed here too.
            "tags": dataset_tags_parse(spec.get("tags"), where=f"{where}.tags"),
            "order": order,
            "phase_only": str(spec.get("phase") or ""),
            # Training files are downloads, not scored portions: no board, upload or run reads them.
            "portions": sorted(set(spec.get("portions") or []) | (set(files) - {FilePortion.TRAIN})),
        },
    )
    if spec.get("revealed") and dataset.revealed_at is None:
        dataset_reveal(dataset=dataset)
    replaced = []
    for portion, rel_path in files.items():
        path = (base_dir / rel_path).resolve()
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise SpecError(f"{where}.files.{portion}: cannot read {path} ({exc.strerror})") from None
        if challenge.metric_suite == MetricSuite.MRQA:
            mrqa_header_check(content, name=dataset.name, slug=dataset.slug, portion=str(portion),
                              where=f"{where}.files.{portion} ({path.name})")
        if dataset_file_put(dataset=dataset, portion=portion, content=content, filename=path.name).replaced:
            replaced.append(str(portion))
    if challenge.metric_suite == MetricSuite.MRQA:
        scored = [(base_dir / rel).resolve() for portion, rel in files.items() if portion != FilePortion.TRAIN]
        _cjk_answers_warning(challenge, f"{where} ({dataset.slug})", scored, warn)
    return dataset, replaced


def _cjk_answers_warning(
    challenge: Challenge, where: str, gold_paths: list[Path], warn: Callable[[str], None] | None
) -> None:
    """Warn when the MRQA suite's white-space tokens meet gold answers that are mostly CJK text.

    MRQA's metric splits on white space, so a Chinese answer is a single token and a near miss
    (gold plus "。") scores F1 0; ``suite_options: {tokenization: cjk}`` scores with CMRC 2018's EM/F1.
    """
    options = suite_options_of(challenge)
    if not isinstance(options, MrqaOptions) or options.tokenization != "whitespace" or warn is None:
        return
    answers = [a for path in gold_paths for q in load_mrqa_gold(path).questions.values() for a in q.answers]
    share = cjk_share(answers)
    if share > 0.5:
        warn(f"{where}: {share:.0%} of the gold answers are Chinese, Japanese or Korean text, "
             "which the MRQA metric's white-space tokens score as a single word each (gold plus \"。\" "
             "scores F1 0); for Chinese, set suite_options: {tokenization: cjk} to score with CMRC 2018's "
             "EM/F1 (Chinese characters as tokens; Korean and Japanese stay NLTK words)")


@dataclass(frozen=True)
class GoldPut:
    """A gold file stored (``dataset_file_put``), and whether it replaced one."""

    record: DatasetFile
    # The portion's earlier file was retired: the scores on it must follow (``submissions/reload.py``).
    replaced: bool = False


def dataset_file_put(*, dataset: Dataset, portion: str, content: bytes, filename: str) -> GoldPut:
    """Validate and store a gold file; an unchanged file (same hash) is left alone.

    Test gold stays hidden; dev and training files of Split I/II are served on the
    Data page (``challenges/downloads.py``), so training files are Split I only.  A replaced
    file is retired, not deleted: what scores and submissions do about it is
    ``submissions.reload.dataset_gold_replace``'s.
    """
    if portion not in FilePortion.values:
        raise ServiceError(f"{dataset.slug}: unknown portion {portion!r}; use one of {', '.join(FilePortion.values)}")
    if portion == FilePortion.TRAIN and dataset.split != Split.I:
        raise ServiceError(f"{dataset.slug}: training files belong to Split I datasets only (it is Split {dataset.split})")
    sha = hashlib.sha256(content).hexdigest()
    existing = DatasetFile.objects.filter(dataset=dataset, portion=portion).first()
    if existing is not None and existing.sha256 == sha:
        return GoldPut(existing)
    suite = suite_for(dataset.challenge)
    try:
        # A scored portion's gold must score against itself; training files are never scored.
        info = suite.inspect_gold(content, filename=filename, self_check=None if portion == FilePortion.TRAIN
                                  else suite_options_of(dataset.challenge))
    except ScoringError as exc:
        raise ServiceError(f"gold file for {dataset.slug} ({portion}) rejected: {exc}") from None
    stem = f"{dataset.challenge.slug}-{dataset.slug}-{portion}-{sha[:12]}"
    with transaction.atomic():
        if existing is not None:
            # Scores computed against the old file keep it: retired, not deleted, until they are
            # rescored (``retired_gold_prune``).  Its answer-free inputs served runs only: they go.
            RetiredGold.objects.create(dataset=dataset, portion=portion, gold=existing.gold.name,
                                       sha256=existing.sha256, n_questions=existing.n_questions)
            if existing.inputs:
                transaction.on_commit(functools.partial(default_storage.delete, str(existing.inputs.name)))
            existing.delete()
        record = DatasetFile(
            dataset=dataset,
            portion=portion,
            sha256=sha,
            size_bytes=len(content),
            n_questions=len(info.qids),
            qids=info.qids,
        )
        record.gold.save(f"{stem}{suite.gold_suffix}", ContentFile(content), save=False)
        record.inputs.save(f"{stem}-inputs{suite.gold_suffix}", ContentFile(info.inputs), save=False)
        record.save()
        # The organizer view of a board shows what the gold allows (Siblini et al.'s best reachable).
        board_changed(challenge_id=dataset.challenge_id)
    return GoldPut(record, replaced=existing is not None)


def dataset_reveal(*, dataset: Dataset) -> Dataset:
    """Unseal a Split III dataset: its name and per-dataset scores become visible."""
    if dataset.revealed_at is None:
        dataset.revealed_at = timezone.now()
        dataset.save(update_fields=["revealed_at"])
        board_changed(challenge_id=dataset.challenge_id)
    return dataset


def dataset_unreveal(*, dataset: Dataset) -> Dataset:
    """Seal a revealed Split III dataset again (a reveal made by mistake or too early): its alias,
    and the withholding of its scores and of the aggregates they follow from, apply again.

    What was public meanwhile may have been copied; this stops showing it, nothing more.
    """
    if dataset.split != Split.III:
        raise ServiceError(f"{dataset.name} is a Split {dataset.split} dataset: only Split III datasets are sealed")
    if dataset.revealed_at is not None:
        dataset.revealed_at = None
        dataset.save(update_fields=["revealed_at"])
        board_changed(challenge_id=dataset.challenge_id)
    return dataset
