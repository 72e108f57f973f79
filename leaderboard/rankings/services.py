"""Writes of the rankings app: the background bootstrap of a phase's boards."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser

from leaderboard.challenges.models import Phase
from leaderboard.rankings.board_significance import board_significance_prune, board_significance_store
from leaderboard.rankings.selectors import ORGANIZER, PUBLIC, board_build


def board_significance_refresh(phase_id: int) -> None:
    """Compute the bootstrap of every board the phase shows now (the public and the organizer
    view may rank on different averages), and drop results of rows no longer shown.

    The task behind it takes a phase id and is safe to run twice (a result is stored under the
    digest of what it was computed on); a phase that no longer exists is nothing to do.
    """
    phase = Phase.objects.select_related("challenge").filter(pk=phase_id).first()
    if phase is None:
        return
    keep: list[str] = []
    for view in (ORGANIZER, PUBLIC) if phase.board_public else (ORGANIZER,):
        board = board_build(phase=phase, viewer=AnonymousUser(), view=view, trusted=True, significance=False)
        inputs = board.significance_inputs
        if inputs is None or inputs.key in keep:
            continue
        board_significance_store(inputs)
        keep.append(inputs.key)
    board_significance_prune(phase_id=phase_id, keep=keep)
