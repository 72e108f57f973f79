"""Reloading a challenge: the spec's changes to a loaded challenge, and what scores and submissions do about them.

``challenge_load`` applies a spec.  The challenge's own rows are written by ``challenges.services``
(``challenge_spec_apply``), which says what changed (``SpecChanges``); the consequences are submission
writes, so they are applied here: the submissions scored against a replaced gold file are rescored in
the background and those that failed on it are evaluated again (``dataset_gold_replace``, also for a gold
file put outside a load); the scores of removed datasets are deleted (kept in each submission's history);
averages and board rows are computed again when the splits, the ranking scope or rule change, and
everything is rescored when the suite options do.

Beforehand this module says what a load will change (the plan ``manage.py challenge_load`` prints, and
all that ``--dry-run`` does): phases added and changed, datasets added, removed and changed, and gold files
added or replaced, each replacement with the questions it adds, removes and whose answers it changes
(``challenges/gold_diff.py``), and how many submissions will be rescored.  A removal of datasets with
scores is refused unless the organizer allows it.  Nothing in the plan writes.

Gold files are compared by their sha256 first, as ``dataset_file_put`` stores them; only a file
whose hash changed is read, with the same ``scoring/`` loader that scores it, and compared
question by question on what scoring reads of the answers.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.files.storage import default_storage
from django.db import transaction

from leaderboard.accounts.services import team_rules_set
from leaderboard.challenges.gold_diff import GoldDiff, gold_answers, gold_diff
from leaderboard.challenges.models import Challenge, Dataset, DatasetFile, Phase, RetiredGold
from leaderboard.challenges.services import (
    DatasetSpec,
    SpecTargets,
    challenge_spec_apply,
    challenge_spec_read,
    dataset_file_put,
    spec_read,
    spec_targets,
)
from leaderboard.challenges.spec import SpecError, spec_check, team_rules_parse
from leaderboard.submissions.board import aggregates_refresh, board_entries_refresh, board_entry_refresh
from leaderboard.submissions.models import Score, Status, Submission, Verdict
from leaderboard.submissions.rerun import gold_failures_requeue
from leaderboard.submissions.rescore import (
    RESCORABLE_KINDS,
    RescoreUnavailable,
    ScoreChange,
    rescore_enqueue,
    rescore_preview,
    rescore_problem,
    retired_gold_prune,
    score_history_record,
)
from leaderboard.submissions.selectors import reveal_exposes
from scoring.errors import ScoringError

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- the load


def challenge_load(
    *, spec_path: Path, warn: Callable[[str], None] | None = None, allow_remove: bool = False
) -> Challenge:
    """Create or update a challenge from a YAML spec; safe to run again.

    A reload reconciles (``challenge_plan`` says what will change): datasets no longer in the spec
    are removed, but one that has scores only with ``allow_remove``; a replaced gold file is kept
    while scores refer to it, and the submissions scored against it are rescored in the background.

    Gold files named in the spec are validated with the challenge's metric suite and stored only
    when their content changed.  ``warn`` receives what the organizer should know but that does
    not stop the load.
    """
    spec = challenge_spec_read(spec_path)
    team_approval = team_rules_parse(spec.raw.get("teams"), where=f"{spec.slug}.teams")
    with transaction.atomic():
        # Decided before anything is written: scores are deleted only when the organizer said so.
        plan = _reload_plan(spec_targets(spec.raw, base_dir=spec.base_dir))
        refusal = plan.refusal(allow_remove=allow_remove)
        if refusal:
            raise SpecError(refusal)
        changes = challenge_spec_apply(spec=spec, warn=warn, reveal_check=_staged_reveal_check)
        challenge = changes.challenge
        team_rules_set(challenge=challenge, approval_required=team_approval)
        for dataset, portion in changes.gold_replaced:
            _gold_replaced(dataset=dataset, portion=portion)
        if changes.datasets_removed:
            # Recomputes the averages of the submissions that lose scores.
            datasets_remove(challenge=challenge, slugs=changes.datasets_removed)
        elif changes.splits_changed:
            # Per-split averages were computed under the old splits.
            aggregates_refresh(challenge=challenge)
        if changes.options_changed:
            # Every score was computed under the old options.
            rescore_enqueue(challenge=challenge)
        if changes.rule_changed:
            board_entries_refresh(challenge=challenge)
        if changes.scope_changed:
            aggregates_refresh(challenge=challenge)
    return challenge


def dataset_gold_replace(*, dataset: Dataset, portion: str, content: bytes, filename: str) -> DatasetFile:
    """Validate and store a gold file (``challenges.services.dataset_file_put``); when it replaces one,
    the scores follow: see ``_gold_replaced``.  An unchanged file (same hash) is left alone."""
    with transaction.atomic():
        put = dataset_file_put(dataset=dataset, portion=portion, content=content, filename=filename)
        if put.replaced:
            _gold_replaced(dataset=dataset, portion=portion)
    return put.record


def _gold_replaced(*, dataset: Dataset, portion: str) -> None:
    """Inside the transaction that replaced the dataset's gold of ``portion``: scores follow the gold.

    Each submission scored against the old file is rescored in the background after the commit,
    then the old file goes once nothing refers to it (``retired_gold_prune``).
    """
    rescore_enqueue(challenge=dataset.challenge, dataset=dataset, portion=portion)
    # Submissions that failed on the old gold (the organizers' fault) are evaluated again.
    gold_failures_requeue(challenge_id=dataset.challenge_id, portion=portion, dataset_id=dataset.pk)
    transaction.on_commit(functools.partial(retired_gold_prune, challenge=dataset.challenge))


def _staged_reveal_check(challenge: Challenge, dataset_specs: list[Any]) -> None:
    """Refuse a reload that reveals some sealed datasets while the averages published until now,
    with the revealed scores, would give away the score of one it leaves sealed."""
    marked = {str(d.get("slug")) for d in dataset_specs if isinstance(d, dict) and d.get("revealed")}
    revealing = [ds for ds in Dataset.objects.filter(challenge=challenge, slug__in=marked) if ds.is_sealed]
    exposed = [ds for ds in reveal_exposes(datasets=revealing) if ds.slug not in marked] if revealing else []
    if exposed:
        raise SpecError(
            f"{challenge.slug}.datasets: revealing {', '.join(ds.name for ds in revealing)} now would give away the "
            f"score of {', '.join(ds.name for ds in exposed)}, which stays sealed: averages published while both "
            "were sealed (anyone may have copied them) minus the revealed scores leave only its own. "
            f"Mark {', '.join(ds.slug for ds in exposed)} 'revealed: true' too, and reveal them together."
        )



# --------------------------------------------------------------------------- the plan


def challenge_plan(*, spec_path: Path) -> ReloadPlan:
    """What loading the spec would change (``manage.py challenge_load --dry-run``); writes nothing."""
    spec = spec_read(spec_path)
    spec_check(spec, spec_path=spec_path)
    return _reload_plan(spec_targets(spec, base_dir=spec_path.parent))


def _reload_plan(targets: SpecTargets) -> ReloadPlan:
    return reload_plan(slug=targets.slug, suite_key=targets.suite, phases=targets.phases, datasets=targets.datasets,
                       challenge_fields=targets.challenge_fields)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Changed:
    """A phase or dataset whose fields the spec changes: "closes_at: 2019-... -> 2019-..."."""

    slug: str
    changes: tuple[str, ...]


@dataclass(frozen=True)
class GoldChange:
    dataset: str
    portion: str
    old_sha256: str
    new_sha256: str
    diff: GoldDiff | None  # None: a file could not be read to compare (``error`` says why)
    rescored: int  # finished, platform-scored submissions whose scores will be recomputed
    error: str = ""
    # Finished ones with scores on it that cannot be rescored, by why (their scores stay, on the old gold).
    not_rescorable: dict[str, int] = field(default_factory=dict)
    # Ones that failed because of the organizers' gold of this portion: evaluated again.
    reevaluated: int = 0
    # Asked for (``gold_change_plan``): what each rescorable one's rescore would write, changed or not.
    score_changes: tuple[ScoreChange, ...] = ()


@dataclass(frozen=True)
class DatasetRemoval:
    dataset: str
    scored_submissions: int  # submissions with scores on it (imported rows too): those scores go


@dataclass
class ReloadPlan:
    """What loading a spec will change; ``lines()`` says it in words."""

    challenge: str
    is_new: bool = False
    phases_added: list[str] = field(default_factory=list)
    phases_changed: list[Changed] = field(default_factory=list)
    phases_kept: list[str] = field(default_factory=list)  # loaded, no longer in the spec: never removed
    datasets_added: list[str] = field(default_factory=list)
    datasets_changed: list[Changed] = field(default_factory=list)
    datasets_removed: list[DatasetRemoval] = field(default_factory=list)
    gold_added: list[tuple[str, str]] = field(default_factory=list)  # (dataset, portion) of a loaded dataset
    gold_changed: list[GoldChange] = field(default_factory=list)
    gold_kept: list[tuple[str, str]] = field(default_factory=list)  # stored, no longer in the spec: kept
    # The challenge's own scoring and ranking settings: (field, before, after).
    challenge_changed: list[tuple[str, Any, Any]] = field(default_factory=list)
    # Submissions with platform scores (a suite change is refused while there are any).
    scored_submissions: int = 0

    @property
    def options_changed(self) -> bool:
        return any(name == "suite_options" for name, _, _ in self.challenge_changed)

    @property
    def rule_changed(self) -> bool:
        return any(name == "ranking_rule" for name, _, _ in self.challenge_changed)

    @property
    def has_changes(self) -> bool:
        return bool(self.is_new or self.challenge_changed or self.phases_added or self.phases_changed or self.datasets_added
                    or self.datasets_changed or self.datasets_removed or self.gold_added or self.gold_changed)

    @property
    def splits_changed(self) -> bool:
        return any(c.startswith("split:") for d in self.datasets_changed for c in d.changes)

    def refusal(self, *, allow_remove: bool) -> str | None:
        """Why the plan must not be applied (without ``allow_remove``, for a removal), or None."""
        suite = next(((old, new) for name, old, new in self.challenge_changed if name == "metric_suite"), None)
        if suite is not None and self.scored_submissions:
            return (f"{self.challenge}: metric_suite cannot change from {suite[0]} to {suite[1]} once submissions are "
                    f"scored ({self.scored_submissions} are): their scores, boards and uploads are the old suite's. "
                    "Keep the suite, or load the spec as a new challenge (another slug)")
        scored = [r for r in self.datasets_removed if r.scored_submissions]
        if not scored or allow_remove:
            return None
        named = ", ".join(f"{r.dataset} ({r.scored_submissions} submission(s) have scores on it)" for r in scored)
        return (f"{self.challenge}: the spec no longer has dataset(s) {named}; loading it would delete those "
                "scores (each submission keeps them in its score history) and recompute its averages. "
                "Put the dataset back in the spec, or load with --allow-remove to remove it")

    def lines(self) -> list[str]:
        if self.is_new:
            head = [f"new challenge {self.challenge}: phases {', '.join(self.phases_added) or '(none)'}; "
                    f"datasets {', '.join(self.datasets_added) or '(none)'}"]
            return head
        out = [f"challenge {self.challenge}:" if self.has_changes else f"challenge {self.challenge}: no changes"]
        for name, old, new in self.challenge_changed:
            effect = {"suite_options": "every gold file is checked again with the new options, and every scored "
                                       "submission is rescored",
                      "ranking_rule": "each team's board row is chosen again by the new rule"}.get(name, "")
            out.append(f"  challenge changed: {name}: {old!r} -> {new!r}" + (f" ({effect})" if effect else ""))
        out += [f"  phase added: {slug}" for slug in self.phases_added]
        out += [f"  phase changed: {c.slug}: {'; '.join(c.changes)}" for c in self.phases_changed]
        out += [f"  phase kept: {slug} is not in the spec; phases are never removed by a load (their "
                "submissions would go with them)" for slug in self.phases_kept]
        out += [f"  dataset added: {slug}" for slug in self.datasets_added]
        out += [f"  dataset changed: {c.slug}: {'; '.join(c.changes)}" for c in self.datasets_changed]
        for removal in self.datasets_removed:
            scored = (f"{removal.scored_submissions} submission(s) lose their scores on it (kept in their history)"
                      if removal.scored_submissions else "no scores refer to it")
            out.append(f"  dataset removed: {removal.dataset}: {scored}")
        out += [f"  gold added: {slug} ({portion})" for slug, portion in self.gold_added]
        for change in self.gold_changed:
            if change.diff is None:
                counts = f"questions not compared ({change.error})"
            else:
                d = change.diff
                counts = (f"{d.n_questions} questions: {d.added} added, {d.removed} removed, "
                          f"{d.changed} with changed answers")
            line = (f"  gold changed: {change.dataset} ({change.portion}) {change.old_sha256[:12]} -> "
                    f"{change.new_sha256[:12]}: {counts}; {change.rescored} submission(s) will be rescored")
            for why, count in sorted(change.not_rescorable.items()):
                line += f"; {count} cannot be, and keep their scores on the old gold ({why})"
            if change.reevaluated:
                line += f"; {change.reevaluated} that failed on the organizers' gold will be evaluated again"
            out.append(line)
        out += [f"  gold kept: {slug} ({portion}) is not in the spec; the stored file stays"
                for slug, portion in self.gold_kept]
        return out


def _shown(value: Any) -> str:
    if hasattr(value, "isoformat"):
        return str(value.isoformat().replace("+00:00", "Z"))
    return repr(value)


def _changes(current: Any, fields: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for key, value in fields.items():
        old = getattr(current, key)
        if old != value:
            out.append(f"{key}: {_shown(old)} -> {_shown(value)}")
    return tuple(out)


def reload_plan(
    *, slug: str, suite_key: str, phases: Sequence[tuple[str, Mapping[str, Any]]], datasets: Sequence[DatasetSpec],
    challenge_fields: Mapping[str, Any] | None = None,
) -> ReloadPlan:
    """Compare a parsed spec with the loaded challenge ``slug`` (if any); reads gold files, writes nothing.

    ``phases``: (slug, the fields ``challenge_load`` writes); ``datasets``: their slugs, the
    fields compared and the resolved gold paths.
    """
    plan = ReloadPlan(challenge=slug)
    challenge = Challenge.objects.filter(slug=slug).first()
    if challenge is None:
        plan.is_new = True
        plan.phases_added = [s for s, _ in phases]
        plan.datasets_added = [d.slug for d in datasets]
        return plan
    for name, new in (challenge_fields or {}).items():
        old = getattr(challenge, name)
        if old != new:
            plan.challenge_changed.append((name, old, new))
    plan.scored_submissions = (Submission.objects.filter(phase__challenge=challenge, status=Status.FINISHED)
                               .exclude(kind="imported").count())
    loaded_phases = {p.slug: p for p in Phase.objects.filter(challenge=challenge)}
    for phase_slug, fields in phases:
        phase = loaded_phases.get(phase_slug)
        if phase is None:
            plan.phases_added.append(phase_slug)
        elif changes := _changes(phase, fields):
            plan.phases_changed.append(Changed(phase_slug, changes))
    plan.phases_kept = [s for s in loaded_phases if s not in {p for p, _ in phases}]

    loaded = {d.slug: d for d in Dataset.objects.filter(challenge=challenge)}
    stored = {(f.dataset.slug, f.portion): f for f in DatasetFile.objects.filter(dataset__challenge=challenge)
              .select_related("dataset")}
    for spec in datasets:
        dataset = loaded.get(spec.slug)
        if dataset is None:
            plan.datasets_added.append(spec.slug)
            continue
        if changes := _changes(dataset, spec.fields):
            plan.datasets_changed.append(Changed(spec.slug, changes))
        for portion, path in spec.files.items():
            try:
                sha = _sha256_of(path)
            except OSError:
                continue  # the load refuses it, naming the key
            old = stored.get((spec.slug, portion))
            if old is None:
                plan.gold_added.append((spec.slug, portion))
            elif old.sha256 != sha:
                plan.gold_changed.append(_gold_change(suite_key, dataset, old, path, sha))
        plan.gold_kept += [(spec.slug, portion) for (s, portion) in stored if s == spec.slug
                           and portion not in spec.files]
    spec_slugs = {d.slug for d in datasets}
    for dataset_slug, dataset in loaded.items():
        if dataset_slug not in spec_slugs:
            scored = Submission.objects.filter(scores__dataset=dataset).distinct().count()
            plan.datasets_removed.append(DatasetRemoval(dataset_slug, scored))
    return plan


def gold_change_plan(*, dataset: Dataset, portion: str, content: bytes, filename: str) -> GoldChange:
    """What replacing the dataset's gold of ``portion`` with ``content`` would change, as the
    reload plan says it for a spec's file, and with each rescorable submission's scores before and
    after (``rescore.rescore_preview``); writes nothing.  For a gold change made from content
    rather than a spec (``judging.gold``); ``dataset_gold_replace`` applies it."""
    old = DatasetFile.objects.select_related("dataset__challenge").get(dataset=dataset, portion=portion)
    suffix = "".join(Path(filename).suffixes) or ".jsonl"
    with tempfile.TemporaryDirectory(prefix="gold-plan-") as folder:
        # The scoring loaders read paths: the new content is scored from a file of the stored name's kind.
        path = Path(folder) / f"new{suffix}"
        path.write_bytes(content)
        return _gold_change(dataset.challenge.metric_suite, dataset, old, path, hashlib.sha256(content).hexdigest(),
                            scores=True)


def _gold_change(suite_key: str, dataset: Dataset, old: DatasetFile, path: Path, sha: str, *,
                 scores: bool = False) -> GoldChange:
    """``scores``: score each rescorable submission's stored answers against ``path`` too (costly:
    the spec's plan counts them only)."""
    diff: GoldDiff | None = None
    error = ""
    try:
        new_answers = gold_answers(suite_key, str(path))
    except (ScoringError, NotImplementedError) as exc:
        # Said in full by the load, which refuses such a file (dataset_file_put's checks).
        error = f"the new file cannot be read: {exc}"
    else:
        try:
            diff = gold_diff(gold_answers(suite_key, old.gold.path), new_answers)
        except (OSError, ScoringError) as exc:
            error = f"the stored file cannot be read: {exc}"
    scored = (Submission.objects.filter(phase__challenge_id=dataset.challenge_id, phase__portion=old.portion,
                                        status=Status.FINISHED, kind__in=RESCORABLE_KINDS, scores__dataset=dataset)
              .distinct().select_related("phase"))
    rescored, not_rescorable = 0, Counter[str]()
    changes: list[ScoreChange] = []
    for submission in scored.order_by("pk"):
        problem = rescore_problem(submission)  # what the rescore itself will find
        if not problem and scores and not error:
            try:
                changes.append(rescore_preview(submission=submission, dataset_file=old, gold_path=str(path)))
            except RescoreUnavailable as exc:
                problem = str(exc)
        if problem:
            not_rescorable[problem] += 1
        else:
            rescored += 1
    reevaluated = (Submission.objects.filter(phase__challenge_id=dataset.challenge_id, phase__portion=old.portion,
                                             status=Status.FAILED, verdict=Verdict.GOLD, verdict_dataset=dataset)
                   .exclude(kind="imported").count())
    return GoldChange(dataset.slug, old.portion, old.sha256, sha, diff, rescored, error, dict(not_rescorable),
                      reevaluated, tuple(changes))


# --------------------------------------------------------------------------- removing datasets


def datasets_remove(*, challenge: Challenge, slugs: Sequence[str]) -> int:
    """Remove the challenge's datasets ``slugs`` with their gold files and scores; returns how many
    submissions lost scores.  The caller checked the organizer allowed it (``ReloadPlan.refusal``).

    Each submission's scores are kept in its history first; its averages are then recomputed
    over the datasets it still has (none left: no scores, off the board's ranking).  The files
    are deleted once the removal is committed.
    """
    datasets = list(Dataset.objects.filter(challenge=challenge, slug__in=slugs))
    if not datasets:
        return 0
    affected = list(Submission.objects.filter(scores__dataset__in=datasets).distinct().select_related("team", "phase"))
    for submission in affected:
        scores = list(submission.scores.select_related("dataset").order_by("dataset__order", "metric"))
        named = ", ".join(d.slug for d in datasets if any(s.dataset_id == d.pk for s in scores))
        score_history_record(submission=submission, scores=scores,
                             reason=f"dataset {named} removed from the challenge")
    names = [str(n) for f in DatasetFile.objects.filter(dataset__in=datasets) for n in (f.gold.name, f.inputs.name) if n]
    names += [str(r.gold.name) for r in RetiredGold.objects.filter(dataset__in=datasets)]
    for dataset in datasets:
        dataset.delete()  # its files' rows, scores, per-question scores and retired gold go with it
    aggregates_refresh(challenge=challenge)
    for submission in affected:
        if not Score.objects.filter(submission=submission, dataset__isnull=False).exists():
            # Nothing left to average: its aggregates would describe datasets that are gone.
            Score.objects.filter(submission=submission).delete()
            Submission.objects.filter(pk=submission.pk).update(primary_score=None)
            board_entry_refresh(team=submission.team, phase=submission.phase)
    for name in names:
        transaction.on_commit(functools.partial(default_storage.delete, name))
    logger.info("%s: removed dataset(s) %s; %s submission(s) lost scores", challenge.slug, ", ".join(slugs),
                len(affected))
    return len(affected)
