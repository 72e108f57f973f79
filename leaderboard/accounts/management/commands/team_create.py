"""``manage.py team_create CHALLENGE NAME --owner USER [--member USER ...]``: a team made by an operator.

For teams the organizers register themselves (an invited group, a baseline run by people) without
asking each member to click through the site.  The accounts must exist and have confirmed addresses, as
on the site (accounts made by ``createsuperuser``, the admin or other commands are confirmed); the
challenge's team size and approval rules apply.  All or nothing: a member refused leaves no team.
Prints the team's id and join code (for members who join later).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from leaderboard.accounts.services import team_create, team_member_add
from leaderboard.challenges.models import Challenge
from leaderboard.core.errors import ServiceError


def _user(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no account is named {username!r}: make it first (sign-up, the admin, createsuperuser)")
    return user


class Command(BaseCommand):
    help = "Make a team of a challenge with its owner and members (existing, confirmed accounts)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("challenge", help="the challenge's slug")
        parser.add_argument("name", help="the team's name (unique in the challenge)")
        parser.add_argument("--owner", required=True, help="username of the team's owner")
        parser.add_argument("--member", action="append", default=[], dest="members",
                            help="username of another member (repeat for several)")
        parser.add_argument("--anonymous", action="store_true", help="the team's name is not shown on boards")
        parser.add_argument("--affiliation", default="", help="shown beside the team's name")

    def handle(self, *args: Any, **options: Any) -> None:
        challenge = Challenge.objects.filter(slug=options["challenge"]).first()
        if challenge is None:
            raise CommandError(f"no challenge has the slug {options['challenge']!r} (manage.py challenge_load SPEC)")
        owner = _user(options["owner"])
        members = [_user(name) for name in options["members"]]
        try:
            with transaction.atomic():
                team = team_create(challenge=challenge, owner=owner, name=options["name"],
                                   is_anonymous=options["anonymous"], affiliation=options["affiliation"])
                for member in members:
                    try:
                        team_member_add(team=team, user=member)
                    except ServiceError as exc:
                        raise CommandError(f"{member.username}: {exc.message}") from None
        except ServiceError as exc:
            raise CommandError(f"{owner.username}: {exc.message}") from None
        self.stdout.write(f"team {team.pk} {team.name!r} of {challenge.slug}: owner {owner.username}"
                          + "".join(f", {m.username}" for m in members) + f"; join code {team.join_code}")
