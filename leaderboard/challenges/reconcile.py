"""Reloading a challenge: what a spec changes against what is loaded, and removing datasets.

``challenge_load`` applies a spec; this module says beforehand what that will change (the plan
``manage.py challenge_load`` prints, and all that ``--dry-run`` does): phases added and changed,
datasets added, removed and changed, and gold files added or replaced, each replacement with the
questions it adds, removes and whose answers it changes, and how many submissions will be
rescored.  Nothing here writes except ``datasets_remove``.

Gold files are compared by their sha256 first, as ``dataset_file_put`` stores them; only a file
whose hash changed is read, with the same ``scoring/`` loader that scores it, and compared
question by question on what scoring reads of the answers.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.files.storage import default_storage
from django.db import transaction

from leaderboard.challenges.models import Challenge, Dataset, DatasetFile, Phase, RetiredGold
from leaderboard.submissions.board import aggregates_refresh, board_entry_refresh
from leaderboard.submissions.models import Score, Status, Submission, Verdict
from leaderboard.submissions.rescore import RESCORABLE_KINDS, rescore_problem, score_history_record
from scoring.errors import ScoringError

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- gold, question by question


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def gold_answers(suite_key: str, path: str) -> dict[str, str]:
    """``{qid: what scoring reads of its answers}`` (canonical JSON) of a gold file.

    Only what can change a score: MRQA's, SQuAD's and CoQA's answer strings (as sets: the
    metrics take the best over them), DuReader's answers, yes/no and entity answers and
    question type, QuAC's references and dialog acts, Deep Read's answer keys, marked sentences and
    the story's sentences.
    """
    if suite_key == "mrqa":
        from scoring import mrqa

        gold = mrqa.load_mrqa_gold(path, strict=True)
        return {qid: _canonical(sorted(set(q.answers))) for qid, q in gold.questions.items()}
    if suite_key == "mrc2018":
        from scoring import mrc2018

        refs = mrc2018.load_mrc2018(path, reference=True)
        return {str(qid): _canonical([q.answers, q.yesno_answers, q.entity_answers, q.question_type])
                for qid, q in refs.items()}
    if suite_key == "squad2":
        from scoring import squad

        questions = squad.squad_questions(squad.load_squad_dataset(path), path=path)
        return {q.qid: _canonical(sorted(set(q.answers))) for q in questions}
    if suite_key == "quac":
        from scoring import quac

        dialogs = quac.load_quac_dataset(path, strict=True)
        return {q.qid: _canonical([q.refs, q.yesno, q.followup]) for d in dialogs for q in d.questions}
    if suite_key == "coqa":
        from scoring import coqa
        from scoring.inputs import coqa_qid

        turns = coqa.load_coqa_dataset(path, strict=True).turns
        return {coqa_qid(*key): _canonical(sorted(set(golds))) for key, golds in turns.items()}
    if suite_key == "deepread":
        from scoring import deepread

        data = deepread.load_deepread_data(path)
        # The story's sentences too: answers are matched to them, and AutSent marks them.
        return {q.id: _canonical([sorted(set(q.answers)), sorted(q.answer_sentences or ()),
                                  list(data.stories[q.story].sentences.items()) if q.story is not None else None])
                for q in data.questions}
    raise NotImplementedError(f"metric suite {suite_key!r}: no question-by-question comparison")


@dataclass(frozen=True)
class GoldDiff:
    added: int
    removed: int
    changed: int  # questions in both files whose answers differ
    n_questions: int  # in the new file


def gold_diff(old: Mapping[str, str], new: Mapping[str, str]) -> GoldDiff:
    both = old.keys() & new.keys()
    return GoldDiff(
        added=len(new.keys() - old.keys()),
        removed=len(old.keys() - new.keys()),
        changed=sum(1 for qid in both if old[qid] != new[qid]),
        n_questions=len(new),
    )


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class DatasetSpec:
    """What the plan needs of a dataset in a spec: its slug, fields and gold files."""

    slug: str
    where: str  # the spec key, for messages ("mrqa-demo.datasets[2]")
    fields: Mapping[str, Any]  # name, split
    files: Mapping[str, Path]  # portion -> path


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


def _gold_change(suite_key: str, dataset: Dataset, old: DatasetFile, path: Path, sha: str) -> GoldChange:
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
    for submission in scored:
        problem = rescore_problem(submission)  # what the rescore itself will find
        if problem:
            not_rescorable[problem] += 1
        else:
            rescored += 1
    reevaluated = (Submission.objects.filter(phase__challenge_id=dataset.challenge_id, phase__portion=old.portion,
                                             status=Status.FAILED, verdict=Verdict.GOLD, verdict_dataset=dataset)
                   .exclude(kind="imported").count())
    return GoldChange(dataset.slug, old.portion, old.sha256, sha, diff, rescored, error, dict(not_rescorable),
                      reevaluated)


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
