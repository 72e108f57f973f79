"""What the organizers told a team about its standing, for the team's own pages.

A tag rather than a view's context, so every page of a team shows it the same way.  Only the
organizers' own words (``console.selectors.team_notices``): nothing hidden goes through it.
"""

from __future__ import annotations

from django import template

from leaderboard.accounts.models import Team
from leaderboard.console.selectors import team_notices

register = template.Library()


@register.simple_tag
def team_standing(team: Team | None) -> list[str]:
    return team_notices(team=team) if team is not None else []
