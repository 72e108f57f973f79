"""Which differences on a board are real: the paired bootstrap of its ranking, kept between requests.

For the rows a board ranks, in its order: a 95% interval of the ranking average, the one-sided
p-value against the leader, rank groups (a row shares the group of the row above unless it is
significantly worse) and a rank interval, plus an interval per dataset column.  The macro
average resamples questions within each dataset (``scoring.significance.paired_bootstrap`` with
strata), so every resample keeps each dataset's size, as the average weighs datasets equally.

Computing this for a board of a thousand rows takes seconds, so a request never does: it looks
up the result for the board's exact rows (``BoardSignificance.key``) and, when there is none,
asks for one in the background and says "being computed".  Rows whose per-question scores are
unknown (imported results) or do not reproduce their stored score are left out, with the reason.

Sealed data: the payload is read on the trusted side only; what a view shows of it follows the
board's own rules (a withheld average shows no interval and no p-value, since both would bound
it; a sealed dataset's column shows no interval).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.challenges.models import Dataset, DatasetFile, Phase
from leaderboard.challenges.versions import board_changed
from leaderboard.core.enqueue import BOARD_SIGNIFICANCE, enqueue_on_commit
from leaderboard.rankings.models import BoardSignificance
from leaderboard.submissions.models import QuestionScores, Score
from scoring.significance import paired_bootstrap, rank_groups, weighted_mean_statistic

SAMPLES = 1000
SEED = 2019
LEVEL = 0.95
ALPHA = 0.05
# Part of every key: a change of method makes every stored result stale.
METHOD_VERSION = 1
METHOD = (f"paired bootstrap over questions ({SAMPLES:,} resamples, seed {SEED}; for an average over "
          f"datasets, questions are resampled within each dataset); {LEVEL:.0%} percentile intervals; "
          f"p: one-sided against the leader; a row shares the rank group of the row above unless it is "
          f"significantly worse (p < {ALPHA}); rank range: the 2.5-97.5 percentiles of its rank over the resamples")
# A pending request older than this is asked for again (its worker may have died).
STALE_REQUEST = timedelta(minutes=10)
# A row's per-question values must give back its stored score (in the board's units).
REPRODUCE_TOLERANCE = 5e-4
NO_QUESTION_SCORES = "no per-question scores (a published result): no interval"
NOT_REPRODUCED = "its per-question scores do not give back its score: no interval"
UNDEFINED = "its score is undefined on some resamples (too few questions count): no interval"
_ALIASES = {"em": ("em", "exact_match", "exact"), "f1": ("f1", "model_f1")}


@dataclass(frozen=True)
class RowSignificance:
    ci: tuple[float, float] | None = None
    p_value: float | None = None  # against the leader; None for the leader itself
    group: int | None = None  # the board rank of the first row of its rank group
    rank_range: tuple[int, int] | None = None
    datasets: dict[int, tuple[float, float]] = field(default_factory=dict)  # dataset pk -> interval
    note: str = ""  # why the row has no interval


@dataclass(frozen=True)
class Significance:
    status: str  # "ready", "computing", or "none" (nothing to compare)
    rows: dict[int, RowSignificance] = field(default_factory=dict)  # by submission id
    leader_rank: int | None = None
    computed_at: str = ""

    @property
    def ready(self) -> bool:
        return self.status == "ready"

    @property
    def has_intervals(self) -> bool:
        """Whether any row has an interval (a board of published results has none)."""
        return any(row.ci is not None for row in self.rows.values())


@dataclass(frozen=True)
class SignificanceInputs:
    """What one board's bootstrap depends on: its ranked rows in order, and the average they rank on."""

    phase_id: int
    portion: str
    metric: str  # the per-dataset metric the ranking averages ("f1", "rouge_l")
    datasets: tuple[int, ...]  # dataset pks, in pk order (not the view's column order)
    rows: tuple[tuple[int, int, float], ...]  # (submission id, board rank, ranking value)

    @property
    def key(self) -> str:
        digest = json.dumps([METHOD_VERSION, SAMPLES, SEED, self.portion, self.metric, self.datasets,
                             [(sid, rank, round(value, 9)) for sid, rank, value in self.rows]])
        return hashlib.sha256(digest.encode()).hexdigest()


def significance_inputs(*, phase: Phase, metric: str | None, datasets: Sequence[Dataset],
                        rows: Sequence[tuple[int, int | None, float | None]]) -> SignificanceInputs | None:
    """The inputs of a board ranked on the mean of ``metric`` over ``datasets``; None when there is
    nothing to compare (fewer than two ranked rows, or a ranking that is not such a mean)."""
    ranked = tuple((sid, rank, value) for sid, rank, value in rows if rank is not None and value is not None)
    if metric is None or not datasets or len(ranked) < 2:
        return None
    # The strata are resampled from one random stream in this order, and the public board orders
    # its columns otherwise than the organizer view (sealed ones last): in a fixed order, every
    # view of a row draws the same resamples, and one stored result serves them all.
    return SignificanceInputs(phase_id=phase.pk, portion=phase.portion, metric=metric,
                              datasets=tuple(sorted(ds.pk for ds in datasets)), rows=ranked)


def board_significance_get(inputs: SignificanceInputs | None) -> Significance:
    """The stored result for these exact rows; asks for it (once) when there is none yet."""
    if inputs is None:
        return Significance(status="none")
    found = BoardSignificance.objects.filter(phase_id=inputs.phase_id, key=inputs.key).first()
    if found is None or (found.payload is None and found.requested_at < timezone.now() - STALE_REQUEST):
        board_significance_request(inputs)
        # With eager tasks (tests, a demo without a broker) the result exists by now.
        found = BoardSignificance.objects.filter(phase_id=inputs.phase_id, key=inputs.key).first()
    if found is None or found.payload is None:
        return Significance(status="computing")
    return _from_payload(found.payload, computed_at=found.computed_at)


def board_significance_request(inputs: SignificanceInputs) -> None:
    """Record that this board needs its bootstrap and send the task once (a second reader while it
    is pending sends nothing); the task computes every board of the phase that needs one."""
    with transaction.atomic():
        try:
            with transaction.atomic():
                BoardSignificance.objects.create(phase_id=inputs.phase_id, key=inputs.key)
        except IntegrityError:
            stale = BoardSignificance.objects.filter(
                phase_id=inputs.phase_id, key=inputs.key, payload__isnull=True,
                requested_at__lt=timezone.now() - STALE_REQUEST,
            ).update(requested_at=timezone.now())
            if not stale:
                return
        enqueue_on_commit(BOARD_SIGNIFICANCE, inputs.phase_id)


def board_significance_store(inputs: SignificanceInputs) -> None:
    """Compute and store the bootstrap of these rows (safe twice: the same key gets the same result)."""
    payload = board_significance_compute(inputs)
    with transaction.atomic():
        BoardSignificance.objects.update_or_create(
            phase_id=inputs.phase_id, key=inputs.key, defaults={"payload": payload, "computed_at": timezone.now()},
        )
        board_changed(challenge_id=Phase.objects.values_list("challenge_id", flat=True).get(pk=inputs.phase_id))


def board_significance_prune(*, phase_id: int, keep: Sequence[str]) -> None:
    """Drop the results of rows the phase's boards no longer show."""
    BoardSignificance.objects.filter(phase_id=phase_id).exclude(key__in=list(keep)).delete()


def board_significance_compute(inputs: SignificanceInputs) -> dict[str, Any]:
    """The bootstrap of a board's ranked rows, as a JSON payload keyed by submission id."""
    sids = [sid for sid, _, _ in inputs.rows]
    vectors, notes = _question_vectors(inputs, sids)
    usable = [(sid, rank, value) for sid, rank, value in inputs.rows if sid not in notes]
    payload: dict[str, Any] = {"rows": {}, "notes": {str(sid): note for sid, note in notes.items()}}
    if len(usable) < 2:
        return payload
    blocks, strata, weighted = [], [], False
    for pk in inputs.datasets:
        n = next(len(v) for v in vectors[pk].values()) if vectors[pk] else 0
        if n == 0:
            continue
        block = np.stack([vectors[pk].get(sid, np.zeros(n, dtype=np.float32)) for sid, _, _ in usable])
        weighted = weighted or bool(np.isnan(block).any())
        blocks.append(block.astype(np.float64))
        strata += [str(pk)] * n
    scores = np.concatenate(blocks, axis=1)
    if weighted:  # NaN marks a question that does not count (QuAC's filtered ones)
        counts = (~np.isnan(scores)).astype(np.float64)
        stats = np.stack([np.nan_to_num(scores), counts], axis=2)
        result = paired_bootstrap(stats, names=[str(sid) for sid, _, _ in usable], samples=SAMPLES, seed=SEED,
                                  level=LEVEL, alpha=ALPHA, strata=strata, statistic=weighted_mean_statistic)
    else:
        result = paired_bootstrap(scores, names=[str(sid) for sid, _, _ in usable], samples=SAMPLES, seed=SEED,
                                  level=LEVEL, alpha=ALPHA, strata=strata)
    rank_of = {str(sid): rank for sid, rank, _ in usable}
    places = {r.name: r for r in rank_groups(result, [str(sid) for sid, _, _ in usable], alpha=ALPHA, level=LEVEL)}
    by_position = [r.name for r in places.values()]
    for summary in result.systems:
        place = places[summary.name]
        if not (math.isfinite(summary.ci_low) and math.isfinite(summary.ci_high)):
            # QuAC's filtered F1 on a tiny set: some resample drew only questions that do not count.
            payload["notes"][summary.name] = UNDEFINED
            continue
        payload["rows"][summary.name] = {
            "ci": [summary.ci_low, summary.ci_high],
            "p": summary.p_value,
            "group": rank_of[by_position[place.group - 1]],
            "ranks": [place.rank_low, place.rank_high],
            "datasets": {label: list(ci) for label, ci in summary.strata_ci.items()
                         if math.isfinite(ci[0]) and math.isfinite(ci[1])},
        }
    payload["leader"] = rank_of[result.leader]
    return payload


def _question_vectors(inputs: SignificanceInputs, sids: list[int]) -> tuple[
        dict[int, dict[int, np.ndarray]], dict[int, str]]:
    """Per dataset, per submission: the ranking metric's per-question values (filled in once and
    stored); and the rows that have none, or whose values do not give back their score."""
    qids = dict(DatasetFile.objects.filter(dataset_id__in=inputs.datasets, portion=inputs.portion)
                .values_list("dataset_id", "qids"))
    stored = {(s, d): v for s, d, v in Score.objects.filter(
        submission_id__in=sids, dataset_id__in=inputs.datasets, metric=inputs.metric,
    ).values_list("submission_id", "dataset_id", "value")}
    vectors: dict[int, dict[int, np.ndarray]] = {pk: {} for pk in inputs.datasets}
    notes: dict[int, str] = {}
    rows = QuestionScores.objects.filter(submission_id__in=sids, dataset_id__in=inputs.datasets)
    # A vector is kept under the metric and the questions it is aligned with: a replaced gold (other
    # questions, or as many in another order) makes it stale, and it is built again.
    keys = {pk: f"{inputs.metric}:{hashlib.sha256(chr(10).join(q).encode()).hexdigest()[:16]}"
            for pk, q in qids.items()}
    for row_pk, sid, blob, metric, pk in rows.values_list("pk", "submission_id", "vector", "vector_metric",
                                                          "dataset_id"):
        if blob is None or metric != keys.get(pk):
            records = QuestionScores.objects.values_list("records", flat=True).get(pk=row_pk)
            vector = question_vector(records, qids.get(pk, []), inputs.metric, stored.get((sid, pk)))
            blob = None if vector is None else vector.tobytes()
            QuestionScores.objects.filter(pk=row_pk).update(vector=blob, vector_metric=keys.get(pk, inputs.metric))
        if blob is None:
            notes[sid] = NOT_REPRODUCED
            continue
        vectors[pk][sid] = np.frombuffer(bytes(blob), dtype=np.float32)
    answered = {sid for by_sid in vectors.values() for sid in by_sid} | set(notes)
    for sid, _, value in inputs.rows:
        if sid not in answered:
            notes[sid] = NO_QUESTION_SCORES
            continue
        if sid in notes:
            continue
        # Datasets a row did not answer count 0 in its average, as on the board.
        means = []
        for pk in inputs.datasets:
            if not vectors[pk]:
                continue
            vector = vectors[pk].get(sid)
            means.append(0.0 if vector is None else float(np.nanmean(vector.astype(np.float64))))
        if not means or abs(sum(means) / len(means) - value) > REPRODUCE_TOLERANCE:
            notes[sid] = NOT_REPRODUCED
    return vectors, notes


def question_vector(records: Any, qids: Sequence[str], metric: str, expected: float | None) -> np.ndarray | None:
    """``metric``'s per-question values for ``qids`` (a question without a record scores 0), in the
    board's units, as float32 with NaN for questions that do not count; None when no field of the
    records gives back ``expected`` (the dataset's stored score) as their mean.

    The scale (records hold 0-1, boards 0-100, or the same units) and the field are found by that
    check rather than assumed per suite, so a suite whose records do not decompose its score
    gets no interval instead of a wrong one.
    """
    if expected is None or not isinstance(records, list) or not qids:
        return None
    by_qid = {str(r.get("qid", r.get("id"))): r for r in records if isinstance(r, dict)}
    for name in _ALIASES.get(metric, (metric,)):
        raw = np.zeros(len(qids), dtype=np.float64)
        ok = False
        for i, qid in enumerate(qids):
            record = by_qid.get(qid)
            if record is None:
                continue
            value = record.get(name)
            if record.get("filtered") is True or (value is None and name in record):
                raw[i] = math.nan  # left out of the metric (QuAC's filtered questions, DuReader's unscored)
            elif isinstance(value, bool) or not isinstance(value, int | float):
                break
            else:
                raw[i] = float(value)
                ok = True
        else:
            if not ok or np.isnan(raw).all():
                continue
            mean = float(np.nanmean(raw))
            for scale in (100.0, 1.0):
                if abs(mean * scale - expected) <= REPRODUCE_TOLERANCE:
                    return (raw * scale).astype(np.float32)
    return None


def _from_payload(payload: dict[str, Any], *, computed_at: Any) -> Significance:
    rows: dict[int, RowSignificance] = {}
    for sid, note in payload.get("notes", {}).items():
        rows[int(sid)] = RowSignificance(note=note)
    for sid, data in payload.get("rows", {}).items():
        rows[int(sid)] = RowSignificance(
            ci=(data["ci"][0], data["ci"][1]), p_value=data["p"], group=data["group"],
            rank_range=(data["ranks"][0], data["ranks"][1]),
            datasets={int(pk): (ci[0], ci[1]) for pk, ci in data["datasets"].items()},
        )
    return Significance(status="ready", rows=rows, leader_rank=payload.get("leader"),
                        computed_at=computed_at.isoformat() if computed_at else "")
