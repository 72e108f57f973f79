"""A submission's scores by slice of each dataset's questions, as one viewer may see them.

The slicing and the intervals are ``scoring.breakdowns``' (pure); this module finds the stored
per-question records (``QuestionScores``) and, for the answer-length slices of MRQA and SQuAD 2.0,
the gold file the submission was scored against, and applies who may see what:

- on public data (a dev portion) every slice is shown to the team;
- on hidden data (any other portion, and any Split III dataset) a team does not see a family of
  slices with one smaller than ``Challenge.breakdown_min_questions`` (spec:
  ``breakdowns: {min_questions: N}``, default 50), so that slices cannot probe a handful of hidden
  questions.  The whole family goes, not just the small slice: with the dataset's score shown, the
  others would give it away (the score times the size, minus theirs);
- a sealed dataset has no breakdown for its team (its scores are withheld from it);
- organizers see every family, each marked where its team does not.

Computed on request (a bootstrap of each family, about 0.2 s for 12,000 questions) and kept in the
cache under the per-question row, the submission's finish time and the gold's sha256, so a page
reloaded or an API polled recomputes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from django.core.cache import cache

from leaderboard.challenges.models import Dataset, DatasetFile, FilePortion, RetiredGold, Split
from leaderboard.challenges.selectors import dataset_label, datasets_ordered
from leaderboard.challenges.spec import suite_options_of
from leaderboard.challenges.suites.base import options_as
from leaderboard.challenges.suites.mrqa import MrqaOptions
from leaderboard.challenges.suites.quac import QuacOptions
from leaderboard.submissions.models import QuestionScores, Score, Status, Submission
from scoring.breakdowns import (
    FORMATS,
    NEEDS_GOLD_ANSWERS,
    NO_RECORDS,
    Breakdown,
    Family,
    Slice,
    dataset_breakdown,
    length_bucket,
    smallest_joint_cell,
)
from scoring.mrqa import load_mrqa_gold
from scoring.squad import load_squad_dataset, squad_questions

SAMPLES = 1000
SEED = 2019
LEVEL = 0.95
# Part of the cache key: a change of method must not serve intervals computed the old way.
METHOD_VERSION = 2  # 2: families carry each question's slice
METHOD = (f"mean of the per-question score in each slice; {LEVEL:.0%} percentile bootstrap interval "
          f"({SAMPLES:,} resamples of the slice's questions, seed {SEED})")
CACHE_SECONDS = 7 * 24 * 3600
# The per-question values must give back the dataset's stored score (0-100 units).
REPRODUCE_TOLERANCE = 1e-3
NOT_REPRODUCED = "no breakdown: its per-question scores do not give back its score"
SEALED_NOTE = "sealed: its team sees no breakdown of this dataset until the reveal"


@dataclass(frozen=True)
class FamilyView:
    name: str
    slices: tuple[Slice, ...]  # empty where this viewer may not see them
    hidden_from_team: bool = False
    note: str = ""  # why the team does not see it

    @property
    def shown(self) -> bool:
        return bool(self.slices)


@dataclass(frozen=True)
class DatasetBreakdown:
    dataset: str  # its label for this viewer (a sealed dataset's alias for a team)
    metric: str  # "F1", "ROUGE-L"
    questions: int
    hidden_data: bool
    families: tuple[FamilyView, ...]
    note: str = ""
    # What the score leaves out of the dataset's questions, and why ("" when it counts them all).
    left_out: str = ""


def left_out_note(breakdown: Breakdown, *, min_f1: float | None) -> str:
    """Why the score counts fewer questions than the dataset has (QuAC's filter), with the counts."""
    if not breakdown.left_out:
        return ""
    threshold = f" (human F1 below {min_f1:g})" if min_f1 is not None else ""
    whole = breakdown.questions + breakdown.left_out
    return (f"{breakdown.metric} counts {breakdown.questions} of its {whole} questions: {breakdown.left_out} "
            f"{'is' if breakdown.left_out == 1 else 'are'} left out by {breakdown.left_out_why}{threshold}.")


def hidden_family_note(minimum: int, *, viewer_is_organizer: bool, combined: bool = False) -> str:
    reason = (f"with the slices shown above it, some of its slices would single out fewer than {minimum} "
              "questions of hidden test data" if combined
              else f"a slice has fewer than {minimum} questions of hidden test data")
    return f"its team does not see this family: {reason}" if viewer_is_organizer else f"hidden: {reason}"


def families_visible(families: tuple[Family, ...], *, minimum: int, hidden_data: bool,
                     viewer_is_organizer: bool) -> tuple[FamilyView, ...]:
    """The families as this viewer may see them (see the module notes).  On hidden data a family is
    shown to the team only if, with the families shown before it, every cell of their joint
    partition holds at least ``minimum`` questions (``smallest_joint_cell``)."""
    out = []
    shown: list[Family] = []
    for family in families:
        if not hidden_data:
            out.append(FamilyView(family.name, family.slices))
            continue
        if family.smallest < minimum:
            note = hidden_family_note(minimum, viewer_is_organizer=viewer_is_organizer)
        elif smallest_joint_cell([*shown, family]) < minimum:
            note = hidden_family_note(minimum, viewer_is_organizer=viewer_is_organizer, combined=True)
        else:
            shown.append(family)
            out.append(FamilyView(family.name, family.slices))
            continue
        out.append(FamilyView(family.name, family.slices if viewer_is_organizer else (), True, note))
    return tuple(out)


def submission_breakdowns(*, submission: Submission, viewer_is_organizer: bool) -> list[DatasetBreakdown]:
    """Each dataset's breakdown of a finished submission with per-question scores, as the viewer may see it
    (the caller has checked that the viewer may see the submission)."""
    challenge = submission.phase.challenge
    fmt = challenge.metric_suite
    if submission.status != Status.FINISHED or fmt not in FORMATS:
        return []
    rows = dict(QuestionScores.objects.filter(submission=submission).values_list("dataset_id", "pk"))
    if not rows:
        return []
    datasets = datasets_ordered(Dataset.objects.filter(pk__in=rows).select_related("challenge"),
                                reveal_sealed=viewer_is_organizer)
    if not viewer_is_organizer:
        datasets = [ds for ds in datasets if not ds.is_sealed]  # a sealed dataset has no breakdown
    metric = _score_metric(fmt)
    stored = {ds_id: (value, sha) for ds_id, value, sha in Score.objects.filter(
        submission=submission, dataset_id__in=rows, metric=metric).values_list("dataset_id", "value", "gold_sha256")}
    minimum = challenge.breakdown_min_questions
    options = suite_options_of(challenge)
    cjk = options == MrqaOptions(tokenization="cjk")
    min_f1 = options_as(options, QuacOptions).min_f1 if fmt == "quac" else None
    out = []
    for ds in datasets:
        value, sha = stored.get(ds.pk, (None, ""))
        breakdown = _breakdown_cached(submission, ds, rows[ds.pk], sha, cjk)
        if breakdown.unavailable == NO_RECORDS:
            continue
        hidden_data = submission.phase.portion != FilePortion.DEV or ds.split == Split.III
        label = dataset_label(ds, reveal_sealed=viewer_is_organizer)
        note = SEALED_NOTE if ds.is_sealed else ""
        if value is None:
            why = "no breakdown: it has no score"
        elif breakdown.unavailable:
            why = f"no breakdown: {breakdown.unavailable}"
        elif abs(breakdown.score - value) > REPRODUCE_TOLERANCE:
            why = NOT_REPRODUCED
        else:
            why = ""
        if why:
            out.append(DatasetBreakdown(label, breakdown.metric, breakdown.questions, hidden_data, (),
                                        "; ".join(n for n in (note, why) if n)))
            continue
        if not breakdown.families:
            note = "; ".join(n for n in (note, "the gold data tells no slices apart here") if n)
        families = families_visible(breakdown.families, minimum=minimum, hidden_data=hidden_data,
                                    viewer_is_organizer=viewer_is_organizer)
        out.append(DatasetBreakdown(label, breakdown.metric, breakdown.questions, hidden_data, families, note,
                                    left_out_note(breakdown, min_f1=min_f1)))
    return out


def _score_metric(fmt: str) -> str:
    # The per-dataset score the per-question values average to (MRQA ranks on macro F1 over datasets).
    return "rouge_l" if fmt == "mrc2018" else "f1"


def _breakdown_cached(submission: Submission, dataset: Dataset, row_pk: int, gold_sha256: str, cjk: bool) -> Breakdown:
    finished = submission.finished_at.isoformat() if submission.finished_at else ""
    key = f"breakdown:{METHOD_VERSION}:{row_pk}:{submission.pk}:{finished}:{gold_sha256}:{int(cjk)}"
    found = cache.get(key)
    if isinstance(found, Breakdown):
        return found
    fmt = submission.phase.challenge.metric_suite
    # Gone if the submission was scored or run again meanwhile: no breakdown rather than an error.
    records = QuestionScores.objects.filter(pk=row_pk).values_list("records", flat=True).first()
    lengths = None
    if fmt in NEEDS_GOLD_ANSWERS:
        path = _gold_path(dataset, submission.phase.portion, gold_sha256)
        try:
            lengths = _answer_lengths(fmt, path, os.path.getmtime(path), cjk) if path else None
        except OSError:  # the file was pruned between the check and the read (a replaced gold)
            lengths = None
    breakdown = dataset_breakdown(fmt, records if isinstance(records, list) else [], answer_lengths=lengths,
                                  samples=SAMPLES, seed=SEED, level=LEVEL)
    cache.set(key, breakdown, CACHE_SECONDS)
    return breakdown


def _gold_path(dataset: Dataset, portion: str, sha256: str) -> str | None:
    """The gold file the submission was scored against: the current one, or the one it replaced."""
    current = DatasetFile.objects.filter(dataset=dataset, portion=portion).first()
    if current is not None and (not sha256 or current.sha256 == sha256):
        found = current.gold
    else:
        retired = RetiredGold.objects.filter(dataset=dataset, portion=portion, sha256=sha256).first()
        if retired is None:
            return None
        found = retired.gold
    path = found.path
    return path if os.path.exists(path) else None


@lru_cache(maxsize=16)
def _answer_lengths(fmt: str, path: str, mtime: float, cjk: bool) -> dict[str, str]:
    """qid -> answer-length slice of a gold file (parsed once per process and file; ``mtime`` guards
    against an edited file)."""
    if fmt == "mrqa":

        gold = load_mrqa_gold(path)
        return {qid: length_bucket(q.answers, cjk=cjk) for qid, q in gold.questions.items()}

    return {q.qid: length_bucket(q.answers, cjk=cjk) for q in squad_questions(load_squad_dataset(path), path=path)}
