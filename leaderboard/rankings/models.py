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
