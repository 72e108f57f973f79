"""``{{ entry.action|audit_label }}``: an audit entry's action under the name of the button that did
it ("Rank again" for ``submission.requalify``), so the log reads in the console's own words."""

from __future__ import annotations

from django import template

from leaderboard.console.actions import ACTIONS

register = template.Library()

# Recorded actions whose button is not a console action of the same key.
_OTHER_WORDS = {
    "submission.hold_release": "Release the held run",
    "submission.log_release": "Release the log",
    "submission.log_withdraw": "Withdraw the released log",
    "announcement.create": "Post an announcement",
    "announcement.withdraw": "Withdraw an announcement",
    "dataset.unreveal": "Seal again",
    "team.extend_remove": "Remove an extension",
}
# An audit key's entity, and the console's list its actions are on.
_TARGETS = {"submission": "submissions", "team": "teams", "dataset": "datasets"}


@register.filter
def audit_label(key: str) -> str:
    if key in _OTHER_WORDS:
        return _OTHER_WORDS[key]
    entity, _, verb = key.partition(".")
    action = ACTIONS.get((_TARGETS.get(entity, entity), verb))
    return action.title if action is not None else key
