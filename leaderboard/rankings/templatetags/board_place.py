"""``{% submission_board_place submission as place %}``: a submission's rank on its phase's public
board and the board's address, for the submission page.

A tag, not the view's context: the submission pages sit below the boards (``rankings`` stands on
``submissions``), and the rank must be the board's own (``snapshots.submission_board_place``).
"""

from __future__ import annotations

from django import template

from leaderboard.rankings.snapshots import BoardPlace, submission_board_place
from leaderboard.submissions.models import Submission

register = template.Library()


@register.simple_tag
def submission_place(submission: Submission) -> BoardPlace:
    return submission_board_place(phase=submission.phase, submission_id=submission.pk)
