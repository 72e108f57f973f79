"""What boards keep between requests."""

from __future__ import annotations

from django.db import models


class BoardSignificance(models.Model):
    """The bootstrap of one board's ranking, for the exact rows it was computed on.

    ``key`` digests what the result depends on (the ranked submissions in order with their ranking
    values, the datasets averaged, the method's settings), so a board whose rows changed finds no
    result and never shows a stale interval; it asks for a new one (``board_significance_request``)
    and says "being computed" meanwhile.  ``payload`` is None while the computation is pending.
    """

    phase = models.ForeignKey("challenges.Phase", on_delete=models.CASCADE, related_name="significance")
    key = models.CharField(max_length=64)
    payload = models.JSONField(null=True, blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["phase", "key"], name="boardsignificance_unique")]


class BoardSnapshot(models.Model):
    """One view of one phase's board as anyone without a row on it sees it, with its renderings.

    ``board`` is the pickled ``Board`` (rows for a viewer with a row of their own are made from it:
    their row is marked, and named if their team is anonymous); the others are served as they are.
    Only the platform writes these rows, from its own objects.
    """

    phase = models.ForeignKey("challenges.Phase", on_delete=models.CASCADE, related_name="+")
    view = models.CharField(max_length=16)
    version = models.PositiveBigIntegerField()
    built_at = models.DateTimeField()
    board = models.BinaryField()
    payload_json = models.BinaryField()
    records_csv = models.BinaryField()
    chart_svg = models.BinaryField()
    page_count = models.PositiveIntegerField(default=1)
    # The renderer's format (snapshots.SNAPSHOT_FORMAT): a deploy that renders boards otherwise
    # finds none of the older snapshots.
    format = models.PositiveIntegerField(default=0)
    # The bootstrap was still being computed: the snapshot is built again once that request is old
    # enough to be sent again (its task may have been lost).
    significance_pending = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["phase", "view"], name="boardsnapshot_unique")]


class BoardSnapshotPage(models.Model):
    """One page of a snapshot's board page content: a request reads its page, not all of them."""

    snapshot = models.ForeignKey(BoardSnapshot, on_delete=models.CASCADE, related_name="page_set")
    number = models.PositiveIntegerField()
    html = models.TextField()
    # Where the parts shared by every viewer with a row of their own go in ``html`` (pages.Slot):
    # {"chart": [start, end], "own_link": at}; null when the page could not be slotted (its
    # viewers with a row get the page rendered whole).
    slots = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["snapshot", "number"], name="boardsnapshotpage_unique")]


class BoardSnapshotRow(models.Model):
    """What a snapshot's answers are for a member of the team of one row: their own parts, and where
    they go in the answers everyone else gets (``snapshots.own_parts``), so that their page, JSON,
    CSV and chart are the stored ones with a few spans replaced, not a board rebuilt per request."""

    snapshot = models.ForeignKey(BoardSnapshot, on_delete=models.CASCADE, related_name="row_set")
    team_id = models.PositiveBigIntegerField()
    own = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["snapshot", "team_id"], name="boardsnapshotrow_unique")]
