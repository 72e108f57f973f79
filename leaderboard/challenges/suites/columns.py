"""What a board and a submission's page show of a suite: the columns of a phase, and metric labels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from leaderboard.challenges.suites.base import DEFAULT_DECIMALS, Column, Suite
from leaderboard.challenges.suites.mrqa import MRQA_AGGREGATE
from scoring.dialogs import DIALOG_FORMATS, Mode

# One rule for the board and a participant's local harness (python -m scoring converse).
from scoring.protocol import TURN_BUCKETS, turn_metric

if TYPE_CHECKING:
    from leaderboard.challenges.models import Phase


def phase_aggregate_columns(suite: Suite, phase: Phase) -> list[Column]:
    """A board's overall columns: the suite's, and for a phase in the interactive protocol
    each mode's F1 (the first mode's is the ranking F1, labelled with its mode), the drop from gold to
    own history, and the system's speed in the first mode (``dialog_runs`` stores them all)."""
    modes = [Mode(m) for m in phase.protocol_modes]
    if not modes:
        return list(suite.aggregate_columns)
    columns = [Column(c.metric, f"{c.label} ({modes[0].label})", c.decimals) if c.metric == suite.primary_metric
               else c for c in suite.aggregate_columns]
    at = next(i for i, c in enumerate(columns) if c.metric == suite.primary_metric) + 1
    extra = [Column(f"{m.value}_f1", f"F1 ({m.label})") for m in modes[1:]]
    if Mode.GOLD in modes and Mode.OWN in modes:
        extra.append(Column("gold_own_drop", "Drop gold \u2192 own history"))
    speed = [Column("latency_p50_ms", "ms/question p50", 0), Column("latency_p95_ms", "ms/question p95", 0),
             Column("questions_per_s", "Questions/s", 0), Column("peak_memory_mib", "Peak MiB", 0)]
    return [*columns[:at], *extra, *columns[at:], *speed]


# F1 by turn position (errors compound along a dialog, Siblini et al.): turns 1..6, then 7 and later.


def turn_columns(prefix: str = "Turn") -> list[Column]:
    """F1 by turn position, for a phase in the interactive protocol (``prefix``: the label's start;
    the board groups them under "F1 by turn", elsewhere they say "F1 at turn")."""
    return [Column(turn_metric(k), f"{prefix} {k}" if k <= TURN_BUCKETS else f"{prefix} {k}+")
            for k in range(1, TURN_BUCKETS + 2)]


def phase_metric_columns(suite: Suite, phase: Phase) -> list[Column]:
    """Every overall metric a phase's submissions have, in the board's order, labelled for a list
    outside the board (a submission's page): the suite's, then the interactive protocol's."""
    columns = list(suite.aggregate_columns)
    if phase.protocol_modes:
        known = {c.metric for c in columns}
        columns += [c for c in phase_aggregate_columns(suite, phase) if c.metric not in known]
        if phase.challenge.metric_suite in DIALOG_FORMATS:
            columns += turn_columns("F1 at turn")
    return columns


# Words of metric names as people write them ("hasans_exact" -> "HasAns EM").
_LABEL_WORDS = {"f1": "F1", "em": "EM", "exact": "EM", "acc": "accuracy", "hasans": "HasAns", "noans": "NoAns",
                "yesno": "yes/no", "followup": "follow-up", "heq": "HEQ"}
_LABEL_PREFIXES = (("rouge_l", "ROUGE-L"), ("bleu_4", "BLEU-4"))


def metric_column(suite: Suite, metric: str, *, per_dataset: bool = False, extra: Sequence[Column] = ()) -> Column | None:
    """The board's column of a metric (the suite's, or one of ``extra``: a phase's own), if it has one."""
    own = suite.dataset_columns if per_dataset else suite.aggregate_columns
    return next((c for c in (*own, *extra, *suite.aggregate_columns, *suite.dataset_columns) if c.metric == metric),
                None)


def metric_decimals(suite: Suite, metric: str, *, per_dataset: bool = False, extra: Sequence[Column] = ()) -> int:
    """The digits a metric's value is shown with wherever people read it: its column's (0 for a count,
    milliseconds or MiB), 2 for a metric the board has no column for."""
    column = metric_column(suite, metric, per_dataset=per_dataset, extra=extra)
    return column.decimals if column is not None else DEFAULT_DECIMALS


def metric_label(suite: Suite, metric: str, *, per_dataset: bool = False, extra: Sequence[Column] = ()) -> str:
    """What a metric is called where people read it: the board's label (the suite's ``Column``, or
    one of ``extra``: a phase's own columns), else one made from its name ("split_II_macro_em" ->
    "Split II EM"), never the raw key."""
    column = metric_column(suite, metric, per_dataset=per_dataset, extra=extra)
    if column is not None:
        return column.label
    match = MRQA_AGGREGATE.fullmatch(metric)
    if match is not None:
        split, family = match.groups()
        return f"{f'Split {split}' if split else 'Macro'} {family.upper()}"
    head, rest = "", metric
    for prefix, label in _LABEL_PREFIXES:
        if metric.startswith(prefix):
            head, rest = label, metric[len(prefix):]
    # MRC2018's question types keep DuReader's labels in the key (YES_NO, ENTITY): lower-cased here.
    rest = rest.replace("YES_NO", "yesno")
    words = [_LABEL_WORDS.get(w, w.lower() if w.isupper() else w) for w in rest.split("_") if w]
    label = " ".join([head, *words]).strip()
    return label[:1].upper() + label[1:]
