"""Board snapshots: each view of a phase's board is built once per change, then read by every request.

A board is read far more often than it changes, and building one of a thousand teams takes most of a
second.  So each view (public, organizer) of each phase is kept as a ``BoardSnapshot``: the pickled
``Board`` and its renderings (each page's content, the JSON, the CSV, the chart), built as anyone
without a row on it sees them, tagged with the challenge's board version (``versions.board_changed``,
raised in the transaction of every change a board shows).

A request reads the version first (one small query).  If the snapshot carries it, the request is
served from it, or answered 304 when the client holds that version already; if not (the change
committed and the background rebuild has not run yet), the request builds the board itself and
stores it.  A snapshot is therefore never served stale once a change has committed.

A viewer whose team has a row on the board sees it marked as theirs (and named, if the team is
anonymous).  The snapshot keeps, for each team with a row, that team's own parts (its row marked,
its name where the board shows it) and where they go in each stored answer (``own_parts``): such a
viewer is served the stored bytes with those spans replaced, which equals the answer made from the
whole board with their row changed (``board_for``, still the way when a snapshot cannot be used).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import logging
import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone
from django.utils.html import escape

from leaderboard.accounts.models import Team
from leaderboard.accounts.selectors import user_team_query
from leaderboard.challenges.models import BoardVersion, Challenge, Phase
from leaderboard.challenges.selectors import user_is_organizer
from leaderboard.challenges.versions import board_changes_fold, board_version_get
from leaderboard.core.csv_safe import csv_rows_safe
from leaderboard.core.errors import NotFound
from leaderboard.rankings.board_significance import STALE_REQUEST
from leaderboard.rankings.charts import board_chart_rows, board_chart_svg
from leaderboard.rankings.models import BoardSnapshot, BoardSnapshotPage, BoardSnapshotRow
from leaderboard.rankings.pages import (
    CHART,
    NAME,
    OWN_LINK,
    ROW,
    Slot,
    board_content_html,
    board_content_slots,
    board_own_link_html,
)
from leaderboard.rankings.selectors import (
    ORGANIZER,
    ORGANIZER_VIEW_NOT_FOUND,
    PHASE_NOT_FOUND,
    PUBLIC,
    Board,
    BoardRow,
    Viewer,
    board_as_records,
    board_build,
    board_payload,
    board_record,
)
from leaderboard.rankings.table import BOARD_PAGE_ROWS, board_row_html

logger = logging.getLogger(__name__)

# Part of every ETag: a deploy that renders boards differently must not be answered 304.
SNAPSHOT_FORMAT = 2

@dataclass(frozen=True)
class BoardAccess:
    """What a request may read of a board, and at which version."""

    phase: Phase
    view: str
    version: int
    # The viewer's team when it has a row on this board: that row is marked (and named) for them.
    own_team: Team | None

    def etag(self, part: str, *, extra: str = "") -> str:
        own = self.own_team.pk if self.own_team else 0
        text = f"{SNAPSHOT_FORMAT}:{self.phase.pk}:{self.view}:{self.version}:{part}:{own}:{extra}"
        return '"' + hashlib.sha256(text.encode()).hexdigest()[:32] + '"'


def board_access_get(*, slug: str, phase_slug: str, viewer: Viewer, view: str = PUBLIC) -> BoardAccess:
    """The board at its address, with the rules of ``board_get``: ``NotFound`` for an unknown phase, for a
    non-public challenge or board in the public view, and for anyone but the organizers in the
    organizer view (the existence of what they may not see is not confirmed either)."""
    if view == PUBLIC:
        public = _phase_at(slug, phase_slug, public=True)
        if public is None:
            raise NotFound(PHASE_NOT_FOUND)
        if not public.board_public:
            raise NotFound(f"the {public.name} board is not public")
        phase = public
    else:
        found = _phase_at(slug, phase_slug, public=False)
        if found is None or not user_is_organizer(user=viewer, challenge=found.challenge):
            raise NotFound(ORGANIZER_VIEW_NOT_FOUND)
        phase = found
    # The version is read before anything of the board: a snapshot built from data read later is
    # at least as new as its tag says.
    version = board_version_get(challenge_id=phase.challenge_id)
    # Their team only when it has a row on this board: else they see what everyone sees.
    own_team = _own_team(viewer, phase)
    return BoardAccess(phase=phase, view=view, version=version, own_team=own_team)


@functools.cache
def _phase_sql(*, public: bool) -> tuple[str, tuple[int, ...]]:
    """The phase at an address (of a public challenge if ``public``), and where its parameters go: each
    an index into (the challenge's slug, the phase's).  Compiled once: the ORM took 0.5 ms a request
    to build it (with its challenge joined), four times what the database takes to answer."""
    stand_ins = ("\x00challenge", "\x00phase")  # found again among the compiled parameters
    phases = Phase.objects.filter(challenge__slug=stand_ins[0], slug=stand_ins[1])
    if public:
        phases = phases.filter(challenge__is_public=True)
    return _compiled(phases.order_by("pk")[:1], stand_ins)


@functools.cache
def _challenge_sql() -> str:
    sql, params = Challenge.objects.filter(pk=-1).query.sql_with_params()
    assert params == (-1,), params
    return str(sql)


def _phase_at(slug: str, phase_slug: str, *, public: bool) -> Phase | None:
    """The phase at ``slug``/``phase_slug`` with its challenge loaded (of a public challenge if ``public``:
    the challenge is read after the phase, so it is checked again)."""
    sql, order = _phase_sql(public=public)
    slugs = (slug, phase_slug)
    phase = next(iter(Phase.objects.raw(sql, [slugs[i] for i in order])), None)
    if phase is None:
        return None
    challenge = next(iter(Challenge.objects.raw(_challenge_sql(), [phase.challenge_id])), None)
    if challenge is None or (public and not challenge.is_public):
        return None
    Phase.challenge.field.set_cached_value(phase, challenge)
    return phase


@functools.cache
def _own_team_sql() -> tuple[str, tuple[int, ...]]:
    """The viewer's team (``user_team_query``) if it has a row on the phase's board, and where its
    parameters go: each an index into (the user's pk, the challenge's, the phase's).  Compiled once:
    the ORM took 0.5 ms a request to build it, five times what the database takes to answer."""
    stand_ins = (-1, -2, -3)  # the user's, the challenge's, the phase's pk: found again among the parameters
    return _compiled(user_team_query(user_id=stand_ins[0], challenge_id=stand_ins[1])
                     .filter(board_entries__phase_id=stand_ins[2]).order_by(), stand_ins)


def _compiled(query: models.QuerySet[Any], stand_ins: tuple[Any, ...]) -> tuple[str, tuple[int, ...]]:
    """``query``'s SQL, made with ``stand_ins`` as its values, and where each of its parameters goes:
    an index into the values a caller passes in the stand-ins' order."""
    sql, params = query.query.sql_with_params()
    assert sorted(params) == sorted(stand_ins), params
    return str(sql), tuple(stand_ins.index(p) for p in params)


def _own_team(viewer: Viewer, phase: Phase) -> Team | None:
    if not viewer.is_authenticated:
        return None
    sql, order = _own_team_sql()
    ids = (viewer.pk, phase.challenge_id, phase.pk)
    return next(iter(Team.objects.raw(sql, [ids[i] for i in order])), None)


def _column(model: type[models.Model], field: str) -> str:
    column = model._meta.get_field(field)
    assert isinstance(column, models.Field) and column.column
    return connection.ops.quote_name(column.column)


@functools.cache
def _current_sql(select: str) -> str:
    """A read of the access's snapshot if it may be served: at its version or newer (a change committed
    since the version was read is only fresher), by this renderer, and not waiting on a bootstrap
    request old enough to be sent again (its task may have been lost: building the board asks again).
    Its parameters: ``_current_params``.

    Written out rather than built by the ORM: every board request makes one of these reads, and
    building it (the staleness rule's exclusion above all) cost ten times what the database takes."""
    snapshot = BoardSnapshot
    return (f"SELECT {select} FROM {connection.ops.quote_name(snapshot._meta.db_table)}"  # noqa: S608 - our names
            f" WHERE {_column(snapshot, 'phase')} = %s AND {_column(snapshot, 'view')} = %s"
            f" AND {_column(snapshot, 'version')} >= %s AND {_column(snapshot, 'format')} = %s"
            f" AND NOT ({_column(snapshot, 'significance_pending')} AND {_column(snapshot, 'built_at')} < %s)")


def _current_params(access: BoardAccess) -> list[Any]:
    stale = connection.ops.adapt_datetimefield_value(timezone.now() - STALE_REQUEST)
    return [access.phase.pk, access.view, access.version, SNAPSHOT_FORMAT, stale]


def _read_one(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row: tuple[Any, ...] | None = cursor.fetchone()
    return row


def _current_snapshot(access: BoardAccess) -> tuple[int, int] | None:
    """The pk and page count of the access's snapshot if it may be served (``_current_sql``)."""
    found = _read_one(_current_sql(f"{_column(BoardSnapshot, 'id')}, {_column(BoardSnapshot, 'page_count')}"),
                      _current_params(access))
    return (int(found[0]), int(found[1])) if found is not None else None


@functools.cache
def _own_sql(team_param: str = "%s", snapshot: str = "") -> str:
    """The parts of a team's row (``team_param``) in the snapshot whose pk is ``snapshot`` (a column)."""
    row = BoardSnapshotRow
    snapshot = snapshot or f"{connection.ops.quote_name(BoardSnapshot._meta.db_table)}.{_column(BoardSnapshot, 'id')}"
    return (f"(SELECT {_column(row, 'own')} FROM {connection.ops.quote_name(row._meta.db_table)}"  # noqa: S608 - our names
            f" WHERE {_column(row, 'snapshot')} = {snapshot} AND {_column(row, 'team_id')} = {team_param} LIMIT 1)")


def _json_value(model: type[models.Model], field: str, value: Any) -> Any:
    """A JSON column read by hand, as the ORM would have given it."""
    json_field = model._meta.get_field(field)
    assert isinstance(json_field, models.JSONField)
    return json_field.from_db_value(value, json_field.get_col(model._meta.db_table), connection)


# Renderings this process has read, by the build they are of: the snapshot's pk, version and built_at
# (a rebuild rewrites the row in place, and these with it).  Copying a 1.4 MB JSON out of the database
# took 2 ms of each request; a reader of an unchanged snapshot now takes the bytes read before.
PARTS_KEPT = 8  # per process: a few boards' exports (megabytes each), the most recently read
_parts: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
_parts_lock = threading.Lock()


@functools.cache
def _build_part_sql(part: str) -> str:
    snapshot = BoardSnapshot
    return (f"SELECT {_column(snapshot, part)} FROM {connection.ops.quote_name(snapshot._meta.db_table)}"  # noqa: S608 - our names
            f" WHERE {_column(snapshot, 'id')} = %s AND {_column(snapshot, 'version')} = %s"
            f" AND {_column(snapshot, 'built_at')} = %s")


def _build_part(build: tuple[Any, ...], part: str) -> bytes | None:
    """Rendering ``part`` of the build ``build`` (pk, version, built_at as read); None if the row holds
    another build by now."""
    key = (*build, part)
    with _parts_lock:
        body = _parts.get(key)
        if body is not None:
            _parts.move_to_end(key)
            return body
    stored = _read_one(_build_part_sql(part), list(build))
    if stored is None:
        return None
    body = bytes(stored[0])
    with _parts_lock:
        _parts[key] = body
        while len(_parts) > PARTS_KEPT:
            _parts.popitem(last=False)
    return body


def _current_part(access: BoardAccess, part: str, *, own_team_id: int | None = None) -> tuple[bytes, Any] | None:
    """Rendering ``part`` of the access's snapshot if it may be served, and the parts of
    ``own_team_id``'s row of the same build (JSON; None without a team or a row)."""
    build = f"{_column(BoardSnapshot, 'id')}, {_column(BoardSnapshot, 'version')}, {_column(BoardSnapshot, 'built_at')}"
    for _ in range(2):  # a rebuild between the two reads: the build it stored
        if own_team_id is None:
            found = _read_one(_current_sql(build), _current_params(access))
            own = None
        else:
            found = _read_one(_current_sql(f"{build}, {_own_sql('%s')}"), [own_team_id, *_current_params(access)])
            own = found[3] if found is not None else None
        if found is None:
            return None
        body = _build_part(tuple(found[:3]), part)
        if body is not None:
            return body, (_json_value(BoardSnapshotRow, "own", own) if own is not None else None)
    return None


def board_snapshot_part(access: BoardAccess, part: str) -> Any:
    """One rendering of the board at the access's version, built now if the snapshot is older."""
    stored = _current_part(access, part)
    if stored is not None:
        return stored[0]
    return board_snapshot_build(phase=access.phase, view=access.view, version=access.version).part(part)


@functools.cache
def _page_sql(select: str) -> str:
    page = BoardSnapshotPage
    return (f"SELECT {select} FROM {connection.ops.quote_name(page._meta.db_table)}"  # noqa: S608 - our names
            f" WHERE {_column(page, 'snapshot')} = %s AND {_column(page, 'number')} = %s")


def board_snapshot_page(access: BoardAccess, number: str | int | None) -> str:
    """The content of page ``number`` (``Paginator.get_page``'s rules), built now if the snapshot is older."""
    found = _current_snapshot(access)
    if found is not None:
        html = _read_one(_page_sql(_column(BoardSnapshotPage, "html")), [found[0], board_page_number(found[1], number)])
        if html is not None:  # else replaced between the two reads: build it
            return str(html[0])
    built = board_snapshot_build(phase=access.phase, view=access.view, version=access.version)
    return built.pages[board_page_number(len(built.pages), number) - 1]


def board_page_for(access: BoardAccess, number: str | int | None) -> str:
    """The content of page ``number`` as this viewer sees it: the stored page, with a viewer's own
    parts put in its slots when their team has a row (the whole board is rebuilt for them only
    when the snapshot is older than the access or the page could not be slotted)."""
    if access.own_team is None:
        return board_snapshot_page(access, number)
    found = _current_snapshot(access)
    if found is not None:
        n = board_page_number(found[1], number)
        page = BoardSnapshotPage
        # One statement: the page and the row's parts of one build (a rebuild replaces both).
        stored = _read_one(_page_sql(f"{_column(page, 'html')}, {_column(page, 'slots')}, "
                                     + _own_sql(snapshot=_column(page, "snapshot"))),
                           [access.own_team.pk, found[0], n])
        if stored is not None and stored[1] is not None:
            html, slots = str(stored[0]), _json_value(page, "slots", stored[1])
            own = _json_value(BoardSnapshotRow, "own", stored[2]) if stored[2] is not None else None
            if own is None:  # no row of theirs on this board (a hidden entry): everyone's page
                return html
            return own_page_splice(html, slots, own, number=n)
    return board_content_html(board_for(access), number)


def own_page_splice(html: str, slots: dict[str, Any], own: dict[str, Any], *, number: int) -> str:
    """A stored page as the member of a team with a row sees it: their row marked (and named),
    their name in the tag table and the chart, or the link to the page that has their row."""
    changes: list[tuple[int, int, str]] = []
    if own["page"] == number:
        changes.append((*own["row"], own["tr"]))
        if "name" in own:
            changes.append((*own["name"], own["name_html"]))
    elif "own_link" in slots:
        at = slots["own_link"]
        changes.append((at, at, board_own_link_html(own_page=own["page"], own_rank=own["rank"])))
    if "chart" in own:
        changes.append((*slots["chart"], own["chart"][2]))
    return _spliced(html, changes)


def _spliced(text: str, changes: list[tuple[int, int, str]]) -> str:
    parts, at = [], 0
    for start, end, new in sorted(changes):
        parts += [text[at:start], new]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _own_bytes(access: BoardAccess, part: str, key: str) -> bytes:
    """A stored export (``part``) as the member of a team with a row gets it: their own span put in."""
    assert access.own_team is not None
    # The export and the row's parts of one build (a rebuild replaces both).
    stored = _current_part(access, part, own_team_id=access.own_team.pk)
    if stored is None:  # older than the access: from the board, built now
        return _own_built(access, part)
    body, own = stored
    if own is None or key not in own:  # no row of theirs, or one that reads the same to them
        return body
    start, end, new = own[key]
    return body[:int(start)] + str(new).encode() + body[int(end):]


def _own_built(access: BoardAccess, part: str) -> bytes:
    board = board_for(access)
    if part == "payload_json":
        return json.dumps(board_payload(board), cls=DjangoJSONEncoder).encode()
    if part == "records_csv":
        return _csv_bytes(board)
    return board_chart_svg(board).encode()


def board_for(access: BoardAccess) -> Board:
    """The whole board, as this viewer sees it (their own row marked and, if anonymous, named)."""
    try:
        board: Board = pickle.loads(bytes(board_snapshot_part(access, "board")))  # noqa: S301  (written by us)
    except (pickle.UnpicklingError, AttributeError, ImportError, TypeError, EOFError):
        # Pickled by code that has changed since (a deploy within one format): build it again.
        logger.warning("board snapshot of phase %s (%s) did not load; built again", access.phase.pk, access.view)
        board = pickle.loads(board_snapshot_build(phase=access.phase, view=access.view,  # noqa: S301
                                                  version=access.version).part("board"))
    board.phase = access.phase  # the request's, with its challenge already loaded
    return _overlaid(board, access.own_team)


def _overlaid(board: Board, team: Team | None) -> Board:
    if team is None:
        return board
    rows = list(board.rows)
    for i, row in enumerate(rows):
        if row.team_id == team.pk:
            rows[i] = _own_row(row, name=team.name, affiliation=team.affiliation)
            break
    return replace(board, rows=rows)


def _own_row(row: BoardRow, *, name: str, affiliation: str) -> BoardRow:
    # Their own team's name and affiliation, even where the public reads "Anonymous".
    return replace(row, is_own=True, team_name=name, affiliation=affiliation)


def board_page_number(pages: int, number: str | int | None) -> int:
    """As ``Paginator.get_page``: the first page for a missing or malformed number, the last for
    one out of range (a link to a board that has shrunk still shows rows)."""
    try:
        n = int(number)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 1
    return n if 1 <= n <= pages else max(pages, 1)


def board_snapshot_build(*, phase: Phase, view: str, version: int) -> BuiltSnapshot:
    """Build one view of the board and store it under ``version`` (unless a newer one is stored)."""
    board = board_build(phase=phase, viewer=AnonymousUser(), view=view, trusted=True)
    slotted = _pages(board)
    pages = [html for html, _ in slotted]
    payload_json = json.dumps(board_payload(board), cls=DjangoJSONEncoder).encode()
    records_csv = _csv_bytes(board)
    chart_svg = board_chart_svg(board)
    owns = own_parts(board, slotted, payload_json=payload_json, records_csv=records_csv, chart_svg=chart_svg)
    fields = {
        "version": version, "built_at": timezone.now(),
        "board": pickle.dumps(board, protocol=pickle.HIGHEST_PROTOCOL),
        "payload_json": payload_json,
        "records_csv": records_csv,
        "chart_svg": chart_svg.encode(),
        "page_count": len(pages),
        "format": SNAPSHOT_FORMAT,
        "significance_pending": board.significance.status == "computing",
    }
    with transaction.atomic():
        # Only forward: a slow builder of an older version must not replace a newer snapshot.
        stored = BoardSnapshot.objects.select_for_update().filter(phase=phase, view=view).first()
        if stored is None:
            try:
                with transaction.atomic():
                    stored = BoardSnapshot.objects.create(phase=phase, view=view, **fields)
            except IntegrityError:
                stored = None  # made meanwhile by another builder: this request answers with what it built
        elif (stored.format != SNAPSHOT_FORMAT or stored.version < version
              or (stored.version == version and stored.significance_pending)):
            BoardSnapshot.objects.filter(pk=stored.pk).update(**fields)
            BoardSnapshotPage.objects.filter(snapshot=stored).delete()
            BoardSnapshotRow.objects.filter(snapshot=stored).delete()
        else:
            stored = None
        if stored is not None:
            BoardSnapshotPage.objects.bulk_create(
                BoardSnapshotPage(snapshot=stored, number=n, html=html, slots=_page_slots(slots))
                for n, (html, slots) in enumerate(slotted, 1))
            BoardSnapshotRow.objects.bulk_create(
                (BoardSnapshotRow(snapshot=stored, team_id=team_id, own=own) for team_id, own in owns.items()),
                batch_size=500)
    return BuiltSnapshot(board=board, fields=fields, pages=pages)


@dataclass(frozen=True)
class BuiltSnapshot:
    board: Board
    fields: dict[str, Any]
    pages: list[str]

    def part(self, name: str) -> Any:
        return self.fields[name]


def _pages(board: Board) -> list[tuple[str, list[Slot] | None]]:
    count = max(1, -(-len(board.rows) // BOARD_PAGE_ROWS))
    return [board_content_slots(board, n) for n in range(1, count + 1)]


def _page_slots(slots: list[Slot] | None) -> dict[str, Any] | None:
    if slots is None:
        return None
    shared: dict[str, Any] = {}
    for slot in slots:
        if slot.kind == CHART:
            shared["chart"] = [slot.start, slot.end]
        elif slot.kind == OWN_LINK:
            shared["own_link"] = slot.start
    return shared


def own_parts(board: Board, pages: list[tuple[str, list[Slot] | None]], *, payload_json: bytes,
              records_csv: bytes, chart_svg: str) -> dict[int, dict[str, Any]]:
    """For each team with a row (its first), what its members' answers change, and where: on the
    page that has the row, the row's ``<tr>`` (``row``: its span, ``tr``) and the name in the tag
    table (``name``, ``name_html``); ``page`` and ``rank`` for the link from the other pages; and
    where the name differs from the public's, the chart and the row's JSON and CSV records
    (``chart``, ``json``, ``csv``: start and end in the stored bytes, and the text put there).
    Nothing for a team whose page could not be slotted: its members get the page built from the
    board."""
    names = dict((pk, (name, affiliation)) for pk, name, affiliation in Team.objects.filter(
        pk__in={row.team_id for row in board.rows}).values_list("pk", "name", "affiliation"))
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    for slots in (slots for _, slots in pages if slots is not None):
        for slot in slots:
            if slot.kind in (ROW, NAME):
                spans.setdefault((slot.kind, slot.team_id), (slot.start, slot.end))
    records = board_as_records(board)
    fields = list(records[0]) if records else []
    json_at = _json_record_spans(payload_json, records)
    csv_at = _csv_record_spans(records_csv, fields, records)
    charted = {row.team_id for row in board_chart_rows(board)}
    owns: dict[int, dict[str, Any]] = {}
    for i, row in enumerate(board.rows):
        if row.team_id in owns or row.team_id not in names or (ROW, row.team_id) not in spans:
            continue
        name, affiliation = names[row.team_id]
        mine = _own_row(row, name=name, affiliation=affiliation)
        own: dict[str, Any] = {"page": i // BOARD_PAGE_ROWS + 1, "rank": row.rank,
                               "row": list(spans[ROW, row.team_id]), "tr": board_row_html(board, mine)}
        if (NAME, row.team_id) in spans and mine.team_name != row.team_name:
            own["name"], own["name_html"] = list(spans[NAME, row.team_id]), str(escape(mine.team_name))
        if (mine.team_name, mine.affiliation) != (row.team_name, row.affiliation):
            if row.team_id in charted:
                rows = list(board.rows)
                rows[i] = mine
                svg = board_chart_svg(replace(board, rows=rows))
                if svg != chart_svg:  # as a span of the stored chart: all of it
                    own["chart"] = [0, len(chart_svg.encode()), svg]
            record = board_record(board, mine)
            if json_at is not None and record != records[i]:
                start, end = json_at[i]
                own["json"] = [start, end, json.dumps(record, cls=DjangoJSONEncoder)]
            if csv_at is not None and record != records[i]:
                start, end = csv_at[i]
                own["csv"] = [start, end, _csv_lines(fields, [record])[1].decode()]
        owns[row.team_id] = own
    return owns


def _json_record_spans(payload_json: bytes, records: list[dict[str, Any]]) -> list[tuple[int, int]] | None:
    """Where each record is in the payload's JSON (its last key, ``rows``); None if it is not found
    as expected (the members of an anonymous team then get the JSON built from the board)."""
    texts = [json.dumps(record, cls=DjangoJSONEncoder).encode() for record in records]
    listed = b"[" + b", ".join(texts) + b"]"
    if not payload_json.endswith(b'"rows": ' + listed + b"}"):
        return None
    spans, at = [], len(payload_json) - len(listed)  # the first record's, after "[" (and before "}")
    for text in texts:
        spans.append((at, at + len(text)))
        at += len(text) + 2
    return spans


def _csv_record_spans(records_csv: bytes, fields: list[str], records: list[dict[str, Any]]
                      ) -> list[tuple[int, int]] | None:
    lines = _csv_lines(fields, records) if records else []
    if b"".join(lines) != records_csv:
        return None
    spans, at = [], len(lines[0]) if lines else 0
    for line in lines[1:]:
        spans.append((at, at + len(line)))
        at += len(line)
    return spans


def _csv_lines(fields: list[str], records: list[dict[str, Any]]) -> list[bytes]:
    """The header's line and each record's, as ``csv.writer`` writes them (one row never depends
    on another), in bytes."""
    lines = []
    for cells in csv_rows_safe(fields, records):
        out = io.StringIO()
        csv.writer(out).writerow(cells)
        lines.append(out.getvalue().encode())
    return lines


def _csv_bytes(board: Board) -> bytes:
    records = board_as_records(board)
    out = io.StringIO()
    fields = list(records[0]) if records else ["rank", "team"]
    # Team names and affiliations are the participants' own text: none may become a formula.
    csv.writer(out).writerows(csv_rows_safe(fields, records))
    return out.getvalue().encode()


def board_csv_for(access: BoardAccess) -> bytes:
    if access.own_team:
        return _own_bytes(access, "records_csv", "csv")
    return bytes(board_snapshot_part(access, "records_csv"))


def board_json_for(access: BoardAccess) -> bytes:
    if access.own_team:
        return _own_bytes(access, "payload_json", "json")
    return bytes(board_snapshot_part(access, "payload_json"))


def board_chart_for(access: BoardAccess) -> bytes:
    # Its legend names the teams: an anonymous team's members read their own name there too.
    if access.own_team:
        return _own_bytes(access, "chart_svg", "chart")
    return bytes(board_snapshot_part(access, "chart_svg"))


def board_snapshots_rebuild(challenge_id: int) -> int:
    """Build every stale snapshot of the challenge's boards (the task after a change); how many.

    Safe twice and in any order: each build is tagged with the version read before it, and a
    snapshot already at the current version is left alone.
    """
    # Changes from now on send a task of their own; rows counted so far are folded into the base.
    BoardVersion.objects.filter(pk=challenge_id).update(rebuild_requested_at=None)
    board_changes_fold(challenge_id=challenge_id)
    version = board_version_get(challenge_id=challenge_id)
    built = 0
    for phase in Phase.objects.select_related("challenge").filter(challenge_id=challenge_id):
        for view in (PUBLIC, ORGANIZER) if phase.board_public else (ORGANIZER,):
            if _current_snapshot(BoardAccess(phase=phase, view=view, version=version, own_team=None)) is not None:
                continue
            board_snapshot_build(phase=phase, view=view, version=version)
            built += 1
    return built


@dataclass(frozen=True)
class BoardPlace:
    """Where a submission stands on its phase's public board, as that board shows it."""

    phase: Phase
    # The board's rank, and how many rows it ranks; None where the row is not ranked or absent.
    rank: int | None = None
    tied: bool = False
    ranked: int = 0
    on_board: bool = False
    public: bool = True
    # Why its row is there unranked (the board's own words): a disqualification, an incomplete row.
    unranked_reason: str = ""


def submission_board_place(*, phase: Phase, submission_id: int) -> BoardPlace:
    """The submission's row on the public board of ``phase``, read from the board everyone sees (the
    snapshot), so a submission page never says more than the board: a board that is not public gives
    no rank, a hidden row is on no public board, and the rank is the one the public board ranks by
    (over the datasets it shows while some are sealed)."""
    if not phase.board_public:
        return BoardPlace(phase=phase, public=False)
    access = BoardAccess(phase=phase, view=PUBLIC, version=board_version_get(challenge_id=phase.challenge_id),
                         own_team=None)
    board = board_for(access)
    row = next((r for r in board.rows if r.submission_id == submission_id), None)
    ranked = sum(r.rank is not None for r in board.rows)
    if row is None:
        return BoardPlace(phase=phase, ranked=ranked)
    return BoardPlace(phase=phase, rank=row.rank, tied=row.tied, ranked=ranked, on_board=True,
                      unranked_reason=row.excluded_reason if row.rank is None else "")
