"""Writes for challenges: loading a spec, hidden gold files, reveals, imported results."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from leaderboard.challenges.models import (
    Challenge,
    Dataset,
    DatasetFile,
    FilePortion,
    MetricSuite,
    Phase,
    PhaseKind,
    RankingRule,
    SealedAggregates,
    Split,
    SubmissionKind,
)
from leaderboard.challenges.suites import suite_for
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.services import aggregates_refresh
from leaderboard.submissions.systems import SystemSettings
from scoring import inputs
from scoring.errors import ScoringError


class SpecError(ServiceError):
    """A challenge spec that cannot be loaded; the message names the key."""


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


def challenge_load(*, spec_path: Path) -> Challenge:
    """Create or update a challenge from a YAML spec; safe to run again.

    Gold files named in the spec are validated with the challenge's metric
    suite and stored only when their content changed.
    """
    try:
        spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SpecError(f"{spec_path}: cannot read the spec ({exc})") from None
    if not isinstance(spec, dict):
        raise SpecError(f"{spec_path}: expected a mapping at the top level")
    base_dir = spec_path.parent
    slug = _get(spec, "slug", "challenge")
    suite = _choice(_get(spec, "metric_suite", slug), MetricSuite, f"{slug}.metric_suite")
    try:
        # Validated here so a typo in a limit fails the load, not a run weeks later.
        systems = SystemSettings.from_json(spec.get("systems")).as_json() if spec.get("systems") else {}
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{slug}.systems: {exc}") from None
    ranking_scope = _ranking_scope(spec.get("ranking"), spec.get("datasets"), f"{slug}.ranking")
    sealed_aggregates = _choice(
        str(spec.get("sealed_aggregates", SealedAggregates.ISOLATING)), SealedAggregates, f"{slug}.sealed_aggregates"
    )

    with transaction.atomic():
        previous_scope = Challenge.objects.filter(slug=slug).values_list("ranking_scope", flat=True).first()
        challenge, _ = Challenge.objects.update_or_create(
            slug=slug,
            defaults={
                "title": spec.get("title", slug),
                "description": spec.get("description", ""),
                "metric_suite": suite,
                "suite_options": spec.get("suite_options") or {},
                "ranking_rule": _choice(spec.get("ranking_rule", RankingRule.BEST), RankingRule, f"{slug}.ranking_rule"),
                "is_public": bool(spec.get("is_public", True)),
                "system_settings": systems,
                "ranking_scope": ranking_scope,
                "sealed_aggregates": sealed_aggregates,
            },
        )
        for username in spec.get("staff", []) or []:
            user = User.objects.filter(username=username).first()
            if user is None:
                raise SpecError(f"{slug}.staff: no user called {username!r}; create the account first")
            challenge.staff.add(user)
        for order, phase_spec in enumerate(_get(spec, "phases", slug, list)):
            _phase_load(challenge, phase_spec, order)
        for order, ds_spec in enumerate(_get(spec, "datasets", slug, list)):
            _dataset_load(challenge, ds_spec, order, base_dir)
        if previous_scope is not None and previous_scope != ranking_scope:
            # Stored ranking averages were computed under the old scope.
            aggregates_refresh(challenge=challenge)
    return challenge


def _ranking_scope(ranking: Any, datasets: Any, where: str) -> dict[str, list[str]]:
    """``ranking: {splits: [II, III]}`` or ``{datasets: [slug, ...]}`` (absent: every dataset ranks).

    Checked against the spec's own splits and dataset slugs, so a typo fails the load
    rather than silently ranking on nothing.
    """
    if ranking is None or ranking == {}:
        return {}
    shape = "{splits: [II, III]} or {datasets: [slug, ...]}"
    if not isinstance(ranking, dict) or len(ranking) != 1 or not set(ranking) <= {"splits", "datasets"}:
        raise SpecError(f"{where}: expected {shape}, found {ranking!r}")
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
    where = f"{challenge.slug}.phases[{order}]"
    kind = _choice(_get(spec, "kind", where), PhaseKind, f"{where}.kind")
    quota = spec.get("quota") or {}
    allowed = spec.get("allowed_kinds", [SubmissionKind.PREDICTIONS.value])
    for k in allowed:
        _choice(k, SubmissionKind, f"{where}.allowed_kinds")
    opens_at = _parse_utc(_get(spec, "opens_at", where, (str, dt.datetime)), f"{where}.opens_at")
    closes_at = _parse_utc(_get(spec, "closes_at", where, (str, dt.datetime)), f"{where}.closes_at")
    if closes_at <= opens_at:
        raise SpecError(f"{where}: closes_at must be after opens_at")
    phase, _ = Phase.objects.update_or_create(
        challenge=challenge,
        slug=_get(spec, "slug", where),
        defaults={
            "name": spec.get("name", spec["slug"]),
            "kind": kind,
            "portion": _choice(spec.get("portion", kind), PhaseKind, f"{where}.portion"),
            "opens_at": opens_at,
            "closes_at": closes_at,
            "quota_per_day": quota.get("per_day"),
            "quota_total": quota.get("total"),
            "quota_concurrent": quota.get("concurrent"),
            "allowed_kinds": list(allowed),
            "board_public": bool(spec.get("board_public", True)),
            "order": order,
        },
    )
    return phase


def _dataset_load(challenge: Challenge, spec: Mapping[str, Any], order: int, base_dir: Path) -> Dataset:
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
            "order": order,
            # Training files are downloads, not scored portions: no board, upload or run reads them.
            "portions": sorted(set(spec.get("portions") or []) | (set(files) - {FilePortion.TRAIN})),
        },
    )
    if spec.get("revealed") and dataset.revealed_at is None:
        dataset_reveal(dataset=dataset)
    for portion, rel_path in files.items():
        path = (base_dir / rel_path).resolve()
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise SpecError(f"{where}.files.{portion}: cannot read {path} ({exc.strerror})") from None
        dataset_file_put(dataset=dataset, portion=portion, content=content, filename=path.name)
    return dataset


def dataset_file_put(*, dataset: Dataset, portion: str, content: bytes, filename: str) -> DatasetFile:
    """Validate and store a gold file; an unchanged file (same hash) is left alone.

    Test gold stays hidden; dev and training files of Split I/II are served on the
    Data page (``challenges/downloads.py``), so training files are Split I only.
    """
    if portion not in FilePortion.values:
        raise ServiceError(f"{dataset.slug}: unknown portion {portion!r}; use one of {', '.join(FilePortion.values)}")
    if portion == FilePortion.TRAIN and dataset.split != Split.I:
        raise ServiceError(f"{dataset.slug}: training files belong to Split I datasets only (it is Split {dataset.split})")
    sha = hashlib.sha256(content).hexdigest()
    existing = DatasetFile.objects.filter(dataset=dataset, portion=portion).first()
    if existing is not None and existing.sha256 == sha:
        return existing
    suite = suite_for(dataset.challenge)
    try:
        info = suite.inspect_gold(content, filename=filename)
    except ScoringError as exc:
        raise ServiceError(f"gold file for {dataset.slug} ({portion}) rejected: {exc}") from None
    stem = f"{dataset.challenge.slug}-{dataset.slug}-{portion}-{sha[:12]}"
    with transaction.atomic():
        if existing is not None:
            existing.gold.delete(save=False)
            if existing.inputs:
                existing.inputs.delete(save=False)
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
    return record


def dataset_reveal(*, dataset: Dataset) -> Dataset:
    """Unseal a Split III dataset: its name and per-dataset scores become visible."""
    if dataset.revealed_at is None:
        dataset.revealed_at = timezone.now()
        dataset.save(update_fields=["revealed_at"])
    return dataset
