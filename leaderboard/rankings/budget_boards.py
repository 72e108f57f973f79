"""Budget tracks' boards and the cost-versus-score frontier, from the figures every run records.

Read from the phase's board as its viewer gets it (``board_build``: which rows, which scores, the
interactive protocol's p95 latency per question) and, per row, from the run's report
(``submissions.selectors.submission_run_report``: what a team may see of a run's time and memory).
So a run on hidden data shows teams its time in whole seconds and its memory in whole MiB, and
nothing before its run is charged to the team, exactly as its own page does; organizers (the
organizer view) read the exact figures.  The time per 1,000 questions of a phase reading a sealed
dataset is for organizers only: a team would learn the sealed dataset's size from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from leaderboard.challenges.budget_tracks import AXES, MIB, BudgetAxis, BudgetTrack, phase_budget_tracks
from leaderboard.challenges.models import SYSTEM_KINDS
from leaderboard.rankings.selectors import ORGANIZER, Board, BoardRow
from leaderboard.sandbox.contract import SystemSettings
from leaderboard.submissions.models import RunAttempt, Status, Submission
from leaderboard.submissions.selectors import phase_gold_files, phase_reads_sealed_data, submission_run_report

AXIS_OF = {axis.key: axis for axis in AXES}
# Why a figure is missing, in the words a board shows.
HIDDEN_SIZE = "withheld: the phase reads a sealed dataset, whose size is not shown"
NOT_YET = "not shown until the run is charged"


@dataclass(frozen=True)
class RunFigures:
    """One board row's system and what this viewer may read of its cost."""

    row: BoardRow
    score: float | None  # the board's ranking figure, as this viewer's board shows it
    figures: Mapping[str, float | None]  # axis key -> figure (None: not measured, or not the viewer's)
    withheld: Mapping[str, str]  # axis key -> why this viewer does not see it
    image_digest: str  # what ran: the image id, or a bundle's archive sha256
    hardware_class: str  # the worker's words for its hardware ("" not stated)


@dataclass(frozen=True)
class TrackRow:
    entry: RunFigures
    rank: int | None  # among the runs within the track's limits; None: over budget
    over: Mapping[str, float]  # axis -> the figure over its limit
    unknown: tuple[str, ...]  # limited axes whose figure this viewer has not


@dataclass(frozen=True)
class TrackBoard:
    track: BudgetTrack
    rows: list[TrackRow]


@dataclass(frozen=True)
class BudgetBoards:
    board: Board
    entries: list[RunFigures]
    tracks: list[TrackBoard]
    # Board rows that are not systems run here (prediction files, imported results): no figures.
    unmeasured: int = 0
    charts: list[tuple[BudgetAxis, str]] = field(default_factory=list)


def _score(board: Board, row: BoardRow) -> float | None:
    return row.values.get(board.primary_key)


def budget_figures(*, board: Board) -> tuple[list[RunFigures], int]:
    """Each ranked system row's figures, as the board's viewer may see them; and how many rows have none."""
    phase = board.phase
    organizer = board.view == ORGANIZER
    ids = [row.submission_id for row in board.rows]
    submissions = {s.pk: s for s in Submission.objects.filter(pk__in=ids).select_related("phase__challenge")}
    attempts = {(a.submission_id, a.number): a for a in RunAttempt.objects.filter(
        submission_id__in=ids, history=None).only("submission_id", "number", "hardware_class")}
    questions = sum(f.n_questions for f in phase_gold_files(phase=phase))
    size_hidden = not organizer and phase_reads_sealed_data(phase=phase)
    gpus = SystemSettings.from_json(phase.challenge.system_settings or None).gpus
    out: list[RunFigures] = []
    unmeasured = 0
    for row in board.rows:
        submission = submissions.get(row.submission_id)
        # An excluded row (disqualified, or left out by the organizers) is unranked on the board: on no track.
        if (submission is None or submission.kind not in SYSTEM_KINDS or submission.status != Status.FINISHED
                or row.excluded_reason):
            unmeasured += 1
            continue
        report = submission_run_report(submission=submission, is_organizer=organizer)
        withheld: dict[str, str] = {}
        seconds = report.run_seconds
        per_1000: float | None = None
        if size_hidden:
            withheld["seconds_per_1000_questions"] = HIDDEN_SIZE
        elif seconds is not None and questions:
            per_1000 = seconds * 1000 / questions
        if report.figures_withheld:
            withheld.update({"peak_memory_mib": NOT_YET, "seconds_per_1000_questions": NOT_YET})
        latency = row.values.get("agg:latency_p95_ms") if phase.protocol_modes else None
        figures = {
            "image_mib": submission.size_bytes / MIB,
            "peak_memory_mib": None if report.peak_memory_mb is None else float(report.peak_memory_mb),
            "seconds_per_1000_questions": per_1000,
            "latency_p95_ms": latency,
            "gpus": float(gpus),
        }
        attempt = attempts.get((submission.pk, submission.attempts))
        out.append(RunFigures(row=row, score=_score(board, row), figures=figures, withheld=withheld,
                              image_digest=submission.image_digest or submission.sha256,
                              hardware_class=attempt.hardware_class if attempt is not None else ""))
    return out, unmeasured


def track_board(track: BudgetTrack, entries: Sequence[RunFigures]) -> TrackBoard:
    """The track's rows: those within its limits first, ranked by score (ties share a rank), then the
    runs over budget, unranked, each with the figures that put it over."""
    within: list[tuple[RunFigures, tuple[str, ...]]] = []
    over: list[TrackRow] = []
    for entry in entries:
        unknown = tuple(k for k in track.limits if entry.figures.get(k) is None)
        excess = track.over(entry.figures)
        if excess:
            over.append(TrackRow(entry, None, excess, unknown))
        else:
            within.append((entry, unknown))
    within.sort(key=lambda pair: -(pair[0].score if pair[0].score is not None else -math.inf))
    rows: list[TrackRow] = []
    previous: float | None = None
    rank = 0
    for position, (entry, unknown) in enumerate(within, start=1):
        if entry.score is None:
            rows.append(TrackRow(entry, None, {}, unknown))
            continue
        if entry.score != previous:
            rank, previous = position, entry.score
        rows.append(TrackRow(entry, rank, {}, unknown))
    return TrackBoard(track, rows + over)


def pareto_frontier(points: Sequence[tuple[float, float]]) -> set[int]:
    """Indexes of the points no other point beats: none costs as little or less and scores as much or
    more with one of the two strictly better (lower cost is better, higher score is better)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    best = -math.inf
    frontier: set[int] = set()
    last: tuple[float, float] | None = None
    for i in order:
        cost, score = points[i]
        if score > best:
            frontier.add(i)
            best, last = score, (cost, score)
        elif last is not None and (cost, score) == last:
            frontier.add(i)  # the same cost and score as a frontier point: neither beats the other
    return frontier


def budget_boards_build(*, board: Board) -> BudgetBoards:
    entries, unmeasured = budget_figures(board=board)
    tracks = [track_board(track, entries) for track in phase_budget_tracks(phase=board.phase)]
    charts = []
    for axis in AXES:
        if axis.key == "gpus":
            continue  # a phase's runs all get its GPUs: no axis to trade along
        if sum(1 for e in entries if e.figures.get(axis.key) is not None and e.score is not None) >= 1:
            charts.append((axis, budget_chart_svg(entries, axis=axis, score_label=_score_label(board))))
    return BudgetBoards(board, entries, tracks, unmeasured, charts)


def _score_label(board: Board) -> str:
    column = next((c for c in board.columns if c.key == board.primary_key), None)
    return column.label if column is not None else "score"


def figure_text(axis: BudgetAxis, value: float | None) -> str:
    if value is None:
        return "—"
    # A small figure (a bundle of some KiB, in MiB) keeps two significant digits instead of reading 0.
    number = f"{value:.2g}" if 0 < abs(value) < 1 else f"{value:,.{axis.decimals}f}"
    return f"{number} {axis.unit}".strip()


# ---------------------------------------------------------------------------------------- the chart

_W, _H = 640, 340
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 24, 16, 52
FRONTIER = "#d62728"
OTHER = "#1f77b4"


def _scale(values: Sequence[float]) -> tuple[bool, float, float]:
    """Log or linear, and the ends: log where the figures span more than 20 times (image sizes do)."""
    low, high = min(values), max(values)
    if low > 0 and high / low > 20:
        return True, math.log10(low) - 0.1, math.log10(high) + 0.1
    pad = (high - low) * 0.08 or max(abs(high) * 0.1, 1.0)
    return False, max(0.0, low - pad) if low >= 0 else low - pad, high + pad


def _ticks(log: bool, low: float, high: float) -> list[float]:
    if log:
        return [10.0 ** k for k in range(math.ceil(low), math.floor(high) + 1)] or [10 ** low]
    step = 10 ** math.floor(math.log10((high - low) / 4 or 1))
    for factor in (1, 2, 5, 10):
        if (high - low) / (step * factor) <= 6:
            step *= factor
            break
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def budget_chart_svg(entries: Sequence[RunFigures], *, axis: BudgetAxis, score_label: str) -> str:
    """Score against one cost for every run with both, the best (Pareto) frontier marked in red and
    joined by a step line; each point's title carries the figure, the image digest and the hardware.
    Server-rendered SVG with a viewBox, so it scales down to a narrow screen."""
    points = [(e, float(e.figures[axis.key]), float(e.score))  # type: ignore[arg-type]
              for e in entries if e.figures.get(axis.key) is not None and e.score is not None]
    title = f"{score_label} against {axis.label.lower()}"
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" '
            f'class="budget-chart" role="img" aria-label="{escape(title)}" font-family="sans-serif" font-size="13">'
            f"<title>{escape(title)}</title>")
    if not points:
        return head + f'<text x="{_W / 2}" y="{_H / 2}" text-anchor="middle">No run has this figure yet.</text></svg>'
    log, x_low, x_high = _scale([c for _, c, _ in points])
    _, y_low, y_high = _scale([s for _, _, s in points])
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def px(cost: float) -> float:
        value = math.log10(cost) if log else cost
        return _LEFT + (value - x_low) / (x_high - x_low) * plot_w

    def py(score: float) -> float:
        return _TOP + plot_h - (score - y_low) / (y_high - y_low) * plot_h

    parts = [head, f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>']
    for tick in _ticks(False, y_low, y_high):
        y = py(tick)
        parts.append(f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for tick in _ticks(log, x_low, x_high):
        x = px(tick)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP}" y2="{_TOP + plot_h}" stroke="#eee"/>')
        parts.append(f'<text x="{x:.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle">{tick:,g}</text>')
    unit = f" ({axis.unit}{', log scale' if log else ''})" if axis.unit else ""
    parts.append(f'<text x="{_LEFT + plot_w / 2}" y="{_H - 10}" text-anchor="middle">'
                 f"{escape(axis.label)}{escape(unit)}, lower is cheaper</text>")
    parts.append(f'<text transform="translate(14,{_TOP + plot_h / 2}) rotate(-90)" text-anchor="middle">'
                 f"{escape(score_label)}</text>")
    frontier = pareto_frontier([(c, s) for _, c, s in points])
    steps = sorted((points[i][1], points[i][2]) for i in frontier)
    if len(steps) > 1:
        path = [f"M{px(steps[0][0]):.1f},{py(steps[0][1]):.1f}"]
        for (_, s0), (c1, s1) in zip(steps, steps[1:], strict=False):
            path.append(f"H{px(c1):.1f}V{py(s1):.1f}" if s1 != s0 else f"H{px(c1):.1f}")
        parts.append(f'<path class="frontier" d="{"".join(path)}" fill="none" stroke="{FRONTIER}" '
                     'stroke-width="1.5" stroke-dasharray="4 3"/>')
    for i, (entry, cost, score) in enumerate(points):
        on = i in frontier
        hardware = entry.hardware_class or "hardware not stated"
        tip = (f"{entry.row.team_name}: {score_label} {score:.2f}, {axis.label.lower()} {figure_text(axis, cost)}; "
               f"{entry.image_digest[:19] or 'no digest'}; {hardware}{'; on the frontier' if on else ''}")
        parts.append(f'<circle class="{"point frontier-point" if on else "point"}" cx="{px(cost):.1f}" '
                     f'cy="{py(score):.1f}" r="{6 if on else 4.5}" fill="{FRONTIER if on else OTHER}" '
                     f'fill-opacity="{1 if on else 0.6}" data-digest="{escape(entry.image_digest)}">'
                     f"<title>{escape(tip)}</title></circle>")
        if on:
            name = entry.row.team_name if len(entry.row.team_name) <= 18 else entry.row.team_name[:17] + "…"
            anchor = "end" if px(cost) > _LEFT + plot_w * 0.7 else "start"
            dx = -9 if anchor == "end" else 9
            parts.append(f'<text class="frontier-label" x="{px(cost) + dx:.1f}" y="{py(score) - 7:.1f}" '
                         f'text-anchor="{anchor}" fill="#333">{escape(name)}</text>')
    parts.append(f'<g class="legend" transform="translate({_LEFT + 8},{_TOP + 14})">'
                 f'<circle r="5" fill="{FRONTIER}"/><text x="9" y="4">best frontier</text>'
                 f'<circle cx="110" r="4" fill="{OTHER}" fill-opacity="0.6"/><text x="118" y="4">other runs</text></g>')
    parts.append("</svg>")
    return "".join(parts)
