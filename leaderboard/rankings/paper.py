"""Averages by dataset tag, and the overview paper's tables, from the boards a viewer gets.

Both are computed from built boards (``rankings.selectors.board_build``), never from the scores:
a board has already withheld what its viewer may not see (a sealed dataset's column, an aggregate
a sealed score would follow from, an anonymous team's name, a hidden team's row), so nothing here
can show more than the board does.  A number that would be computed from a cell the board
withholds is withheld in turn, and a sealed dataset's tags are not read for the public at all:
they would narrow down which dataset hides behind its alias.

The paper's tables follow the MRQA 2019 overview (Fisch et al., 2019): the main table (each
phase's per-split and ranking averages, one row per team ranked as the board), the per-dataset
appendix, averages by dataset tag (its Table 4), the best system's gain over the best baseline
per dataset, and the correlation of in-domain (Split I) with out-of-domain performance.
``rankings.paper_tables`` writes them as LaTeX, CSV or Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from leaderboard.challenges.models import Dataset, Phase, Split
from leaderboard.challenges.selectors import AGGREGATE_SEALED_NOTE, phase_ranking_scope
from leaderboard.core.display import fixed
from leaderboard.rankings.board_significance import METHOD
from leaderboard.rankings.paper_tables import (
    Cell,
    Column,
    Table,
    improvement_over_baseline,
    pearson,
    tables_csv,
    tables_latex,
    tables_markdown,
)
from leaderboard.rankings.selectors import (
    DATASET_SEALED_NOTE,
    ORGANIZER,
    WITHHELD_SIGNIFICANCE,
    Board,
    BoardColumn,
    BoardNotVisible,
    BoardRow,
    Viewer,
    board_build,
    board_phases,
)

WITHHELD = "withheld"
SEALED = "sealed"
# A cell from another phase's board for a team anonymous to the viewer: each board shows its rows as
# "Anonymous", so nothing tells the public which of them are one team, and the export does not either.
UNLINKED = "anonymous"
UNLINKED_NOTE = (f"{UNLINKED}: an anonymous team's row on another board is not linked to it, as the boards "
                 "themselves do not link them")
SPLIT_I_KEY = "agg:split_I_macro_f1"
# Pearson's r of two systems is always +-1: it says nothing.
MIN_CORRELATED = 3
TAGS_SEALED_NOTE = ("Sealed datasets are in no group until the organizers reveal them: their tags would narrow "
                    "down which dataset an alias hides")

# ?format= -> (file extension, content type).
PAPER_FORMATS: dict[str, tuple[str, str]] = {
    "latex": ("tex", "application/x-tex; charset=utf-8"),
    "csv": ("csv", "text/csv; charset=utf-8"),
    "md": ("md", "text/markdown; charset=utf-8"),
}


def _metric_columns(board: Board) -> list[tuple[int, BoardColumn]]:
    """The board's columns of the per-dataset metric its ranking averages, with their datasets' pks."""
    if not board.ranked_metric:
        return []
    out = []
    for column in board.columns:
        kind, _, rest = column.key.partition(":")
        pk, _, metric = rest.partition(":")
        if kind == "ds" and metric == board.ranked_metric:
            out.append((int(pk), column))
    return out


def _withheld(row: BoardRow, column: BoardColumn) -> bool:
    return column.sealed or column.key in row.sealed_keys


def _linkable(row: BoardRow, board: Board) -> bool:
    """Whether the row's team may be matched with its rows on the challenge's other boards."""
    return board.view == ORGANIZER or row.is_own or not row.is_anonymous


# --------------------------------------------------------------------------- averages by tag


@dataclass(frozen=True)
class TagGroup:
    tag: str
    value: str
    datasets: tuple[str, ...]  # as the board labels them
    keys: tuple[str, ...]  # their columns on the board

    @property
    def label(self) -> str:
        return f"{self.tag}: {self.value}"


# A group's mean for a row; WITHHELD where a dataset of the group is withheld for the row, None
# where one has no score for it (a mean over fewer datasets would be mislabelled).
TagCell = float | str | None


@dataclass(frozen=True)
class TagAverages:
    metric_label: str  # the per-dataset column averaged: "F1"
    decimals: int
    groups: tuple[TagGroup, ...]
    cells: dict[int, tuple[TagCell, ...]]  # by submission id, one per group
    # The board seals some dataset, whose tags are then not read (the public view).
    leaves_out_sealed: bool = False

    def texts(self, row: BoardRow) -> list[str]:
        """A row's cells as the board page shows them."""
        return [SEALED if cell == WITHHELD else "—" if cell is None else fixed(float(cell), self.decimals)
                for cell in self.cells.get(row.submission_id, ())]


def dataset_tags_visible(*, board: Board) -> dict[int, dict[str, str]]:
    """The tags of the board's datasets that its viewer may read, by dataset pk: none of a dataset
    whose column the board seals."""
    shown = [pk for pk, column in _metric_columns(board) if not column.sealed]
    stored = dict(Dataset.objects.filter(pk__in=shown).values_list("pk", "tags"))
    return {pk: {str(tag): str(value) for tag, value in (stored.get(pk) or {}).items()} for pk in shown}


def board_tag_averages(*, board: Board, tags: Mapping[int, Mapping[str, str]] | None = None) -> TagAverages:
    """Per row, the mean of the ranking's per-dataset metric over the datasets sharing each (tag, value).

    ``tags``: by dataset pk (default: ``dataset_tags_visible``).  Groups come in the order their tag,
    then their value, first appears in the board's columns.  A group with a dataset the board
    withholds for a row (a sealed column) is withheld for that row, whatever the other datasets
    show: a mean with a withheld term would give it away, given the others.
    """
    columns = _metric_columns(board)
    if tags is None:
        tags = dataset_tags_visible(board=board)
    members: dict[tuple[str, str], list[BoardColumn]] = {}
    for pk, column in columns:
        for tag, value in (tags.get(pk) or {}).items():
            members.setdefault((tag, value), []).append(column)
    tag_order = list(dict.fromkeys(tag for tag, _ in members))
    ordered = sorted(members.items(), key=lambda item: tag_order.index(item[0][0]))  # stable: values keep theirs
    groups = tuple(TagGroup(tag, value, tuple(c.group for c in cols), tuple(c.key for c in cols))
                   for (tag, value), cols in ordered)
    cells: dict[int, tuple[TagCell, ...]] = {}
    for row in board.rows:
        out: list[TagCell] = []
        for _, cols in ordered:
            values = [row.values.get(c.key) for c in cols]
            if any(_withheld(row, c) for c in cols):
                out.append(WITHHELD)
            elif any(v is None for v in values):
                out.append(None)
            else:
                out.append(math.fsum(v for v in values if v is not None) / len(values))
        cells[row.submission_id] = tuple(out)
    first = columns[0][1] if columns else None
    return TagAverages(
        metric_label=first.label if first else "", decimals=first.decimals if first else 2, groups=groups,
        cells=cells, leaves_out_sealed=any(c.sealed and pk not in tags for pk, c in columns),
    )


# --------------------------------------------------------------------------- the paper's tables


@dataclass(frozen=True)
class PaperTables:
    title: str
    preamble: tuple[str, ...]
    label_prefix: str  # LaTeX labels: tab:<prefix>-main, ...
    tables: tuple[Table, ...]

    def render(self, fmt: str) -> str:
        """As ``fmt`` (a key of ``PAPER_FORMATS``)."""
        if fmt == "latex":
            return tables_latex(self.tables, title=self.title, preamble=self.preamble, label_prefix=self.label_prefix)
        if fmt == "csv":
            return tables_csv(self.tables, title=self.title, preamble=self.preamble)
        if fmt == "md":
            return tables_markdown(self.tables, title=self.title, preamble=self.preamble)
        raise ValueError(f"format must be one of {', '.join(PAPER_FORMATS)}, not {fmt!r}")


PREFIX = (Column("Rank", decimals=0), Column("Group"), Column("System", numeric=False),
          Column("Affiliation", numeric=False))


def paper_tables_build(*, board: Board, viewer: Viewer) -> PaperTables:
    """The overview paper's tables for ``board`` (as ``viewer`` gets it) and the challenge's other
    boards in the same view that ``viewer`` may see; rows are the teams ``board`` ranks, in its order."""
    phase, challenge = board.phase, board.phase.challenge
    ranked = [row for row in board.rows if row.rank is not None]
    boards = _phase_boards(board=board, viewer=viewer)
    groups, group_notes = _significance_groups(board, ranked)
    prefix = {row.submission_id: (row.rank, groups[row.submission_id], _system(row), row.affiliation or None)
              for row in ranked}
    tables = (
        _main_table(board, boards, ranked, prefix, group_notes),
        _appendix_table(board, ranked, prefix, group_notes),
        _tags_table(board, ranked, prefix, group_notes),
        _improvement_table(board, ranked),
        _correlation_table(board, boards, ranked),
    )
    if board.view == ORGANIZER:
        view = ("Organizer view: it holds what the public board withholds (sealed datasets' names and scores, "
                "anonymous teams' names); do not share it before the reveal.")
    else:
        view = "Public view: what everyone sees on the board."
    return PaperTables(
        title=f"{challenge.title}: {phase.name} board", preamble=(view, f"Ranked by {board.ranked_by}."),
        label_prefix=f"{challenge.slug}-{phase.slug}", tables=tables,
    )


def _phase_boards(*, board: Board, viewer: Viewer) -> list[tuple[Phase, Board]]:
    """The challenge's boards in ``board``'s view that ``viewer`` may see, in phase order (``board``'s own included)."""
    out: list[tuple[Phase, Board]] = []
    for phase in board_phases(phase=board.phase, view=board.view):
        if phase.pk == board.phase.pk:
            out.append((board.phase, board))
            continue
        phase.challenge = board.phase.challenge
        try:
            # Its groups are not shown: asking for its bootstrap would only cost a task.
            out.append((phase, board_build(phase=phase, viewer=viewer, view=board.view, significance=False)))
        except BoardNotVisible:
            continue
    if not any(b is board for _, b in out):
        out.insert(0, (board.phase, board))
    return out


# Marks a baseline's name whatever the name says ("BERT-cased-whole-word baseline" may be a team's).
BASELINE_MARK = "\u2020"


def _system(row: BoardRow) -> str:
    return f"{row.team_name}{BASELINE_MARK}" if row.is_baseline else row.team_name


def _significance_groups(board: Board, ranked: Sequence[BoardRow]) -> tuple[dict[int, Cell], tuple[str, ...]]:
    """Each ranked row's rank group as the board shows it ("tied #k"), and the footnote that says what it is."""
    significance = board.significance
    if significance.status == "none":
        return ({row.submission_id: None for row in ranked},
                ("Group: not computed (it needs two ranked rows and a ranking that is a mean over datasets)",))
    if board.significance_withheld:
        return {row.submission_id: WITHHELD for row in ranked}, (f"Group: {WITHHELD_SIGNIFICANCE}",)
    if not significance.ready:
        return ({row.submission_id: None for row in ranked},
                ("Group: being computed; export the tables again in a minute",))
    groups: dict[int, Cell] = {}
    for row in ranked:
        sig = significance.rows.get(row.submission_id)
        groups[row.submission_id] = sig.group if sig is not None and sig.group is not None else "n/a"
    notes = ["Group: the rank of the first row of the row's rank group; a row is in the group of the row above "
             "unless it is significantly worse (on the board: tied #k)", f"Method: {METHOD}"]
    if "n/a" in groups.values():
        notes.append("n/a: not tested (a published result without per-question scores, or scores that do not give "
                     "back the board's)")
    return groups, tuple(notes)


def _row_notes(board: Board, ranked: Sequence[BoardRow], cells: Sequence[Sequence[Cell]]) -> list[str]:
    notes = [f"Rows: the teams ranked on the {board.phase.name} board, in its order"]
    if any(row.is_baseline for row in ranked):
        notes.append(f"{BASELINE_MARK}: a baseline (the organizers' baselines and published results)")
    flat = {cell for row in cells for cell in row}
    if WITHHELD in flat:
        notes.append(f"withheld: {AGGREGATE_SEALED_NOTE}")
    if SEALED in flat:
        notes.append(f"sealed: {DATASET_SEALED_NOTE}")
    return notes


def _main_table(board: Board, boards: Sequence[tuple[Phase, Board]], ranked: Sequence[BoardRow],
                prefix: Mapping[int, tuple[Cell, ...]], group_notes: tuple[str, ...]) -> Table:
    picks: list[tuple[Board, BoardColumn, Column]] = []
    for phase, phase_board in boards:
        overall = [c for c in phase_board.columns if c.key.startswith("agg:split_")]
        overall += [c for c in phase_board.columns if c.key == phase_board.primary_key]
        picks += [(phase_board, c, Column(c.label, decimals=c.decimals, group=phase.name)) for c in overall]
    by_team = [{row.team_id: row for row in phase_board.rows} for phase_board, _, _ in picks]
    rows: list[tuple[Cell, ...]] = []
    for row in ranked:
        cells: list[Cell] = []
        for (phase_board, column, _), teams in zip(picks, by_team, strict=True):
            other = teams.get(row.team_id)
            if phase_board is not board and not _linkable(row, board):
                cells.append(UNLINKED)
            else:
                cells.append(None if other is None else WITHHELD if _withheld(other, column)
                             else other.values.get(column.key))
        rows.append((*prefix[row.submission_id], *cells))
    notes = _row_notes(board, ranked, rows)
    if any(UNLINKED in cells for cells in rows):
        notes.append(UNLINKED_NOTE)
    notes.insert(1, f"Ranked by {board.ranked_by}; the columns under a phase are the team's row on that phase's "
                    "board")
    return Table("main", "Main results", (*PREFIX, *(c for _, _, c in picks)),
                 tuple(rows), (*notes, *group_notes))


def _appendix_table(board: Board, ranked: Sequence[BoardRow], prefix: Mapping[int, tuple[Cell, ...]],
                    group_notes: tuple[str, ...]) -> Table:
    columns = _metric_columns(board)
    title = f"Per-dataset results on the {board.phase.name} board"
    if not columns:
        return Table("appendix", title, (), (), ("Not available: this board's ranking is not a mean over datasets",))
    rows = [(*prefix[row.submission_id], *(SEALED if _withheld(row, c) else row.values.get(c.key) for _, c in columns))
            for row in ranked]
    label = columns[0][1].label
    return Table("appendix", f"{title} ({label})", (*PREFIX, *(Column(c.group, decimals=c.decimals) for _, c in columns)),
                 tuple(rows), (*_row_notes(board, ranked, rows), *group_notes))


def _tags_table(board: Board, ranked: Sequence[BoardRow], prefix: Mapping[int, tuple[Cell, ...]],
                group_notes: tuple[str, ...]) -> Table:
    averages = board_tag_averages(board=board)
    title = "Averages by dataset tag"
    sealed_note = (TAGS_SEALED_NOTE,) if averages.leaves_out_sealed else ()
    if not averages.groups:
        return Table("tags", title, (), (), ("Not available: no dataset of this board has tags you may see "
                                             "(datasets[].tags in the challenge's spec)", *sealed_note))
    rows = [(*prefix[row.submission_id], *averages.cells[row.submission_id]) for row in ranked]
    members = "; ".join(f"{g.label}: {', '.join(g.datasets)}" for g in averages.groups)
    notes = [f"Each column is the mean {averages.metric_label} over the datasets with that tag value ({members})",
             "A row without a score on some dataset of a group has no average for it", *sealed_note]
    return Table("tags", f"{title} ({averages.metric_label})",
                 (*PREFIX, *(Column(g.label, decimals=averages.decimals) for g in averages.groups)), tuple(rows),
                 (*_row_notes(board, ranked, rows), *notes, *group_notes))


def _improvement_table(board: Board, ranked: Sequence[BoardRow]) -> Table:
    title = "Best system against the best baseline"
    targets = [c for _, c in _metric_columns(board)]
    primary = next((c for c in board.columns if c.key == board.primary_key), None)
    if primary is not None:
        targets.append(primary)
    if not targets:
        return Table("improvement", title, (), (), ("Not available: this board has no ranking column",))
    label = targets[0].label
    columns = (Column("Dataset", numeric=False), Column("Best baseline", numeric=False), Column(label),
               Column("Best system", numeric=False), Column(label), Column("Gain", signed=True))
    rows: list[tuple[Cell, ...]] = []
    for column in targets:
        name = column.label if column is primary else column.group
        if column.sealed:
            rows.append((name, SEALED, SEALED, SEALED, SEALED, SEALED))
        elif any(column.key in row.sealed_keys for row in ranked):
            # The best of the rows shown might not be the best: the withheld one could be.
            rows.append((name, WITHHELD, WITHHELD, WITHHELD, WITHHELD, WITHHELD))
        else:
            found = improvement_over_baseline([(_system(row), row.is_baseline, row.values.get(column.key))
                                               for row in ranked])
            rows.append((name, None, None, None, None, None) if found is None else
                        (name, found.baseline, found.baseline_value, found.system, found.system_value, found.delta))
    notes = ["For each dataset, and for the ranking average: the best score of a ranked team that is not a "
             f"baseline, against the best of a ranked baseline ({BASELINE_MARK}); Gain is the difference"]
    if not any(row.is_baseline for row in ranked):
        notes.append("This board ranks no baseline, so there is no gain to give")
    flat = {cell for row in rows for cell in row}
    if SEALED in flat:
        notes.append(f"sealed: {DATASET_SEALED_NOTE}")
    if WITHHELD in flat:
        notes.append(f"withheld: the ranking average is {AGGREGATE_SEALED_NOTE} on some row, and the best of the "
                     "other rows might not be the best")
    return Table("improvement", title, columns, tuple(rows), tuple(notes))


def _correlation_table(board: Board, boards: Sequence[tuple[Phase, Board]], ranked: Sequence[BoardRow]) -> Table:
    title = "Correlation of in-domain (Split I) and out-of-domain performance"
    ordered = sorted(boards, key=lambda item: item[1] is not board)  # this board's Split I first
    found = next(((phase, b) for phase, b in ordered if any(c.key == SPLIT_I_KEY for c in b.columns)), None)
    if found is None:
        return Table("correlation", title, (), (),
                     ("Not available: no Split I dataset is scored on the boards of this challenge you may see",))
    x_phase, x_board = found
    scope = phase_ranking_scope(phase=board.phase, reveal_sealed=board.view == ORGANIZER)
    if any(ds.split == Split.I for ds in scope.datasets):
        return Table("correlation", title, (), (), (
            f"Not available: the {board.phase.name} board ranks on Split I datasets too ({board.ranked_by}), so its "
            "ranking average is not an out-of-domain score",))
    x_column = next(c for c in x_board.columns if c.key == SPLIT_I_KEY)
    y_column = next(c for c in board.columns if c.key == board.primary_key)
    x_rows = {row.team_id: row for row in x_board.rows}
    xs: list[float] = []
    ys: list[float] = []
    withheld = unlinked = 0
    for row in ranked:
        other = x_rows.get(row.team_id)
        if other is None:
            continue
        if x_board is not board and not _linkable(row, board):
            unlinked += 1
            continue
        if _withheld(other, x_column) or _withheld(row, y_column):
            withheld += 1  # left out: a correlation with it would bound the withheld value
            continue
        x, y = other.values.get(x_column.key), row.values.get(y_column.key)
        if x is not None and y is not None:
            xs.append(x)
            ys.append(y)
    r = pearson(xs, ys) if len(xs) >= MIN_CORRELATED else None
    if r is None:
        why = f"; on {withheld} more, a score is {AGGREGATE_SEALED_NOTE}" if withheld else ""
        why += f"; {unlinked} more are anonymous teams, not linked across boards" if unlinked else ""
        return Table("correlation", title, (), (), (
            f"Not available: {len(xs)} ranked team(s) have both scores shown{why}; Pearson's r needs at least "
            f"{MIN_CORRELATED}, and scores that are not all equal",))
    columns = (Column("In-domain", numeric=False), Column("Out-of-domain", numeric=False),
               Column("Systems", decimals=0), Column("Pearson r", decimals=3))
    cells: tuple[Cell, ...] = (f"{x_column.label}, {x_phase.name} board",
                               f"{board.ranked_by}, {board.phase.name} board", len(xs), r)
    left_out = []
    if withheld:
        left_out.append(f"{withheld} ranked team(s) are left out: a score of theirs is {AGGREGATE_SEALED_NOTE}")
    if unlinked:
        left_out.append(f"{unlinked} anonymous team(s) are left out: they are not linked across boards")
    return Table("correlation", title, columns, (cells,), (
        "Pearson's r across the teams ranked on the board (baselines included) that have both scores shown; "
        "each team's in-domain score is its row on the board named", *left_out))
