"""The results of a judging round: Yang et al.'s Tables 1-3 and the systems ranked by people.

Everything numeric is ``scoring.metaeval`` run on the round's own export
(:func:`selectors.round_judgments_export`, one line per system's answer) against the round's
references (:func:`round_references_export`, an MRC2018 reference file): the same two files an
organizer downloads give the same tables from ``python -m scoring metaeval`` (one rule, one
place).  What the platform adds is the board: each system's automatic score beside its human
score and rank, and Kendall's tau-b between the two rankings.

Seeds are the round's: the paired bootstrap, the overall level's draws and the interval of each
system's human score are drawn from ``round.seed``, so the page and a rerun agree to the bit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from leaderboard.judging.models import Round, RoundItem, RoundState, RoundSystem
from leaderboard.judging.selectors import round_judged, round_judgments_export
from scoring.agreement import Interval, kendall_tau_b, mean_interval
from scoring.errors import ScoringError
from scoring.metaeval import (
    INTERVAL_SAMPLES,
    PAPER_OVERALL_QUESTIONS,
    PAPER_OVERALL_SAMPLES,
    PAPER_SAMPLES,
    Level,
    evaluate_metaeval,
    format_tables,
    match_references,
    metaeval_tables,
    parse_judgments,
    parse_references,
)
from scoring.tables import MARKDOWN_EMPTY, Table, fixed

TableFormat = Literal["markdown", "csv", "latex"]
TABLE_FORMATS: tuple[TableFormat, ...] = ("markdown", "csv", "latex")
# metaeval's levels: DuReader's answers are Chinese (characters, white space removed, as the
# official scripts compare them); MRQA's are English words.
SUITE_LEVELS: dict[str, Level] = {"mrc2018": "char", "mrqa": "word"}


def round_references_export(*, round: Round) -> str:
    """The round's references as an MRC2018 reference file, the ``REF.jsonl`` of ``metaeval``:
    the references each item kept when it was sampled (not today's gold file, which may have
    changed since).  A suite without question types (MRQA) gets the dataset as the type, so that
    metaeval's groups are the round's (:attr:`selectors.JudgedCandidate.group`)."""
    lines = []
    for item in RoundItem.objects.filter(round=round).select_related("dataset").order_by("position"):
        references = list(item.references)
        record: dict[str, Any] = {
            "question_id": item.qid,
            "question_type": item.question_type or item.dataset.slug,
            "source": item.dataset.slug,
            "answers": [r["text"] for r in references],
            # One label per answer or none, as DuReader's gold has them.
            "yesno_answers": [r.get("yesno", "") for r in references] if any(r.get("yesno") for r in references)
            else [],
        }
        if item.entities:
            record["entity_answers"] = [list(item.entities)]
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return "".join(lines)


def overall_questions_default(*, items: int) -> int:
    """Questions per draw of the overall level: the paper's 30 (of 500) where the round has 60
    questions or more, else half the round's, so that 100 draws of a small round still differ."""
    return PAPER_OVERALL_QUESTIONS if items >= 2 * PAPER_OVERALL_QUESTIONS else max(1, items // 2)


@dataclass(frozen=True)
class SystemRow:
    """A system of the round: its human score (mean over its questions, bootstrap interval) and
    rank, beside its board score and its rank by it among the round's systems."""

    system: RoundSystem
    human: Interval | None
    human_rank: int | None
    board_score: float | None
    board_rank: int | None


@dataclass(frozen=True)
class RoundResults:
    round: Round
    level: Level
    overall_questions: int
    overall_samples: int
    metrics: Mapping[str, Any]  # evaluate_metaeval's, as the command line prints them in JSON
    warnings: Sequence[str]
    systems: Sequence[SystemRow]
    board_tau: float | None  # Kendall's tau-b between the human and the board's ranking

    @property
    def tables(self) -> list[Table]:
        return metaeval_tables(self.metrics)


def _ranks(values: Sequence[float | None]) -> list[int | None]:
    """1 for the highest; equal values share the better rank; None stays unranked."""
    defined = sorted((v for v in values if v is not None), reverse=True)
    return [None if v is None else defined.index(v) + 1 for v in values]


def round_results(*, round: Round, overall_questions: int | None = None,
                  overall_samples: int = PAPER_OVERALL_SAMPLES) -> RoundResults | None:
    """The round's results, or None while nothing is judged.  ``overall_questions``: questions per
    draw of the overall level (default :func:`overall_questions_default`)."""
    export = round_judgments_export(round=round, fmt="jsonl", per_system=True)
    if not export:
        return None
    suite_key = round.phase.challenge.metric_suite
    level = SUITE_LEVELS[suite_key]
    name = f"round-{round.pk}-judgments.jsonl"
    references = parse_references(
        ((f"round-{round.pk}-references.jsonl", number, json.loads(line))
         for number, line in enumerate(round_references_export(round=round).splitlines(), start=1)),
        name=f"round-{round.pk}-references.jsonl")
    candidates = match_references(parse_judgments(export, name=name), references, level=level, path=name)
    n = overall_questions or overall_questions_default(items=round.items.count())
    result = evaluate_metaeval(candidates, samples=PAPER_SAMPLES, seed=round.seed, overall_questions=n,
                               overall_samples=overall_samples, path=name)
    summary = {row["system"]: row for row in result.metrics["systems"]["systems"]}
    systems = list(RoundSystem.objects.filter(round=round).select_related("submission__team").order_by("id"))
    board = [s.submission.primary_score for s in systems]
    humans = [Interval(**summary[s.label]["human"]) if s.label in summary and summary[s.label]["human"] else None
              for s in systems]
    human_means = [h.mean if h is not None else None for h in humans]
    rows = [SystemRow(system=s, human=h, human_rank=hr, board_score=b, board_rank=br)
            for s, h, hr, b, br in zip(systems, humans, _ranks(human_means), board, _ranks(board))]
    tau = kendall_tau_b([math.nan if v is None else v for v in human_means],
                        [math.nan if v is None else v for v in board])
    return RoundResults(round=round, level=level, overall_questions=n, overall_samples=overall_samples,
                        metrics=result.metrics, warnings=result.warnings, systems=rows, board_tau=tau)


@dataclass(frozen=True)
class ShownTable:
    """A table as the results page shows it: the cells written as the Markdown download writes them."""

    key: str
    title: str
    header: Sequence[str]
    numeric: Sequence[bool]
    rows: Sequence[Sequence[str]]
    notes: Sequence[str]


def _cell(value: object, decimals: int, signed: bool) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MARKDOWN_EMPTY
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    text = fixed(value, decimals)
    return "+" + text if signed and not text.startswith("-") and float(text) != 0 else text


def tables_shown(tables: Sequence[Table]) -> list[ShownTable]:
    return [ShownTable(
        key=t.key, title=t.title, header=[c.flat_label for c in t.columns], numeric=[c.numeric for c in t.columns],
        rows=[[_cell(v, c.decimals, c.signed) for v, c in zip(row, t.columns)] for row in t.rows], notes=t.notes,
    ) for t in tables]


def round_results_tables(*, results: RoundResults, fmt: TableFormat) -> str:
    """The tables of the results page in a paper format, exactly as ``python -m scoring metaeval
    --format FMT --seed SEED --overall-questions N`` prints them for the round's two files."""
    if fmt not in TABLE_FORMATS:
        raise ScoringError(f"unknown table format {fmt!r}; expected markdown, csv or latex")
    return format_tables(results.metrics, fmt)


# --------------------------------------------------------------------------- the human column


@dataclass(frozen=True)
class HumanScore:
    """A system's human score in a published round: what the board's human column shows."""

    round_id: int
    mean: float
    low: float
    high: float
    n: int  # questions judged


def round_human_scores(*, round: Round) -> dict[int, HumanScore]:
    """``{submission id: HumanScore}``: each system's mean human score over its judged questions
    (a candidate's adjudicated score, else its judges' mean) with the bootstrap interval
    ``metaeval``'s system summary draws (:func:`scoring.agreement.mean_interval`, round's seed),
    the questions in the export's order, so the board and the results page show one number."""
    per_system: dict[str, list[float]] = {}
    for judged in round_judged(round=round):
        human = judged.human
        if human is None:
            continue
        for label in judged.systems:
            per_system.setdefault(label, []).append(human)
    out: dict[int, HumanScore] = {}
    for system in RoundSystem.objects.filter(round=round):
        interval = mean_interval(per_system.get(system.label, []), samples=INTERVAL_SAMPLES, seed=round.seed)
        if interval is not None:
            out[system.submission_id] = HumanScore(round.pk, interval.mean, interval.low, interval.high, interval.n)
    return out


def phase_human_scores(*, phase_id: int) -> dict[int, HumanScore]:
    """The human scores of the phase's latest *published* round, by submission id; ``{}`` when no
    round of the phase is published.  The only read of human scores beyond the organizers:
    draft, open and closed rounds never reach a board, an export, the API or a team page."""
    latest = (Round.objects.filter(phase_id=phase_id, state=RoundState.PUBLISHED)
              .order_by("-published_at", "-id").first())
    return round_human_scores(round=latest) if latest is not None else {}
